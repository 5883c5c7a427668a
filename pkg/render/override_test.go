package render_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
	"github.com/oamflow/oamflow/pkg/render"
)

// TestPlanDeployOverrides: override policies in a deploy step change,
// replace and add components (KubeVela's semantics), and policies that do
// not place components are accepted.
func TestPlanDeployOverrides(t *testing.T) {
	builtins, err := appfile.NewFSSource(definitions.FS, ".")
	require.NoError(t, err)
	cases := []struct {
		reason   string
		policies string
		// want is "name:type:image" per component of the target.
		want []string
		// err is a substring of the planning error ("" for none).
		err string
	}{
		{
			reason:   "an entry naming a component the app does not have, with a type, adds it at the policy's targets",
			policies: `{name: o, type: override, properties: {components: [{name: cache, type: worker, properties: {image: "redis:7"}}]}}`,
			want:     []string{"web:webservice:nginx", "queue:worker:busybox", "cache:worker:redis:7"},
		},
		{
			reason:   "an entry naming a component of another type replaces it",
			policies: `{name: o, type: override, properties: {components: [{name: queue, type: webservice, properties: {image: "httpd"}}]}}`,
			want:     []string{"web:webservice:nginx", "queue:webservice:httpd"},
		},
		{
			reason:   "an entry of the same type merges its properties",
			policies: `{name: o, type: override, properties: {components: [{name: queue, type: worker, properties: {image: "busybox:2"}}]}}`,
			want:     []string{"web:webservice:nginx", "queue:worker:busybox:2"},
		},
		{
			reason:   "an added component is kept only when the selector selects it",
			policies: `{name: o, type: override, properties: {selector: [web], components: [{name: cache, type: worker, properties: {image: "redis:7"}}]}}`,
			want:     []string{"web:webservice:nginx"},
		},
		{
			reason:   "an added component is validated like the others",
			policies: `{name: o, type: override, properties: {components: [{name: cache, type: worker, properties: {image: 7}}]}}`,
			err:      `spec.components[2].properties.image: expected string, got int 7 (component "cache")`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			app := &v1beta1.Application{}
			require.NoError(t, yaml.Unmarshal([]byte(`
metadata: {name: shop, namespace: prod}
spec:
  components:
    - {name: web, type: webservice, properties: {image: nginx}}
    - {name: queue, type: worker, properties: {image: busybox}}
  policies:
    - `+tc.policies+`
    - {name: gc, type: garbage-collect, properties: {keepLegacyResource: true}}
    - {name: rep, type: replication, properties: {keys: [a]}}
`), app))
			ctx := appfile.WithEngine(context.Background(), cuex.NewEngine())
			af, err := appfile.Parse(ctx, app, builtins)
			require.NoError(t, err)
			plan, err := render.PlanDeploy(ctx, af, []string{"o", "gc", "rep"}, nil)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			require.Len(t, plan.Targets, 1)
			var got []string
			for _, c := range plan.Targets[0].AppFile.Components {
				got = append(got, c.Name+":"+c.Type+":"+c.Properties["image"].(string))
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
