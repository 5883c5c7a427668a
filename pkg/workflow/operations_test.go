package workflow

import (
	"testing"
	"time"

	oamv1alpha1 "github.com/kubevela/pkg/apis/oam/v1alpha1"
	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	wftypes "github.com/kubevela/workflow/pkg/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/pkg/appfile"
)

const (
	succeeded  = wfv1alpha1.WorkflowStepPhaseSucceeded
	failed     = wfv1alpha1.WorkflowStepPhaseFailed
	running    = wfv1alpha1.WorkflowStepPhaseRunning
	pending    = wfv1alpha1.WorkflowStepPhasePending
	suspending = wfv1alpha1.WorkflowStepPhaseSuspending
	skipped    = wfv1alpha1.WorkflowStepPhaseSkipped
)

func step(name string, phase wfv1alpha1.WorkflowStepPhase, subs ...wfv1alpha1.StepStatus) wfv1alpha1.WorkflowStepStatus {
	return wfv1alpha1.WorkflowStepStatus{StepStatus: wfv1alpha1.StepStatus{Name: name, Phase: phase}, SubStepsStatus: subs}
}

func sub(name string, phase wfv1alpha1.WorkflowStepPhase) wfv1alpha1.StepStatus {
	return wfv1alpha1.StepStatus{Name: name, Phase: phase}
}

func started(steps ...wfv1alpha1.WorkflowStepStatus) *common.WorkflowStatus {
	return &common.WorkflowStatus{StartTime: metav1.Now(), Status: wfv1alpha1.WorkflowStateExecuting, Steps: steps}
}

func phases(st *common.WorkflowStatus) map[string]wfv1alpha1.WorkflowStepPhase {
	out := map[string]wfv1alpha1.WorkflowStepPhase{}
	for _, s := range st.Steps {
		out[s.Name] = s.Phase
		for _, ss := range s.SubStepsStatus {
			out[s.Name+"/"+ss.Name] = ss.Phase
		}
	}
	return out
}

func TestFailStuck(t *testing.T) {
	cases := []struct {
		reason string
		steps  []wfv1alpha1.WorkflowStepStatus
		stuck  bool
	}{
		{"a pending step with nothing else to run", []wfv1alpha1.WorkflowStepStatus{
			{StepStatus: wfv1alpha1.StepStatus{Name: "a", Phase: failed, Reason: wftypes.StatusReasonAction}}, step("b", pending)}, true},
		{"a step still running may produce the input", []wfv1alpha1.WorkflowStepStatus{step("a", running), step("b", pending)}, false},
		{"a suspended step may resume", []wfv1alpha1.WorkflowStepStatus{step("a", suspending), step("b", pending)}, false},
		{"nothing pending", []wfv1alpha1.WorkflowStepStatus{step("a", succeeded)}, false},
		{"a pending sub-step", []wfv1alpha1.WorkflowStepStatus{step("g", pending, sub("g1", succeeded), sub("g2", pending))}, true},
		{"a failed step being retried is not finished", []wfv1alpha1.WorkflowStepStatus{
			{StepStatus: wfv1alpha1.StepStatus{Name: "a", Phase: failed, Reason: wftypes.StatusReasonExecute}}, step("b", pending)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			st := &wfv1alpha1.WorkflowRunStatus{Steps: tc.steps}
			assert.Equal(t, tc.stuck, failStuck(st, newGuard(Plan{})))
			if tc.stuck {
				assert.True(t, st.Terminated)
				assert.NotEmpty(t, st.Message)
			}
		})
	}
}

func TestPlanOf(t *testing.T) {
	wf := &appfile.Workflow{Mode: "DAG", Steps: []*appfile.WorkflowStep{
		{Name: "a", Type: "apply-component", Properties: map[string]any{"component": "web"}},
		{Name: "b", Type: "apply-component", Timeout: "1m"},
		{Name: "wait", Type: "suspend"},
		{Name: "g", Type: "step-group", Mode: "StepByStep", SubSteps: []*appfile.WorkflowStep{{Name: "g1", Type: "request"}}},
	}}
	p, err := PlanOf(wf, 10*time.Minute)
	require.NoError(t, err)
	assert.Equal(t, oamv1alpha1.WorkflowExecuteMode{Steps: "DAG", SubSteps: "DAG"}, p.Mode)
	require.Len(t, p.Steps, 4)
	assert.Equal(t, "10m0s", p.Steps[0].Timeout, "the default timeout")
	assert.JSONEq(t, `{"component":"web"}`, string(p.Steps[0].Properties.Raw))
	assert.Equal(t, "1m", p.Steps[1].Timeout, "an explicit timeout wins")
	assert.Empty(t, p.Steps[2].Timeout, "suspend waits for a person")
	assert.Empty(t, p.Steps[3].Timeout, "a group's time is its sub-steps'")
	assert.Equal(t, oamv1alpha1.WorkflowMode("StepByStep"), p.Steps[3].Mode)
	assert.Equal(t, "10m0s", p.Steps[3].SubSteps[0].Timeout)

	_, err = PlanOf(&appfile.Workflow{Ref: "shared"}, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.workflow.ref")
}

func TestStatusRoundTrip(t *testing.T) {
	st := started(step("a", succeeded), step("g", running, sub("g1", running)))
	st.AppRevision = "shop-v2"
	st.Mode = "StepByStep-DAG"
	st.Suspend = true
	rs := toRunStatus(st)
	assert.Equal(t, oamv1alpha1.WorkflowExecuteMode{Steps: "StepByStep", SubSteps: "DAG"}, rs.Mode)
	back := fromRunStatus(rs, "shop-v2")
	assert.Equal(t, *st, back)
	assert.Equal(t, wfv1alpha1.WorkflowRunStatus{}, toRunStatus(nil))
}

func TestSetPath(t *testing.T) {
	cases := []struct {
		reason string
		in     map[string]any
		path   string
		want   map[string]any
		err    bool
	}{
		{"top level", map[string]any{}, "image", map[string]any{"image": "x"}, false},
		{"creates objects", map[string]any{}, "env.addr", map[string]any{"env": map[string]any{"addr": "x"}}, false},
		{"keeps siblings", map[string]any{"env": map[string]any{"a": 1}}, "env.b", map[string]any{"env": map[string]any{"a": 1, "b": "x"}}, false},
		{"a scalar on the way", map[string]any{"env": 1}, "env.b", nil, true},
		{"empty segment", map[string]any{}, "a..b", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			err := setPath(tc.in, tc.path, "x")
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, tc.in)
		})
	}
}

func TestMergeServices(t *testing.T) {
	cur := []common.ApplicationComponentStatus{{Name: "a", Healthy: false}, {Name: "b", Cluster: "local", Healthy: true}}
	got := MergeServices(cur, []common.ApplicationComponentStatus{{Name: "a", Healthy: true}, {Name: "b", Healthy: false}, {Name: "c", Healthy: true}})
	assert.Equal(t, []common.ApplicationComponentStatus{{Name: "a", Healthy: true}, {Name: "b", Healthy: false}, {Name: "c", Healthy: true}}, got)
	assert.False(t, cur[0].Healthy, "the input is not modified")
}
