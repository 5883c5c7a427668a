// Package workflowops holds the operations a person runs on an
// Application's workflow (suspend, resume, terminate, restart from a step)
// as pure edits of status.workflow, and the shape of a workflow they need.
// It imports only API types, so the CLI can patch status without linking
// the workflow engine (pkg/workflow, which runs the steps and re-exports
// these names).
package workflowops

import (
	"errors"
	"fmt"
	"slices"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// Errors of the workflow operations; each is wrapped with the reason.
var (
	// ErrNotRunning: there is no unfinished run to operate on.
	ErrNotRunning = errors.New("the workflow is not running")
	// ErrNotSuspended: resume needs a suspended run.
	ErrNotSuspended = errors.New("the workflow is not suspended")
	// ErrUnknownStep: restart --step names no step of the workflow.
	ErrUnknownStep = errors.New("no such step")
)

// SuspendStateManual is status.workflow.suspendState after a manual suspend.
const SuspendStateManual = "manually"

// Step reasons, the values kubevela/workflow writes (its pkg/types
// StatusReasonExecute and StatusReasonTerminate), spelled out here so this
// package does not link the engine.
const (
	// ReasonExecute: the step failed while executing and is retried (up to
	// the controller's --max-step-retries) before the workflow fails.
	ReasonExecute = "Execute"
	// reasonTerminate: the step was stopped by Terminate.
	reasonTerminate = "Terminate"
)

// Started reports whether a run has begun (it has a start time or steps).
func Started(st *common.WorkflowStatus) bool {
	return st != nil && (!st.StartTime.IsZero() || len(st.Steps) > 0)
}

// StepFinished reports whether a step in phase with reason will not run
// again: succeeded, skipped, or failed for a reason other than a retryable
// execution error ("Execute").
func StepFinished(phase wfv1alpha1.WorkflowStepPhase, reason string) bool {
	switch phase {
	case wfv1alpha1.WorkflowStepPhaseSucceeded, wfv1alpha1.WorkflowStepPhaseSkipped:
		return true
	case wfv1alpha1.WorkflowStepPhaseFailed:
		return reason != "" && reason != ReasonExecute
	}
	return false
}

// Suspend pauses an unfinished run: no step starts until Resume. Steps
// already running finish their current pass.
func Suspend(st *common.WorkflowStatus) error {
	if st == nil || st.Finished || st.Terminated {
		return fmt.Errorf("suspend: %w", ErrNotRunning)
	}
	st.Suspend = true
	st.SuspendState = SuspendStateManual
	return nil
}

// Resume continues a suspended run; suspend steps waiting for a person (or
// for their duration) are released and succeed.
func Resume(st *common.WorkflowStatus) error {
	if st == nil || st.Finished {
		return fmt.Errorf("resume: %w", ErrNotRunning)
	}
	if !st.Suspend && !hasPhase(st, wfv1alpha1.WorkflowStepPhaseSuspending) {
		return fmt.Errorf("resume: %w", ErrNotSuspended)
	}
	st.Suspend = false
	st.SuspendState = ""
	for i := range st.Steps {
		for j := range st.Steps[i].SubStepsStatus {
			if st.Steps[i].SubStepsStatus[j].Phase == wfv1alpha1.WorkflowStepPhaseSuspending {
				st.Steps[i].SubStepsStatus[j].Phase = wfv1alpha1.WorkflowStepPhaseRunning
			}
		}
		if st.Steps[i].Phase == wfv1alpha1.WorkflowStepPhaseSuspending {
			st.Steps[i].Phase = wfv1alpha1.WorkflowStepPhaseRunning
		}
	}
	return nil
}

// Terminate stops an unfinished run for good: every step not finished
// fails with reason Terminate, and the run ends as terminated on the next
// pass. Restart starts it again.
func Terminate(st *common.WorkflowStatus) error {
	if st == nil || st.Finished {
		return fmt.Errorf("terminate: %w", ErrNotRunning)
	}
	st.Terminated = true
	st.Suspend = false
	st.SuspendState = ""
	stop := func(s *wfv1alpha1.StepStatus) {
		if !StepFinished(s.Phase, s.Reason) {
			s.Phase = wfv1alpha1.WorkflowStepPhaseFailed
			s.Reason = reasonTerminate
			s.Message = "terminated by the user"
		}
	}
	for i := range st.Steps {
		for j := range st.Steps[i].SubStepsStatus {
			stop(&st.Steps[i].SubStepsStatus[j])
		}
		stop(&st.Steps[i].StepStatus)
	}
	return nil
}

func hasPhase(st *common.WorkflowStatus, p wfv1alpha1.WorkflowStepPhase) bool {
	for _, s := range st.Steps {
		if s.Phase == p {
			return true
		}
		for _, sub := range s.SubStepsStatus {
			if sub.Phase == p {
				return true
			}
		}
	}
	return false
}

// Node is a step of a workflow as restart sees it.
type Node struct {
	Name      string
	DependsOn []string
	SubSteps  []Node
	// SubStepsDAG says sub-steps run as a DAG (else one by one).
	SubStepsDAG bool
}

// Graph is the shape of a workflow: its steps in order and whether they
// run as a DAG.
type Graph struct {
	Steps []Node
	DAG   bool
}

// GraphOf returns the shape of app's workflow: spec.workflow.steps (mode
// StepByStep unless spec.workflow.mode.steps says DAG; sub-steps DAG unless
// set), or, without steps, the default workflow: one step per component,
// a DAG over dependsOn (a deploy step when topology or override policies
// exist).
func GraphOf(app *v1beta1.Application) Graph {
	wf := app.Spec.Workflow
	if wf == nil || len(wf.Steps) == 0 {
		for _, p := range app.Spec.Policies {
			if p.Type == "topology" || p.Type == "override" {
				return Graph{Steps: []Node{{Name: "deploy"}}}
			}
		}
		g := Graph{DAG: true}
		for _, c := range app.Spec.Components {
			g.Steps = append(g.Steps, Node{Name: c.Name, DependsOn: c.DependsOn})
		}
		return g
	}
	g := Graph{}
	subDAG := true
	if wf.Mode != nil {
		g.DAG = wf.Mode.Steps == wfv1alpha1.WorkflowModeDAG
		if wf.Mode.SubSteps != "" {
			subDAG = wf.Mode.SubSteps == wfv1alpha1.WorkflowModeDAG
		}
	}
	for _, s := range wf.Steps {
		n := Node{Name: s.Name, DependsOn: s.DependsOn, SubStepsDAG: subDAG}
		if s.Mode != "" {
			n.SubStepsDAG = s.Mode == wfv1alpha1.WorkflowModeDAG
		}
		for _, sub := range s.SubSteps {
			n.SubSteps = append(n.SubSteps, Node{Name: sub.Name, DependsOn: sub.DependsOn})
		}
		g.Steps = append(g.Steps, n)
	}
	return g
}

// RestartFrom makes a run execute step again, and every step that comes
// after it: in a StepByStep workflow the steps that follow it, in a DAG
// the steps depending on it (directly or not). For a sub-step, its group
// and what follows the group are restarted too. Steps before it keep
// their status and outputs and are not run again. The run is no longer
// finished, terminated or suspended.
func RestartFrom(st *common.WorkflowStatus, g Graph, step string) error {
	if st == nil || !Started(st) {
		return fmt.Errorf("restart from step %q: %w", step, ErrNotRunning)
	}
	reset := map[string]bool{}
	resetSubs := map[string]map[string]bool{}
	top, sub := locate(g, step)
	if top < 0 {
		return fmt.Errorf("restart from step %q: %w", step, ErrUnknownStep)
	}
	if sub >= 0 {
		grp := g.Steps[top]
		resetSubs[grp.Name] = map[string]bool{}
		for _, n := range after(grp.SubSteps, sub, grp.SubStepsDAG) {
			resetSubs[grp.Name][n] = true
		}
	}
	for _, n := range after(g.Steps, top, g.DAG) {
		reset[n] = true
	}
	steps := st.Steps[:0]
	for _, s := range st.Steps {
		switch {
		case reset[s.Name] && resetSubs[s.Name] == nil:
			continue
		case resetSubs[s.Name] != nil:
			subs := s.SubStepsStatus[:0]
			for _, ss := range s.SubStepsStatus {
				if !resetSubs[s.Name][ss.Name] {
					subs = append(subs, ss)
				}
			}
			s.SubStepsStatus = subs
			s.Phase = wfv1alpha1.WorkflowStepPhaseRunning
			s.Reason = ""
			s.Message = ""
		}
		steps = append(steps, s)
	}
	st.Steps = steps
	st.Finished = false
	st.Terminated = false
	st.Suspend = false
	st.SuspendState = ""
	st.Message = ""
	st.Status = wfv1alpha1.WorkflowStateExecuting
	st.EndTime = metav1.Time{}
	return nil
}

// locate returns the index of the top-level step holding step and, for a
// sub-step, its index in the group (else -1).
func locate(g Graph, step string) (int, int) {
	for i, n := range g.Steps {
		if n.Name == step {
			return i, -1
		}
		for j, s := range n.SubSteps {
			if s.Name == step {
				return i, j
			}
		}
	}
	return -1, -1
}

// after returns the names of nodes[i] and of the nodes coming after it:
// the later ones (in order), or in a DAG those depending on it.
func after(nodes []Node, i int, dag bool) []string {
	if !dag {
		var out []string
		for _, n := range nodes[i:] {
			out = append(out, n.Name)
		}
		return out
	}
	out := []string{nodes[i].Name}
	for changed := true; changed; {
		changed = false
		for _, n := range nodes {
			if slices.Contains(out, n.Name) {
				continue
			}
			for _, d := range n.DependsOn {
				if slices.Contains(out, d) {
					out = append(out, n.Name)
					changed = true
					break
				}
			}
		}
	}
	return out
}
