package cuex

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"cuelang.org/go/cue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompileCachesByContent(t *testing.T) {
	e := NewEngine()
	src := Source{Kind: "trait", Name: "a"}
	t1, err := e.Compile(src, "parameter: x: int\n")
	require.NoError(t, err)
	t2, err := e.Compile(src, "parameter: x: int\n")
	require.NoError(t, err)
	assert.Same(t, t1, t2, "same content, same compiled template")
	t3, err := e.Compile(Source{Kind: "trait", Name: "b"}, "parameter: x: int\n")
	require.NoError(t, err)
	assert.Equal(t, t1.Hash(), t3.Hash())
	assert.Equal(t, "b", t3.Source().Name, "a shared template keeps its own name for errors")
}

func TestCompileErrors(t *testing.T) {
	e := NewEngine()
	cases := []struct {
		reason string
		src    Source
		text   string
		want   string
	}{
		{
			reason: "syntax errors carry the file position, mapped past the template block",
			src:    Source{Kind: "component", Name: "web", File: "defs/web.cue", LineOffset: 10},
			text:   "output: {\n\tkind: \"x\" +\n}\n",
			want:   `component "web": expected operand, found '}' (at defs/web.cue:13:1)`,
		},
		{
			reason: "a trait may import what KubeVela's workload compiler serves, not the workflow packages",
			src:    Source{Kind: "trait", Name: "t"},
			text:   "import \"vela/op\"\nx: op.#Apply\n",
			want:   `trait "t": imports vela/op, which trait templates cannot import (they may import vela/kube, vela/http, vela/base64, vela/cue, vela/config, vela/helm and CUE's standard library)`,
		},
		{
			reason: "status CUE may import only the standard library",
			src:    Source{Kind: "health policy", Name: "t"},
			text:   "import \"vela/kube\"\nx: kube.#Apply\nisHealth: true\n",
			want:   `health policy "t": imports vela/kube, which is not a CUE standard-library package (provider packages are for definition templates)`,
		},
		{
			reason: "a component's action that its package lacks is an error naming it",
			src:    Source{Kind: "component", Name: "c", File: "c.cue", LineOffset: 4},
			text:   "import \"vela/kube\"\n\noutput: kube.#Nope\n",
			want:   `component "c": vela/kube has no #Nope (at c.cue:7:9)`,
		},
		{
			reason: "CUE's tool packages are refused, even to a workflow step: a definition is data",
			src:    Source{Kind: "workflow-step", Name: "s", File: "s.cue"},
			text:   "import (\n\t\"strings\"\n\t\"tool/exec\"\n\tf \"tool/file\"\n)\nx: strings.ToUpper(\"a\")\n",
			want: `workflow-step "s": imports "tool/exec", which is refused: CUE's tool packages run commands, read and write files, make HTTP requests and read the environment, and a definition is data (use a workflow step's provider actions instead) (at s.cue:3:2)` + "\n" +
				`workflow-step "s": imports "tool/file", which is refused: CUE's tool packages run commands, read and write files, make HTTP requests and read the environment, and a definition is data (use a workflow step's provider actions instead) (at s.cue:4:2)`,
		},
		{
			reason: "the bare tool package is refused too",
			src:    Source{Kind: "custom status", Name: "s"},
			text:   "import \"tool\"\nmessage: \"x\"\n",
			want:   `custom status "s": imports "tool", which is refused: CUE's tool packages run commands, read and write files, make HTTP requests and read the environment, and a definition is data (use a workflow step's provider actions instead) (at custom status s:1:8)`,
		},
		{
			reason: "oversized sources are refused",
			src:    Source{Kind: "trait", Name: "big"},
			text:   "x: \"" + strings.Repeat("a", 2<<20) + "\"\n",
			want:   `trait "big": CUE source is 2097158 bytes, over the limit of 1048576`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			_, err := e.Compile(tc.src, tc.text)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

func TestEvalErrorsNameDefinitionPathValuesAndPosition(t *testing.T) {
	e := NewEngine()
	tm, err := e.Compile(Source{Kind: "trait", Name: "scaler", File: "scaler.cue", LineOffset: 5}, "parameter: replicas: int\npatch: spec: replicas: parameter.replicas & 3\n")
	require.NoError(t, err)
	err = e.Eval(context.Background(), tm, map[string]any{"parameter": map[string]any{"replicas": int64(2)}}, func(v cue.Value) error {
		return Translate(tm.Source(), v.LookupPath(cue.ParsePath("patch")).Validate(), "")
	})
	require.Error(t, err)
	assert.Equal(t, `trait "scaler": patch.spec.replicas: conflicting values 2 and 3 (at scaler.cue:7:45)`, err.Error())
}

func TestCompileTimeoutIsRememberedForAWhile(t *testing.T) {
	e := NewEngine(WithLimits(Limits{Timeout: 150 * time.Millisecond}))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e.now = func() time.Time { return now }
	slow := `import "list"
n: len([for i in list.Range(0, 4000, 1) for j in list.Range(0, 4000, 1) if i*j == -1 {i}])
`
	start := time.Now()
	_, err := e.Compile(Source{Kind: "component", Name: "spinner"}, slow)
	require.Error(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
	var ce *Error
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "spinner", ce.Source.Name, "the error names the definition")
	assert.Contains(t, err.Error(), "did not finish within 150ms")
	assert.ErrorIs(t, err, ErrTimeout)

	// Remembered: no second attempt while it is fresh.
	start = time.Now()
	_, err = e.Compile(Source{Kind: "component", Name: "spinner"}, slow)
	require.Error(t, err)
	assert.Less(t, time.Since(start), 100*time.Millisecond)
	// The same CUE under another name (maybe another namespace's
	// definition): remembered too, and said of that name only.
	_, err = e.Compile(Source{Kind: "component", Name: "twin"}, slow)
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "twin", ce.Source.Name)
	assert.NotContains(t, err.Error(), "spinner")
	assert.ErrorIs(t, err, ErrTimeout)

	// The engine still works for other templates.
	ok, err := e.Compile(Source{Kind: "component", Name: "fine"}, "x: 1 + 1\n")
	require.NoError(t, err)
	require.NoError(t, e.Eval(context.Background(), ok, nil, func(v cue.Value) error {
		n, err := v.LookupPath(cue.ParsePath("x")).Int64()
		assert.Equal(t, int64(2), n)
		return err
	}))

	// Forgotten after compileRetry: a timeout of a busy process does not
	// make the definition unusable for good.
	now = now.Add(compileRetry)
	require.Len(t, e.failed, 1)
	for k := range e.failed {
		assert.NoError(t, e.failedLocked(k, Source{}))
	}
	assert.Empty(t, e.failed)
}

func TestEvalTimeoutIsTheInputsNotTheTemplates(t *testing.T) {
	// A budget a loaded machine (the abandoned n=5000 evaluation still
	// burning a core) cannot blow for n=3; n=5000 needs minutes.
	e := NewEngine(WithLimits(Limits{Timeout: time.Second}))
	tm, err := e.Compile(Source{Kind: "component", Name: "grid"}, `import "list"
parameter: n: int
n: len([for i in list.Range(0, parameter.n, 1) for j in list.Range(0, parameter.n, 1) if i*j == -1 {i}])
`)
	require.NoError(t, err, "with parameter open the template is cheap")
	eval := func(n int64) (int64, error) {
		var got int64
		err := e.Eval(context.Background(), tm, map[string]any{"parameter": map[string]any{"n": n}}, func(v cue.Value) error {
			var err error
			got, err = v.LookupPath(cue.ParsePath("n")).Int64()
			return err
		})
		return got, err
	}
	_, err = eval(5000)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `component "grid": evaluation did not finish within 1s`)
	assert.ErrorIs(t, err, ErrTimeout)

	// The same template with a normal input still evaluates, from the old
	// Template and from a fresh Compile.
	got, err := eval(3)
	require.NoError(t, err, "a timeout of one input must not mark the template as failing")
	assert.Equal(t, int64(0), got)
	again, err := e.Compile(Source{Kind: "component", Name: "grid"}, tm.text)
	require.NoError(t, err, "compiling the template again must not report the other input's timeout")
	require.NoError(t, e.Eval(context.Background(), again, map[string]any{"parameter": map[string]any{"n": int64(2)}}, func(cue.Value) error { return nil }))
	assert.Empty(t, e.failed)
}

func TestEvalRecoversPanics(t *testing.T) {
	e := NewEngine()
	tm, err := e.Compile(Source{Kind: "component", Name: "p"}, "x: 1\n")
	require.NoError(t, err)
	err = e.Eval(context.Background(), tm, nil, func(cue.Value) error { panic("boom") })
	require.Error(t, err)
	assert.Contains(t, err.Error(), `component "p": CUE evaluation panicked: boom`)
	require.NoError(t, e.Eval(context.Background(), tm, nil, func(cue.Value) error { return nil }), "a panic of one evaluation is not the template's")
}

func TestEncodeKeepsNumberKinds(t *testing.T) {
	s, err := EncodeCUE(map[string]any{"i": int64(2), "f": 2.0, "g": -1.5, "s": `a\(b)"`, "n": nil, "l": []any{true}})
	require.NoError(t, err)
	assert.Equal(t, `{"f":2.0,"g":-1.5,"i":2,"l":[true],"n":null,"s":"a\\(b)\""}`, s)
}

// TestFillOrdersFieldsAsTheTemplate: filled objects list their fields in
// the template's declaration order, then the undeclared ones sorted, so
// json.Marshal of a parameter prints what KubeVela prints (nocalhost).
func TestFillOrdersFieldsAsTheTemplate(t *testing.T) {
	e := NewEngine()
	tm, err := e.Compile(Source{Kind: "trait", Name: "order"}, `
import "encoding/json"
out: json.Marshal(parameter)
parameter: {
	run: [...string]
	limits: {memory: string, cpu: string}
	items: [...{name: string, value: string}]
	more?: {...}
}`)
	require.NoError(t, err)
	cases := []struct {
		reason string
		params map[string]any
		want   string
	}{
		{
			reason: "declared fields in declaration order, nested and in list items",
			params: map[string]any{"limits": map[string]any{"cpu": "1", "memory": "1Gi"}, "run": []any{"sh"},
				"items": []any{map[string]any{"value": "v", "name": "n"}}},
			want: `{"run":["sh"],"limits":{"memory":"1Gi","cpu":"1"},"items":[{"name":"n","value":"v"}]}`,
		},
		{
			reason: "fields of an open struct the schema does not name are sorted",
			params: map[string]any{"run": []any{}, "limits": map[string]any{"cpu": "1", "memory": "1"}, "items": []any{},
				"more": map[string]any{"b": 1, "a": 2}},
			want: `{"run":[],"limits":{"memory":"1","cpu":"1"},"items":[],"more":{"a":2,"b":1}}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			var got string
			require.NoError(t, e.Eval(context.Background(), tm, map[string]any{"parameter": tc.params}, func(v cue.Value) error {
				var err error
				got, err = v.LookupPath(cue.ParsePath("out")).String()
				return err
			}))
			assert.Equal(t, tc.want, got)
		})
	}
}
