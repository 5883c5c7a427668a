package appfile

import (
	"context"
	"fmt"
	"time"

	oamv1alpha1 "github.com/kubevela/pkg/apis/oam/v1alpha1"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
)

// workflow validates spec.workflow, or builds the default workflow: one
// apply-component step per component (DAG over dependsOn), or, when the
// app has topology or override policies, a single deploy step using them.
func (p *parser) workflow(ctx context.Context, wf *common.Workflow) error {
	if wf == nil || (len(wf.Steps) == 0 && wf.Ref == "") {
		p.af.Workflow = p.defaultWorkflow()
		return nil
	}
	out := &Workflow{Ref: wf.Ref, Mode: ModeStepByStep, SubStepMode: ModeDAG}
	if wf.Mode != nil {
		if wf.Mode.Steps != "" {
			out.Mode = string(wf.Mode.Steps)
		}
		if wf.Mode.SubSteps != "" {
			out.SubStepMode = string(wf.Mode.SubSteps)
		}
	}
	p.checkMode("spec.workflow.mode.steps", out.Mode)
	p.checkMode("spec.workflow.mode.subSteps", out.SubStepMode)
	if wf.Ref != "" && len(wf.Steps) > 0 {
		p.errorf("spec.workflow.ref", "set either ref or steps, not both")
	}
	seen := map[string]string{}
	for i := range wf.Steps {
		path := fmt.Sprintf("spec.workflow.steps[%d]", i)
		ws := &wf.Steps[i]
		step, err := p.step(ctx, path, &ws.WorkflowStepBase, seen)
		if err != nil {
			return err
		}
		if ws.Mode != "" {
			step.Mode = string(ws.Mode)
			p.checkMode(path+".mode", step.Mode)
		}
		if len(ws.SubSteps) > 0 && ws.Type != StepTypeStepGroup {
			p.errorf(path+".subSteps", "only steps of type %q have subSteps", StepTypeStepGroup)
		}
		for j := range ws.SubSteps {
			sub, err := p.step(ctx, fmt.Sprintf("%s.subSteps[%d]", path, j), &ws.SubSteps[j], seen)
			if err != nil {
				return err
			}
			if sub.Type == StepTypeStepGroup {
				p.errorf(fmt.Sprintf("%s.subSteps[%d].type", path, j), "step groups cannot be nested")
			}
			step.SubSteps = append(step.SubSteps, sub)
		}
		out.Steps = append(out.Steps, step)
	}
	// dependsOn must name steps of the same level.
	p.stepDeps("spec.workflow.steps", out.Steps)
	for i, s := range out.Steps {
		p.stepDeps(fmt.Sprintf("spec.workflow.steps[%d].subSteps", i), s.SubSteps)
	}
	p.af.Workflow = out
	return nil
}

func (p *parser) checkMode(path, mode string) {
	if mode != ModeStepByStep && mode != ModeDAG {
		p.errorf(path, "unknown mode %q (want %s or %s)", mode, ModeStepByStep, ModeDAG)
	}
}

func (p *parser) step(ctx context.Context, path string, ws *oamv1alpha1.WorkflowStepBase, seen map[string]string) (*WorkflowStep, error) {
	p.subject = ""
	if ws.Name != "" {
		p.subject = fmt.Sprintf("workflow step %q", ws.Name)
	}
	defer func() { p.subject = "" }()
	if ws.Name == "" {
		p.errorf(path+".name", "step name is empty")
	} else if other, dup := seen[ws.Name]; dup {
		p.errorf(path+".name", "duplicate step name %q (also %s)", ws.Name, other)
	} else {
		seen[ws.Name] = path
	}
	if ws.Timeout != "" {
		if _, err := time.ParseDuration(ws.Timeout); err != nil {
			p.errorf(path+".timeout", "%q is not a duration (e.g. 30s, 5m)", ws.Timeout)
		}
	}
	props, err := DecodeProperties(ws.Properties)
	if err != nil {
		p.errorf(path+".properties", "%v", err)
		props = map[string]any{}
	}
	step := &WorkflowStep{
		Name:       ws.Name,
		Type:       ws.Type,
		Properties: props,
		DependsOn:  ws.DependsOn,
		If:         ws.If,
		Timeout:    ws.Timeout,
		Inputs:     ws.Inputs,
		Outputs:    ws.Outputs,
		Meta:       ws.Meta,
		src:        p.src,
	}
	if ws.Type == StepTypeSuspend || ws.Type == StepTypeStepGroup {
		return step, nil
	}
	def, err := p.resolve(ctx, path+".type", KindWorkflowStep, ws.Type)
	if err != nil {
		return nil, err
	}
	if def == nil {
		return step, nil
	}
	step.def = def
	step.once.Do(func() {})
	var keys []string
	for _, in := range ws.Inputs {
		if in.ParameterKey != "" {
			keys = append(keys, in.ParameterKey)
		}
	}
	cctx := p.validationContext(p.af.Name)
	cctx["stepName"] = ws.Name
	cctx["stepSessionID"] = ""
	if _, err := p.checkProperties(ctx, path+".properties", def, props, cctx, suppliedKeys(keys)); err != nil {
		return nil, err
	}
	return step, nil
}

func (p *parser) stepDeps(path string, steps []*WorkflowStep) {
	names := map[string]int{}
	for i, s := range steps {
		names[s.Name] = i
	}
	graph := map[string][]string{}
	order := make([]string, 0, len(steps))
	defer func() { p.subject = "" }()
	for i, s := range steps {
		order = append(order, s.Name)
		p.subject = ""
		if s.Name != "" {
			p.subject = fmt.Sprintf("workflow step %q", s.Name)
		}
		for j, d := range s.DependsOn {
			if !has(names, d) {
				p.errorf(fmt.Sprintf("%s[%d].dependsOn[%d]", path, i, j), "unknown step %q", d)
				continue
			}
			graph[s.Name] = append(graph[s.Name], d)
		}
	}
	for _, cyc := range findCycles(graph, order) {
		p.subject = fmt.Sprintf("workflow step %q", cyc[0])
		p.errorf(fmt.Sprintf("%s[%d].dependsOn", path, names[cyc[0]]), "dependency cycle: %v", cyc)
	}
}

// defaultWorkflow builds the workflow of an app without spec.workflow steps.
func (p *parser) defaultWorkflow() *Workflow {
	af := p.af
	var deployPolicies []any
	for _, pol := range af.Policies {
		if pol.Type == PolicyTopology || pol.Type == PolicyOverride {
			deployPolicies = append(deployPolicies, pol.Name)
		}
	}
	if len(deployPolicies) > 0 {
		return &Workflow{
			Mode: ModeStepByStep, SubStepMode: ModeDAG, Default: true,
			Steps: []*WorkflowStep{{
				Name:       StepTypeDeploy,
				Type:       StepTypeDeploy,
				Properties: map[string]any{"policies": deployPolicies, "parallelism": int64(5)},
				src:        p.src,
			}},
		}
	}
	wf := &Workflow{Mode: ModeDAG, SubStepMode: ModeDAG, Default: true}
	for _, c := range af.Components {
		wf.Steps = append(wf.Steps, &WorkflowStep{
			Name:       c.Name,
			Type:       StepTypeApplyComponent,
			Properties: map[string]any{"component": c.Name},
			DependsOn:  c.DependsOn,
			src:        p.src,
		})
	}
	return wf
}

// StepContext is the CUE `context` of workflow step templates beyond name
// and namespace, for revision rev (number n): the controller runs steps
// with it and diff renders them with it.
func (af *AppFile) StepContext(rev string, n int64) map[string]any {
	labels := map[string]any{}
	for k, v := range af.Labels {
		labels[k] = v
	}
	annos := map[string]any{}
	for k, v := range af.Annotations {
		annos[k] = v
	}
	return map[string]any{
		"appName":        af.Name,
		"appRevision":    rev,
		"appRevisionNum": n,
		"appLabels":      labels,
		"appAnnotations": annos,
	}
}
