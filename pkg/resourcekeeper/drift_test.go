package resourcekeeper

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestContains(t *testing.T) {
	cases := []struct {
		reason    string
		want, got any
		equal     bool
	}{
		{reason: "equal scalars", want: "a", got: "a", equal: true},
		{reason: "int and float of the same value", want: int64(3), got: float64(3), equal: true},
		{reason: "different numbers", want: int64(3), got: int64(2)},
		{reason: "quantities of the same amount", want: "0.5", got: "500m", equal: true},
		{reason: "quantities of different amounts", want: "1Gi", got: "1G"},
		{reason: "plain strings", want: "web", got: "api"},
		{reason: "extra live fields are fine", want: map[string]any{"a": "1"}, got: map[string]any{"a": "1", "b": "2"}, equal: true},
		{reason: "a removed field is drift", want: map[string]any{"a": "1", "b": "2"}, got: map[string]any{"a": "1"}},
		{reason: "empty desired map matches an absent field", want: map[string]any{"a": map[string]any{}}, got: map[string]any{}, equal: true},
		{reason: "null desired matches anything", want: map[string]any{"a": nil}, got: map[string]any{"a": "x"}, equal: true},
		{reason: "scalar lists must be equal", want: []any{"a", "b"}, got: []any{"a", "b", "c"}},
		{reason: "scalar lists in order", want: []any{"a", "b"}, got: []any{"b", "a"}},
		{
			reason: "object lists match by name, extra live items allowed",
			want:   []any{map[string]any{"name": "main", "image": "nginx"}},
			got:    []any{map[string]any{"name": "sidecar"}, map[string]any{"name": "main", "image": "nginx", "imagePullPolicy": "Always"}},
			equal:  true,
		},
		{
			reason: "object lists: a changed item is drift",
			want:   []any{map[string]any{"name": "main", "image": "nginx"}},
			got:    []any{map[string]any{"name": "main", "image": "httpd"}},
		},
		{
			reason: "object lists without names match by content",
			want:   []any{map[string]any{"containerPort": int64(80)}},
			got:    []any{map[string]any{"containerPort": int64(80), "protocol": "TCP"}},
			equal:  true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.equal, contains(tc.want, tc.got))
		})
	}
}
