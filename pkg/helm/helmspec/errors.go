package helmspec

import (
	"errors"
	"fmt"
)

// RenderError says that a chart's templates do not render with the
// release's values: a `required` value is missing, a template calls
// `fail`, a template does not parse or fails to execute (e.g. a nil
// pointer), or the values break the chart's values.schema.json. Err is
// Helm's own error, e.g. `execution error at
// (simple/templates/deployment.yaml:5:14): image.tag is required`, and
// Error() returns its message unchanged. Nothing was installed or
// upgraded: Helm renders before it writes a release or an object.
//
// The same chart with the same values fails the same way again, so a
// RenderError is terminal for the current spec (IsTerminal); a new chart
// version or new values may render.
type RenderError struct{ Err error }

func (e *RenderError) Error() string { return e.Err.Error() }
func (e *RenderError) Unwrap() error { return e.Err }

// IsTerminal reports whether err means that retrying the same spec cannot
// succeed: it wraps ErrChartNotFound (the source has no such chart or
// version), ErrUnsafeChart (refused by a guard) or *RenderError (the
// templates do not render with these values). Other chart errors
// (*ChartError from a repository that does not answer, bad credentials)
// and cluster errors may pass and are not terminal.
func IsTerminal(err error) bool {
	var re *RenderError
	var no *NotOwnedError
	return errors.Is(err, ErrChartNotFound) || errors.Is(err, ErrUnsafeChart) || errors.As(err, &re) || errors.As(err, &no)
}

// NotOwnedError says a release belongs to another Application, or to
// none, and was not changed; retrying cannot fix it.
type NotOwnedError struct {
	Namespace, Name string
	// Owner is the Application the release belongs to; zero when none
	// (installed by another tool, or by oamflow before releases recorded
	// their owner: Oamflow).
	Owner   Owner
	Oamflow bool
}

func (e *NotOwnedError) Error() string {
	if e.Owner.IsZero() {
		return fmt.Sprintf("helm release %s/%s exists and is not managed by any Application; add a take-over policy selecting it to adopt it", e.Namespace, e.Name)
	}
	return fmt.Sprintf("helm release %s/%s is owned by Application %s", e.Namespace, e.Name, e.Owner)
}
