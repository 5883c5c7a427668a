package workflow

import (
	"testing"
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	wftypes "github.com/kubevela/workflow/pkg/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/pkg/appfile"
)

// TestBrokenStepStaysFailed: a step whose CUE does not evaluate fails on
// every pass until its retries are spent, and the run fails; it used to
// come back succeeded on the pass after its first failure, having done
// nothing.
func TestBrokenStepStaysFailed(t *testing.T) {
	cases := []struct {
		reason   string
		template string
	}{
		{reason: "conflicting values", template: "x: 1\nx: 2\nparameter: {}\n"},
		{reason: "a conflict with the step's parameters", template: "parameter: {n: int}\nout: parameter.n & \"text\"\n"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
				{Name: "broken", Type: "broken", Properties: map[string]any{"n": 1}},
				applyStep("after", "web"),
			}}
			h := newHarness(t, wf, Options{}, comps("web")...)
			withTemplates(h, map[string]string{"broken": tc.template})
			res := h.until(20*time.Second, func(r Result) bool {
				s := stepNamed(r.Status, "broken")
				require.NotNil(t, s)
				require.Equal(t, failed, s.Phase, "never anything but failed: %+v", s)
				return r.Status.Finished
			})
			assert.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status)
			assert.Equal(t, wftypes.StatusReasonFailedAfterRetries, stepNamed(res.Status, "broken").Reason)
			assert.Contains(t, stepNamed(res.Status, "broken").Message, "failed after 3 attempts: ")
			assert.Equal(t, 0, h.deployer.count("web"))
		})
	}
}
