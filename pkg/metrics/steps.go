package metrics

import (
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// FinishedStep is a workflow step (or sub-step) that reached a final
// phase during one reconcile.
type FinishedStep struct {
	Type    string
	Outcome string
	// Duration is LastExecuteTime - FirstExecuteTime (0 when unknown).
	Duration time.Duration
}

// FinishedSteps lists the steps and sub-steps whose phase is succeeded,
// failed or skipped in after's workflow status but was not final in
// before's (matched by step ID, else name; a new workflow run — another
// appRevision — counts every final step again).
func FinishedSteps(before, after *v1beta1.Application) []FinishedStep {
	if after == nil || after.Status.Workflow == nil {
		return nil
	}
	done := map[string]bool{}
	if before != nil && before.Status.Workflow != nil && before.Status.Workflow.AppRevision == after.Status.Workflow.AppRevision {
		for _, s := range before.Status.Workflow.Steps {
			if final(s.Phase) {
				done[key(s.StepStatus)] = true
			}
			for _, sub := range s.SubStepsStatus {
				if final(sub.Phase) {
					done[key(s.StepStatus)+"/"+key(sub)] = true
				}
			}
		}
	}
	var out []FinishedStep
	add := func(k string, s wfv1alpha1.StepStatus) {
		if !final(s.Phase) || done[k] {
			return
		}
		var d time.Duration
		if !s.FirstExecuteTime.IsZero() && s.LastExecuteTime.After(s.FirstExecuteTime.Time) {
			d = s.LastExecuteTime.Sub(s.FirstExecuteTime.Time)
		}
		out = append(out, FinishedStep{Type: s.Type, Outcome: string(s.Phase), Duration: d})
	}
	for _, s := range after.Status.Workflow.Steps {
		add(key(s.StepStatus), s.StepStatus)
		for _, sub := range s.SubStepsStatus {
			add(key(s.StepStatus)+"/"+key(sub), sub)
		}
	}
	return out
}

func key(s wfv1alpha1.StepStatus) string {
	if s.ID != "" {
		return s.ID
	}
	return s.Name
}

func final(p wfv1alpha1.WorkflowStepPhase) bool {
	return p == wfv1alpha1.WorkflowStepPhaseSucceeded || p == wfv1alpha1.WorkflowStepPhaseFailed || p == wfv1alpha1.WorkflowStepPhaseSkipped
}
