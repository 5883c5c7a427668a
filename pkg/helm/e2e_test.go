//go:build e2e

package helm

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/e2e/framework"
)

// TestE2EInstallWaitHealthy installs the simple chart with wait into a
// local cluster with kwok nodes, where Deployments do become available,
// and sees the release healthy; then uninstalls it.
func TestE2EInstallWaitHealthy(t *testing.T) {
	env := framework.Start(t, 1)
	hub := env.Clusters[0]
	c := NewClient(NewFactory(SingleCluster(hub.Config)),
		NewFetcher(hub.Client, WithChartRoot(filepath.Join(moduleRoot(t), "charts", "testdata"))), hub.Client)
	s := spec(t, map[string]any{
		"chart":   map[string]any{"source": "simple"},
		"values":  map[string]any{"replicaCount": 2},
		"options": map[string]any{"wait": true, "timeout": "2m"},
	}, "web", "helm-e2e")
	req := Request{Namespace: "helm-e2e", Spec: s}
	ctx := context.Background()

	start := time.Now()
	res, err := c.Ensure(ctx, req)
	require.NoError(t, err)
	t.Logf("install + wait: %v", time.Since(start))
	assert.Equal(t, ActionInstalled, res.Action)

	h, err := c.Status(ctx, req)
	require.NoError(t, err)
	assert.True(t, h.Healthy, "%s %v", h.Message, h.Details())
	assert.Equal(t, "release web revision 1, chart simple-0.1.0: 3/3 resources ready", h.Message)

	res, err = c.Uninstall(ctx, "", "helm-e2e", "web", Options{Wait: true})
	require.NoError(t, err)
	assert.Equal(t, ActionUninstalled, res.Action)
}
