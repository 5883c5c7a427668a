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
	"github.com/oamflow/oamflow/pkg/placement"
	"github.com/oamflow/oamflow/pkg/render"
)

// TestTargetAppFile: a component deployed to a member with an override is
// judged against the overridden properties of that member, not the
// Application's own.
func TestTargetAppFile(t *testing.T) {
	own, err := appfile.NewFSSource(exampleDefs, ".")
	require.NoError(t, err)
	builtins, err := appfile.NewFSSource(definitions.FS, ".")
	require.NoError(t, err)
	src := appfile.Chain(own, builtins)
	app := &v1beta1.Application{}
	require.NoError(t, yaml.Unmarshal([]byte(`
metadata: {name: shop, namespace: prod}
spec:
  components:
    - name: queue
      type: worker
      properties: {image: "redis:7"}
  policies:
    - {name: east, type: topology, properties: {clusterLabelSelector: {region: east}}}
    - {name: west, type: topology, properties: {clusters: [member-2], namespace: west-ns}}
    - {name: east-image, type: override, properties: {components: [{name: queue, properties: {image: "redis:east"}}]}}
    - {name: west-image, type: override, properties: {components: [{name: queue, properties: {image: "redis:west"}}]}}
  workflow:
    steps:
      - {name: deploy-east, type: deploy, properties: {policies: [east, east-image]}}
      - {name: deploy-west, type: deploy, properties: {policies: [west, west-image]}}
`), app))
	ctx := appfile.WithEngine(context.Background(), cuex.NewEngine())
	af, err := appfile.Parse(ctx, app, src)
	require.NoError(t, err)
	plans, err := render.PlanWorkflow(ctx, af, placement.StaticClusters{"member-1": {"region": "east"}, "member-2": {"region": "west"}})
	require.NoError(t, err)

	cases := []struct {
		reason, cluster, namespace, component string
		wantImage                             string // "" : no target
	}{
		{"east by selector, the app's namespace", "member-1", "prod", "queue", "redis:east"},
		{"namespace not given", "member-1", "", "queue", "redis:east"},
		{"west in the topology's namespace", "member-2", "west-ns", "queue", "redis:west"},
		{"west but another namespace", "member-2", "prod", "queue", ""},
		{"a cluster no step deploys to", "local", "prod", "queue", ""},
		{"an unknown component", "member-1", "prod", "nope", ""},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			got := render.TargetAppFile(plans, c.cluster, c.namespace, c.component)
			if c.wantImage == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, c.wantImage, got.Component(c.component).Properties["image"])
		})
	}
}
