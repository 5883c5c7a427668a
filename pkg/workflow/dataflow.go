package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	oamv1alpha1 "github.com/kubevela/pkg/apis/oam/v1alpha1"
	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
)

// Data flow between the components of different steps.
//
// A component's outputs are exported by the step deploying it (a deploy
// step, whatever the clusters of its policies, or an apply-component
// step), and a component's inputs are read by the step deploying it: so a
// database deployed to one cluster hands its address to a web tier
// deployed to another by a later (or parallel) step. The engine knows
// nothing of these component-level inputs; dataFlow works out which step
// produces each, so that a consumer waiting for one names the producer,
// and a consumer whose producer failed fails at once (skip.go) instead of
// waiting until its timeout.
//
// The same holds for a component's dependsOn naming a component deployed
// elsewhere — by another step, or by the same deploy step to another
// cluster (the database in one cluster, the web tier that needs it up in
// another): the dependent waits, saying for what, until the dependency is
// healthy in this run (status.services), while the other components of
// its step go on; its step fails at once when every step deploying the
// dependency failed or was skipped, or, in StepByStep mode, when they all
// come after it. KubeVela only looks for the dependency among the
// components of the same step and cluster, where it never appears, so the
// step never finishes. Steps with `if` are left alone, as the guard
// leaves them.

// ComponentLister is implemented by Deployers that can list the
// Application's components; without it a run knows no component-level
// data flow (waiting consumers do not name the producer, and fail only at
// their timeout when it fails).
type ComponentLister interface {
	// ComponentNames are the names of the Application's components, in
	// spec order.
	ComponentNames() []string
}

// producer is a component whose output a step exports.
type producer struct {
	step, component string
}

// dataFlow is the component-level data flow of one run's plan.
type dataFlow struct {
	// sources maps each component output name to its producers.
	sources map[string][]producer
	// consumes maps each step (or sub-step) name to the component input
	// names it reads and that another step produces.
	consumes map[string][]string
	// needs maps each step (or sub-step) name without `if` to the
	// dependsOn of the components it deploys that only other steps deploy.
	needs map[string][]crossDep
	// deployedBy maps each component to the steps deploying it.
	deployedBy map[string][]string
	// conditional are the steps with `if`.
	conditional map[string]bool
}

// crossDep is a component's dependsOn on a component other steps deploy.
type crossDep struct {
	// component depends on dependency, which steps deploy.
	component, dependency string
	steps                 []string
	// late: every one of steps runs only after the dependent's step
	// finished: it comes later in StepByStep mode, or depends on the
	// dependent's step (step dependsOn).
	late bool
}

// quoteSteps writes step names as `step "a"` or `steps "a", "b"`.
func quoteSteps(steps []string) string {
	q := make([]string, len(steps))
	for i, s := range steps {
		q[i] = fmt.Sprintf("%q", s)
	}
	if len(q) == 1 {
		return "step " + q[0]
	}
	return "steps " + strings.Join(q, ", ")
}

// newDataFlow works out the data flow of p's steps: nil when no component
// of d has inputs or dependsOn. Which components a step deploys is known for
// apply-component steps (their component) and deploy steps (the targets
// of their policies); other step types deploy none.
func newDataFlow(ctx context.Context, p Plan, d Deployer) *dataFlow {
	lister, ok := d.(ComponentLister)
	if !ok {
		return nil
	}
	comps := map[string]Component{}
	consumers := false
	for _, name := range lister.ComponentNames() {
		if c, ok := d.Component(name); ok {
			comps[name] = c
			consumers = consumers || len(c.Inputs) > 0 || len(c.DependsOn) > 0
		}
	}
	if !consumers {
		return nil
	}
	f := &dataFlow{sources: map[string][]producer{}, consumes: map[string][]string{}, needs: map[string][]crossDep{}, deployedBy: map[string][]string{}, conditional: map[string]bool{}}
	deployed := map[string][]string{}
	deployedBy := f.deployedBy
	// position is the index of each step (a sub-step: its group's) in
	// p.Steps; unconditional lists the steps without `if`, in order.
	position := map[string]int{}
	var unconditional []string
	i := 0
	stepDependsOn := map[string][]string{}
	add := func(s oamv1alpha1.WorkflowStepBase) {
		names := stepComponents(ctx, s, d)
		deployed[s.Name] = names
		position[s.Name] = i
		stepDependsOn[s.Name] = s.DependsOn
		if s.If == "" {
			unconditional = append(unconditional, s.Name)
		} else {
			f.conditional[s.Name] = true
		}
		for _, c := range names {
			deployedBy[c] = append(deployedBy[c], s.Name)
		}
		for _, c := range names {
			for _, o := range comps[c].Outputs {
				f.sources[o.Name] = append(f.sources[o.Name], producer{step: s.Name, component: c})
			}
		}
	}
	for _, s := range p.Steps {
		add(s.WorkflowStepBase)
		for _, sub := range s.SubSteps {
			add(sub)
		}
		i++
	}
	for step, names := range deployed {
		seen := map[string]bool{}
		for _, c := range names {
			for _, in := range comps[c].Inputs {
				if seen[in.From] || !f.fromOthers(in.From, step) {
					continue
				}
				seen[in.From] = true
				f.consumes[step] = append(f.consumes[step], in.From)
			}
		}
		sort.Strings(f.consumes[step])
	}
	stepByStep := p.Mode.Steps != wfv1alpha1.WorkflowModeDAG
	for _, step := range unconditional {
		here := map[string]bool{}
		for _, c := range deployed[step] {
			here[c] = true
		}
		for _, c := range deployed[step] {
			for _, dep := range comps[c].DependsOn {
				if here[dep] || len(deployedBy[dep]) == 0 {
					continue
				}
				late := true
				for _, other := range deployedBy[dep] {
					after := stepByStep && position[other] > position[step]
					late = late && (after || reaches(stepDependsOn, other, step))
				}
				f.needs[step] = append(f.needs[step], crossDep{component: c, dependency: dep, steps: deployedBy[dep], late: late})
			}
		}
	}
	return f
}

// reaches reports whether step from depends on step to, directly or
// through other steps, by the step dependsOn edges.
func reaches(edges map[string][]string, from, to string) bool {
	seen := map[string]bool{}
	next := []string{from}
	for len(next) > 0 {
		s := next[len(next)-1]
		next = next[:len(next)-1]
		for _, d := range edges[s] {
			if d == to {
				return true
			}
			if !seen[d] {
				seen[d] = true
				next = append(next, d)
			}
		}
	}
	return false
}

// needsOf returns the dependsOn of the components step deploys that only
// other steps deploy.
func (f *dataFlow) needsOf(step string) []crossDep {
	if f == nil {
		return nil
	}
	return f.needs[step]
}

// deployers returns the steps deploying component name (nil when no step
// is known to, or f is nil).
func (f *dataFlow) deployers(name string) []string {
	if f == nil {
		return nil
	}
	return f.deployedBy[name]
}

// isConditional reports whether step has `if`.
func (f *dataFlow) isConditional(step string) bool { return f != nil && f.conditional[step] }

// fromOthers reports whether a step other than step produces from.
func (f *dataFlow) fromOthers(from, step string) bool {
	for _, p := range f.producers(from) {
		if p.step != step {
			return true
		}
	}
	return false
}

// producers returns the producers of the variable path from ("a" or "a.b"
// for an output "a"), ordered by step then component.
func (f *dataFlow) producers(from string) []producer {
	if f == nil {
		return nil
	}
	var out []producer
	for name, ps := range f.sources {
		if from == name || strings.HasPrefix(from, name+".") {
			out = append(out, ps...)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].step != out[j].step {
			return out[i].step < out[j].step
		}
		return out[i].component < out[j].component
	})
	return out
}

// source describes where input from comes from: `, the output of
// component "db" (step "deploy-db")`, or "" when no step is known to
// produce it.
func (f *dataFlow) source(from string) string {
	ps := f.producers(from)
	if len(ps) == 0 {
		return ""
	}
	parts := make([]string, 0, len(ps))
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf("component %q (step %q)", p.component, p.step))
	}
	return ", the output of " + strings.Join(parts, " or ")
}

// stepComponents are the components step s deploys.
func stepComponents(ctx context.Context, s oamv1alpha1.WorkflowStepBase, d Deployer) []string {
	props := map[string]any{}
	if s.Properties != nil && len(s.Properties.Raw) > 0 {
		if err := json.Unmarshal(s.Properties.Raw, &props); err != nil {
			return nil
		}
	}
	switch s.Type {
	case StepTypeApplyComponent:
		if name, ok := props["component"].(string); ok && name != "" {
			return []string{name}
		}
	case StepTypeDeploy:
		planner, ok := d.(DeployPlanner)
		if !ok {
			return nil
		}
		var policies []string
		list, _ := props["policies"].([]any)
		for _, v := range list {
			if name, ok := v.(string); ok {
				policies = append(policies, name)
			}
		}
		targets, err := planner.PlanDeploy(ctx, policies)
		if err != nil {
			// The step fails saying why when it runs.
			return nil
		}
		seen := map[string]bool{}
		var out []string
		for _, t := range targets {
			for _, c := range t.Components {
				if !seen[c] {
					seen[c] = true
					out = append(out, c)
				}
			}
		}
		return out
	}
	return nil
}
