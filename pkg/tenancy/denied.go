package tenancy

import (
	"errors"
	"fmt"
	"regexp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// DeniedError is a request the Application's identity was not allowed to
// make (the API server answered Forbidden). It is the Application's (or
// its namespace admin's) to fix: retrying as the same identity is refused
// the same way. errors.Is/As and apierrors.IsForbidden see the API
// server's error through it.
type DeniedError struct {
	Identity Identity
	// Verb, Resource (with ".group" when not core) and Namespace ("" at
	// the cluster scope) of the refused request, when the API server's
	// message says them (RBAC's does); else Message is the whole message.
	Verb, Resource, Namespace string
	Message                   string
	Err                       error
}

func (e *DeniedError) Error() string {
	var s string
	switch {
	case e.Verb != "" && e.Namespace != "":
		s = fmt.Sprintf("%s cannot %s %s in namespace %s", e.Identity, e.Verb, e.Resource, e.Namespace)
	case e.Verb != "":
		s = fmt.Sprintf("%s cannot %s %s at the cluster scope", e.Identity, e.Verb, e.Resource)
	default:
		s = fmt.Sprintf("%s was refused: %s", e.Identity, e.Message)
	}
	if e.Identity.Source == FromDefault {
		s += fmt.Sprintf(" (the namespace's default ServiceAccount %q: does it exist, and is it bound to a Role that allows this?)", e.Identity.Name)
	}
	return s
}

func (e *DeniedError) Unwrap() error { return e.Err }

// rbacDenial matches the authorizer's part of a Forbidden message:
// `User "u" cannot create resource "configmaps" in API group "" in the namespace "team-b"`.
var rbacDenial = regexp.MustCompile(`cannot (\S+) resource "([^"]+)" in API group "([^"]*)"(?: in the namespace "([^"]+)")?`)

// Denied returns err as a *DeniedError of id when it is a Forbidden answer
// to a request made as a ServiceAccount; any other error (and nil) is
// returned unchanged. Requests made as the controller keep the API
// server's error (single-tenant mode behaves as before).
func Denied(id Identity, err error) error {
	if err == nil || id.IsController() || !apierrors.IsForbidden(err) {
		return err
	}
	var de *DeniedError
	if errors.As(err, &de) {
		return err
	}
	out := &DeniedError{Identity: id, Err: err}
	var se *apierrors.StatusError
	msg := err.Error()
	if errors.As(err, &se) {
		msg = se.ErrStatus.Message
	}
	if m := rbacDenial.FindStringSubmatch(msg); m != nil {
		out.Verb, out.Resource, out.Namespace = m[1], m[2], m[4]
		if m[3] != "" {
			out.Resource += "." + m[3]
		}
	} else {
		out.Message = msg
	}
	return out
}

// Terminal says retrying cannot help until the RoleBinding or the
// Application changes (package errclass).
func (e *DeniedError) Terminal() bool { return true }

// Terminal says retrying cannot help (package errclass).
func (e *ScopeError) Terminal() bool { return true }

// IsRefusal reports whether err is the Application's lack of rights: a
// *DeniedError or a *ScopeError (anywhere in its chain). Such errors fail
// a workflow step at once.
func IsRefusal(err error) bool {
	var de *DeniedError
	var se *ScopeError
	return errors.As(err, &de) || errors.As(err, &se)
}
