package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/placement"
	"github.com/oamflow/oamflow/pkg/render"
	"github.com/oamflow/oamflow/pkg/workflow"
)

// versionedResolver is a cluster resolver that also knows versions.
type versionedResolver struct {
	placement.StaticClusters
	versions map[string]render.ClusterVersion
}

func (v versionedResolver) ClusterVersion(_ context.Context, cluster string) (render.ClusterVersion, error) {
	cv, ok := v.versions[cluster]
	if !ok {
		return render.ClusterVersion{}, errors.New("unreachable")
	}
	return cv, nil
}

func TestRenderOptionsCarryTheTargetClusterVersion(t *testing.T) {
	v134 := render.ClusterVersion{Major: 1, Minor: 34, GitVersion: "v1.34.2"}
	resolver := versionedResolver{versions: map[string]render.ClusterVersion{"member-1": v134}}
	cases := []struct {
		reason   string
		resolver placement.Resolver
		cluster  string
		want     render.ClusterVersion
	}{
		{"the member's own version", resolver, "member-1", v134},
		{"an unreachable member keeps the render default", resolver, "member-2", render.ClusterVersion{}},
		{"a resolver without versions keeps the default", placement.StaticClusters{}, "member-1", render.ClusterVersion{}},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			d := &appDeployer{revision: "app-v1", resolver: c.resolver}
			got := d.options(context.Background(), workflow.ComponentRequest{Name: "web", Cluster: c.cluster})
			assert.Equal(t, c.want, got.ClusterVersion)
			assert.Equal(t, c.cluster, got.Cluster)
		})
	}
}

// registryLike resolves selectors and refuses unknown cluster names like
// the cluster registry does.
type registryLike struct{ placement.StaticClusters }

func (r registryLike) ValidateTopologies(_ context.Context, policies []common.AppPolicy) error {
	for i, p := range policies {
		if p.Type == "topology" && strings.Contains(string(p.Properties.Raw), "member-9") {
			return &multicluster.UnknownClustersError{
				Fields:   []multicluster.UnknownClusterField{{Path: fmt.Sprintf("spec.policies[%d].properties.clusters[0]", i), Policy: p.Name, Cluster: "member-9"}},
				NotFound: &multicluster.ClusterNotFoundError{Names: []string{"member-9"}, Namespace: "oamflow-system"},
			}
		}
	}
	return nil
}

// TestUnknownClusterIsRefusedBeforeDeploying: a topology naming a cluster
// that is not registered fails validation with the field path, and
// nothing is applied.
func TestUnknownClusterIsRefusedBeforeDeploying(t *testing.T) {
	h := newHarness(t, harnessOpt{with: []Option{WithClusterResolver(registryLike{})}})
	app := h.app("lost", `
components:
- name: web
  type: webservice
  properties: {image: "nginx"}
policies:
- name: here
  type: topology
  properties: {clusters: [local]}
- name: there
  type: topology
  properties: {clusters: [member-9]}
`)
	res, err := h.reconcile(app)
	require.NoError(t, err, "an invalid Application is not retried")
	assert.Zero(t, res.RequeueAfter)
	got := h.get(app)
	assert.Equal(t, common.ApplicationWorkflowFailed, got.Status.Phase)
	parsed := meta.FindStatusCondition(got.Status.Conditions, common.ConditionParsed)
	require.NotNil(t, parsed)
	assert.Equal(t, common.ReasonInvalidApplication, parsed.Reason)
	assert.Contains(t, parsed.Message, `spec.policies[1].properties.clusters[0]: cluster "member-9" not registered`)
	_, ok := h.deployment("web")
	assert.False(t, ok, "nothing is applied, not even on the hub")
	assert.Empty(t, h.revisions("lost"))
}
