package health

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// renderedRelease is a HelmRelease as the helm definition renders it.
func renderedRelease(t testing.TB) *unstructured.Unstructured {
	return obj(t, `
apiVersion: helm.oamflow.dev/v1alpha1
kind: HelmRelease
metadata:
  name: web
  namespace: prod
  labels: {app.oam.dev/component: web}
spec:
  chart: {source: simple}
  release: {name: web, namespace: prod}
`)
}

func TestReleaseHealthEvaluate(t *testing.T) {
	ready := ReleaseHealth{Healthy: true, Reason: helmspec.ReasonReady, Message: "release web revision 2, chart simple-0.1.0: 3/3 resources ready",
		Name: "web", Namespace: "prod", Revision: 2, Status: "deployed", Chart: "simple", ChartVersion: "0.1.0", AppVersion: "1.0.0", Ready: 3, Total: 3}
	notReady := ReleaseHealth{Reason: helmspec.ReasonResourcesNotReady, Message: "release web revision 1, chart simple-0.1.0: 1/3 resources ready",
		Details: map[string]string{"Deployment": "not ready: web-web (Ready: 0/1)", "ConfigMap": "MISSING: web-config"},
		Name:    "web", Namespace: "prod", Revision: 1, Status: "deployed", Ready: 1, Total: 3}
	noChart := ReleaseHealth{Reason: helmspec.ReasonChartUnavailable, Message: `bundled chart "simpel": chart not found`, Name: "web", Namespace: "prod"}

	// healthyPolicy says healthy whatever it sees, with a message.
	var evaluated bool
	evaluator := StatusEvaluatorFn(func(context.Context, *common.Status, map[string]any, map[string]any, map[string]map[string]any, map[string]any) (EvalResult, error) {
		evaluated = true
		return EvalResult{Healthy: true, Message: "custom"}, nil
	})
	checker := func(rh ReleaseHealth) ReleaseChecker {
		return ReleaseCheckerFn(func(_ context.Context, cluster, appNamespace string, obj *unstructured.Unstructured) (ReleaseHealth, error) {
			assert.Equal(t, "east", cluster)
			assert.Equal(t, "apps", appNamespace)
			assert.True(t, helmspec.IsHelmRelease(obj))
			return rh, nil
		})
	}
	cases := []struct {
		reason    string
		releases  ReleaseChecker
		status    *common.Status
		want      Outcome
		evaluated bool
	}{
		{
			reason:   "a deployed release with every resource ready is healthy and says so",
			releases: checker(ready),
			want:     Outcome{Result: Result{Healthy: true, Reason: ReasonHealthy, Message: ready.Message}},
		},
		{
			reason:   "resources not ready and missing make it unhealthy, with details by kind",
			releases: checker(notReady),
			want:     Outcome{Result: Result{Reason: helmspec.ReasonResourcesNotReady, Message: notReady.Message}, Details: notReady.Details},
		},
		{
			reason:   "a chart that cannot be fetched is unhealthy, even when a health policy would say healthy",
			releases: checker(noChart),
			status:   &common.Status{HealthPolicy: "isHealth: true"},
			want:     Outcome{Result: Result{Reason: helmspec.ReasonChartUnavailable, Message: noChart.Message}},
		},
		{
			reason: "without a ReleaseChecker a HelmRelease is unhealthy, saying Helm support is missing",
			want: Outcome{Result: Result{Reason: ReasonHelmNotConfigured,
				Message: "helm components need the controller's Helm support, which is not configured"}},
		},
		{
			reason:    "customStatus replaces the message of a healthy release",
			releases:  checker(ready),
			status:    &common.Status{CustomStatus: "message: ..."},
			want:      Outcome{Result: Result{Healthy: true, Reason: ReasonHealthy, Message: "custom"}},
			evaluated: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			evaluated = false
			f := Fetcher{Releases: tc.releases, Cluster: "east", AppNamespace: "apps"}
			o, err := f.Fetch(context.Background(), nil, renderedRelease(t))
			require.NoError(t, err)
			require.NotNil(t, o.Live)
			got, err := Evaluate(context.Background(), evaluator, Subject{Status: tc.status, Output: &o})
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.evaluated, evaluated, "evaluator called")
		})
	}
}

func TestReleaseLiveObject(t *testing.T) {
	f := Fetcher{Releases: ReleaseCheckerFn(func(context.Context, string, string, *unstructured.Unstructured) (ReleaseHealth, error) {
		return ReleaseHealth{Healthy: true, Reason: helmspec.ReasonReady, Message: "m", Name: "web-rel", Namespace: "prod", Revision: 2,
			Status: "deployed", Chart: "simple", ChartVersion: "0.1.0", AppVersion: "1.0.0", Ready: 3, Total: 3}, nil
	})}
	o, err := f.Fetch(context.Background(), nil, renderedRelease(t))
	require.NoError(t, err)
	assert.Equal(t, Object{Kind: "HelmRelease", Namespace: "prod", Name: "web-rel", Live: o.Live}, o)
	assert.Equal(t, map[string]any{
		"healthy": true, "reason": "Ready", "message": "m",
		"release": map[string]any{"name": "web-rel", "namespace": "prod", "revision": int64(2), "status": "deployed",
			"chart": "simple", "chartVersion": "0.1.0", "appVersion": "1.0.0"},
		"resources": map[string]any{"ready": int64(3), "total": int64(3)},
	}, o.Live.Object["status"], "the live object's status is what CUE status and workflow outputs read")

	t.Run("a checker error is a Fetch error", func(t *testing.T) {
		f := Fetcher{Releases: ReleaseCheckerFn(func(context.Context, string, string, *unstructured.Unstructured) (ReleaseHealth, error) {
			return ReleaseHealth{}, errors.New("connection refused")
		})}
		_, err := f.Fetch(context.Background(), nil, renderedRelease(t))
		require.ErrorContains(t, err, "reading Helm release prod/web: connection refused")
	})

	t.Run("Check never calls a HelmRelease without release status healthy", func(t *testing.T) {
		r := Check(context.Background(), renderedRelease(t))
		assert.False(t, r.Healthy)
		assert.Equal(t, ReasonUnknown, r.Reason)
	})
}
