package cuex

import (
	"context"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestContextPaths(t *testing.T) {
	live := map[string]any{
		"name": "web", "appName": "shop", "components": []any{"web"},
		"output": map[string]any{
			"metadata": map[string]any{"name": "web", "generation": 2, "managedFields": []any{"big"}},
			"spec":     map[string]any{"replicas": 2, "template": map[string]any{"spec": "big"}},
			"status":   map[string]any{"readyReplicas": 2, "conditions": []any{"c"}},
		},
	}
	cases := []struct {
		reason string
		text   string
		want   map[string]any // what is filled of live; nil: all of it
	}{
		{reason: "top-level selections", text: "x: context.name\ny: context[\"appName\"]\n", want: map[string]any{"name": "web", "appName": "shop"}},
		{reason: "nested selections keep only the fields named",
			text: "isHealth: context.output.status.readyReplicas == context.output.spec.replicas && context.output.metadata.generation > 0\n",
			want: map[string]any{"output": map[string]any{
				"metadata": map[string]any{"generation": 2}, "spec": map[string]any{"replicas": 2}, "status": map[string]any{"readyReplicas": 2}}}},
		{reason: "a value used whole keeps all under it, whatever else is selected below",
			text: "s: context.output.status\nr: context.output.status.readyReplicas\n",
			want: map[string]any{"output": map[string]any{"status": map[string]any{"readyReplicas": 2, "conditions": []any{"c"}}}}},
		{reason: "a computed index keeps the value it indexes", text: "k: \"spec\"\nx: context.output[k]\n", want: map[string]any{"output": live["output"]}},
		{reason: "a let binding keeps the value bound", text: "let st = context.output.status\nx: st.readyReplicas\n",
			want: map[string]any{"output": map[string]any{"status": map[string]any{"readyReplicas": 2, "conditions": []any{"c"}}}}},
		{reason: "interpolations are selections", text: "m: \"\\(context.output.metadata.name) ready\"\n",
			want: map[string]any{"output": map[string]any{"metadata": map[string]any{"name": "web"}}}},
		{reason: "a missing field is left missing", text: "x: context.output.status.nothing != _|_\n", want: map[string]any{"output": map[string]any{"status": map[string]any{}}}},
		{reason: "a field named context of something else is no reference", text: "p: {context: 1}\nx: p.context\n", want: map[string]any{}},
		{reason: "no use", text: "x: 1\n", want: map[string]any{}},
		{reason: "a declaration of context: its fields may refer to each other by scope", text: "context: {name: string, n: name}\nx: context.n\n"},
		{reason: "a whole use", text: "x: context\n"},
		{reason: "a let binding of the whole", text: "let c = context\nx: c.components\n"},
		{reason: "a computed index at the top", text: "k: \"name\"\nx: context[k]\n"},
		{reason: "a comprehension over it", text: "x: [for k, v in context {k}]\n"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			f, err := parser.ParseFile("t.cue", tc.text)
			require.NoError(t, err)
			p := contextPaths(f)
			if tc.want == nil {
				assert.Nil(t, p, "all of context is filled")
				return
			}
			require.NotNil(t, p)
			assert.Equal(t, tc.want, p.prune(live))
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
