// Package placement is the one place that decides where an Application's
// components go: it reads topology policies (the KubeVela topology
// contract) and resolves them against a cluster registry into targets, a
// cluster and a namespace each, with the reason each is in the set. The
// controller's deploy steps (through render.PlanDeploy), the registry's
// checks (multicluster), the admission webhook and the CLI's dry-run all
// ask this package; none of them re-implements the rules.
//
// The rules, as in KubeVela:
//
//   - no topology at all places on the hub, in the Application's namespace;
//   - clusters: [names] places on each named cluster ("local" is the hub);
//   - clusterLabelSelector (or the deprecated clusterSelector) places on
//     every member carrying all its labels; an empty selector {} selects
//     every cluster, the hub (which has no labels) first;
//   - a topology with neither clusters nor a selector (only a namespace,
//     say) places on the hub;
//   - namespace: the namespace in each selected cluster ("" keeps the
//     Application's);
//   - an empty selection is an error (*NoMatchError) unless allowEmpty.
//
// oamflow adds createNamespace (default true): the target namespace is
// created when it is missing (see resourcekeeper.Keeper.EnsureNamespaces).
package placement

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// Local is the hub's cluster name.
const Local = "local"

// Placement is a cluster and namespace to deploy to.
type Placement struct {
	// Cluster is the cluster name ("" or "local" for the hub).
	Cluster string
	// Namespace overrides the app's namespace ("" keeps it).
	Namespace string
}

// Resolver finds the member clusters whose labels match a topology's
// clusterLabelSelector (every member for an empty selector). The hub is
// not its business: Resolve adds it for an empty selector.
// multicluster.Registry implements it against the live registry.
type Resolver interface {
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
		if Matches(selector, labels) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Matches reports whether labels carry every label of selector (an empty
// selector matches everything).
func Matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Topology is one topology policy, decoded.
type Topology struct {
	// Name is the policy's name.
	Name string
	// Clusters are the clusters named in properties.clusters, in order.
	Clusters []string
	// HasClusters says properties.clusters is set (even to []).
	HasClusters bool
	// Selector is clusterLabelSelector (or clusterSelector), values as
	// strings.
	Selector map[string]string
	// HasSelector says a selector is set (even to {}).
	HasSelector bool
	// Namespace is the namespace in each cluster ("" = the app's).
	Namespace string
	// AllowEmpty: an empty selection is not an error.
	AllowEmpty bool
	// CreateNamespace: a missing target namespace is created (default
	// true; properties.createNamespace: false turns it off).
	CreateNamespace bool
}

// Parse decodes the properties of topology policy name, checking their
// types. Errors name the field (properties.clusters[1], …) and what was
// expected.
func Parse(name string, props map[string]any) (Topology, error) {
	t := Topology{Name: name, CreateNamespace: true}
	if v, ok := props["clusters"]; ok && v != nil {
		t.HasClusters = true
		list, ok := v.([]any)
		if !ok {
			return t, fmt.Errorf("properties.clusters: expected a list of cluster names, got %s", TypeName(v))
		}
		for i, c := range list {
			s, ok := c.(string)
			if !ok || s == "" {
				return t, fmt.Errorf("properties.clusters[%d]: expected a cluster name (non-empty string), got %s", i, TypeName(c))
			}
			t.Clusters = append(t.Clusters, s)
		}
	}
	for _, key := range []string{"clusterLabelSelector", "clusterSelector"} {
		v, ok := props[key]
		if !ok || v == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return t, fmt.Errorf("properties.%s: expected a map of label keys to values, got %s", key, TypeName(v))
		}
		if t.Selector == nil {
			t.Selector = map[string]string{}
		}
		t.HasSelector = true
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch m[k].(type) {
			case string, bool, float64, int, int64:
				t.Selector[k] = fmt.Sprint(m[k])
			default:
				return t, fmt.Errorf("properties.%s.%s: expected a label value (string), got %s", key, k, TypeName(m[k]))
			}
		}
	}
	if v, ok := props["namespace"]; ok && v != nil {
		s, ok := v.(string)
		if !ok {
			return t, fmt.Errorf("properties.namespace: expected a string, got %s", TypeName(v))
		}
		t.Namespace = s
	}
	for key, dst := range map[string]*bool{"allowEmpty": &t.AllowEmpty, "createNamespace": &t.CreateNamespace} {
		if v, ok := props[key]; ok && v != nil {
			b, ok := v.(bool)
			if !ok {
				return t, fmt.Errorf("properties.%s: expected a boolean, got %s", key, TypeName(v))
			}
			*dst = b
		}
	}
	return t, nil
}

// TargetsHub reports whether t may place on the hub, from its properties
// alone: it names "local", names neither clusters nor a selector, or has
// the empty selector {}.
func (t Topology) TargetsHub() bool {
	for _, c := range t.Clusters {
		if c == Local {
			return true
		}
	}
	if !t.HasSelector {
		return !t.HasClusters
	}
	return len(t.Selector) == 0
}

// TargetsMembers reports whether t may place on member clusters: it names
// one, or has a selector.
func (t Topology) TargetsMembers() bool {
	for _, c := range t.Clusters {
		if c != Local {
			return true
		}
	}
	return t.HasSelector
}

// SelectsByLabels reports whether t's placement depends on the labels of
// the registry's clusters (so a change in the fleet may change it).
func (t Topology) SelectsByLabels() bool { return t.HasSelector }

// Target is one placement with why it is in the set and how to deploy
// there.
type Target struct {
	Placement
	// Policy is the topology policy that placed it ("" without
	// topology).
	Policy string
	// Reason says why the target is in the set: "named in clusters",
	// "labels match {region=east}", "no topology: the hub", ….
	Reason string
	// CreateNamespace: create the namespace when it is missing.
	CreateNamespace bool
	// Placeholder: Cluster stands for a selector that could not be
	// resolved (no Resolver).
	Placeholder bool
}

// Result is the resolved placement of a set of topologies.
type Result struct {
	// Targets are the placements, in the topologies' order, without
	// duplicates (the first topology placing a cluster and namespace
	// wins).
	Targets []Target
	// Warnings say what could not be worked out (a selector resolved
	// offline, an allowed empty selection).
	Warnings []string
}

// NoMatchError is an empty selection without allowEmpty.
type NoMatchError struct {
	// Policy is the topology policy's name.
	Policy string
	// Selector is its selector (nil: it named no cluster).
	Selector map[string]string
}

func (e *NoMatchError) Error() string {
	if e.Selector != nil {
		return fmt.Sprintf("policy %q: no clusters match {%s} (set allowEmpty: true to allow that)", e.Policy, SelectorString(e.Selector))
	}
	return fmt.Sprintf("policy %q selects no cluster (set allowEmpty: true to allow that)", e.Policy)
}

// Resolve computes the union of the topologies' placements. resolver may
// be nil: a selector then yields a placeholder cluster named after it,
// with a warning. No topology places on the hub.
func Resolve(ctx context.Context, topologies []Topology, resolver Resolver) (Result, error) {
	var res Result
	if len(topologies) == 0 {
		res.Targets = []Target{{Reason: "no topology policy: the hub", CreateNamespace: true}}
		return res, nil
	}
	seen := map[Placement]bool{}
	add := func(t Target) {
		if !seen[t.Placement] {
			seen[t.Placement] = true
			res.Targets = append(res.Targets, t)
		}
	}
	for _, t := range topologies {
		var targets []Target
		target := func(cluster, reason string) Target {
			return Target{Placement: Placement{Cluster: cluster, Namespace: t.Namespace}, Policy: t.Name, Reason: reason, CreateNamespace: t.CreateNamespace}
		}
		for _, c := range t.Clusters {
			targets = append(targets, target(c, "named in policy "+t.Name+" clusters"))
		}
		if t.HasSelector {
			sel := SelectorString(t.Selector)
			if resolver == nil {
				name := "<clusters labelled " + sel + ">"
				pt := target(name, "labels match {"+sel+"}")
				pt.Placeholder = true
				res.Warnings = append(res.Warnings, fmt.Sprintf("policy %q: clusterLabelSelector {%s} cannot be resolved offline; rendering once for a placeholder cluster (give --cluster-labels NAME=KEY=VALUE,… to name clusters)", t.Name, sel))
				targets = append(targets, pt)
			} else {
				if len(t.Selector) == 0 {
					// An empty selector selects every cluster, the hub
					// (which has no labels) first, as in KubeVela.
					targets = append(targets, target(Local, "policy "+t.Name+" selects every cluster ({})"))
				}
				names, err := resolver.SelectClusters(ctx, t.Selector)
				if err != nil {
					return Result{}, fmt.Errorf("policy %q: selecting clusters {%s}: %w", t.Name, sel, err)
				}
				for _, n := range names {
					targets = append(targets, target(n, "labels match policy "+t.Name+" {"+sel+"}"))
				}
			}
		}
		if !t.HasClusters && !t.HasSelector {
			targets = []Target{target(Local, "policy "+t.Name+" names no cluster: the hub")}
		}
		if len(targets) == 0 {
			if t.AllowEmpty {
				res.Warnings = append(res.Warnings, fmt.Sprintf("policy %q selects no cluster (allowEmpty: nothing is deployed)", t.Name))
				continue
			}
			e := &NoMatchError{Policy: t.Name}
			if t.HasSelector {
				e.Selector = t.Selector
			}
			return Result{}, e
		}
		for _, pt := range targets {
			add(pt)
		}
	}
	return res, nil
}

// SelectorString is sel as key=value pairs sorted by key, comma-separated.
func SelectorString(sel map[string]string) string {
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

// TypeName names the JSON type of v for error messages.
func TypeName(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		if v == "" {
			return "an empty string"
		}
		return "a string"
	case bool:
		return "a boolean"
	case float64, int, int64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}
