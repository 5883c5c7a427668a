package workflow

import (
	"errors"
	"testing"
	"time"

	oamv1alpha1 "github.com/kubevela/pkg/apis/oam/v1alpha1"
	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	wftypes "github.com/kubevela/workflow/pkg/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/pkg/appfile"
)

// TestFailedDependencySkipsWithReason: a step that cannot run because a
// step it depends on failed at run time is not run, its message naming
// the failed step, and nothing of it is applied: skipped for a dependsOn
// or an earlier step, failed (reason Input) for an input only that step
// produces, since the value cannot arrive.
func TestFailedDependencySkipsWithReason(t *testing.T) {
	output := func(s *appfile.WorkflowStep) {
		s.Outputs = oamv1alpha1.StepOutputs{{Name: "img", ValueFrom: "output.data.image"}}
	}
	input := func(s *appfile.WorkflowStep) {
		s.Inputs = oamv1alpha1.StepInputs{{From: "img", ParameterKey: "properties.upstream"}}
	}
	dependsOn := func(s *appfile.WorkflowStep) { s.DependsOn = []string{"broken"} }
	cases := []struct {
		reason string
		wf     *appfile.Workflow
		// retryable: the dependency fails with a retryable error until
		// its retries are spent (else it fails at once).
		retryable bool
		// skipped is the path of the dependent step.
		skipped string
		// failed: the dependent step fails (its input cannot arrive)
		// rather than being skipped.
		failed bool
	}{
		{reason: "DAG, input from the failed step", wf: &appfile.Workflow{Mode: "DAG", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
			applyStep("broken", "bad", output),
			applyStep("dependent", "b", input),
		}}, skipped: "dependent", failed: true},
		{reason: "StepByStep, input and dependsOn, the dependency out of retries", wf: &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
			applyStep("broken", "bad", output),
			applyStep("dependent", "b", input, dependsOn),
		}}, retryable: true, skipped: "dependent", failed: true},
		{reason: "StepByStep, dependsOn, the dependency out of retries", wf: &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
			applyStep("broken", "bad", output),
			applyStep("dependent", "b", dependsOn),
		}}, retryable: true, skipped: "dependent"},
		{reason: "StepByStep, the step after a failed one", wf: &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
			applyStep("broken", "bad"),
			applyStep("dependent", "b"),
		}}, skipped: "dependent"},
		{reason: "DAG, a chain: the input of the input failed", wf: &appfile.Workflow{Mode: "DAG", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
			applyStep("broken", "bad", output),
			applyStep("middle", "m", input, func(s *appfile.WorkflowStep) {
				s.Outputs = oamv1alpha1.StepOutputs{{Name: "img2", ValueFrom: "output.data.image"}}
			}),
			applyStep("dependent", "b", func(s *appfile.WorkflowStep) {
				s.Inputs = oamv1alpha1.StepInputs{{From: "img2", ParameterKey: "properties.upstream"}}
			}),
		}}, skipped: "dependent", failed: true},
		{reason: "sub-steps of a group, input from a failed sibling", wf: &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
			{Name: "group", Type: "step-group", SubSteps: []*appfile.WorkflowStep{
				applyStep("broken", "bad", output),
				applyStep("dependent", "b", input),
			}},
		}}, skipped: "group/dependent", failed: true},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			h := newHarness(t, tc.wf, Options{MaxStepRetries: 2}, comps("bad", "b", "m")...)
			h.deployer.renderErr = func(c string) error {
				if c == "bad" && !tc.retryable {
					return errors.New(`properties.image: conflicting values "x" and int`)
				}
				return nil
			}
			h.deployer.applyErr = func(c string) error {
				if c == "bad" && tc.retryable {
					return errors.New("connection refused")
				}
				return nil
			}
			res := h.until(30*time.Second, finished)
			assert.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status)
			var dep *wfv1alpha1.StepStatus
			for i := range res.Status.Steps {
				s := &res.Status.Steps[i]
				if s.Name == tc.skipped {
					dep = &s.StepStatus
				}
				for j := range s.SubStepsStatus {
					if s.Name+"/"+s.SubStepsStatus[j].Name == tc.skipped {
						dep = &s.SubStepsStatus[j]
					}
				}
			}
			require.NotNil(t, dep, "no status for %s: %+v", tc.skipped, res.Status)
			if tc.failed {
				assert.Equal(t, failed, dep.Phase, "%+v", dep)
				assert.Equal(t, wftypes.StatusReasonInput, dep.Reason)
				assert.Contains(t, dep.Message, "cannot arrive")
			} else {
				assert.Equal(t, skipped, dep.Phase, "%+v", dep)
			}
			assert.Contains(t, dep.Message, `"broken"`)
			assert.Contains(t, dep.Message, "failed")
			assert.Equal(t, 0, h.deployer.count("b"), "nothing of the dependent applied")
			assert.Equal(t, 0, h.deployer.count("m"))
			assert.Contains(t, res.Status.Message, "broken")
		})
	}
}
