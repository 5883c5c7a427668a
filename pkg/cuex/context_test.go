package cuex

import (
	"context"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestContextFields(t *testing.T) {
	cases := []struct {
		reason string
		text   string
		want   map[string]bool // nil: all of context
	}{
		{reason: "selections", text: "x: context.name\ny: context[\"appName\"]\nz: context.output.spec\n", want: map[string]bool{"name": true, "appName": true, "output": true}},
		{reason: "no use", text: "x: 1\n", want: map[string]bool{}},
		{reason: "a declaration of context is no use", text: "context: {name: string}\nx: context.name\n", want: map[string]bool{"name": true}},
		{reason: "a whole use", text: "x: context\n"},
		{reason: "a let binding of the whole", text: "let c = context\nx: c.components\n"},
		{reason: "a computed index", text: "k: \"name\"\nx: context[k]\n"},
		{reason: "a comprehension over it", text: "x: [for k, v in context {k}]\n"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			f, err := parser.ParseFile("t.cue", tc.text)
			require.NoError(t, err)
			assert.Equal(t, tc.want, contextFields(f))
		})
	}
}

// An evaluation fills only the context fields the template selects: a
// template not reading context.components evaluates the same with it
// left out, and one using the whole context still sees all of it.
func TestEvalFillsOnlySelectedContextFields(t *testing.T) {
	e := NewEngine()
	cctx := map[string]any{"name": "web", "components": []any{map[string]any{"name": "web", "type": "webservice"}}}
	eval := func(text string) cue.Value {
		tm, err := e.Compile(Source{Kind: "component", Name: "c"}, text)
		require.NoError(t, err)
		var out cue.Value
		require.NoError(t, e.Eval(context.Background(), tm, map[string]any{"context": cctx}, func(v cue.Value) error {
			out = v.LookupPath(cue.ParsePath("out"))
			return out.Err()
		}))
		return out
	}
	tm, err := e.Compile(Source{Kind: "component", Name: "c"}, "out: context.name\n")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"name": "web"}, tm.Context(cctx), "what the template's results depend on")
	v := eval("out: {n: context.name, has: context.components != _|_}\n")
	has, err := v.LookupPath(cue.ParsePath("has")).Bool()
	require.NoError(t, err)
	assert.True(t, has, "a selected field is filled")

	v = eval("out: len(context.components)\n")
	n, err := v.Int64()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)

	v = eval("out: context\n")
	assert.True(t, v.LookupPath(cue.ParsePath("components")).Exists(), "a whole use sees every field")
	assert.Len(t, cctx, 2, "the caller's context is not changed")
}
