package workflow

import (
	"context"
	"testing"
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/workflowops"
)

// legacySuspendTemplate is a KubeVela-style step definition on the flat
// vela/op package.
const legacySuspendTemplate = `import "vela/op"

wait: op.#Suspend & {
	if parameter.message != _|_ {
		message: parameter.message
	}
	if parameter.duration != _|_ {
		duration: parameter.duration
	}
}

parameter: {
	message?:  string
	duration?: string
}
`

// TestSuspendStepMessage: a suspended step's status message is its message
// parameter (kubevela/workflow v0.7.2's providers dropped it and always
// said "Suspended by field <label>"; examples/workflow's approve step
// showed that instead of how to approve), through vela/builtin and the
// legacy vela/op, with and without duration; without a message the
// library's text stays. A manual resume then runs the next step.
func TestSuspendStepMessage(t *testing.T) {
	const approve = "approve the frontend with: oamflow workflow resume workflow"
	cases := []struct {
		reason     string
		typ        string
		properties map[string]any
		want       string
	}{
		{reason: "the suspend definition (vela/builtin) shows its message", typ: "suspend",
			properties: map[string]any{"message": approve}, want: approve},
		{reason: "a timed suspend shows its message while it waits", typ: "suspend",
			properties: map[string]any{"message": "warming up", "duration": "1h"}, want: "warming up"},
		{reason: "without a message the library's text stays", typ: "suspend",
			want: "Suspended by field suspend"},
		{reason: "a legacy op.#Suspend step shows its message", typ: "legacy-suspend",
			properties: map[string]any{"message": approve}, want: approve},
		{reason: "a legacy op.#Suspend without a message keeps the library's text", typ: "legacy-suspend",
			want: "Suspended by field wait"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
				{Name: "approve", Type: tc.typ, Properties: tc.properties},
				applyStep("deploy", "web"),
			}}
			h := newHarness(t, wf, Options{}, comps("web")...)
			tmpls := stepTemplates(t)
			tmpls["legacy-suspend"] = legacySuspendTemplate
			h.run.Templates = func(_ context.Context, typ string) (string, error) { return tmpls[typ], nil }

			// The message is the same on every pass while the step waits.
			for pass := 0; pass < 2; pass++ {
				res := h.pass()
				assert.Equal(t, wfv1alpha1.WorkflowStateSuspending, res.Status.Status)
				s := stepNamed(res.Status, "approve")
				require.NotNil(t, s, "pass %d: no status for step approve", pass)
				assert.Equal(t, suspending, s.Phase, "pass %d", pass)
				assert.Equal(t, tc.want, s.Message, "pass %d", pass)
			}

			if _, timed := tc.properties["duration"]; timed {
				return // resumes by itself in an hour (TestSuspendWithDurationResumesByItself)
			}
			require.NoError(t, Resume(h.run.Status))
			res := h.until(20*time.Second, finished)
			assert.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status)
			assert.Equal(t, 1, h.deployer.count("web"))
		})
	}
}

// stepNamed returns the status of top-level step name, or nil.
func stepNamed(st common.WorkflowStatus, name string) *wfv1alpha1.WorkflowStepStatus {
	for i := range st.Steps {
		if st.Steps[i].Name == name {
			return &st.Steps[i]
		}
	}
	return nil
}

// TestResumeReleasesTimedSuspend: a person's resume releases a suspend
// with a duration at once, at top level and in a step group, through
// vela/builtin and the legacy vela/op (the library's providers sent the
// step back to suspending until the duration ended).
func TestResumeReleasesTimedSuspend(t *testing.T) {
	timed := map[string]any{"duration": "300s", "message": "cooling down"}
	cases := []struct {
		reason string
		steps  []*appfile.WorkflowStep
	}{
		{reason: "a top-level suspend step", steps: []*appfile.WorkflowStep{
			{Name: "pause", Type: "suspend", Properties: timed},
		}},
		{reason: "a suspend step in a step group", steps: []*appfile.WorkflowStep{
			{Name: "group", Type: "step-group", SubSteps: []*appfile.WorkflowStep{
				{Name: "pause", Type: "suspend", Properties: timed},
				applyStep("beside", "side"),
			}},
		}},
		{reason: "a legacy op.#Suspend step", steps: []*appfile.WorkflowStep{
			{Name: "pause", Type: "legacy-suspend", Properties: timed},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: append(tc.steps, applyStep("deploy", "web"))}
			h := newHarness(t, wf, Options{}, comps("web", "side")...)
			withTemplates(h, map[string]string{"legacy-suspend": legacySuspendTemplate})
			for pass := 0; pass < 2; pass++ {
				res := h.pass()
				require.Equal(t, wfv1alpha1.WorkflowStateSuspending, res.Status.Status, "pass %d: %+v", pass, res.Status)
			}
			require.NoError(t, Resume(h.run.Status))
			// The duration is 5 minutes: finishing here means the resume
			// released the step.
			res := h.until(20*time.Second, finished)
			assert.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, "%+v", res.Status)
			assert.Equal(t, 1, h.deployer.count("web"))
			for _, s := range res.Status.Steps {
				assert.Equal(t, succeeded, s.Phase, s.Name)
				for _, sub := range s.SubStepsStatus {
					assert.Equal(t, succeeded, sub.Phase, sub.Name)
				}
			}
		})
	}
}

// TestTerminateAndRestartTimedSuspend: terminate ends a run held by a
// timed suspend in a step group at once, nothing after it runs; a restart
// from the suspended step suspends it afresh, and a resume then releases
// it.
func TestTerminateAndRestartTimedSuspend(t *testing.T) {
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		{Name: "group", Type: "step-group", SubSteps: []*appfile.WorkflowStep{
			{Name: "pause", Type: "suspend", Properties: map[string]any{"duration": "300s"}},
		}},
		applyStep("deploy", "web"),
	}}
	h := newHarness(t, wf, Options{}, comps("web")...)
	res := h.pass()
	require.Equal(t, wfv1alpha1.WorkflowStateSuspending, res.Status.Status, "%+v", res.Status)

	require.NoError(t, Terminate(h.run.Status))
	res = h.pass()
	assert.True(t, res.Status.Finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateTerminated, res.Status.Status, "%+v", res.Status)
	assert.Equal(t, 0, h.deployer.count("web"), "nothing runs after terminate")

	graph := Graph{Steps: []Node{{Name: "group", SubSteps: []Node{{Name: "pause"}}, SubStepsDAG: true}, {Name: "deploy"}}}
	require.NoError(t, workflowops.RestartFrom(h.run.Status, graph, "pause"))
	for pass := 0; pass < 2; pass++ {
		res = h.pass()
		require.Equal(t, wfv1alpha1.WorkflowStateSuspending, res.Status.Status, "pass %d after restart: %+v", pass, res.Status)
	}
	require.NoError(t, Resume(h.run.Status))
	res = h.until(20*time.Second, finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, "%+v", res.Status)
	assert.Equal(t, 1, h.deployer.count("web"))
}
