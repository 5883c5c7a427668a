package cli

import (
	"testing"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"github.com/stretchr/testify/assert"
)

func TestConditionNote(t *testing.T) {
	live := map[string]wfv1alpha1.StepStatus{
		"deploy-1": {Name: "deploy-1", Phase: wfv1alpha1.WorkflowStepPhaseSucceeded},
		"check":    {Name: "check", Phase: wfv1alpha1.WorkflowStepPhaseFailed, Reason: reasonTimeout},
	}
	cases := map[string]struct {
		reason string
		cond   string
		live   map[string]wfv1alpha1.StepStatus
		want   string
	}{
		"SucceededTrue": {
			reason: "an earlier step that succeeded in the live run decides succeeded to true",
			cond:   `status["deploy-1"].succeeded`, live: live,
			want: `step s runs (if: status["deploy-1"].succeeded is true on the live Application's status)`,
		},
		"PhaseFalse": {
			reason: "phase compares as a string; a false condition says the step would be skipped",
			cond:   `status.check.phase == "succeeded"`, live: live,
			want: `step s would be skipped (if: status.check.phase == "succeeded" is false on the live Application's status)`,
		},
		"ReasonAbbreviations": {
			reason: "timeout is the workflow's abbreviation of reason Timeout",
			cond:   `status.check.timeout && status."deploy-1".succeeded`, live: live,
			want: `step s runs (if: status.check.timeout && status."deploy-1".succeeded is true on the live Application's status)`,
		},
		"StepNotInLiveStatus": {
			reason: "a step the live run has no status for cannot be decided: depends on it",
			cond:   `status.deploy2.succeeded || status.check.failed`, live: live,
			want: `depends on deploy2 (step s runs only if: status.deploy2.succeeded || status.check.failed; not in the live Application's status)`,
		},
		"NoLiveApplication": {
			reason: "a new Application has no status: depends on every step read",
			cond:   `status.check.failed`,
			want:   `depends on check (step s runs only if: status.check.failed; not in the live Application's status)`,
		},
		"Inputs": {
			reason: "inputs are known only while running",
			cond:   `inputs.ready == "true"`, live: live,
			want: `only if step s runs (if: inputs.ready == "true"; not decided by diff)`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, conditionNote("s", tc.cond, tc.live), tc.reason)
		})
	}
}
