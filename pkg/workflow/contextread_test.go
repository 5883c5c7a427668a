package workflow

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	oamv1alpha1 "github.com/kubevela/pkg/apis/oam/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/oamflow/oamflow/pkg/appfile"
)

// TestContextReadOnce: a run whose steps keep nothing never reads its
// (absent) context ConfigMap: a new run has none, and the later passes of
// the same engine remember it absent; a run whose steps keep something
// reads it back in the pass after the one that created it, and its inputs
// get what was kept.
func TestContextReadOnce(t *testing.T) {
	cases := []struct {
		reason    string
		wf        *appfile.Workflow
		healthyAt int // the pass from which component "b" is healthy
		wantReads func(t *testing.T, reads int32)
	}{
		{
			reason: "nothing kept: the first pass starts empty, the next ones know it is absent",
			wf: &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
				applyStep("one", "a"), applyStep("two", "b"),
			}},
			healthyAt: 4,
			wantReads: func(t *testing.T, reads int32) { assert.Equal(t, int32(0), reads) },
		},
		{
			reason: "an output kept: the pass after its creation reads the ConfigMap",
			wf: &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
				applyStep("producer", "a", func(s *appfile.WorkflowStep) {
					s.Outputs = oamv1alpha1.StepOutputs{{Name: "img", ValueFrom: "output.data.image"}}
				}),
				applyStep("consumer", "b", func(s *appfile.WorkflowStep) {
					s.Inputs = oamv1alpha1.StepInputs{{From: "img", ParameterKey: "properties.upstream"}}
				}),
			}},
			healthyAt: 3,
			wantReads: func(t *testing.T, reads int32) { assert.GreaterOrEqual(t, reads, int32(1)) },
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			h := newHarness(t, tc.wf, Options{}, comps("a", "b")...)
			reads := countContextReads(t, h)
			pass := 0
			h.deployer.healthy = func(comp string) bool { return comp != "b" || pass >= tc.healthyAt }
			var res Result
			for pass = 1; pass <= tc.healthyAt; pass++ {
				res = h.pass()
				time.Sleep(10 * time.Millisecond)
			}
			require.True(t, res.Status.Finished, "%+v", res.Status)
			tc.wantReads(t, reads.Load())
		})
	}
}

// TestContextReadAfterAnotherPass: a pass given a status other than the
// one this engine's last pass returned (a pass made elsewhere, a status
// that could not be stored) reads the context ConfigMap again.
func TestContextReadAfterAnotherPass(t *testing.T) {
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{applyStep("one", "a")}}
	h := newHarness(t, wf, Options{}, comps("a")...)
	reads := countContextReads(t, h)
	h.deployer.healthy = func(string) bool { return false }

	h.pass()
	h.pass()
	require.Equal(t, int32(0), reads.Load(), "the first pass starts empty; the second, given the first's status, does not read")
	h.run.Status.Steps[0].Message = "written by another pass"
	h.pass()
	assert.Equal(t, int32(1), reads.Load(), "a status this engine did not return: read")
}

// TestFreshRunReplacesLeftoverContext: a new run (no status) starts from an
// empty context without reading the ConfigMap (TestContextReadOnce); one
// left behind (by a pass whose status was never stored, or a deleted
// namesake) is not in the way: the run's first commit replaces it, in the
// run's first pass or in a later one that took the ConfigMap as absent
// because the pass before it ended without one, and the run goes on.
func TestFreshRunReplacesLeftoverContext(t *testing.T) {
	cases := []struct {
		reason string
		// keptAt is the pass whose commit first keeps something.
		keptAt int
	}{
		{reason: "the first pass keeps the producer's output", keptAt: 1},
		{reason: "the first pass keeps nothing; the second, taking the ConfigMap as absent, keeps the output", keptAt: 2},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
				applyStep("producer", "a", func(s *appfile.WorkflowStep) {
					s.Outputs = oamv1alpha1.StepOutputs{{Name: "img", ValueFrom: "output.data.image"}}
				}),
				applyStep("consumer", "b", func(s *appfile.WorkflowStep) {
					s.Inputs = oamv1alpha1.StepInputs{{From: "img", ParameterKey: "properties.upstream"}}
				}),
			}}
			h := newHarness(t, wf, Options{}, comps("a", "b")...)
			pass := 0
			h.deployer.healthy = func(comp string) bool { return comp != "a" || pass >= tc.keptAt }
			ctx := context.Background()
			left := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: ContextName(h.app.Name), Namespace: h.app.Namespace},
				Data:       map[string]string{"stale": "left by a pass whose status was never stored"},
			}
			require.NoError(t, env(t).Client.Create(ctx, left))

			var res Result
			for pass = 1; pass <= 4 && !res.Status.Finished; pass++ {
				var err error
				res, err = h.engine.Execute(ctx, h.run)
				require.NoError(t, err, "%s: pass %d", tc.reason, pass)
				st := res.Status
				h.run.Status = &st
			}
			require.True(t, res.Status.Finished, "%s: %+v", tc.reason, res.Status)
			assert.Equal(t, "succeeded", string(res.Status.Status), "%s: %+v", tc.reason, res.Status)

			cm := &corev1.ConfigMap{}
			require.NoError(t, env(t).Client.Get(ctx, client.ObjectKeyFromObject(left), cm))
			assert.NotContains(t, cm.Data, "stale", "%s: the leftover was replaced by the run's context", tc.reason)
		})
	}
}

// countContextReads gives h an engine of its own whose reads of h's
// workflow context ConfigMap are counted.
func countContextReads(t *testing.T, h *harness) *atomic.Int32 {
	t.Helper()
	reads := &atomic.Int32{}
	base, err := client.NewWithWatch(env(t).Config, client.Options{Scheme: env(t).Scheme})
	require.NoError(t, err)
	c := interceptor.NewClient(base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.ConfigMap); ok && key.Name == ContextName(h.app.Name) {
				reads.Add(1)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	h.engine, err = NewEngine(c, Options{HTTP: allowLoopback(t)})
	require.NoError(t, err)
	return reads
}
