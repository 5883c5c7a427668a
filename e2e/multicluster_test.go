//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/e2e/framework"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/placement"
)

// TestMultiClusterRegistry is the acceptance test of the cluster registry
// on three local clusters: two members joined with region labels through
// the CLI, listed as reachable with their version, and a client per member
// writing into that member only.
func TestMultiClusterRegistry(t *testing.T) {
	env := framework.Start(t, 3)
	hub := env.Cluster(t, "local")
	members := map[string]string{"member-1": "east", "member-2": "west"}

	for name, region := range members {
		out, err := framework.Oamflow(t, hub.Kubeconfig, "cluster", "join", env.Cluster(t, name).Kubeconfig, "--name", name, "--labels", "region="+region)
		require.NoError(t, err)
		assert.Contains(t, out, "Kubernetes v1.34.2")
	}

	t.Run("ListShowsMembersReachable", func(t *testing.T) {
		out, err := framework.Oamflow(t, hub.Kubeconfig, "cluster", "list", "-o", "json")
		require.NoError(t, err)
		var rows []struct {
			Name      string            `json:"name"`
			Endpoint  string            `json:"endpoint"`
			Labels    map[string]string `json:"labels"`
			Reachable bool              `json:"reachable"`
			Version   string            `json:"version"`
			Message   string            `json:"message"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &rows))
		require.Len(t, rows, 3)
		assert.Equal(t, "local", rows[0].Name)
		for i, name := range []string{"member-1", "member-2"} {
			row := rows[i+1]
			assert.Equal(t, name, row.Name)
			assert.Equal(t, env.Cluster(t, name).Config.Host, row.Endpoint)
			assert.Equal(t, map[string]string{"region": members[name]}, row.Labels)
			assert.True(t, row.Reachable, row.Message)
			assert.Equal(t, "v1.34.2", row.Version)
		}

		table, err := framework.Oamflow(t, hub.Kubeconfig, "cluster", "list")
		require.NoError(t, err)
		assert.Contains(t, table, "region=east")
		assert.Contains(t, table, "region=west")
	})

	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1beta1.AddToScheme(s))
	hubClient, err := client.New(hub.Config, client.Options{Scheme: s})
	require.NoError(t, err)
	reg, err := multicluster.NewRegistry(hubClient, hub.Config)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("ClientPerMemberWritesThere", func(t *testing.T) {
		for name := range members {
			c, cfg, err := reg.Clients(ctx, name)
			require.NoError(t, err)
			assert.Equal(t, env.Cluster(t, name).Config.Host, cfg.Host)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "written-to-" + name, Namespace: "default"}}
			require.NoError(t, c.Create(ctx, cm))
		}
		for _, cl := range env.Clusters {
			for name := range members {
				err := cl.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "written-to-" + name}, &corev1.ConfigMap{})
				if cl.Name == name {
					assert.NoError(t, err, "%s has its ConfigMap", cl.Name)
				} else {
					assert.True(t, apierrors.IsNotFound(err), "%s does not have %s's ConfigMap: %v", cl.Name, name, err)
				}
			}
		}
	})

	t.Run("TopologyByLabels", func(t *testing.T) {
		got, err := reg.ResolvePlacements(ctx, "east-only", map[string]any{"clusterLabelSelector": map[string]any{"region": "east"}, "namespace": "prod"})
		require.NoError(t, err)
		assert.Equal(t, []placement.Placement{{Cluster: "member-1", Namespace: "prod"}}, got)
		v, err := reg.ClusterVersion(ctx, "member-2")
		require.NoError(t, err)
		assert.Equal(t, 34, v.Minor)
	})
}
