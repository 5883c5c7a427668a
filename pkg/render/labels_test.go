package render_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
	"github.com/oamflow/oamflow/pkg/render"
)

// renderInline parses appYAML against the given inline definition files
// (name → .cue text) and renders it with opts.
func renderInline(t *testing.T, defs map[string]string, appYAML string, opts render.Options) ([]render.Resource, error) {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, text := range defs {
		fsys[name] = &fstest.MapFile{Data: []byte(text)}
	}
	src, err := appfile.NewFSSource(fsys, ".")
	require.NoError(t, err)
	app := &v1beta1.Application{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(appYAML), app))
	ctx := appfile.WithEngine(context.Background(), cuex.NewEngine())
	af, err := appfile.Parse(ctx, app, src)
	require.NoError(t, err)
	return render.RenderApplication(ctx, af, opts)
}

// labelDefs: a component with a main workload and an auxiliary output, and
// a trait with an output of its own.
var labelDefs = map[string]string{
	"components/box.cue": `box: {
	type: "component"
	attributes: workload: type: "autodetects.core.oam.dev"
}
template: {
	output: {apiVersion: "apps/v1", kind: "Deployment", spec: replicas: 1}
	outputs: svc: {apiVersion: "v1", kind: "Service", metadata: name: context.name}
	parameter: {}
}
`,
	"traits/side.cue": `side: {
	type: "trait"
	attributes: appliesToWorkloads: ["*"]
}
template: {
	outputs: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: context.name + "-side"}
	parameter: {}
}
`,
}

func TestLabels(t *testing.T) {
	res, err := renderInline(t, labelDefs, `
metadata: {name: shop, namespace: prod}
spec:
  components:
    - name: web
      type: box
      traits:
        - type: side
`, render.Options{AppRevision: "shop-v2"})
	require.NoError(t, err)
	common := map[string]string{
		v1beta1.LabelAppName: "shop", v1beta1.LabelAppNamespace: "prod",
		v1beta1.LabelAppComponent: "web", v1beta1.LabelAppRevision: "shop-v2",
	}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range common {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		reason string
		kind   string
		want   map[string]string
	}{
		{
			reason: "the main workload is a WORKLOAD with the component's type",
			kind:   "Deployment",
			want:   with(map[string]string{v1beta1.LabelResourceType: "WORKLOAD", v1beta1.LabelWorkloadType: "box"}),
		},
		{
			reason: "an object of the component's outputs is a TRAIT of type AuxiliaryWorkload, without the workload type",
			kind:   "Service",
			want: with(map[string]string{v1beta1.LabelResourceType: "TRAIT", v1beta1.LabelTraitType: "AuxiliaryWorkload",
				v1beta1.LabelTraitResource: "svc"}),
		},
		{
			reason: "a trait's output is a TRAIT named by its trait type and output name, without the workload type",
			kind:   "ConfigMap",
			want: with(map[string]string{v1beta1.LabelResourceType: "TRAIT", v1beta1.LabelTraitType: "side",
				v1beta1.LabelTraitResource: "cm"}),
		},
	}
	byKind := map[string]render.Resource{}
	for _, r := range res {
		byKind[r.Object.GetKind()] = r
	}
	require.Len(t, byKind, 3)
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			r, ok := byKind[tc.kind]
			require.True(t, ok, "no %s rendered", tc.kind)
			assert.Equal(t, tc.want, r.Object.GetLabels())
		})
	}
}
