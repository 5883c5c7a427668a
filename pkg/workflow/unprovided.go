package workflow

import (
	"context"
	"strings"

	"github.com/kubevela/pkg/util/rand"
	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	wftypes "github.com/kubevela/workflow/pkg/types"

	oamcuex "github.com/oamflow/oamflow/pkg/cuex"
)

// Steps using what oamflow does not provide.
//
// A workflow step definition may import a provider package oamflow does
// not serve (`import "vela/gadget"`) or use an action a package lacks
// (`kube.#Nope`): def vet, def apply and admission load it with a warning
// naming the import or action and its position (pkg/cuex), so that one
// such definition does not block the others. Run as it is, such a step did
// not fail clearly: a missing action is an incomplete CUE reference that
// the library ignores, and the step succeeded without doing it; a missing
// package failed each retry with CUE's `builtin package "vela/gadget"
// undefined`. The guard fails such a step for good, before it runs
// anything, with the words of the warning.

// unprovidedStep is a step that must fail: its type, and why.
type unprovidedStep struct {
	typ, why string
}

// unprovided returns, by step name, each step (or sub-step) of p whose
// template uses an import or action oamflow does not provide. Templates
// that cannot be loaded or do not compile are left to the library, which
// reports them.
func (e *Engine) unprovided(ctx context.Context, p Plan, templates loader) map[string]unprovidedStep {
	out := map[string]unprovidedStep{}
	byType := map[string]string{}
	check := func(name, typ string) {
		why, done := byType[typ]
		if !done {
			why = e.unprovidedIn(ctx, typ, templates)
			byType[typ] = why
		}
		if why != "" {
			out[name] = unprovidedStep{typ: typ, why: why}
		}
	}
	for _, s := range p.Steps {
		check(s.Name, s.Type)
		for _, sub := range s.SubSteps {
			check(sub.Name, sub.Type)
		}
	}
	return out
}

// unprovidedIn is why a step of type typ must fail, or "".
func (e *Engine) unprovidedIn(ctx context.Context, typ string, templates loader) string {
	if typ == StepTypeStepGroup {
		return ""
	}
	text, err := templates.LoadTemplate(ctx, typ)
	if err != nil || strings.TrimSpace(text) == "" {
		return ""
	}
	src := oamcuex.Source{Kind: "workflow-step", Name: typ}
	t, err := e.checker.Compile(src, text)
	if err != nil {
		return ""
	}
	missing := t.Unprovided()
	if len(missing) == 0 {
		return ""
	}
	return src.String() + ": " + strings.Join(missing, "; ")
}

// fail returns the status of step name failed for good, as op.#Fail
// leaves it (reason Action; the run is terminated); its id is the one st
// has, else a new one as the library would give.
func (u unprovidedStep) fail(name string, st map[string]wfv1alpha1.StepStatus) (wfv1alpha1.StepStatus, *wftypes.Operation) {
	id := st[name].ID
	if id == "" {
		id = rand.RandomString(10)
	}
	return wfv1alpha1.StepStatus{ID: id, Name: name, Type: u.typ, Phase: wfv1alpha1.WorkflowStepPhaseFailed, Reason: wftypes.StatusReasonAction, Message: u.why},
		&wftypes.Operation{Terminated: true}
}
