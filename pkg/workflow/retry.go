package workflow

import (
	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	wftypes "github.com/kubevela/workflow/pkg/types"
)

// A retried step is judged as on its first run.
//
// kubevela/workflow v0.7.2 fails a step whose evaluated CUE holds an error
// (conflicting values, a failed built-in) only when the step's previous
// status is the one it gives a step that has not run (phase succeeded).
// A step that failed that way (reason Execute, so retried) thus came back
// succeeded on its next pass, with nothing done. Before a step that failed
// with a retryable error runs again, its previous status is shown to the
// library with that first-run phase (its id, times and message kept), so
// the same error fails it again, until the retry limit.

// asFirstRun makes the status of step name in st (the engine's map of the
// pass) look unrun when the step failed with a retryable error; the
// returned function puts the real status back if the engine has not
// replaced it.
func asFirstRun(name string, st map[string]wfv1alpha1.StepStatus) (restore func()) {
	prev, ok := st[name]
	if !ok || prev.Phase != wfv1alpha1.WorkflowStepPhaseFailed || prev.Reason != wftypes.StatusReasonExecute ||
		prev.Type == StepTypeStepGroup {
		return func() {}
	}
	fresh := prev
	fresh.Phase = wfv1alpha1.WorkflowStepPhaseSucceeded
	st[name] = fresh
	return func() {
		if cur, ok := st[name]; ok && cur == fresh {
			st[name] = prev
		}
	}
}
