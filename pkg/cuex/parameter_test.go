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
		warns    []string
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
			reason:   "a required property supplied by inputs is not missing",
			template: paramTemplate,
			props:    map[string]any{},
			supplied: []string{"image"},
		},
		{
			reason:   "unknown keys of an open struct are warnings",
			template: paramTemplate,
			props:    map[string]any{"image": "x", "imagePullPolicy": "Always"},
			warns:    []string{"imagePullPolicy: unknown property; allowed: cpu, image, labels, name, ports, replicas; the definition ignores it"},
		},
		{
			reason:   "unknown keys of a closed struct are errors",
			template: closedTemplate,
			props:    map[string]any{"image": "x", "imag": "y"},
			errs:     []string{"imag: unknown property; allowed: cmd, image"},
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
			assert.Equal(t, tc.warns, nilIfEmpty(render(t, res.Warnings)))
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
