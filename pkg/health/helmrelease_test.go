package health

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/pkg/helm"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

// TestHelmReleasesEnvtest judges real releases of charts/testdata/simple
// (Helm's Secret storage, a real kube-apiserver) through NewHelmReleases.
func TestHelmReleasesEnvtest(t *testing.T) {
	e := envtest.New(t)
	ctx := context.Background()
	ns := "health-helm"
	require.NoError(t, e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	root, err := filepath.Abs(filepath.Join("..", "..", "charts", "testdata"))
	require.NoError(t, err)
	hc := helm.NewClient(helm.NewFactory(helm.SingleCluster(e.Config)), helm.NewFetcher(e.Client, helm.WithChartRoot(root)), e.Client)
	fetcher := Fetcher{Releases: NewHelmReleases(hc), AppNamespace: ns}

	rendered := func(source string) *unstructured.Unstructured {
		u := renderedRelease(t)
		u.SetNamespace(ns)
		require.NoError(t, unstructured.SetNestedField(u.Object, source, "spec", "chart", "source"))
		require.NoError(t, unstructured.SetNestedField(u.Object, ns, "spec", "release", "namespace"))
		return u
	}
	evaluate := func(t *testing.T, source string) Outcome {
		t.Helper()
		o, err := fetcher.Fetch(ctx, e.Client, rendered(source))
		require.NoError(t, err)
		out, err := Evaluate(ctx, nil, Subject{Output: &o})
		require.NoError(t, err)
		return out
	}

	t.Run("a typo in the chart name is unhealthy and says not found", func(t *testing.T) {
		got := evaluate(t, "simpel")
		assert.False(t, got.Healthy)
		assert.Equal(t, helmspec.ReasonChartUnavailable, got.Reason)
		assert.Contains(t, got.Message, "chart not found")
		assert.Contains(t, got.Message, "simpel")
	})

	t.Run("a release not installed yet is unhealthy", func(t *testing.T) {
		got := evaluate(t, "simple")
		assert.False(t, got.Healthy)
		assert.Equal(t, helmspec.ReasonReleaseNotFound, got.Reason)
	})

	spec, err := helmspec.SpecFromObject(rendered("simple"), helmspec.Defaults{Name: "web", Namespace: ns})
	require.NoError(t, err)
	_, err = hc.Ensure(ctx, helmspec.Request{Namespace: ns, Spec: spec})
	require.NoError(t, err)

	t.Run("a Deployment not available yet is listed by kind", func(t *testing.T) {
		got := evaluate(t, "simple")
		assert.False(t, got.Healthy)
		assert.Equal(t, helmspec.ReasonResourcesNotReady, got.Reason)
		assert.Equal(t, "release web revision 1, chart simple-0.1.0: 2/3 resources ready", got.Message)
		require.Contains(t, got.Details, "Deployment")
		assert.Contains(t, got.Details["Deployment"], "not ready: web-web")
		assert.Len(t, got.Details, 1)
	})

	d := &unstructured.Unstructured{}
	d.SetAPIVersion("apps/v1")
	d.SetKind("Deployment")
	require.NoError(t, e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-web"}, d))
	d.Object["status"] = map[string]any{
		"observedGeneration": d.GetGeneration(), "replicas": int64(1), "updatedReplicas": int64(1),
		"readyReplicas": int64(1), "availableReplicas": int64(1),
		"conditions": []any{
			map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
			map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
		},
	}
	require.NoError(t, e.Client.Status().Update(ctx, d))

	t.Run("every resource ready is healthy", func(t *testing.T) {
		got := evaluate(t, "simple")
		assert.Equal(t, Outcome{Result: Result{Healthy: true, Reason: ReasonHealthy,
			Message: "release web revision 1, chart simple-0.1.0: 3/3 resources ready"}}, got)
	})

	require.NoError(t, e.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config"}}))

	t.Run("a deleted resource is MISSING", func(t *testing.T) {
		got := evaluate(t, "simple")
		assert.False(t, got.Healthy)
		assert.Equal(t, "release web revision 1, chart simple-0.1.0: 2/3 resources ready", got.Message)
		assert.Equal(t, map[string]string{"ConfigMap": "MISSING: web-config"}, got.Details)
	})
}
