package render

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
)

// Placement is a cluster and namespace a deploy step renders for.
type Placement struct {
	// Cluster is the cluster name ("" or "local" for the hub).
	Cluster string
	// Namespace overrides the app's namespace ("" keeps it).
	Namespace string
}

// ClusterResolver finds the clusters whose labels match a topology's
// clusterLabelSelector. The hub is not its business: PlanDeploy adds it
// for an empty selector ({} selects every cluster, the hub included).
type ClusterResolver interface {
	SelectClusters(ctx context.Context, selector map[string]string) ([]string, error)
}

// StaticClusters resolves label selectors against a fixed set of clusters
// (name → labels); offline tools build it from flags.
type StaticClusters map[string]map[string]string

// SelectClusters returns the names of the clusters carrying every label of
// selector, sorted.
func (s StaticClusters) SelectClusters(_ context.Context, selector map[string]string) ([]string, error) {
	var out []string
	for name, labels := range s {
		ok := true
		for k, v := range selector {
			if labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Target is one placement of a plan with the AppFile to render there:
// override policies applied and only the selected components kept.
type Target struct {
	Placement
	AppFile *appfile.AppFile
	// Placeholder says Cluster stands for an unresolved clusterLabelSelector.
	Placeholder bool
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
func PlanWorkflow(ctx context.Context, af *appfile.AppFile, resolver ClusterResolver) ([]Plan, error) {
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
				Placement: Placement{Cluster: cluster, Namespace: ns},
				AppFile:   only(target, []string{comp}),
			}}})
		}
	}
	if len(plans) == 0 {
		plans = append(plans, Plan{Targets: []Target{{AppFile: af}}})
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
func PlanDeploy(ctx context.Context, af *appfile.AppFile, policyNames []string, resolver ClusterResolver) (*Plan, error) {
	plan := &Plan{}
	var topologies, overrides []*appfile.Policy
	for _, n := range policyNames {
		p := af.Policy(n)
		if p == nil {
			return nil, fmt.Errorf("deploy uses unknown policy %q", n)
		}
		switch p.Type {
		case appfile.PolicyTopology:
			topologies = append(topologies, p)
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
	placements, placeholders, err := placements(ctx, topologies, resolver, plan)
	if err != nil {
		return nil, err
	}
	for _, pl := range placements {
		plan.Targets = append(plan.Targets, Target{Placement: pl, AppFile: target, Placeholder: placeholders[pl.Cluster]})
	}
	return plan, nil
}

// placements computes the union of the topologies' placements.
func placements(ctx context.Context, topologies []*appfile.Policy, resolver ClusterResolver, plan *Plan) ([]Placement, map[string]bool, error) {
	placeholders := map[string]bool{}
	if len(topologies) == 0 {
		return []Placement{{}}, placeholders, nil
	}
	seen := map[Placement]bool{}
	var out []Placement
	add := func(p Placement) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, t := range topologies {
		ns, _ := t.Properties["namespace"].(string)
		allowEmpty, _ := t.Properties["allowEmpty"].(bool)
		var clusters []string
		if list, ok := t.Properties["clusters"].([]any); ok {
			for _, c := range list {
				if s, ok := c.(string); ok {
					clusters = append(clusters, s)
				}
			}
		}
		selector := map[string]string{}
		for _, key := range []string{"clusterLabelSelector", "clusterSelector"} {
			if m, ok := t.Properties[key].(map[string]any); ok {
				for k, v := range m {
					selector[k] = fmt.Sprint(v)
				}
			}
		}
		_, hasSelector := t.Properties["clusterLabelSelector"]
		if _, ok := t.Properties["clusterSelector"]; ok {
			hasSelector = true
		}
		if hasSelector {
			if resolver == nil {
				name := "<clusters labelled " + selectorString(selector) + ">"
				placeholders[name] = true
				plan.Warnings = append(plan.Warnings, fmt.Sprintf("policy %q: clusterLabelSelector {%s} cannot be resolved offline; rendering once for a placeholder cluster (give --cluster-labels NAME=KEY=VALUE,… to name clusters)", t.Name, selectorString(selector)))
				clusters = append(clusters, name)
			} else {
				if len(selector) == 0 {
					// An empty selector selects every cluster, the hub
					// (which has no labels) first, as in KubeVela.
					clusters = append(clusters, v1beta1.ClusterLocal)
				}
				names, err := resolver.SelectClusters(ctx, selector)
				if err != nil {
					return nil, nil, fmt.Errorf("policy %q: selecting clusters {%s}: %w", t.Name, selectorString(selector), err)
				}
				clusters = append(clusters, names...)
			}
		}
		if _, hasClusters := t.Properties["clusters"]; !hasClusters && !hasSelector {
			// A topology naming neither clusters nor a selector (only a
			// namespace, say) deploys to the hub.
			clusters = []string{"local"}
		}
		if len(clusters) == 0 {
			if allowEmpty {
				plan.Warnings = append(plan.Warnings, fmt.Sprintf("policy %q selects no cluster (allowEmpty: nothing is deployed)", t.Name))
				continue
			}
			return nil, nil, fmt.Errorf("policy %q selects no cluster (set allowEmpty: true to allow that)", t.Name)
		}
		for _, c := range clusters {
			add(Placement{Cluster: c, Namespace: ns})
		}
	}
	return out, placeholders, nil
}

func selectorString(sel map[string]string) string {
	keys := make([]string, 0, len(sel))
	for k := range sel {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + sel[k]
	}
	return strings.Join(parts, ",")
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
func ServicePlacements(ctx context.Context, af *appfile.AppFile, services []common.ApplicationComponentStatus, resolver ClusterResolver) (out []ServicePlacement, planErr error) {
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
