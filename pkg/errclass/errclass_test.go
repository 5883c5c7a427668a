package errclass

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

type ownTerminal struct{ terminal bool }

func (e ownTerminal) Error() string  { return "own" }
func (e ownTerminal) Terminal() bool { return e.terminal }

func TestIsTerminal(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	notFound := Sentinel("chart not found")
	cases := []struct {
		reason string
		err    error
		want   bool
	}{
		{reason: "no error is not terminal", err: nil, want: false},
		{reason: "a plain error may pass", err: errors.New("connection refused"), want: false},
		{reason: "an error marked with Terminal is terminal", err: Terminal(errors.New("owned by Application b/x")), want: true},
		{reason: "a marked error stays terminal when wrapped", err: fmt.Errorf("step apply: %w", Terminal(errors.New("x"))), want: true},
		{reason: "a sentinel is terminal, wrapped too", err: fmt.Errorf("HelmRelease default/x: %w", notFound), want: true},
		{reason: "an error saying it is terminal is", err: fmt.Errorf("w: %w", ownTerminal{terminal: true}), want: true},
		{reason: "an error saying it is not terminal is not", err: ownTerminal{terminal: false}, want: false},
		{reason: "the API server's Invalid is terminal", err: apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "x", field.ErrorList{field.Required(field.NewPath("data"), "")}), want: true},
		{reason: "the API server's BadRequest is terminal", err: apierrors.NewBadRequest("bad"), want: true},
		{reason: "a kind the API server does not serve is terminal", err: &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "x.io", Kind: "Gadget"}}, want: true},
		{reason: "a server-side apply of an object that does not match its schema is terminal (the API server answers 500)", err: fmt.Errorf("applying ConfigMap a/b: %w",
			apierrors.NewInternalError(errors.New("failed to create typed patch object (a/b; /v1, Kind=ConfigMap): .data.x: expected string, got &value.valueUnstructured{Value:1}"))), want: true},
		{reason: "another internal error is retried", err: apierrors.NewInternalError(errors.New("etcdserver: leader changed")), want: false},
		{reason: "a conflict is retried", err: apierrors.NewConflict(gr, "web", errors.New("changed")), want: false},
		{reason: "a timeout is retried", err: apierrors.NewTimeoutError("slow", 1), want: false},
		{reason: "Forbidden alone is retried (RBAC may be fixed; tenancy's refusals say they are terminal)", err: apierrors.NewForbidden(gr, "web", errors.New("no")), want: false},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, IsTerminal(tc.err), tc.reason)
		})
	}
}

func TestTerminalNil(t *testing.T) {
	assert.NoError(t, Terminal(nil), "Terminal(nil) is nil")
}

func TestSentinelIdentity(t *testing.T) {
	a := Sentinel("chart not found")
	assert.ErrorIs(t, fmt.Errorf("x: %w", a), a, "a sentinel is found with errors.Is")
	assert.Equal(t, "chart not found", a.Error())
	assert.NotErrorIs(t, a, Sentinel("chart not found"), "two sentinels are different errors, whatever their text")
}

type awaited struct{ waiting bool }

func (e awaited) Error() string { return "namespace team-x missing" }
func (e awaited) Waiting() bool { return e.waiting }

func TestIsWaiting(t *testing.T) {
	gr := schema.GroupResource{Resource: "namespaces"}
	cases := []struct {
		reason   string
		err      error
		waiting  bool
		terminal bool
	}{
		{reason: "no error does not wait", err: nil},
		{reason: "an error saying it waits does, wrapped too", err: fmt.Errorf("cluster east: %w", awaited{waiting: true}), waiting: true},
		{reason: "an error saying it does not wait does not", err: awaited{waiting: false}},
		{reason: "the API server's NotFound of a namespace is retried, not awaited (only the keeper knows it may appear)", err: apierrors.NewNotFound(gr, "team-x")},
		{reason: "a conflict is neither awaited nor terminal", err: apierrors.NewConflict(gr, "team-x", errors.New("changed"))},
		{reason: "Invalid is terminal, not awaited", err: apierrors.NewInvalid(schema.GroupKind{Kind: "Namespace"}, "Team X", nil), terminal: true},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.waiting, IsWaiting(tc.err), "IsWaiting")
			assert.Equal(t, tc.terminal, IsTerminal(tc.err), "IsTerminal")
		})
	}
}
