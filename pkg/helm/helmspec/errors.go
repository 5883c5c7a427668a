package helmspec

import "errors"

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
	return errors.Is(err, ErrChartNotFound) || errors.Is(err, ErrUnsafeChart) || errors.As(err, &re)
}
