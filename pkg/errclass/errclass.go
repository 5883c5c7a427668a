// Package errclass is the one place that decides whether retrying an error
// can help. A workflow step whose error is terminal fails at once instead of
// being retried with backoff; the same spec fails the same way again, so only
// a change to the Application (or a `workflow restart`) runs it again.
//
// An error is terminal when any error in its chain says so with a
// Terminal() bool method returning true (Helm's *RenderError and
// *NotOwnedError, tenancy's refusals, errors marked with Terminal, the
// sentinels made with Sentinel), or when the API server rejected the request
// itself: invalid, malformed, of a media type it does not take, or of a kind
// it does not serve. Everything else (timeouts, conflicts, unreachable
// clusters, a chart repository that does not answer) may pass and is
// retried. The API server answers a server-side apply of an object that
// does not match its kind's schema with an Internal Error ("failed to
// create typed patch object"); that one is terminal too.
package errclass

import (
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
)

// terminal is implemented by errors that know whether they are terminal.
type terminal interface{ Terminal() bool }

// marked is an error marked with Terminal.
type marked struct{ err error }

func (e *marked) Error() string  { return e.err.Error() }
func (e *marked) Unwrap() error  { return e.err }
func (e *marked) Terminal() bool { return true }

// Terminal marks err as one that retrying cannot fix (an object owned by
// someone else, a target that does not exist). Terminal(nil) is nil.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &marked{err: err}
}

// sentinel is a terminal error value to compare with errors.Is.
type sentinel struct{ msg string }

func (s *sentinel) Error() string  { return s.msg }
func (s *sentinel) Terminal() bool { return true }

// Sentinel returns a terminal error value with msg as its message, for
// package-level errors compared with errors.Is (helmspec.ErrChartNotFound).
func Sentinel(msg string) error { return &sentinel{msg: msg} }

// waiting is implemented by errors that name something outside oamflow
// the step waits for (a namespace someone is to create).
type waiting interface{ Waiting() bool }

// IsWaiting reports whether err says the step waits for something that is
// expected to appear by itself (a namespace created by hand, a namespace
// finishing its deletion): the step keeps waiting, with err as its
// message, instead of counting a failed attempt. A waiting error is
// never terminal. IsWaiting(nil) is false.
func IsWaiting(err error) bool {
	var w waiting
	return err != nil && errors.As(err, &w) && w.Waiting()
}

// IsTerminal reports whether retrying err is pointless (see the package
// documentation). IsTerminal(nil) is false.
func IsTerminal(err error) bool {
	if err == nil {
		return false
	}
	var t terminal
	if errors.As(err, &t) && t.Terminal() {
		return true
	}
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsUnsupportedMediaType(err) || meta.IsNoMatchError(err) ||
		isSchemaMismatch(err)
}

// isSchemaMismatch reports the API server's answer to a server-side apply
// of an object that does not match its kind's schema (a number where a
// string belongs): it answers 500 Internal Error, "failed to create typed
// patch object", although the request, not the server, is at fault.
func isSchemaMismatch(err error) bool {
	var se apierrors.APIStatus
	if !errors.As(err, &se) || !apierrors.IsInternalError(err) {
		return false
	}
	return strings.Contains(se.Status().Message, "failed to create typed patch object")
}
