package cuex

import (
	"context"
	"testing"

	"cuelang.org/go/cue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKubeVelaTemplatesCompile covers what KubeVela v1.11's definitions
// rely on when they are compiled: the provider packages' schemas, import
// names that are also field names, values known only at run time.
func TestKubeVelaTemplatesCompile(t *testing.T) {
	cases := []struct {
		reason   string
		kind     string
		text     string
		warnings []string
		// unprovided: what Unprovided says.
		unprovided []string
	}{
		{
			reason: "a step reads $returns of an action (vela/http's schema declares it)",
			kind:   "workflow-step",
			text: `import ("vela/http", "vela/builtin")
req: http.#HTTPDo & {$params: {method: "GET", url: parameter.url}}
if req.$returns.statusCode > 400 {
	fail: builtin.#Fail & {$params: message: "status \(req.$returns.statusCode)"}
}
parameter: url: string
`,
		},
		{
			reason: "an import named like a field of the template (vela/config and parameter.config)",
			kind:   "workflow-step",
			text: `import "vela/config"
deploy: config.#CreateConfig & {$params: parameter}
parameter: {
	name:      string
	namespace: *context.namespace | string
	config: {...}
}
`,
		},
		{
			reason: "the legacy op package has KubeVela's placement action",
			kind:   "workflow-step",
			text: `import "vela/op"
get: op.#GetPlacementsFromTopologyPolicies & {policies: parameter.topology}
apply: op.#Steps & {
	for p in get.placements {
		"\(p.cluster)": op.#Apply & {cluster: p.cluster, value: {kind: "ConfigMap"}}
	}
}
parameter: topology: [...string]
`,
		},
		{
			reason: "vela/query and vela/multicluster",
			kind:   "workflow-step",
			text: `import ("vela/query", "vela/multicluster")
collect: query.#CollectServiceEndpoints & {$params: app: {name: context.name, namespace: context.namespace}}
eps: [for ep in collect.$returns.list {ep.endpoint.port}]
deploy: multicluster.#Deploy & {$params: policies: []}
parameter: {}
`,
		},
		{
			reason: "a step using an action oamflow lacks still loads, with a warning naming it",
			kind:   "workflow-step",
			text: `import "vela/kube"
x: kube.#Nope & {$params: value: parameter}
parameter: {...}
`,
			warnings:   []string{`workflow-step "t": uses kube.#Nope, which oamflow's vela/kube does not provide: the step fails when it runs (at workflow-step t:2:4)`},
			unprovided: []string{`uses kube.#Nope, which oamflow's vela/kube does not provide`},
		},
		{
			reason: "a step importing a package oamflow lacks loads, with a warning",
			kind:   "workflow-step",
			text: `import "vela/gadget"
x: gadget.#Do & {}
parameter: {}
`,
			warnings:   []string{`workflow-step "t": imports vela/gadget, which oamflow does not provide: the step fails when it runs (at workflow-step t:1:8)`},
			unprovided: []string{`imports vela/gadget, which oamflow does not provide`},
		},
		{
			reason: "a component may import vela/helm (KubeVela's helmchart)",
			kind:   "component",
			text: `import "vela/helm"
_rendered: helm.#Render & {$params: chart: source: parameter.chart}
outputs: {for i, r in _rendered.$returns.resources {"r\(i)": r}}
parameter: chart: string
`,
		},
		{
			reason: "a top-level condition on a parameter is known only once it is filled",
			kind:   "trait",
			text: `if parameter.enabled {
	patch: metadata: labels: on: "yes"
}
parameter: enabled: *false | bool
`,
		},
		{
			reason: "status CUE that ranges over context.outputs compiles before the context is known",
			kind:   "custom status",
			text: `let igList = [for i in context.outputs if i.kind == "Ingress" {i}]
if len(igList) > 0 {
	message: "host: \(igList[0].spec.rules[0].host)"
}
`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			e := NewEngine()
			tmpl, err := e.Compile(Source{Kind: tc.kind, Name: "t"}, tc.text)
			require.NoError(t, err)
			assert.Equal(t, tc.warnings, nilIfEmpty(tmpl.Warnings()))
			assert.Equal(t, tc.unprovided, nilIfEmpty(tmpl.Unprovided()), "what the step's failure says")
		})
	}
}

func TestStatusWithRunTimeContext(t *testing.T) {
	e := NewEngine()
	tmpl, err := e.Compile(Source{Kind: "health policy", Name: "gateway"}, `let ig = [for i in context.outputs if i.kind == "Ingress" && i.metadata.name == context.name + parameter.suffix {i}]
isHealth: len(ig) > 0
`)
	require.NoError(t, err)
	fills := map[string]any{
		"context": map[string]any{"name": "web", "outputs": map[string]any{
			"ingress": map[string]any{"kind": "Ingress", "metadata": map[string]any{"name": "web-a"}},
			"service": map[string]any{"kind": "Service", "metadata": map[string]any{"name": "web-a"}},
		}},
		"parameter": map[string]any{"suffix": "-a"},
	}
	var healthy bool
	require.NoError(t, e.Eval(context.Background(), tmpl, fills, func(v cue.Value) error {
		var err error
		healthy, err = v.LookupPath(cue.ParsePath("isHealth")).Bool()
		return err
	}))
	assert.True(t, healthy)
}

func TestLegacyListArithmetic(t *testing.T) {
	cases := []struct {
		reason   string
		kind     string
		text     string
		fills    map[string]any
		path     string
		want     string // JSON of path
		warnings int
	}{
		{
			reason: "lists known when compiling: rewritten then",
			kind:   "trait", text: "a: [1]\nb: [2, 3]\nall: a + b\nrep: [0] * 2\nparameter: {}\n",
			path: "all", want: `[1,2,3]`, warnings: 2,
		},
		{
			reason: "a chain of additions becomes one concatenation",
			kind:   "policy", text: "a: [1]\nall: a + [2] + a\nparameter: {}\n",
			path: "all", want: `[1,2,1]`, warnings: 1,
		},
		{
			reason: "lists known only with the context: rewritten when evaluating",
			kind:   "component", text: "base: [{name: \"APP\", value: context.name}]\nextra: [{name: \"X\", value: \"y\"}]\nenvList: base + extra\noutput: {kind: \"Pod\", spec: env: envList}\nparameter: {}\n",
			fills: map[string]any{"context": map[string]any{"name": "web"}, "parameter": map[string]any{}},
			path:  "output.spec.env", want: `[{"name":"APP","value":"web"},{"name":"X","value":"y"}]`, warnings: 1,
		},
		{
			reason: "a field named list does not capture list.Concat",
			kind:   "trait", text: "list: [1]\nall: list + [2]\nparameter: {}\n",
			path: "all", want: `[1,2]`, warnings: 1,
		},
		{
			reason: "string and number addition is left alone",
			kind:   "trait", text: "s: \"a\" + \"b\"\nn: 1 + 2\nparameter: {}\n",
			path: "s", want: `"ab"`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			e := NewEngine()
			src := Source{Kind: tc.kind, Name: "legacy"}
			tmpl, err := e.Compile(src, tc.text)
			require.NoError(t, err)
			var got []byte
			require.NoError(t, e.Eval(context.Background(), tmpl, tc.fills, func(v cue.Value) error {
				x := v.LookupPath(cue.ParsePath(tc.path))
				if err := x.Validate(cue.Concrete(true)); err != nil {
					return err
				}
				got, err = x.MarshalJSON()
				return err
			}))
			assert.JSONEq(t, tc.want, string(got))
			again, err := e.Compile(src, tc.text)
			require.NoError(t, err)
			assert.Len(t, again.Warnings(), tc.warnings, "%v", again.Warnings())
			for _, w := range again.Warnings() {
				assert.Contains(t, w, "list arithmetic at "+tc.kind+" legacy:")
			}
		})
	}
}

func TestProviderActionsWhileRendering(t *testing.T) {
	e := NewEngine()
	tmpl, err := e.Compile(Source{Kind: "component", Name: "helmchart"}, `import "vela/helm"
_rendered: helm.#Render & {$params: chart: source: parameter.chart}
output: _rendered.$returns.resources[0]
parameter: chart: string
`)
	require.NoError(t, err)
	assert.Equal(t, []string{"helm.#Render"}, tmpl.Actions())
	err = e.Eval(context.Background(), tmpl, map[string]any{"parameter": map[string]any{"chart": "redis"}}, func(v cue.Value) error {
		return v.LookupPath(cue.ParsePath("output")).Validate(cue.Concrete(true))
	})
	require.Error(t, err)
	assert.Equal(t, `component "helmchart": uses helm.#Render, which oamflow does not run while rendering a component (provider actions are not supported by oamflow outside workflow steps)`, err.Error())

	step, err := e.Compile(Source{Kind: "workflow-step", Name: "s"}, "import \"vela/kube\"\nx: kube.#Read & {$params: value: parameter}\nparameter: {...}\n")
	require.NoError(t, err)
	err = e.Eval(context.Background(), step, nil, func(v cue.Value) error {
		return v.LookupPath(cue.ParsePath("x.$returns.value")).Validate(cue.Concrete(true))
	})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "not supported", "a step's engine runs its actions: no such note")
}
