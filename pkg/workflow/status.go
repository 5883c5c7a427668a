package workflow

import (
	"strings"

	oamv1alpha1 "github.com/kubevela/pkg/apis/oam/v1alpha1"
	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	wftypes "github.com/kubevela/workflow/pkg/types"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/pkg/workflowops"
)

// ModeString writes an execution mode as status.workflow.mode shows it:
// "<steps>-<subSteps>", e.g. "StepByStep-DAG".
func ModeString(m oamv1alpha1.WorkflowExecuteMode) string {
	return string(m.Steps) + "-" + string(m.SubSteps)
}

func parseMode(s string) oamv1alpha1.WorkflowExecuteMode {
	steps, sub, _ := strings.Cut(s, "-")
	return oamv1alpha1.WorkflowExecuteMode{Steps: oamv1alpha1.WorkflowMode(steps), SubSteps: oamv1alpha1.WorkflowMode(sub)}
}

// toRunStatus converts status.workflow into the engine's run status. A nil
// or unstarted status becomes the zero run status (the engine starts it).
func toRunStatus(st *common.WorkflowStatus) wfv1alpha1.WorkflowRunStatus {
	if st == nil {
		return wfv1alpha1.WorkflowRunStatus{}
	}
	rs := wfv1alpha1.WorkflowRunStatus{
		Phase:        st.Status,
		Message:      st.Message,
		Suspend:      st.Suspend,
		SuspendState: st.SuspendState,
		Terminated:   st.Terminated,
		Finished:     st.Finished,
		Steps:        deepCopySteps(st.Steps),
		StartTime:    st.StartTime,
		EndTime:      st.EndTime,
	}
	if st.Mode != "" {
		rs.Mode = parseMode(st.Mode)
	}
	return rs
}

// fromRunStatus converts the engine's run status back into status.workflow
// for appRevision.
func fromRunStatus(rs wfv1alpha1.WorkflowRunStatus, appRevision string) common.WorkflowStatus {
	st := common.WorkflowStatus{
		AppRevision:  appRevision,
		Status:       rs.Phase,
		Message:      rs.Message,
		Suspend:      rs.Suspend,
		SuspendState: rs.SuspendState,
		Terminated:   rs.Terminated,
		Finished:     rs.Finished,
		Steps:        deepCopySteps(rs.Steps),
		StartTime:    rs.StartTime,
		EndTime:      rs.EndTime,
	}
	if rs.Mode.Steps != "" {
		st.Mode = ModeString(rs.Mode)
	}
	return st
}

func deepCopySteps(in []wfv1alpha1.WorkflowStepStatus) []wfv1alpha1.WorkflowStepStatus {
	if in == nil {
		return nil
	}
	out := make([]wfv1alpha1.WorkflowStepStatus, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
		out[i].Message = readableMessage(out[i].Message)
		for j := range out[i].SubStepsStatus {
			out[i].SubStepsStatus[j].Message = readableMessage(out[i].SubStepsStatus[j].Message)
		}
	}
	return out
}

// readableMessage removes what kubevela/pkg's cuex wraps around a
// provider's error, "function call error for <path>: <error> (value:
// <the whole CUE value of the call>)", keeping <error>: the value dump
// repeats the step's parameters (CUE internals such as #do and #provider)
// and buries the reason. Nested wrappings are removed too; other messages
// are returned unchanged.
func readableMessage(msg string) string {
	const prefix, suffix = "function call error for ", " (value: "
	for {
		i := strings.Index(msg, prefix)
		if i < 0 {
			return msg
		}
		rest := msg[i+len(prefix):]
		colon := strings.Index(rest, ": ")
		if colon < 0 {
			return msg
		}
		inner := rest[colon+2:]
		if j := strings.LastIndex(inner, suffix); j >= 0 {
			inner = inner[:j]
		}
		msg = msg[:i] + inner
	}
}

// Started reports whether a run has begun (it has a start time or steps);
// see workflowops.Started.
func Started(st *common.WorkflowStatus) bool { return workflowops.Started(st) }

// StepFinished reports whether a step in phase with reason will not run
// again; see workflowops.StepFinished.
func StepFinished(phase wfv1alpha1.WorkflowStepPhase, reason string) bool {
	return workflowops.StepFinished(phase, reason)
}

// FailedStep returns the first failed step (or sub-step) of st, with the
// path "step" or "group/sub", or ok false.
func FailedStep(st *common.WorkflowStatus) (path string, step wfv1alpha1.StepStatus, ok bool) {
	if st == nil {
		return "", wfv1alpha1.StepStatus{}, false
	}
	for _, s := range st.Steps {
		for _, sub := range s.SubStepsStatus {
			if sub.Phase == wfv1alpha1.WorkflowStepPhaseFailed && sub.Reason != wftypes.StatusReasonTerminate {
				return s.Name + "/" + sub.Name, sub, true
			}
		}
		if s.Phase == wfv1alpha1.WorkflowStepPhaseFailed && s.Reason != wftypes.StatusReasonTerminate {
			return s.Name, s.StepStatus, true
		}
	}
	return "", wfv1alpha1.StepStatus{}, false
}

// CurrentStep returns the first step (or sub-step) that is running,
// pending or suspending, with its path, or ok false.
func CurrentStep(st *common.WorkflowStatus) (path string, step wfv1alpha1.StepStatus, ok bool) {
	if st == nil {
		return "", wfv1alpha1.StepStatus{}, false
	}
	active := func(p wfv1alpha1.WorkflowStepPhase) bool {
		return p == wfv1alpha1.WorkflowStepPhaseRunning || p == wfv1alpha1.WorkflowStepPhasePending || p == wfv1alpha1.WorkflowStepPhaseSuspending
	}
	for _, s := range st.Steps {
		for _, sub := range s.SubStepsStatus {
			if active(sub.Phase) {
				return s.Name + "/" + sub.Name, sub, true
			}
		}
		if active(s.Phase) {
			return s.Name, s.StepStatus, true
		}
	}
	return "", wfv1alpha1.StepStatus{}, false
}
