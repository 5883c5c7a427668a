package controller

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/oamflow/oamflow/pkg/render"
	"github.com/oamflow/oamflow/pkg/workflow"
)

// versionedResolver is a cluster resolver that also knows versions.
type versionedResolver struct {
	render.StaticClusters
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
		resolver render.ClusterResolver
		cluster  string
		want     render.ClusterVersion
	}{
		{"the member's own version", resolver, "member-1", v134},
		{"an unreachable member keeps the render default", resolver, "member-2", render.ClusterVersion{}},
		{"a resolver without versions keeps the default", render.StaticClusters{}, "member-1", render.ClusterVersion{}},
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
