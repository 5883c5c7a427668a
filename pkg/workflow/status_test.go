package workflow

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReadableMessage(t *testing.T) {
	cases := []struct {
		reason, in, want string
	}{
		{"plain message unchanged", `component "web" is not healthy yet`, `component "web" is not healthy yet`},
		{"empty", "", ""},
		{"provider error from cuex (input seen by a newcomer with a bad repoURL)",
			`function call error for apply: fetching chart simple from http://127.0.0.1:1: connection refused (value: #do: "component-apply" #provider: "oam" $params: { component: "chart" })`,
			`fetching chart simple from http://127.0.0.1:1: connection refused`},
		{"prefix kept",
			`step failed: function call error for apply: boom (value: {a: 1})`,
			`step failed: boom`},
		{"nested wrappings",
			`function call error for outer: function call error for inner: boom (value: {b: 2}) (value: {a: 1})`,
			`boom`},
		{"no value suffix", `function call error for apply: boom`, `boom`},
		{"no colon after path left alone", `function call error for apply`, `function call error for apply`},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, readableMessage(tc.in))
		})
	}
}
