package resourcekeeper

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// ResourceSelector picks objects for a policy rule. An object matches when
// it matches every non-empty list (AND); within a list any entry may match
// (OR). An empty selector matches every object. Field names follow the OAM
// resource policies (oam-api-facts: "Rule selectors").
type ResourceSelector struct {
	// ComponentNames match the app.oam.dev/component label.
	ComponentNames []string `json:"componentNames,omitempty"`
	// ComponentTypes match the workload.oam.dev/type label, which only a
	// component's main workload carries: as in KubeVela, the objects of a
	// component's outputs and of its traits are not selected by
	// componentTypes (select them by componentNames, oamTypes or
	// traitTypes).
	ComponentTypes []string `json:"componentTypes,omitempty"`
	// OAMTypes match the app.oam.dev/resourceType label: WORKLOAD (alias
	// COMPONENT) or TRAIT, case-insensitive.
	OAMTypes []string `json:"oamTypes,omitempty"`
	// TraitTypes match the trait.oam.dev/type label.
	TraitTypes []string `json:"traitTypes,omitempty"`
	// ResourceTypes match the object's kind (e.g. Deployment).
	ResourceTypes []string `json:"resourceTypes,omitempty"`
	// ResourceNames match the object's metadata.name.
	ResourceNames []string `json:"resourceNames,omitempty"`
}

// Matches reports whether obj (its labels, kind and name) is selected.
func (s ResourceSelector) Matches(obj *unstructured.Unstructured) bool {
	labels := obj.GetLabels()
	return matchList(s.ComponentNames, labels[v1beta1.LabelAppComponent]) &&
		matchList(s.ComponentTypes, labels[v1beta1.LabelWorkloadType]) &&
		matchOAMType(s.OAMTypes, labels[v1beta1.LabelResourceType]) &&
		matchList(s.TraitTypes, labels[v1beta1.LabelTraitType]) &&
		matchList(s.ResourceTypes, obj.GetKind()) &&
		matchList(s.ResourceNames, obj.GetName())
}

func matchList(list []string, v string) bool {
	return len(list) == 0 || slices.Contains(list, v)
}

func matchOAMType(list []string, v string) bool {
	if len(list) == 0 {
		return true
	}
	for _, t := range list {
		t = strings.ToUpper(t)
		if t == "COMPONENT" {
			t = v1beta1.ResourceTypeWorkload
		}
		if t == strings.ToUpper(v) {
			return true
		}
	}
	return false
}

func matchAny(rules []SelectorRule, obj *unstructured.Unstructured) bool {
	for _, r := range rules {
		if r.Selector.Matches(obj) {
			return true
		}
	}
	return false
}

// readOnly reports whether obj is read-only.
func (p Policies) readOnly(obj *unstructured.Unstructured) bool { return matchAny(p.ReadOnly, obj) }

// takeOver reports whether obj may be taken over from another owner.
func (p Policies) takeOver(obj *unstructured.Unstructured) bool { return matchAny(p.TakeOver, obj) }

// shared reports whether obj may be shared with other Applications.
func (p Policies) shared(obj *unstructured.Unstructured) bool {
	return matchAny(p.SharedResource, obj)
}

// applyOnce returns the apply-once strategy for obj, or nil.
func (p Policies) applyOnce(obj *unstructured.Unstructured) *ApplyOnceStrategy {
	if p.ApplyOnce == nil || !p.ApplyOnce.Enable {
		return nil
	}
	if len(p.ApplyOnce.Rules) == 0 {
		return &ApplyOnceStrategy{Affect: AffectAlways}
	}
	for i := range p.ApplyOnce.Rules {
		if p.ApplyOnce.Rules[i].Selector.Matches(obj) {
			return &p.ApplyOnce.Rules[i].Strategy
		}
	}
	return nil
}

// resourceUpdate returns the update strategy for obj (zero value: patch).
func (p Policies) resourceUpdate(obj *unstructured.Unstructured) ResourceUpdateStrategy {
	for _, r := range p.ResourceUpdate {
		if r.Selector.Matches(obj) {
			return r.Strategy
		}
	}
	return ResourceUpdateStrategy{}
}

// gcRule returns the garbage-collect rule for obj (zero value: collect on
// update, background deletion).
func (p Policies) gcRule(obj *unstructured.Unstructured) GarbageCollectRule {
	if p.GarbageCollect == nil {
		return GarbageCollectRule{}
	}
	for _, r := range p.GarbageCollect.Rules {
		if r.Selector.Matches(obj) {
			return r
		}
	}
	return GarbageCollectRule{}
}

// affects reports whether the apply-once strategy s applies to the given
// operation (stateKeep true: drift repair; false: dispatch of a revision).
func (s *ApplyOnceStrategy) affects(stateKeep bool) bool {
	if s == nil {
		return false
	}
	switch s.Affect {
	case AffectOnUpdate:
		return !stateKeep
	case AffectOnStateKeep:
		return stateKeep
	default:
		return true
	}
}

// wholeObject reports whether the strategy keeps the whole object.
func (s *ApplyOnceStrategy) wholeObject() bool {
	return len(s.Path) == 0 || slices.Contains(s.Path, "*")
}
