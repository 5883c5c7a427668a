package render_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/pkg/render"
)

// outputDefs: a component whose template sets no name or namespace, with
// an optional auxiliary Service, and traits that copy the identity they
// see, add a Service or a ConfigMap.
var outputDefs = map[string]string{
	"components/box.cue": `box: {
	type: "component"
	attributes: workload: type: "autodetects.core.oam.dev"
}
template: {
	output: {apiVersion: "apps/v1", kind: "Deployment", spec: replicas: 1}
	if parameter.svc {
		outputs: svc: {apiVersion: "v1", kind: "Service", metadata: name: context.name}
	}
	parameter: svc: *false | bool
}
`,
	"traits/who.cue": `who: {
	type: "trait"
	attributes: appliesToWorkloads: ["*"]
}
template: {
	outputs: seen: {
		apiVersion: "v1"
		kind: "ConfigMap"
		metadata: name: "seen"
		data: {
			name: context.output.metadata.name
			namespace: context.output.metadata.namespace
			if context.outputs.svc != _|_ {
				svc: context.outputs.svc.metadata.namespace
			}
		}
	}
	parameter: {}
}
`,
	"traits/svc.cue": `svc: {
	type: "trait"
	attributes: appliesToWorkloads: ["*"]
}
template: {
	outputs: service: {apiVersion: "v1", kind: "Service", metadata: name: parameter.name}
	parameter: name: string
}
`,
	"traits/cm.cue": `cm: {
	type: "trait"
	attributes: appliesToWorkloads: ["*"]
}
template: {
	outputs: service: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parameter.name}
	parameter: name: string
}
`,
}

// TestTraitsSeeTheWorkloadIdentity: context.output (and context.outputs)
// hold metadata.name and metadata.namespace as the engine applies them,
// also when the template sets neither and under a topology namespace.
func TestTraitsSeeTheWorkloadIdentity(t *testing.T) {
	app := `
metadata: {name: shop, namespace: prod}
spec:
  components:
    - name: web
      type: box
      properties: {svc: true}
      traits:
        - type: who
`
	cases := []struct {
		reason string
		opts   render.Options
		want   map[string]any
	}{
		{reason: "the component name and the app namespace", want: map[string]any{"name": "web", "namespace": "prod", "svc": "prod"}},
		{reason: "a topology's namespace", opts: render.Options{Namespace: "east"}, want: map[string]any{"name": "web", "namespace": "east", "svc": "east"}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			res, err := renderInline(t, outputDefs, app, tc.opts)
			require.NoError(t, err)
			var data map[string]any
			for _, r := range res {
				if r.Object.GetKind() == "ConfigMap" {
					data, _ = r.Object.Object["data"].(map[string]any)
				}
			}
			assert.Equal(t, tc.want, data)
		})
	}
}

// TestOutputConflicts: two outputs of one component rendering the same
// object, or two trait types declaring the same output name, are errors
// naming both; several traits of one type with one output name are fine.
func TestOutputConflicts(t *testing.T) {
	cases := []struct {
		reason string
		app    string
		errMsg string
	}{
		{
			reason: "a trait's Service and the component's Service of the same name",
			app: `
metadata: {name: shop, namespace: prod}
spec:
  components:
    - name: db
      type: box
    - name: web
      type: box
      properties: {svc: true}
      traits:
        - {type: svc, properties: {name: web}}
`,
			errMsg: `application prod/shop is invalid: spec.components[1]: its outputs.svc and trait "svc" (traits[0]) outputs.service render the same object (v1 Service prod/web); one would overwrite the other: give one of them another name (component "web")`,
		},
		{
			reason: "two traits rendering the same object",
			app: `
metadata: {name: shop, namespace: prod}
spec:
  components:
    - name: web
      type: box
      traits:
        - {type: svc, properties: {name: front}}
        - {type: svc, properties: {name: front}}
`,
			errMsg: `spec.components[0]: trait "svc" (traits[0]) outputs.service and trait "svc" (traits[1]) outputs.service render the same object (v1 Service prod/front)`,
		},
		{
			reason: "two trait types declaring the same output name",
			app: `
metadata: {name: shop, namespace: prod}
spec:
  components:
    - name: web
      type: box
      traits:
        - {type: svc, properties: {name: a}}
        - {type: cm, properties: {name: b}}
`,
			errMsg: `spec.components[0].traits[1]: trait "cm" declares output "service", which trait "svc" (traits[0]) declares too; rename one of them (component "web")`,
		},
		{
			reason: "two traits of one type with one output name and different objects are fine (KubeVela's two pvc claims)",
			app: `
metadata: {name: shop, namespace: prod}
spec:
  components:
    - name: web
      type: box
      traits:
        - {type: svc, properties: {name: a}}
        - {type: svc, properties: {name: b}}
`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			_, err := renderInline(t, outputDefs, tc.app, render.Options{})
			if tc.errMsg == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.errMsg)
		})
	}
}
