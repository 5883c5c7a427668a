package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
)

// BenchmarkNoOpReconcile measures the resync cost of one healthy
// Application (webservice + scaler + labels + expose): reading its latest
// revision, parsing from the snapshot, drift check and health, with zero
// writes. Reported per reconcile, with API requests counted as
// writes/op (must stay 0).
func BenchmarkNoOpReconcile(b *testing.B) {
	h := newHarness(b, harnessOpt{})
	app := h.app("bench", `
components:
- name: web
  type: webservice
  properties: {image: "nginx:1.27", port: 80}
  traits:
  - type: scaler
    properties: {replicas: 1}
  - type: labels
    properties: {team: shop}
  - type: expose
    properties: {port: [80]}
`)
	got := h.until(app, true, 60*time.Second, phaseIs(common.ApplicationRunning))
	require.Equal(b, common.ApplicationRunning, got.Status.Phase)
	_, err := h.reconcile(app)
	require.NoError(b, err)
	h.writes.Store(0)
	h.reads.Store(0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := h.reconcile(app); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(h.writes.Load())/float64(b.N), "writes/op")
	b.ReportMetric(float64(h.reads.Load())/float64(b.N), "reads/op")
	if h.writes.Load() != 0 {
		b.Fatalf("%d writes in no-op reconciles", h.writes.Load())
	}
}
