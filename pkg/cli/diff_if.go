package cli

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// Reasons of a step status the workflow's if expressions abbreviate
// (kubevela/workflow pkg/types; that package is kept out of the CLI).
const (
	reasonTimeout            = "Timeout"
	reasonFailedAfterRetries = "FailedAfterRetries"
	reasonTerminate          = "Terminate"
)

// liveStepStatus returns the step and sub-step statuses of the live
// Application's last workflow run by step name (nil without one).
func liveStepStatus(live *v1beta1.Application) map[string]wfv1alpha1.StepStatus {
	if live == nil || live.Status.Workflow == nil {
		return nil
	}
	out := map[string]wfv1alpha1.StepStatus{}
	for _, s := range live.Status.Workflow.Steps {
		out[s.Name] = s.StepStatus
		for _, sub := range s.SubStepsStatus {
			out[sub.Name] = sub
		}
	}
	return out
}

// ifStatusRef finds the steps an if expression reads: status.name,
// status."name" and status["name"].
var ifStatusRef = regexp.MustCompile(`\bstatus(?:\.([A-Za-z_][A-Za-z0-9_]*)|\."([^"]+)"|\["([^"]+)"\])`)

// conditionNote says how the if condition cond of step stands before the
// run, evaluated as the workflow evaluates it (a CUE boolean over
// status.<step>.phase/reason/succeeded/failed/skipped/timeout/
// failedAfterRetries/terminate) against the live Application's last run:
// decided when every step it reads has a status there, else "depends on"
// the steps it reads; inputs and context are not known before the run.
func conditionNote(step, cond string, live map[string]wfv1alpha1.StepStatus) string {
	var refs, missing []string
	seen := map[string]bool{}
	for _, m := range ifStatusRef.FindAllStringSubmatch(cond, -1) {
		name := m[1] + m[2] + m[3]
		if seen[name] {
			continue
		}
		seen[name] = true
		refs = append(refs, name)
		if _, ok := live[name]; !ok {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	switch {
	case len(refs) == 0:
		return fmt.Sprintf("only if step %s runs (if: %s; not decided by diff)", step, cond)
	case len(missing) > 0:
		return fmt.Sprintf("depends on %s (step %s runs only if: %s; not in the live Application's status)",
			strings.Join(missing, ", "), step, cond)
	}
	ok, err := evalIf(cond, live)
	if err != nil {
		return fmt.Sprintf("only if step %s runs (if: %s; not decided by diff: %v)", step, cond, err)
	}
	if ok {
		return fmt.Sprintf("step %s runs (if: %s is true on the live Application's status)", step, cond)
	}
	return fmt.Sprintf("step %s would be skipped (if: %s is false on the live Application's status)", step, cond)
}

// evalIf evaluates cond over the abbreviated step statuses.
func evalIf(cond string, live map[string]wfv1alpha1.StepStatus) (bool, error) {
	type abbr struct {
		wfv1alpha1.StepStatus `json:",inline"`
		Failed                bool `json:"failed"`
		Succeeded             bool `json:"succeeded"`
		Skipped               bool `json:"skipped"`
		Timeout               bool `json:"timeout"`
		FailedAfterRetries    bool `json:"failedAfterRetries"`
		Terminate             bool `json:"terminate"`
	}
	m := make(map[string]abbr, len(live))
	for name, s := range live {
		m[name] = abbr{StepStatus: s,
			Failed:             s.Phase == wfv1alpha1.WorkflowStepPhaseFailed,
			Succeeded:          s.Phase == wfv1alpha1.WorkflowStepPhaseSucceeded,
			Skipped:            s.Phase == wfv1alpha1.WorkflowStepPhaseSkipped,
			Timeout:            s.Reason == reasonTimeout,
			FailedAfterRetries: s.Reason == reasonFailedAfterRetries,
			Terminate:          s.Reason == reasonTerminate,
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return false, err
	}
	v := cuecontext.New().CompileString("if: " + cond + "\nstatus: " + string(b)).LookupPath(cue.ParsePath("if"))
	if v.Err() != nil {
		return false, v.Err()
	}
	return v.Bool()
}
