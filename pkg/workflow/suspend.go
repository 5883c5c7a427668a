package workflow

import (
	"context"

	cuexruntime "github.com/kubevela/pkg/cue/cuex/runtime"
	"github.com/kubevela/workflow/pkg/providers/builtin"
	"github.com/kubevela/workflow/pkg/providers/legacy/workspace"
	providertypes "github.com/kubevela/workflow/pkg/providers/types"
	wftypes "github.com/kubevela/workflow/pkg/types"
)

// The suspend providers of kubevela/workflow v0.7.2 (builtin.#Suspend and
// the legacy op.#Suspend) declare a message parameter but never read it:
// a suspended step always says "Suspended by field <label>". The wrappers
// below run the same providers with an Action whose Suspend reports the
// step's message instead, when the step sets one; everything else
// (duration, resume timestamps, the error that stops the step) is the
// library's.

// suspendProvider is builtin.Suspend reporting $params.message, when set,
// as the suspended step's message (status.workflow.steps[].message).
func suspendProvider() cuexruntime.ProviderFn {
	return providertypes.GenericProviderFn[builtin.SuspendVars, any](
		func(ctx context.Context, p *builtin.SuspendParams) (*any, error) {
			p.Action = withSuspendMessage(p.Action, p.Params.Message)
			return builtin.Suspend(ctx, p)
		})
}

// legacySuspendProvider is op.#Suspend's provider (legacy workspace.Suspend)
// reporting its message field, when set, as the step's message.
func legacySuspendProvider() cuexruntime.ProviderFn {
	return providertypes.LegacyGenericProviderFn[workspace.SuspendVars, any](
		func(ctx context.Context, p *workspace.SuspendParams) (*any, error) {
			p.Action = withSuspendMessage(p.Action, p.Params.Message)
			return workspace.Suspend(ctx, p)
		})
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
