//go:build e2e

package helm_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/e2e/framework"
	"github.com/oamflow/oamflow/pkg/helm"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// TestE2EInstallWaitHealthy installs the simple chart with wait into a
// local cluster with kwok nodes, where Deployments do become available,
// and sees the release healthy; then uninstalls it. It is an external test
// package: e2e/framework links pkg/manager, which imports this package.
func TestE2EInstallWaitHealthy(t *testing.T) {
	env := framework.Start(t, 1)
	hub := env.Clusters[0]
	chartRoot, err := filepath.Abs(filepath.Join("..", "..", "charts", "testdata"))
	require.NoError(t, err)
	c := helm.NewClient(helm.NewFactory(helm.SingleCluster(hub.Config)), helm.NewFetcher(hub.Client, helm.WithChartRoot(chartRoot)), hub.Client)
	s, err := helmspec.ParseSpecMap(map[string]any{
		"chart":   map[string]any{"source": "simple"},
		"values":  map[string]any{"replicaCount": 2},
		"options": map[string]any{"wait": true, "timeout": "2m"},
	}, helmspec.Defaults{Name: "web", Namespace: "helm-e2e"})
	require.NoError(t, err)
	req := helmspec.Request{Namespace: "helm-e2e", Spec: s}
	ctx := context.Background()

	start := time.Now()
	res, err := c.Ensure(ctx, req)
	require.NoError(t, err)
	t.Logf("install + wait: %v", time.Since(start))
	assert.Equal(t, helmspec.ActionInstalled, res.Action)

	h, err := c.Status(ctx, req)
	require.NoError(t, err)
	assert.True(t, h.Healthy, "%s %v", h.Message, h.Details())
	assert.Equal(t, "release web revision 1, chart simple-0.1.0: 3/3 resources ready", h.Message)

	res, err = c.Uninstall(ctx, "", "helm-e2e", "web", helmspec.Options{Wait: true})
	require.NoError(t, err)
	assert.Equal(t, helmspec.ActionUninstalled, res.Action)
}
