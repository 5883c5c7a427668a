package metrics

import (
	"testing"
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

func appWith(rev string, steps ...wfv1alpha1.WorkflowStepStatus) *v1beta1.Application {
	a := &v1beta1.Application{}
	a.Status.Workflow = &common.WorkflowStatus{AppRevision: rev, Steps: steps}
	return a
}

func step(id, typ string, phase wfv1alpha1.WorkflowStepPhase, d time.Duration) wfv1alpha1.WorkflowStepStatus {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return wfv1alpha1.WorkflowStepStatus{StepStatus: wfv1alpha1.StepStatus{
		ID: id, Name: id, Type: typ, Phase: phase,
		FirstExecuteTime: metav1.NewTime(t0), LastExecuteTime: metav1.NewTime(t0.Add(d)),
	}}
}

func TestFinishedSteps(t *testing.T) {
	ok, failed, running := wfv1alpha1.WorkflowStepPhaseSucceeded, wfv1alpha1.WorkflowStepPhaseFailed, wfv1alpha1.WorkflowStepPhaseRunning
	cases := []struct {
		reason        string
		before, after *v1beta1.Application
		want          []FinishedStep
	}{
		{"no workflow", &v1beta1.Application{}, &v1beta1.Application{}, nil},
		{"a step finished in this reconcile", appWith("a-v1", step("s1", "apply-component", running, 0)),
			appWith("a-v1", step("s1", "apply-component", ok, 2*time.Second)),
			[]FinishedStep{{Type: "apply-component", Outcome: "succeeded", Duration: 2 * time.Second}}},
		{"a step already final before is not counted again", appWith("a-v1", step("s1", "apply-component", ok, time.Second)),
			appWith("a-v1", step("s1", "apply-component", ok, time.Second), step("s2", "deploy", failed, 0)),
			[]FinishedStep{{Type: "deploy", Outcome: "failed"}}},
		{"a new revision's run counts again", appWith("a-v1", step("s1", "apply-component", ok, time.Second)),
			appWith("a-v2", step("s1", "apply-component", ok, time.Second)),
			[]FinishedStep{{Type: "apply-component", Outcome: "succeeded", Duration: time.Second}}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, FinishedSteps(tc.before, tc.after))
		})
	}
}

func TestNewTwiceSharesCollectors(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := New(reg, nil)
	require.NoError(t, err)
	b, err := New(reg, nil)
	require.NoError(t, err, "a second Recorder in one process reuses the registered collectors")
	a.CountDeletion("ConfigMap")
	b.CountDeletion("ConfigMap")
	families, err := reg.Gather()
	require.NoError(t, err)
	var got float64
	for _, f := range families {
		if f.GetName() == "oamflow_gc_deleted_objects_total" {
			got = f.Metric[0].Counter.GetValue()
		}
	}
	assert.Equal(t, float64(2), got)
	var none *Recorder
	none.CountDeletion("x") // a nil Recorder observes nothing
}
