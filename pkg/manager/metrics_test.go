package manager_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// scrape reads the metric families served at url.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a test against a local server
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}

// sample returns the value of the metric of family name whose labels
// include labels: a counter or gauge value, or a histogram's count; -1
// when there is none.
func sample(families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f := families[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		}
	}
	return -1
}

// TestMetrics deploys an Application and scrapes /metrics: reconcile
// histograms, the phase gauge, step and render histograms, and the GC
// counter after the Application is deleted.
func TestMetrics(t *testing.T) {
	c := env.Client
	ctx := context.Background()
	o := testOptions()
	o.MetricsAddr, o.ProbeAddr = addr(freePort(t)), addr(freePort(t))
	startManager(t, o)
	url := "http://" + o.MetricsAddr + "/metrics"

	app := application(t, "metered", `
components:
- name: settings
  type: k8s-objects
  properties:
    objects:
    - apiVersion: v1
      kind: ConfigMap
      metadata: {name: metered}
      data: {mode: fast}
`)
	require.NoError(t, c.Create(ctx, app))
	require.Eventually(t, func() bool {
		got := &v1beta1.Application{}
		return c.Get(ctx, client.ObjectKeyFromObject(app), got) == nil && got.Status.Phase == common.ApplicationRunning
	}, 60*time.Second, 200*time.Millisecond)

	var families map[string]*dto.MetricFamily
	require.Eventually(t, func() bool {
		families = scrape(t, url)
		return sample(families, "oamflow_applications", map[string]string{"phase": "running"}) >= 1 &&
			sample(families, "oamflow_reconcile_duration_seconds", map[string]string{"phase": "running"}) > 0
	}, 30*time.Second, 500*time.Millisecond, "the running Application shows in the gauge and the reconcile histogram")

	for _, tc := range []struct {
		reason string
		name   string
		labels map[string]string
	}{
		{"the parse phase is timed", "oamflow_reconcile_phase_duration_seconds", map[string]string{"phase": "parse", "result": "success"}},
		{"the workflow phase is timed", "oamflow_reconcile_phase_duration_seconds", map[string]string{"phase": "workflow"}},
		{"the apply-component step finished", "oamflow_workflow_step_duration_seconds", map[string]string{"type": "apply-component", "outcome": "succeeded"}},
		{"the component was rendered", "oamflow_cue_render_duration_seconds", map[string]string{"definition": "k8s-objects"}},
	} {
		assert.Greater(t, sample(families, tc.name, tc.labels), float64(0), tc.reason)
	}

	// Deleting the Application deletes its ConfigMap through the keeper.
	deleteAndWait(t, app)
	require.Eventually(t, func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "metered"}, &corev1.ConfigMap{}) != nil
	}, 30*time.Second, 200*time.Millisecond)
	families = scrape(t, url)
	assert.GreaterOrEqual(t, sample(families, "oamflow_gc_deleted_objects_total", map[string]string{"kind": "ConfigMap"}), float64(1))

	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + o.ProbeAddr + path) //nolint:noctx // a test against a local server
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
}
