package render_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
	"github.com/oamflow/oamflow/pkg/render"
)

const deploymentsOnlyTrait = `"stamp": {
	type: "trait"
	attributes: appliesToWorkloads: ["deployments.apps"]
}
template: patch: metadata: annotations: stamped: "yes"
`

// TestAppliesToWarnings: a trait outside its appliesToWorkloads on a
// component whose kind is only known once rendered is rendered, with a
// warning naming the rendered kind (not an error, as for other workloads).
func TestAppliesToWarnings(t *testing.T) {
	own, err := appfile.NewFSSource(fstest.MapFS{"stamp.cue": {Data: []byte(deploymentsOnlyTrait)}}, ".")
	require.NoError(t, err)
	builtins, err := appfile.NewFSSource(definitions.FS, ".")
	require.NoError(t, err)
	cases := []struct {
		reason   string
		kind     string
		warnings []string
	}{
		{"a Deployment is what the trait applies to", "apps/v1/Deployment", nil},
		{"a ConfigMap is not", "v1/ConfigMap", []string{`spec.components[0].traits[0].type: trait "stamp" applies to deployments.apps, not to the v1 ConfigMap this k8s-objects component renders (matching names: ConfigMap, configmap, configmaps); rendering it anyway (component "objs", trait "stamp")`}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			apiVersion, kind := "v1", "ConfigMap"
			if tc.kind == "apps/v1/Deployment" {
				apiVersion, kind = "apps/v1", "Deployment"
			}
			app := &v1beta1.Application{}
			require.NoError(t, yaml.Unmarshal([]byte(`
metadata: {name: shop, namespace: prod}
spec:
  components:
    - name: objs
      type: k8s-objects
      properties: {objects: [{apiVersion: `+apiVersion+`, kind: `+kind+`, metadata: {name: x}}]}
      traits: [{type: stamp}]
`), app))
			ctx := appfile.WithEngine(context.Background(), cuex.NewEngine())
			af, warnings, err := appfile.Validate(ctx, app, appfile.Chain(own, builtins), nil)
			require.NoError(t, err)
			assert.Empty(t, warnings, "the kind is not known before rendering")
			res, err := render.RenderApplication(ctx, af, render.Options{})
			require.NoError(t, err, "rendered anyway")
			assert.Equal(t, "yes", res[0].Object.GetAnnotations()["stamped"])
			assert.Equal(t, tc.warnings, render.AppliesToWarnings(af, res))
		})
	}
}
