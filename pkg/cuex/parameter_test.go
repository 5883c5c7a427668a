package cuex

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const paramTemplate = `
parameter: {
	image:     string
	replicas:  *1 | int & >=0
	name:      *context.name | string
	ports?: [...{port: int, protocol: *"TCP" | "UDP"}]
	labels?: [string]: string
	cpu?: string
}
`

const refTemplate = `
#Port: int & >=1 & <=65535
parameter: {
	port: #Port
}
`

const closedTemplate = `
parameter: close({
	image: string
	cmd?: [...string]
})
`

func render(t *testing.T, fes []FieldError) []string {
	t.Helper()
	out := make([]string, len(fes))
	for i, fe := range fes {
		out[i] = strings.Join(fe.Path, ".") + ": " + fe.Message
	}
	return out
}

func TestCheckParameter(t *testing.T) {
	e := NewEngine()
	cases := []struct {
		reason   string
		template string
		props    map[string]any
		supplied []string
		errs     []string
		pending  []string
	}{
		{
			reason:   "valid properties give no errors; defaults may come from context",
			template: paramTemplate,
			props:    map[string]any{"image": "nginx", "ports": []any{map[string]any{"port": int64(80)}}},
		},
		{
			reason:   "every problem is reported at once",
			template: paramTemplate,
			props:    map[string]any{"replicas": "x", "ports": []any{map[string]any{"port": "80"}}, "labels": map[string]any{"a": int64(1)}},
			errs: []string{
				`image: missing required property (expected string)`,
				`labels.a: expected string, got int 1`,
				`ports.0.port: expected int, got string "80"`,
				`replicas: expected int & >=0, got string "x"`,
			},
		},
		{
			reason:   "a required property supplied by inputs or override policies is not missing but pending",
			template: paramTemplate,
			props:    map[string]any{},
			supplied: []string{"image"},
			pending:  []string{"image: missing until supplied"},
		},
		{
			reason:   "a key the parameter does not list is an error, with the field it is most likely a typo of",
			template: paramTemplate,
			props:    map[string]any{"image": "x", "imag": "y", "Replicas": int64(2)},
			errs:     []string{"Replicas: unknown property; did you mean replicas?", "imag: unknown property; did you mean image?"},
		},
		{
			reason:   "without a close field the message lists the declared ones",
			template: paramTemplate,
			props:    map[string]any{"image": "x", "imagePullPolicy": "Always"},
			errs:     []string{"imagePullPolicy: unknown property; allowed: cpu, image, labels, name, ports, replicas"},
		},
		{
			reason:   "nested structs that list their fields are checked too, list elements included",
			template: paramTemplate,
			props:    map[string]any{"image": "x", "ports": []any{map[string]any{"port": int64(80), "protocl": "UDP"}}},
			errs:     []string{"ports.0.protocl: unknown property; did you mean protocol?"},
		},
		{
			// KubeVela's volumes trait declares claimName only for
			// type "pvc".
			reason: "a field the schema declares under a condition on the data is known (whether the condition holds or not)",
			template: `parameter: volumes: [...{
	name: string
	type: *"emptyDir" | "pvc"
	if type == "pvc" {claimName: string}
}]
`,
			props: map[string]any{"volumes": []any{
				map[string]any{"name": "a", "type": "pvc", "claimName": "c"},
				map[string]any{"name": "b", "claimNam": "c"},
			}},
			errs: []string{"volumes.1.claimNam: unknown property; allowed: name, type"},
		},
		{
			reason:   "unknown keys of a closed struct are errors",
			template: closedTemplate,
			props:    map[string]any{"image": "x", "imag": "y"},
			errs:     []string{"imag: unknown property; did you mean image?"},
		},
		{
			reason:   "open schemas stay open: `...`, a pattern constraint, a struct without declared fields",
			template: "parameter: {a: {x?: int, ...}, b: [string]: string, c: {}, d: _}\n",
			props: map[string]any{
				"a": map[string]any{"y": int64(1)}, "b": map[string]any{"k": "v"},
				"c": map[string]any{"any": "thing"}, "d": map[string]any{"e": int64(1)},
			},
		},
		{
			// KubeVela's raw component is `output: parameter` with
			// `parameter: {}`; oamflow used to warn that its properties
			// were ignored.
			reason:   "a template using parameter as a whole value passes every key through",
			template: "output: parameter\nparameter: {apiVersion: string, kind: string}\n",
			props:    map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"a": "b"}},
		},
		{
			reason: "a part of parameter used as a whole value passes its keys through; its siblings are still checked",
			template: `output: spec: {
	resources: parameter.resources
	if parameter.mode != _|_ {mode: parameter.mode}
	for c in parameter.containers {c}
}
parameter: {resources?: {cpu?: string}, containers: [...{name: string}], mode?: string, image?: string}
`,
			props: map[string]any{
				"resources":  map[string]any{"cpu": "1", "memory": "1Gi"},
				"containers": []any{map[string]any{"name": "a", "image": "b"}},
				"imag":       "x",
			},
			errs: []string{"imag: unknown property; did you mean image?"},
		},
		{
			reason:   "only looking at a value (a comparison, len, a for source) does not pass its keys through",
			template: "output: {if parameter.r != _|_ {n: len(parameter.r)}, for k, v in parameter.r {(k): v.a}}\nparameter: r?: [string]: {a: int}\n",
			props:    map[string]any{"r": map[string]any{"x": map[string]any{"a": int64(1), "b": int64(2)}}},
			errs:     []string{"r.x.b: unknown property; did you mean a?"},
		},
		{
			reason:   "a schema that references a definition is shown resolved",
			template: refTemplate,
			props:    map[string]any{"port": "80"},
			errs:     []string{`port: expected uint16 & >=1, got string "80"`},
		},
		{
			reason:   "bounds are checked",
			template: paramTemplate,
			props:    map[string]any{"image": "x", "replicas": int64(-1)},
			errs:     []string{"replicas: expected int & >=0, got int -1"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			tmpl, err := e.Compile(Source{Kind: "component", Name: "test"}, tc.template)
			require.NoError(t, err)
			res, err := e.CheckParameter(context.Background(), tmpl, tc.props, map[string]any{"name": "c1"}, tc.supplied)
			require.NoError(t, err)
			got := render(t, res.Errors)
			require.Len(t, got, len(tc.errs), "errors: %v", got)
			for i := range got {
				assert.True(t, strings.HasPrefix(got[i], tc.errs[i]), "got %q want prefix %q", got[i], tc.errs[i])
			}
			assert.Equal(t, tc.pending, nilIfEmpty(render(t, res.Pending)))
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestProviderImports(t *testing.T) {
	e := NewEngine()
	src := `import (
	"vela/kube"
	"strings"
	"vela/builtin"
)

apply: kube.#Apply & {$params: value: {metadata: name: strings.ToLower(parameter.name)}}
wait: builtin.#ConditionalWait & {$params: continue: apply.$returns.value.status != _|_}
parameter: {name: string, timeout?: string}
`
	_, err := e.Compile(Source{Kind: "trait", Name: "s"}, src)
	require.Error(t, err, "a trait may not import the workflow packages")
	tmpl, err := e.Compile(Source{Kind: "workflow-step", Name: "s"}, src)
	require.NoError(t, err)
	assert.Empty(t, tmpl.Warnings())
	res, err := e.CheckParameter(context.Background(), tmpl, map[string]any{"timeout": int64(3)}, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"name: missing required property (expected string)", `timeout: expected string, got int 3`}, trimDetails(render(t, res.Errors)))
}

func trimDetails(s []string) []string {
	for i := range s {
		if j := strings.Index(s[i], " ("); j > 0 && strings.Contains(s[i], "expected string, got") {
			s[i] = s[i][:j]
		}
	}
	return s
}
