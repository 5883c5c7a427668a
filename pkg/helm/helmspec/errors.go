package helmspec

import (
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
// RenderError is terminal for the current spec (errclass.IsTerminal); a
// new chart version or new values may render.
type RenderError struct{ Err error }

func (e *RenderError) Error() string { return e.Err.Error() }
func (e *RenderError) Unwrap() error { return e.Err }

// Terminal says retrying the same spec cannot help (package errclass).
func (e *RenderError) Terminal() bool { return true }

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

// Terminal says retrying cannot help (package errclass).
func (e *NotOwnedError) Terminal() bool { return true }

func (e *NotOwnedError) Error() string {
	if e.Owner.IsZero() {
		return fmt.Sprintf("helm release %s/%s exists and is not managed by any Application; add a take-over policy selecting it to adopt it", e.Namespace, e.Name)
	}
	return fmt.Sprintf("helm release %s/%s is owned by Application %s", e.Namespace, e.Name, e.Owner)
}
