package workflow

import (
	"context"

	cuexruntime "github.com/kubevela/pkg/cue/cuex/runtime"
	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"github.com/kubevela/workflow/pkg/providers/builtin"
	"github.com/kubevela/workflow/pkg/providers/legacy/workspace"
	providertypes "github.com/kubevela/workflow/pkg/providers/types"
	wftypes "github.com/kubevela/workflow/pkg/types"
)

// The suspend providers of kubevela/workflow v0.7.2 (builtin.#Suspend and
// the legacy op.#Suspend) declare a message parameter but never read it:
// a suspended step always says "Suspended by field <label>". The wrappers
// below run the same providers with an Action whose Suspend reports the
// step's message instead, when the step sets one, and that let a person's
// resume release a suspend with a duration (resumedByHand); everything
// else (duration, resume timestamps, the error that stops the step) is
// the library's.

// suspendProvider is builtin.Suspend reporting $params.message, when set,
// as the suspended step's message (status.workflow.steps[].message).
func suspendProvider() cuexruntime.ProviderFn {
	return providertypes.GenericProviderFn[builtin.SuspendVars, any](
		func(ctx context.Context, p *builtin.SuspendParams) (*any, error) {
			if resumedByHand(p.RuntimeParams, builtin.SuspendTimeStamp) {
				return nil, nil
			}
			p.Action = withSuspendMessage(p.Action, p.Params.Message)
			return builtin.Suspend(ctx, p)
		})
}

// legacySuspendProvider is op.#Suspend's provider (legacy workspace.Suspend)
// reporting its message field, when set, as the step's message.
func legacySuspendProvider() cuexruntime.ProviderFn {
	return providertypes.LegacyGenericProviderFn[workspace.SuspendVars, any](
		func(ctx context.Context, p *workspace.SuspendParams) (*any, error) {
			if resumedByHand(p.RuntimeParams, workspace.SuspendTimeStamp) {
				return nil, nil
			}
			p.Action = withSuspendMessage(p.Action, p.Params.Message)
			return workspace.Suspend(ctx, p)
		})
}

// resumedByHand reports whether the suspend action of the step being run
// (rt) was released by a person: it suspended the step before (its
// suspend timestamp is in the workflow context; suspendTimeStamp is the
// library's key for it) and the step is now running, which only a resume
// does (workflowops.Resume sets a suspending step running). The library's
// providers check this only for a suspend without duration: one with a
// duration went back to suspending until the duration ended, whatever the
// person said.
func resumedByHand(rt providertypes.RuntimeParams, suspendTimeStamp string) bool {
	step := stepSessionID(rt)
	if step == "" || rt.WorkflowContext == nil || rt.Action == nil {
		return false
	}
	if rt.WorkflowContext.GetMutableValue(step, rt.FieldLabel, suspendTimeStamp) == "" {
		return false
	}
	return rt.Action.GetStatus().Phase == wfv1alpha1.WorkflowStepPhaseRunning
}

// withSuspendMessage returns act with Suspend reporting msg; act itself
// when msg is empty (the library's "Suspended by field …" stays).
func withSuspendMessage(act wftypes.Action, msg string) wftypes.Action {
	if act == nil || msg == "" {
		return act
	}
	return suspendMessageAction{Action: act, msg: msg}
}

// suspendMessageAction is an Action whose Suspend ignores the message it
// is given and reports msg.
type suspendMessageAction struct {
	wftypes.Action
	msg string
}

func (a suspendMessageAction) Suspend(string) { a.Action.Suspend(a.msg) }
