package workflow

import (
	"encoding/json"
	"fmt"
	"time"

	oamv1alpha1 "github.com/kubevela/pkg/apis/oam/v1alpha1"
	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/oamflow/oamflow/pkg/appfile"
)

// Step types run without a definition, or exempt from the default
// timeout: a suspend step without duration waits for a person, and a step
// group's time is the sum of its sub-steps'.
const (
	StepTypeSuspend   = appfile.StepTypeSuspend
	StepTypeStepGroup = appfile.StepTypeStepGroup
)

// Step types that deploy components of the Application.
const (
	StepTypeApplyComponent = appfile.StepTypeApplyComponent
	StepTypeDeploy         = appfile.StepTypeDeploy
)

// Plan is a workflow ready to run: the steps in the engine's form and the
// execution modes.
type Plan struct {
	Steps []oamv1alpha1.WorkflowStep
	Mode  oamv1alpha1.WorkflowExecuteMode
}

// PlanOf converts a parsed workflow into the engine's steps. Every step
// and sub-step without a timeout gets defaultTimeout (when > 0), except
// suspend steps and step groups, so that no step waits forever silently.
// Mode defaults to StepByStep for steps and DAG for sub-steps.
func PlanOf(wf *appfile.Workflow, defaultTimeout time.Duration) (Plan, error) {
	if wf == nil {
		return Plan{}, fmt.Errorf("no workflow")
	}
	if wf.Ref != "" {
		return Plan{}, fmt.Errorf("spec.workflow.ref %q: standalone Workflow objects are not supported; write the steps in spec.workflow.steps", wf.Ref)
	}
	p := Plan{Mode: oamv1alpha1.WorkflowExecuteMode{
		Steps:    modeOr(wf.Mode, wfv1alpha1.WorkflowModeStep),
		SubSteps: modeOr(wf.SubStepMode, wfv1alpha1.WorkflowModeDAG),
	}}
	for _, s := range wf.Steps {
		base, err := stepBase(s, defaultTimeout)
		if err != nil {
			return Plan{}, err
		}
		step := oamv1alpha1.WorkflowStep{WorkflowStepBase: base}
		if s.Mode != "" {
			step.Mode = oamv1alpha1.WorkflowMode(s.Mode)
		}
		for _, sub := range s.SubSteps {
			sb, err := stepBase(sub, defaultTimeout)
			if err != nil {
				return Plan{}, err
			}
			step.SubSteps = append(step.SubSteps, sb)
		}
		p.Steps = append(p.Steps, step)
	}
	return p, nil
}

func modeOr(m string, def oamv1alpha1.WorkflowMode) oamv1alpha1.WorkflowMode {
	if m == "" {
		return def
	}
	return oamv1alpha1.WorkflowMode(m)
}

func stepBase(s *appfile.WorkflowStep, defaultTimeout time.Duration) (oamv1alpha1.WorkflowStepBase, error) {
	b := oamv1alpha1.WorkflowStepBase{
		Name:      s.Name,
		Type:      s.Type,
		Meta:      s.Meta,
		If:        s.If,
		Timeout:   s.Timeout,
		DependsOn: s.DependsOn,
		Inputs:    s.Inputs,
		Outputs:   s.Outputs,
	}
	if len(s.Properties) > 0 {
		raw, err := json.Marshal(s.Properties)
		if err != nil {
			return b, fmt.Errorf("step %q properties: %w", s.Name, err)
		}
		b.Properties = &runtime.RawExtension{Raw: raw}
	}
	if b.Timeout == "" && defaultTimeout > 0 && s.Type != StepTypeSuspend && s.Type != StepTypeStepGroup {
		b.Timeout = defaultTimeout.String()
	}
	return b, nil
}
