package workflowops

import (
	"testing"

	oamv1alpha1 "github.com/kubevela/pkg/apis/oam/v1alpha1"
	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
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

func TestSuspendResumeTerminate(t *testing.T) {
	cases := []struct {
		reason string
		op     func(*common.WorkflowStatus) error
		in     *common.WorkflowStatus
		err    error
		check  func(t *testing.T, st *common.WorkflowStatus)
	}{
		{"suspend a running run", Suspend, started(step("a", running)), nil, func(t *testing.T, st *common.WorkflowStatus) {
			assert.True(t, st.Suspend)
			assert.Equal(t, SuspendStateManual, st.SuspendState)
		}},
		{"cannot suspend a finished run", Suspend, &common.WorkflowStatus{Finished: true}, ErrNotRunning, nil},
		{"cannot suspend nothing", Suspend, nil, ErrNotRunning, nil},
		{"resume releases suspend steps, also in groups", Resume, func() *common.WorkflowStatus {
			st := started(step("a", succeeded), step("wait", suspending), step("g", suspending, sub("w2", suspending), sub("x", succeeded)))
			st.Suspend = true
			return st
		}(), nil, func(t *testing.T, st *common.WorkflowStatus) {
			assert.False(t, st.Suspend)
			assert.Equal(t, map[string]wfv1alpha1.WorkflowStepPhase{"a": succeeded, "wait": running, "g": running, "g/w2": running, "g/x": succeeded}, phases(st))
		}},
		{"cannot resume a run that is not suspended", Resume, started(step("a", running)), ErrNotSuspended, nil},
		{"terminate fails what is unfinished", Terminate, started(step("a", succeeded), step("b", running), step("g", running, sub("s1", pending), sub("s2", skipped))), nil,
			func(t *testing.T, st *common.WorkflowStatus) {
				assert.True(t, st.Terminated)
				assert.Equal(t, map[string]wfv1alpha1.WorkflowStepPhase{"a": succeeded, "b": failed, "g": failed, "g/s1": failed, "g/s2": skipped}, phases(st))
				assert.Equal(t, reasonTerminate, st.Steps[1].Reason)
			}},
		{"cannot terminate a finished run", Terminate, &common.WorkflowStatus{Finished: true}, ErrNotRunning, nil},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			err := tc.op(tc.in)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			tc.check(t, tc.in)
		})
	}
}

func TestRestartFrom(t *testing.T) {
	stepByStep := Graph{Steps: []Node{{Name: "a"}, {Name: "b"}, {Name: "g", SubStepsDAG: true, SubSteps: []Node{{Name: "g1"}, {Name: "g2", DependsOn: []string{"g1"}}, {Name: "g3"}}}, {Name: "c"}}}
	dag := Graph{DAG: true, Steps: []Node{{Name: "a"}, {Name: "b", DependsOn: []string{"a"}}, {Name: "c", DependsOn: []string{"b"}}, {Name: "d"}}}
	finished := func(steps ...wfv1alpha1.WorkflowStepStatus) *common.WorkflowStatus {
		st := started(steps...)
		st.Finished, st.Terminated, st.Status = true, true, wfv1alpha1.WorkflowStateFailed
		st.EndTime = metav1.Now()
		return st
	}
	cases := []struct {
		reason string
		graph  Graph
		in     *common.WorkflowStatus
		step   string
		want   []string
		err    error
	}{
		{"step by step: the step and those after it", stepByStep,
			finished(step("a", succeeded), step("b", failed), step("g", skipped, sub("g1", skipped)), step("c", skipped)), "b", []string{"a"}, nil},
		{"a sub-step restarts its dependents and what follows the group", stepByStep,
			finished(step("a", succeeded), step("b", succeeded), step("g", failed, sub("g1", succeeded), sub("g2", failed), sub("g3", succeeded)), step("c", skipped)),
			"g1", []string{"a", "b", "g", "g/g3"}, nil},
		{"dag: only dependents", dag,
			finished(step("a", succeeded), step("b", failed), step("c", skipped), step("d", succeeded)), "b", []string{"a", "d"}, nil},
		{"dag: transitive dependents", dag,
			finished(step("a", succeeded), step("b", succeeded), step("c", succeeded), step("d", succeeded)), "a", []string{"d"}, nil},
		{"unknown step", dag, finished(step("a", succeeded)), "zz", nil, ErrUnknownStep},
		{"never started", dag, &common.WorkflowStatus{}, "a", nil, ErrNotRunning},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			err := RestartFrom(tc.in, tc.graph, tc.step)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			var got []string
			for _, s := range tc.in.Steps {
				got = append(got, s.Name)
				for _, ss := range s.SubStepsStatus {
					got = append(got, s.Name+"/"+ss.Name)
				}
			}
			assert.Equal(t, tc.want, got)
			assert.False(t, tc.in.Finished)
			assert.False(t, tc.in.Terminated)
			assert.True(t, tc.in.EndTime.IsZero())
		})
	}
}

func TestGraphOf(t *testing.T) {
	dag := oamv1alpha1.WorkflowMode("DAG")
	cases := []struct {
		reason string
		app    v1beta1.ApplicationSpec
		want   Graph
	}{
		{"default workflow is a DAG of components", v1beta1.ApplicationSpec{Components: []common.ApplicationComponent{{Name: "db"}, {Name: "web", DependsOn: []string{"db"}}}},
			Graph{DAG: true, Steps: []Node{{Name: "db"}, {Name: "web", DependsOn: []string{"db"}}}}},
		{"topology makes a deploy step", v1beta1.ApplicationSpec{Components: []common.ApplicationComponent{{Name: "db"}}, Policies: []common.AppPolicy{{Name: "t", Type: "topology"}}},
			Graph{Steps: []Node{{Name: "deploy"}}}},
		{"explicit steps run one by one, sub-steps as a DAG", v1beta1.ApplicationSpec{Workflow: &common.Workflow{Steps: []oamv1alpha1.WorkflowStep{
			{WorkflowStepBase: oamv1alpha1.WorkflowStepBase{Name: "a"}},
			{WorkflowStepBase: oamv1alpha1.WorkflowStepBase{Name: "g"}, SubSteps: []oamv1alpha1.WorkflowStepBase{{Name: "g1"}}},
		}}}, Graph{Steps: []Node{{Name: "a", SubStepsDAG: true}, {Name: "g", SubStepsDAG: true, SubSteps: []Node{{Name: "g1"}}}}}},
		{"explicit DAG mode", v1beta1.ApplicationSpec{Workflow: &common.Workflow{Mode: &oamv1alpha1.WorkflowExecuteMode{Steps: dag, SubSteps: "StepByStep"}, Steps: []oamv1alpha1.WorkflowStep{
			{WorkflowStepBase: oamv1alpha1.WorkflowStepBase{Name: "a"}},
		}}}, Graph{DAG: true, Steps: []Node{{Name: "a"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, GraphOf(&v1beta1.Application{Spec: tc.app}))
		})
	}
}

func TestStepFinished(t *testing.T) {
	cases := []struct {
		reason string
		phase  wfv1alpha1.WorkflowStepPhase
		why    string
		want   bool
	}{
		{"succeeded", succeeded, "", true},
		{"skipped", skipped, "", true},
		{"failed by an action (fail step, timeout, terminate)", failed, "Action", true},
		{"failed while executing is retried", failed, ReasonExecute, false},
		{"failed without a reason is retried", failed, "", false},
		{"running", running, "", false},
		{"suspending", suspending, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, StepFinished(tc.phase, tc.why))
		})
	}
}

func TestStarted(t *testing.T) {
	assert.False(t, Started(nil))
	assert.False(t, Started(&common.WorkflowStatus{}))
	assert.True(t, Started(started()))
	assert.True(t, Started(&common.WorkflowStatus{Steps: []wfv1alpha1.WorkflowStepStatus{step("a", pending)}}))
}
