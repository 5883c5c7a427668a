package resourcekeeper

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// BenchmarkStateKeepNoop measures a state-keep pass over an unchanged
// Application of N objects (a webservice Deployment, its Service and a
// ConfigMap per component) against a real API server. Reported per pass:
// ns/object, reads/object and writes/op (must be 0).
func BenchmarkStateKeepNoop(b *testing.B) {
	for _, components := range []int{1, 10} {
		b.Run(fmt.Sprintf("objects=%d", components*3), func(b *testing.B) {
			f := newFixture(b)
			app := f.app("bench")
			var list []*unstructured.Unstructured
			for i := range components {
				name := fmt.Sprintf("c%d", i)
				list = append(list, deployment(app, 1, name, name), service(app, 1, name, name), configMap(app, 1, name, name))
			}
			k := f.keeper(app, 1)
			require.NoError(b, k.Apply(f.t.Context(), "", list))
			require.NoError(b, k.StateKeep(f.t.Context()))
			f.counter.reset()
			b.ResetTimer()
			for b.Loop() {
				if err := k.StateKeep(f.t.Context()); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			n := float64(len(list))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/object")
			b.ReportMetric(float64(f.counter.reads.Load())/float64(b.N)/n, "reads/object")
			b.ReportMetric(float64(f.counter.writes.Load())/float64(b.N), "writes/op")
		})
	}
}

// BenchmarkInSync measures the in-memory drift check of one Deployment
// (no API calls): the CPU a no-op state-keep spends per object besides its GET.
func BenchmarkInSync(b *testing.B) {
	f := &fixture{ns: "bench"}
	app := f.app("bench")
	d := deployment(app, 1, "web", "web")
	h, err := desiredHash(d)
	require.NoError(b, err)
	d.SetAnnotations(map[string]string{AnnoAppliedHash: h})
	live := d.DeepCopy()
	live.SetManagedFields(nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := desiredHash(d); err != nil {
			b.Fatal(err)
		}
		_ = contains(d.Object, live.Object)
	}
}

// BenchmarkStateKeepHelmNoop measures a state-keep pass over an unchanged
// Helm release (charts/testdata/simple, bundled, Secret storage) against a
// real API server: ns/op, reads/op and writes/op (must be 0).
func BenchmarkStateKeepHelmNoop(b *testing.B) {
	f := newFixture(b)
	app := f.app("bench")
	k := f.helmKeeper(app, 1, NewHelmReleases(f.helmClient()))
	require.NoError(b, k.Apply(f.t.Context(), "", objs(helmRelease(app, 1, "web", map[string]any{"message": "hi"}))))
	require.NoError(b, k.StateKeep(f.t.Context()))
	f.counter.reset()
	b.ResetTimer()
	for b.Loop() {
		if err := k.StateKeep(f.t.Context()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(f.counter.reads.Load())/float64(b.N), "reads/op")
	b.ReportMetric(float64(f.counter.writes.Load())/float64(b.N), "writes/op")
}
