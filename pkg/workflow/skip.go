package workflow

import (
	"fmt"
	"strings"

	monitorContext "github.com/kubevela/pkg/monitor/context"
	"github.com/kubevela/pkg/util/rand"
	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	wfContext "github.com/kubevela/workflow/pkg/context"
	wftypes "github.com/kubevela/workflow/pkg/types"
)

// Steps not run because a step they depend on failed.
//
// kubevela/workflow skips a step whose dependsOn (or, one by one, whose
// earlier step) did not succeed, with no message; and when a step fails
// it sets its outputs to null, so a step taking an input from it runs
// anyway, with null. A step whose input comes from a step that failed
// for good between passes (oamflow's retry limit) waited for the input
// until the run was failed as stuck.
//
// The guard below decides first, for a step (or sub-step) without `if`:
// when the step producing one of its inputs failed (a step-level input, or
// a component-level input of a component it deploys, dataflow.go), the
// value cannot arrive and the step fails (reason Input) without running,
// its message naming the input, the producing step and component; when
// another dependency failed — a dependsOn step that did not succeed, or in
// StepByStep an earlier step — it is skipped, without running, its message
// naming the failed step. Steps with `if` (always, or a condition on
// status) keep the library's rules.

// depSkipPrefix starts the message of a step skipped by the guard.
const depSkipPrefix = "not run: "

// stepDeps is what one step waits for.
type stepDeps struct {
	// conditional: the step has `if`; the guard leaves it alone.
	conditional bool
	typ         string
	dependsOn   []string
	inputs      []string
	// before are the earlier steps of its level in StepByStep mode.
	before []string
}

// guard knows the dependencies of every step of a plan.
type guard struct {
	steps map[string]stepDeps
	// outputs maps each step output name to the steps producing it.
	outputs map[string][]string
	// unprovided are the steps that fail without running, by name
	// (unprovided.go).
	unprovided map[string]unprovidedStep
	// flow is the component-level data flow (nil: none).
	flow *dataFlow
}

// block is why a step must not run: it is skipped, or failed when an
// input it needs cannot arrive.
type block struct {
	why  string
	fail bool
}

// status returns the status of step name blocked for b; its id is the
// one st has, else a new one as the library would give.
func (b block) status(name string, st map[string]wfv1alpha1.StepStatus) wfv1alpha1.StepStatus {
	s := skip(name, b.why, st)
	if b.fail {
		s.Phase, s.Reason = wfv1alpha1.WorkflowStepPhaseFailed, wftypes.StatusReasonInput
	}
	return s
}

func newGuard(p Plan) *guard {
	g := &guard{steps: map[string]stepDeps{}, outputs: map[string][]string{}}
	var topBefore []string
	for _, s := range p.Steps {
		d := stepDeps{conditional: s.If != "", typ: s.Type, dependsOn: s.DependsOn}
		for _, in := range s.Inputs {
			d.inputs = append(d.inputs, in.From)
		}
		if p.Mode.Steps != wfv1alpha1.WorkflowModeDAG && len(s.DependsOn) == 0 {
			d.before = append([]string(nil), topBefore...)
		}
		topBefore = append(topBefore, s.Name)
		g.steps[s.Name] = d
		for _, o := range s.Outputs {
			g.outputs[o.Name] = append(g.outputs[o.Name], s.Name)
		}
		mode := p.Mode.SubSteps
		if s.Mode != "" {
			mode = s.Mode
		}
		var subBefore []string
		for _, sub := range s.SubSteps {
			sd := stepDeps{conditional: sub.If != "", typ: sub.Type, dependsOn: sub.DependsOn}
			for _, in := range sub.Inputs {
				sd.inputs = append(sd.inputs, in.From)
			}
			if mode == wfv1alpha1.WorkflowModeStep && len(sub.DependsOn) == 0 {
				sd.before = append([]string(nil), subBefore...)
			}
			subBefore = append(subBefore, sub.Name)
			g.steps[sub.Name] = sd
			for _, o := range sub.Outputs {
				g.outputs[o.Name] = append(g.outputs[o.Name], sub.Name)
			}
		}
	}
	return g
}

// producers returns the steps whose outputs hold the variable path from
// ("a" or "a.b" for an output "a").
func (g *guard) producers(from string) []string {
	var out []string
	for name, steps := range g.outputs {
		if from == name || strings.HasPrefix(from, name+".") {
			out = append(out, steps...)
		}
	}
	return out
}

// failedForGood reports whether s failed and will not run again.
func failedForGood(s wfv1alpha1.StepStatus) bool {
	return s.Phase == wfv1alpha1.WorkflowStepPhaseFailed && StepFinished(s.Phase, s.Reason)
}

// skippedByGuard reports whether s was skipped because its dependency
// failed.
func skippedByGuard(s wfv1alpha1.StepStatus) bool {
	return s.Phase == wfv1alpha1.WorkflowStepPhaseSkipped && strings.HasPrefix(s.Message, depSkipPrefix)
}

// blocked returns why step name must not run given the step statuses st
// (by name), or ok false when the guard does not decide. An input whose
// producer failed comes first: the step fails rather than being skipped.
func (g *guard) blocked(name string, st map[string]wfv1alpha1.StepStatus) (block, bool) {
	d, known := g.steps[name]
	if !known || d.conditional {
		return block{}, false
	}
	state := func(s wfv1alpha1.StepStatus) string {
		switch {
		case skippedByGuard(s):
			return fmt.Sprintf("was not run (%s)", strings.TrimPrefix(s.Message, depSkipPrefix))
		case s.Phase == wfv1alpha1.WorkflowStepPhaseSkipped:
			return "was skipped"
		case strings.HasPrefix(s.Message, depSkipPrefix):
			return fmt.Sprintf("failed (%s)", strings.TrimPrefix(s.Message, depSkipPrefix))
		}
		return "failed"
	}
	gone := func(s wfv1alpha1.StepStatus) bool { return failedForGood(s) || skippedByGuard(s) }
	for _, in := range d.inputs {
		for _, dep := range g.producers(in) {
			if s, ok := st[dep]; ok && gone(s) {
				return block{fail: true, why: fmt.Sprintf("%sinput %q cannot arrive: step %q, which produces it, %s", depSkipPrefix, in, dep, state(s))}, true
			}
		}
	}
	if g.flow != nil {
		for _, in := range g.flow.consumes[name] {
			for _, p := range g.flow.producers(in) {
				if s, ok := st[p.step]; ok && p.step != name && gone(s) {
					return block{fail: true, why: fmt.Sprintf("%sinput %q cannot arrive: step %q, which deploys component %q producing it, %s",
						depSkipPrefix, in, p.step, p.component, state(s))}, true
				}
			}
		}
	}
	why := func(dep string, s wfv1alpha1.StepStatus) block {
		switch {
		case skippedByGuard(s):
			return block{why: fmt.Sprintf("%sstep %q was not run (%s)", depSkipPrefix, dep, strings.TrimPrefix(s.Message, depSkipPrefix))}
		case s.Phase == wfv1alpha1.WorkflowStepPhaseSkipped:
			return block{why: fmt.Sprintf("%sstep %q, which it depends on, was skipped", depSkipPrefix, dep)}
		}
		return block{why: fmt.Sprintf("%sstep %q failed", depSkipPrefix, dep)}
	}
	for _, dep := range d.dependsOn {
		if s, ok := st[dep]; ok && StepFinished(s.Phase, s.Reason) && s.Phase != wfv1alpha1.WorkflowStepPhaseSucceeded {
			return why(dep, s), true
		}
	}
	for _, dep := range d.before {
		if s, ok := st[dep]; ok && gone(s) {
			return why(dep, s), true
		}
	}
	// A component's dependsOn on a component only other steps deploy
	// (dataflow.go): checked last, so that a step whose own dependsOn or
	// earlier step failed is skipped as the library skips it.
	for _, d := range g.flow.needsOf(name) {
		if d.late {
			return block{fail: true, why: fmt.Sprintf("%scomponent %q depends on component %q, which only %s deploys, and it runs after this step",
				depSkipPrefix, d.component, d.dependency, quoteSteps(d.steps))}, true
		}
		var states []string
		for _, dep := range d.steps {
			s, ok := st[dep]
			if !ok || !(gone(s) || s.Phase == wfv1alpha1.WorkflowStepPhaseSkipped) {
				states = nil
				break
			}
			states = append(states, fmt.Sprintf("step %q %s", dep, state(s)))
		}
		if len(states) > 0 {
			return block{fail: true, why: fmt.Sprintf("%scomponent %q depends on component %q, which cannot be deployed: %s",
				depSkipPrefix, d.component, d.dependency, strings.Join(states, ", "))}, true
		}
	}
	return block{}, false
}

// skip returns the status of step name skipped for why; its id is the
// one st has, else a new one as the library would give.
func skip(name, why string, st map[string]wfv1alpha1.StepStatus) wfv1alpha1.StepStatus {
	s := st[name]
	id := s.ID
	if id == "" {
		id = rand.RandomString(10)
	}
	return wfv1alpha1.StepStatus{ID: id, Name: name, Type: s.Type, Phase: wfv1alpha1.WorkflowStepPhaseSkipped, Reason: wftypes.StatusReasonSkip, Message: why}
}

// wrap returns runners guarded.
func (g *guard) wrap(runners []wftypes.TaskRunner) []wftypes.TaskRunner {
	out := make([]wftypes.TaskRunner, len(runners))
	for i, r := range runners {
		out[i] = guardedRunner{TaskRunner: r, g: g}
	}
	return out
}

// guardedRunner runs a step unless the guard skips it.
type guardedRunner struct {
	wftypes.TaskRunner
	g *guard
}

// Pending lets a step whose dependency failed go to Run (to be skipped)
// instead of waiting for an input that will not come.
func (r guardedRunner) Pending(ctx monitorContext.Context, wfCtx wfContext.Context, st map[string]wfv1alpha1.StepStatus) (bool, wfv1alpha1.StepStatus) {
	if _, blocked := r.g.blocked(r.Name(), st); blocked {
		return false, wfv1alpha1.StepStatus{}
	}
	return r.TaskRunner.Pending(ctx, wfCtx, st)
}

// Run skips the step when its dependency failed; otherwise it runs it (a
// retry judged as a first run, see retry.go), a step group with its
// sub-steps guarded too.
func (r guardedRunner) Run(wfCtx wfContext.Context, opts *wftypes.TaskRunOptions) (wfv1alpha1.StepStatus, *wftypes.Operation, error) {
	if b, blocked := r.g.blocked(r.Name(), opts.StepStatus); blocked {
		st := b.status(r.Name(), opts.StepStatus)
		if st.Type == "" {
			st.Type = r.g.steps[r.Name()].typ
		}
		if b.fail {
			// As op.#Fail does: the run ends failed once the other
			// steps are done.
			return st, &wftypes.Operation{Terminated: true}, nil
		}
		return st, &wftypes.Operation{Skip: true}, nil
	}
	if u, ok := r.g.unprovided[r.Name()]; ok {
		st, op := u.fail(r.Name(), opts.StepStatus)
		return st, op, nil
	}
	if opts.Engine != nil {
		opts.Engine = guardedEngine{Engine: opts.Engine, g: r.g}
	}
	defer asFirstRun(r.Name(), opts.StepStatus)()
	st, op, err := r.TaskRunner.Run(wfCtx, opts)
	if err == nil && opts.Engine != nil && st.Phase == wfv1alpha1.WorkflowStepPhaseFailed && st.Reason == "" {
		// A step group whose sub-step the guard failed: the library
		// gives the group no reason for Input, which leaves it
		// unfinished (retried for ever); give it the sub-step's.
		for _, sub := range opts.Engine.GetStepStatus(r.Name()).SubStepsStatus {
			if sub.Phase == wfv1alpha1.WorkflowStepPhaseFailed && sub.Reason == wftypes.StatusReasonInput {
				st.Reason = wftypes.StatusReasonInput
				break
			}
		}
	}
	return st, op, err
}

// guardedEngine is the library's engine as a step group sees it: the
// sub-steps it runs are guarded.
type guardedEngine struct {
	wftypes.Engine
	g *guard
}

func (e guardedEngine) Run(ctx monitorContext.Context, runners []wftypes.TaskRunner, dag bool) error {
	return e.Engine.Run(ctx, e.g.wrap(runners), dag)
}
