package render

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/placement"
)

// Target is one placement of a plan with the AppFile to render there:
// override policies applied and only the selected components kept.
type Target struct {
	placement.Target
	AppFile *appfile.AppFile
}

// Plan is where one workflow step puts which components.
type Plan struct {
	// Step is the workflow step name ("" for the render-everything plan of
	// a workflow without deploy or apply-component steps).
	Step string
	// StepType is "deploy" or "apply-component" ("" as above).
	StepType string
	Targets  []Target
	// Warnings say what could not be worked out (unresolved selectors,
	// override entries matching nothing).
	Warnings []string
}

// PlanWorkflow works out, for each deploy and apply-component step of af's
// workflow (sub-steps of step groups included, in order), where each
// component goes. A workflow without such steps yields one plan rendering
// every component on the hub. resolver may be nil: a topology's
// clusterLabelSelector then yields a placeholder cluster named after the
// selector, with a warning.
func PlanWorkflow(ctx context.Context, af *appfile.AppFile, resolver placement.Resolver) ([]Plan, error) {
	var plans []Plan
	var steps []*appfile.WorkflowStep
	if af.Workflow != nil {
		for _, s := range af.Workflow.Steps {
			steps = append(steps, s)
			steps = append(steps, s.SubSteps...)
		}
	}
	for _, s := range steps {
		switch s.Type {
		case appfile.StepTypeDeploy:
			var names []string
			if list, ok := s.Properties["policies"].([]any); ok {
				for _, n := range list {
					if str, ok := n.(string); ok {
						names = append(names, str)
					}
				}
			}
			p, err := PlanDeploy(ctx, af, names, resolver)
			if err != nil {
				return nil, fmt.Errorf("workflow step %q: %w", s.Name, err)
			}
			p.Step, p.StepType = s.Name, s.Type
			plans = append(plans, *p)
		case appfile.StepTypeApplyComponent:
			comp, _ := s.Properties["component"].(string)
			if af.Component(comp) == nil {
				return nil, fmt.Errorf("workflow step %q: apply-component names unknown component %q", s.Name, comp)
			}
			cluster, _ := s.Properties["cluster"].(string)
			ns, _ := s.Properties["namespace"].(string)
			target := af
			if props, ok := s.Properties["properties"].(map[string]any); ok && len(props) > 0 {
				// The step's properties are merged over the component's own.
				entry := appfile.OverrideEntry{Name: comp, Properties: props}
				var err error
				target, err = reparseWith(ctx, af, func(app *v1beta1.Application) error {
					comps, _, err := overrideComponents(app.Spec.Components, entry)
					app.Spec.Components = comps
					return err
				})
				if err != nil {
					return nil, fmt.Errorf("workflow step %q: %w", s.Name, err)
				}
			}
			plans = append(plans, Plan{Step: s.Name, StepType: s.Type, Targets: []Target{{
				Target: placement.Target{
					Placement: placement.Placement{Cluster: cluster, Namespace: ns},
					Reason:    "named by apply-component step " + s.Name, CreateNamespace: true,
				},
				AppFile: only(target, []string{comp}),
			}}})
		}
	}
	if len(plans) == 0 {
		plans = append(plans, Plan{Targets: []Target{{Target: placement.Target{Reason: "no deploy step: the hub", CreateNamespace: true}, AppFile: af}}})
	}
	return plans, nil
}

// only returns a shallow copy of af keeping the named components.
func only(af *appfile.AppFile, names []string) *appfile.AppFile {
	keep := map[string]bool{}
	for _, n := range names {
		keep[n] = true
	}
	cp := *af
	cp.Components = nil
	for _, c := range af.Components {
		if keep[c.Name] {
			cp.Components = append(cp.Components, c)
		}
	}
	return &cp
}

// PlanDeploy works out the targets of a deploy step using the named
// policies: topology policies give the placements (their union; none means
// the hub and the app's namespace), override policies change component
// properties and traits (in order) and may select components. The
// overridden application is parsed again, so overridden properties are
// validated like the originals.
func PlanDeploy(ctx context.Context, af *appfile.AppFile, policyNames []string, resolver placement.Resolver) (*Plan, error) {
	plan := &Plan{}
	var topologies []placement.Topology
	var overrides []*appfile.Policy
	for _, n := range policyNames {
		p := af.Policy(n)
		if p == nil {
			return nil, fmt.Errorf("deploy uses unknown policy %q", n)
		}
		switch p.Type {
		case appfile.PolicyTopology:
			t, err := placement.Parse(p.Name, p.Properties)
			if err != nil {
				return nil, fmt.Errorf("topology policy %q: %w", p.Name, err)
			}
			topologies = append(topologies, t)
		case appfile.PolicyOverride:
			overrides = append(overrides, p)
		default:
			// Other policies (replication, garbage-collect, …) do not
			// place components; KubeVela's deploy step accepts them too.
			// Validation warns that replication is not carried out.
		}
	}
	target := af
	if len(overrides) > 0 {
		var err error
		target, err = applyOverrides(ctx, af, overrides, plan)
		if err != nil {
			return nil, err
		}
	}
	res, err := placement.Resolve(ctx, topologies, resolver)
	if err != nil {
		return nil, err
	}
	plan.Warnings = append(plan.Warnings, res.Warnings...)
	for _, t := range res.Targets {
		plan.Targets = append(plan.Targets, Target{Target: t, AppFile: target})
	}
	return plan, nil
}

// applyOverrides applies override policies to a copy of the Application and
// parses it again.
func applyOverrides(ctx context.Context, af *appfile.AppFile, overrides []*appfile.Policy, plan *Plan) (*appfile.AppFile, error) {
	app := af.App.DeepCopy()
	var selected map[string]bool
	for _, o := range overrides {
		if list, ok := o.Properties["selector"].([]any); ok {
			if selected == nil {
				selected = map[string]bool{}
			}
			for _, n := range list {
				if s, ok := n.(string); ok {
					selected[s] = true
				}
			}
		}
		for i, entry := range appfile.OverrideEntries(o.Properties) {
			comps, n, err := overrideComponents(app.Spec.Components, entry)
			if err != nil {
				return nil, fmt.Errorf("policy %q components[%d]: %w", o.Name, i, err)
			}
			app.Spec.Components = comps
			if n == 0 {
				plan.Warnings = append(plan.Warnings, fmt.Sprintf("policy %q components[%d] matches no component", o.Name, i))
			}
		}
	}
	if selected != nil {
		kept := app.Spec.Components[:0]
		for _, c := range app.Spec.Components {
			if selected[c.Name] {
				kept = append(kept, c)
			}
		}
		app.Spec.Components = kept
		// dependsOn on unselected components is not this deploy's concern.
		for i := range app.Spec.Components {
			var deps []string
			for _, d := range app.Spec.Components[i].DependsOn {
				if selected[d] {
					deps = append(deps, d)
				}
			}
			app.Spec.Components[i].DependsOn = deps
		}
	}
	return reparseWith(ctx, af, func(a *v1beta1.Application) error {
		a.Spec.Components = app.Spec.Components
		return nil
	})
}

// reparseWith parses a changed copy of af's Application (the workflow is
// kept out: it is the original's).
func reparseWith(ctx context.Context, af *appfile.AppFile, change func(*v1beta1.Application) error) (*appfile.AppFile, error) {
	app := af.App.DeepCopy()
	if err := change(app); err != nil {
		return nil, err
	}
	app.Spec.Workflow = nil
	pctx := appfile.WithEngine(ctx, af.Engine)
	out, err := appfile.Parse(pctx, app, af.Source, appfile.OverridesApplied())
	if err != nil {
		return nil, fmt.Errorf("with overridden properties: %w", err)
	}
	out.Workflow = af.Workflow
	return out, nil
}

// overrideComponents applies one override entry to the components it
// matches (appfile.OverrideEntry.Matches) and returns the components and
// how many matched. As in KubeVela, a component the entry names but of
// another type than the entry's is replaced by the entry, and an entry
// naming one component the application does not have, with its type, adds
// that component (at the end) for the targets of the policy.
func overrideComponents(comps []common.ApplicationComponent, entry appfile.OverrideEntry) ([]common.ApplicationComponent, int, error) {
	n := 0
	for i := range comps {
		c := &comps[i]
		if !entry.Matches(c.Name, c.Type) {
			continue
		}
		n++
		if entry.SelectsByName() && entry.Type != "" && entry.Type != c.Type {
			replaced, err := entryComponent(c.Name, entry)
			if err != nil {
				return nil, n, err
			}
			replaced.DependsOn = c.DependsOn
			*c = replaced
			continue
		}
		if err := patchComponent(c, entry); err != nil {
			return nil, n, err
		}
	}
	if n == 0 && entry.Adds() {
		added, err := entryComponent(entry.Name, entry)
		if err != nil {
			return nil, n, err
		}
		comps = append(comps, added)
		n++
	}
	return comps, n, nil
}

// entryComponent is the component an override entry describes by itself.
func entryComponent(name string, entry appfile.OverrideEntry) (common.ApplicationComponent, error) {
	c := common.ApplicationComponent{Name: name, Type: entry.Type}
	raw, err := json.Marshal(orEmpty(entry.Properties))
	if err != nil {
		return c, err
	}
	c.Properties = &runtime.RawExtension{Raw: raw}
	if err := patchComponent(&c, appfile.OverrideEntry{Traits: entry.Traits}); err != nil {
		return c, err
	}
	return c, nil
}

// patchComponent merges an entry's properties into c's and applies its
// trait patches: properties merge into a trait of the same type, or add
// it; disable removes it.
func patchComponent(c *common.ApplicationComponent, entry appfile.OverrideEntry) error {
	if entry.Properties != nil {
		merged, err := mergeRaw(c.Properties, entry.Properties)
		if err != nil {
			return fmt.Errorf("component %q properties: %w", c.Name, err)
		}
		c.Properties = merged
	}
	for _, t := range entry.Traits {
		tm, ok := t.(map[string]any)
		if !ok {
			continue
		}
		ttype, _ := tm["type"].(string)
		disable, _ := tm["disable"].(bool)
		idx := -1
		for j := range c.Traits {
			if c.Traits[j].Type == ttype {
				idx = j
				break
			}
		}
		props, _ := tm["properties"].(map[string]any)
		switch {
		case disable && idx >= 0:
			c.Traits = append(c.Traits[:idx], c.Traits[idx+1:]...)
		case disable:
		case idx >= 0:
			merged, err := mergeRaw(c.Traits[idx].Properties, props)
			if err != nil {
				return fmt.Errorf("component %q trait %q properties: %w", c.Name, ttype, err)
			}
			c.Traits[idx].Properties = merged
		default:
			raw, err := json.Marshal(orEmpty(props))
			if err != nil {
				return err
			}
			c.Traits = append(c.Traits, common.ApplicationTrait{Type: ttype, Properties: &runtime.RawExtension{Raw: raw}})
		}
	}
	return nil
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// mergeRaw deep-merges patch into the properties in raw: objects merge key
// by key, null deletes a key, anything else replaces.
func mergeRaw(raw *runtime.RawExtension, patch map[string]any) (*runtime.RawExtension, error) {
	base, err := appfile.DecodeProperties(raw)
	if err != nil {
		return nil, err
	}
	merged := mergePatch(base, deepCopyValue(patch))
	b, err := json.Marshal(merged)
	if err != nil {
		return nil, err
	}
	return &runtime.RawExtension{Raw: b}, nil
}

// TargetAppFile returns the AppFile that plans render component from at
// cluster and namespace — the target's, with its override policies
// applied — or nil when no target of plans places component there. Cluster
// "" and "local" are both the hub; a target without a namespace is in its
// Application's namespace. The first matching target wins. Health checks
// use it so that a component is judged against what was deployed there,
// not against the Application's un-overridden properties.
func TargetAppFile(plans []Plan, cluster, namespace, component string) *appfile.AppFile {
	norm := func(c string) string {
		if c == "" {
			return v1beta1.ClusterLocal
		}
		return c
	}
	for _, p := range plans {
		for _, t := range p.Targets {
			if t.AppFile == nil || norm(t.Cluster) != norm(cluster) || t.AppFile.Component(component) == nil {
				continue
			}
			ns := t.Namespace
			if ns == "" {
				ns = t.AppFile.Namespace
			}
			if namespace == "" || ns == namespace {
				return t.AppFile
			}
		}
	}
	return nil
}

// ServicePlacement is one service of an Application's status with where it runs
// and the AppFile it is rendered from there (see ServicePlacements).
type ServicePlacement struct {
	Service common.ApplicationComponentStatus
	// Cluster is the service's cluster ("" or "local": the hub).
	Cluster string
	// Namespace is the service's namespace when it is not the
	// Application's, else "".
	Namespace string
	// AppFile is the deploy target's AppFile there (override policies
	// applied), else the Application's own.
	AppFile *appfile.AppFile
}

// ServicePlacements pairs every service of services (an Application's
// status.services, what its workflow deployed) whose component af still
// has with where it runs, so that it is rendered — health checks,
// adoption, migrate's comparison — as it was deployed there. When the
// workflow cannot be planned (planErr, e.g. clusters that cannot be
// resolved), each service is rendered from af itself.
func ServicePlacements(ctx context.Context, af *appfile.AppFile, services []common.ApplicationComponentStatus, resolver placement.Resolver) (out []ServicePlacement, planErr error) {
	plans, planErr := PlanWorkflow(ctx, af, resolver)
	for _, svc := range services {
		if af.Component(svc.Name) == nil {
			continue
		}
		p := ServicePlacement{Service: svc, Cluster: svc.Cluster, AppFile: af}
		if svc.Namespace != af.Namespace {
			p.Namespace = svc.Namespace
		}
		if t := TargetAppFile(plans, svc.Cluster, svc.Namespace, svc.Name); t != nil {
			p.AppFile = t
		}
		out = append(out, p)
	}
	return out, planErr
}
