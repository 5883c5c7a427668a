package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"cuelang.org/go/cue"
	oamv1alpha1 "github.com/kubevela/pkg/apis/oam/v1alpha1"
	monitorContext "github.com/kubevela/pkg/monitor/context"
	"github.com/kubevela/pkg/util/rand"
	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	wfContext "github.com/kubevela/workflow/pkg/context"
	"github.com/kubevela/workflow/pkg/cue/process"
	wferrors "github.com/kubevela/workflow/pkg/errors"
	providertypes "github.com/kubevela/workflow/pkg/providers/types"
	wftypes "github.com/kubevela/workflow/pkg/types"
)

// Most steps of most workflows are apply-component steps of the built-in
// template naming a component and nothing else: every step of a default
// workflow is one. What that template does is call vela/oam's
// ApplyComponent with its parameters; kubevela/workflow compiles it with
// the step's CUE context on every pass (and its dependency check compiles
// that context again), which was a quarter of the controller's CPU in a
// create wave. Such a step runs here without CUE: the provider is called
// directly, and the library's step bookkeeping is kept as its CUE task
// runner does it (dependsOn pending, the executor's pre-check hooks for
// skip and timeout, the failure count, the post-stop hooks, the step's
// runtime metadata in the process context). Anything else — another
// template, inputs, outputs, if, properties other than component, cluster
// and namespace strings — runs through the library.

// nativeRunners replaces, in runners (one per step of instance, in order),
// the runner of each step nativeParams accepts, when the apply-component
// template the run uses is the built-in one.
func (e *Engine) nativeRunners(ctx context.Context, instance *wftypes.WorkflowInstance, runners []wftypes.TaskRunner, templates loader, pctx process.Context) []wftypes.TaskRunner {
	if e.cueSteps || len(runners) != len(instance.Steps) {
		return runners
	}
	native := map[int]componentParams{}
	for i, step := range instance.Steps {
		if p, ok := nativeParams(step); ok && runners[i].Name() == step.Name {
			native[i] = p
		}
	}
	if len(native) == 0 {
		return runners
	}
	if !templates.isBuiltin(ctx, StepTypeApplyComponent) {
		return runners
	}
	for i, p := range native {
		step := instance.Steps[i]
		runners[i] = &nativeApply{step: step, id: stepID(instance.Status, step.Name), params: p, pctx: pctx}
	}
	return runners
}

// nativeParams returns the ApplyComponent parameters of step when it can
// run without CUE: an apply-component step without if, inputs, outputs or
// sub-steps whose properties are component (required), cluster and
// namespace, each a string.
func nativeParams(step oamv1alpha1.WorkflowStep) (componentParams, bool) {
	if step.Type != StepTypeApplyComponent || step.If != "" || len(step.Inputs) > 0 || len(step.Outputs) > 0 ||
		len(step.SubSteps) > 0 || step.Properties == nil {
		return componentParams{}, false
	}
	var props map[string]any
	if err := json.Unmarshal(step.Properties.Raw, &props); err != nil {
		return componentParams{}, false
	}
	var p componentParams
	for k, v := range props {
		s, ok := v.(string)
		if !ok {
			return componentParams{}, false
		}
		switch k {
		case "component":
			p.Component = s
		case "cluster":
			p.Cluster = s
		case "namespace":
			p.Namespace = s
		default:
			return componentParams{}, false
		}
	}
	return p, p.Component != ""
}

// stepID is the ID of the step named name: the one status has for it, else
// a new one (as kubevela/workflow's generator makes them).
func stepID(status wfv1alpha1.WorkflowRunStatus, name string) string {
	for _, s := range status.Steps {
		if s.Name == name {
			return s.ID
		}
	}
	return rand.RandomString(10)
}

// nativeApply is the runner of a step nativeParams accepts.
type nativeApply struct {
	step   oamv1alpha1.WorkflowStep
	id     string
	params componentParams
	pctx   process.Context
}

func (n *nativeApply) Name() string { return n.step.Name }

// Pending holds the step while a step it dependsOn has not finished.
func (n *nativeApply) Pending(_ monitorContext.Context, _ wfContext.Context, steps map[string]wfv1alpha1.StepStatus) (bool, wfv1alpha1.StepStatus) {
	for _, dep := range n.step.DependsOn {
		if st, ok := steps[dep]; !ok || !wftypes.IsStepFinish(st.Phase, st.Reason) {
			return true, wfv1alpha1.StepStatus{Phase: wfv1alpha1.WorkflowStepPhasePending, Type: n.step.Type, ID: n.id, Name: n.step.Name,
				Message: "Pending on DependsOn: " + dep}
		}
	}
	return false, wfv1alpha1.StepStatus{}
}

// FillContextData puts the step's name, session and span IDs in the
// process context while it runs (the provider records failures by
// session ID).
func (n *nativeApply) FillContextData(ctx monitorContext.Context, pctx process.Context) wftypes.ContextDataResetter {
	metas := []process.StepMetaKV{process.WithName(n.step.Name), process.WithSessionID(n.id), process.WithSpanID(ctx.GetID())}
	meta := process.NewStepRunTimeMeta()
	meta.Fill(pctx, metas)
	return func(pctx process.Context) {
		keys := make([]string, len(metas))
		for i, m := range metas {
			keys[i] = m.Key
		}
		meta.Remove(pctx, keys)
	}
}

// Run runs one pass of the step.
func (n *nativeApply) Run(wfCtx wfContext.Context, o *wftypes.TaskRunOptions) (status wfv1alpha1.StepStatus, op *wftypes.Operation, _ error) {
	act := &stepAction{status: wfv1alpha1.StepStatus{Name: n.step.Name, Type: n.step.Type, ID: n.id, Phase: wfv1alpha1.WorkflowStepPhaseSucceeded},
		prev: wfv1alpha1.StepStatus{Name: n.step.Name, Type: n.step.Type, Phase: wfv1alpha1.WorkflowStepPhaseSucceeded}}
	var tracer monitorContext.Context
	if o.GetTracer != nil {
		tracer = o.GetTracer(n.id, n.step)
	} else {
		tracer = monitorContext.NewTraceContext(context.Background(), "")
	}
	tracer = tracer.AddTag("step_name", n.step.Name, "step_type", n.step.Type)
	tracer.V(1)
	defer func() { tracer.Commit(string(act.status.Phase)) }()
	reset := n.FillContextData(tracer, n.pctx)
	defer reset(n.pctx)
	defer func() {
		if r := recover(); r != nil {
			// Failed for good, without the post-stop hooks, as the library
			// handles a panic in a step's evaluation.
			act.err(wfCtx, false, fmt.Errorf("step %s panicked: %v", n.step.Name, r), wftypes.StatusReasonRendering)
			status, op = act.status, act.operation()
			return
		}
		for _, hook := range o.PostStopHooks {
			if err := hook(wfCtx, cue.Value{}, n.step, act.status, o.StepStatus); err != nil {
				act.status.Message = err.Error()
				break
			}
		}
		status, op = act.status, act.operation()
	}()

	for _, hook := range o.PreCheckHooks {
		res, err := hook(n.step, &wftypes.PreCheckOptions{})
		if err != nil {
			tracer.Error(err, "do preCheckHook")
			act.skip("pre check error: " + err.Error())
			return
		}
		if res.Skip {
			act.skip("")
			return
		}
		if res.Timeout {
			act.timeout()
		}
	}
	// The library's pre-start hook fills step inputs: this step has none.
	if st, ok := o.StepStatus[n.step.Name]; ok {
		act.prev = st
	}
	ctx := providertypes.WithRuntimeParams(tracer.GetContext(), providertypes.RuntimeParams{
		WorkflowContext: wfCtx, ProcessContext: n.pctx, Action: act})
	if _, err := applyComponent(ctx, n.params.resolve(), providertypes.RuntimeParamsFrom(ctx)); err != nil {
		var brk wferrors.GenericActionError
		if !errors.As(err, &brk) {
			// Retried, as the library retries a step whose provider
			// failed.
			tracer.Error(err, "do steps")
			act.err(wfCtx, true, err, wftypes.StatusReasonExecute)
		}
	}
	return
}

// stepAction is the types.Action of a native step, keeping its status and
// operation as kubevela/workflow's CUE task runner does.
type stepAction struct {
	// status is this pass's; prev the step's status before it (GetStatus).
	status, prev                                      wfv1alpha1.StepStatus
	suspend, terminated, failedAfterRetries, wait, sk bool
}

func (a *stepAction) Suspend(msg string) {
	if a.status.Phase == wfv1alpha1.WorkflowStepPhaseFailed {
		return
	}
	a.suspend = true
	a.status.Phase = wfv1alpha1.WorkflowStepPhaseSuspending
	a.message(msg)
	a.status.Reason = wftypes.StatusReasonSuspend
}

func (a *stepAction) Resume(msg string) {
	a.suspend = false
	a.status.Phase = wfv1alpha1.WorkflowStepPhaseSucceeded
	a.message(msg)
}

func (a *stepAction) Terminate(msg string) {
	a.terminated = true
	a.status.Phase = wfv1alpha1.WorkflowStepPhaseSucceeded
	a.message(msg)
	a.status.Reason = wftypes.StatusReasonTerminate
}

func (a *stepAction) Wait(msg string) {
	a.wait = true
	if a.status.Phase != wfv1alpha1.WorkflowStepPhaseFailed && a.status.Phase != wfv1alpha1.WorkflowStepPhaseSuspending {
		a.status.Phase = wfv1alpha1.WorkflowStepPhaseRunning
		a.status.Reason = wftypes.StatusReasonWait
		a.message(msg)
	}
}

func (a *stepAction) Fail(msg string) {
	a.terminated = true
	a.status.Phase = wfv1alpha1.WorkflowStepPhaseFailed
	a.status.Reason = wftypes.StatusReasonAction
	a.message(msg)
}

func (a *stepAction) Message(msg string) { a.message(msg) }

func (a *stepAction) GetStatus() wfv1alpha1.StepStatus { return a.prev }

func (a *stepAction) message(msg string) {
	if msg != "" {
		a.status.Message = msg
	}
}

func (a *stepAction) skip(msg string) {
	a.sk = true
	a.status.Phase = wfv1alpha1.WorkflowStepPhaseSkipped
	a.status.Reason = wftypes.StatusReasonSkip
	a.status.Message = msg
}

func (a *stepAction) timeout() {
	a.terminated = true
	a.status.Phase = wfv1alpha1.WorkflowStepPhaseFailed
	a.status.Reason = wftypes.StatusReasonTimeout
	a.status.Message = ""
}

// err fails the step with err; wait retries it. The first reason set
// stands (a timeout stays a timeout).
func (a *stepAction) err(wfCtx wfContext.Context, wait bool, err error, reason string) {
	a.wait = wait
	a.status.Phase = wfv1alpha1.WorkflowStepPhaseFailed
	a.status.Message = err.Error()
	if a.status.Reason == "" {
		a.status.Reason = reason
		if reason != wftypes.StatusReasonExecute {
			a.terminated = true
		}
	}
	if wfCtx.IncreaseCountValueInMemory(wftypes.ContextPrefixFailedTimes, a.status.ID) >= wftypes.MaxWorkflowStepErrorRetryTimes {
		a.wait = false
		a.failedAfterRetries = true
		a.status.Reason = wftypes.StatusReasonFailedAfterRetries
	}
}

func (a *stepAction) operation() *wftypes.Operation {
	return &wftypes.Operation{Suspend: a.suspend, Terminated: a.terminated, Waiting: a.wait, Skip: a.sk, FailedAfterRetries: a.failedAfterRetries}
}
