package resourcekeeper

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
)

// Policy types handled by this package (Application.spec.policies[].type).
const (
	PolicyTakeOver       = "take-over"
	PolicySharedResource = "shared-resource"
	PolicyReadOnly       = "read-only"
	PolicyApplyOnce      = "apply-once"
	PolicyResourceUpdate = "resource-update"
	PolicyGarbageCollect = "garbage-collect"
)

// Policies are the resource policies of one Application, parsed from its
// spec.policies. Several policies of one type add up (their rules are
// concatenated in order; the first matching rule wins). The zero value means
// "no resource policy": every object is owned exclusively, written on every
// change, kept in sync, and collected when a revision drops it.
type Policies struct {
	// TakeOver rules: matching objects that exist unmanaged or are owned by
	// another Application are taken over instead of refused.
	TakeOver []SelectorRule
	// SharedResource rules: matching objects may be shared between
	// Applications that all declare the rule; deleting one sharer keeps them.
	SharedResource []SelectorRule
	// ReadOnly rules: matching objects are read, never written; they must exist.
	ReadOnly []SelectorRule
	// ApplyOnce, when non-nil and enabled, leaves some fields at their live
	// values after the first apply.
	ApplyOnce *ApplyOncePolicy
	// ResourceUpdate rules choose patch or replace and fields whose change
	// forces a delete and re-create.
	ResourceUpdate []ResourceUpdateRule
	// GarbageCollect configures garbage collection; nil means defaults.
	GarbageCollect *GarbageCollectPolicy
}

// SelectorRule is a rule with only a selector (take-over, shared-resource, read-only).
type SelectorRule struct {
	Selector ResourceSelector `json:"selector"`
}

// ApplyOncePolicy is the properties of an apply-once policy.
type ApplyOncePolicy struct {
	// Enable turns the policy on. With no rules, every object of the
	// Application is applied once (all fields, affect always).
	Enable bool `json:"enable"`
	// Rules select objects and the paths kept at live values.
	Rules []ApplyOnceRule `json:"rules,omitempty"`
}

// ApplyOnceRule selects objects and says which paths keep their live value.
type ApplyOnceRule struct {
	Selector ResourceSelector  `json:"selector"`
	Strategy ApplyOnceStrategy `json:"strategy"`
}

// ApplyOnceStrategy lists the kept paths and when they are kept.
type ApplyOnceStrategy struct {
	// Path lists dotted field paths ("spec.replicas",
	// "spec.template.spec.containers[0].image"); "*" or an empty list means
	// the whole object.
	Path []string `json:"path,omitempty"`
	// Affect is when live values win: onUpdate (when a new revision is
	// dispatched), onStateKeep (when drift is repaired) or always (both; the
	// default).
	Affect ApplyOnceAffect `json:"affect,omitempty"`
}

// ApplyOnceAffect says when apply-once keeps live values.
type ApplyOnceAffect string

// ApplyOnceAffect values.
const (
	AffectOnUpdate    ApplyOnceAffect = "onUpdate"
	AffectOnStateKeep ApplyOnceAffect = "onStateKeep"
	AffectAlways      ApplyOnceAffect = "always"
)

// ResourceUpdateRule selects objects and says how they are updated.
type ResourceUpdateRule struct {
	Selector ResourceSelector       `json:"selector"`
	Strategy ResourceUpdateStrategy `json:"strategy"`
}

// ResourceUpdateStrategy says how an object is updated.
type ResourceUpdateStrategy struct {
	// Op is patch (server-side apply, the default) or replace (the whole
	// object is replaced, dropping fields others set).
	Op UpdateOp `json:"op,omitempty"`
	// RecreateFields are dotted paths; when the desired value of one differs
	// from the live value, the object is deleted and created again.
	RecreateFields []string `json:"recreateFields,omitempty"`
}

// UpdateOp is how an existing object is updated.
type UpdateOp string

// UpdateOp values.
const (
	UpdateOpPatch   UpdateOp = "patch"
	UpdateOpReplace UpdateOp = "replace"
)

// GarbageCollectPolicy is the properties of a garbage-collect policy.
type GarbageCollectPolicy struct {
	// ApplicationRevisionLimit is read by the revision manager, not here.
	ApplicationRevisionLimit *int `json:"applicationRevisionLimit,omitempty"`
	// KeepLegacyResource keeps objects dropped by a new revision until the
	// Application is deleted.
	KeepLegacyResource bool `json:"keepLegacyResource,omitempty"`
	// ContinueOnFailure goes on collecting other objects when one fails.
	ContinueOnFailure bool `json:"continueOnFailure,omitempty"`
	// Order is "" (all at once) or "dependency" (dependents first).
	Order GCOrder `json:"order,omitempty"`
	// Rules select objects and say when and how they are collected.
	Rules []GarbageCollectRule `json:"rules,omitempty"`
}

// GCOrder is the order in which garbage is collected.
type GCOrder string

// GCOrderDependency deletes the objects of a component only after the
// objects of every component that depends on it are gone.
const GCOrderDependency GCOrder = "dependency"

// GarbageCollectRule selects objects and says when and how they are collected.
type GarbageCollectRule struct {
	Selector ResourceSelector `json:"selector"`
	// Strategy is onAppUpdate (the default: collected when a revision drops
	// them), onAppDelete (kept until the Application is deleted) or never.
	Strategy GCStrategy `json:"strategy,omitempty"`
	// Propagation is "" (background deletion), cascading (foreground
	// deletion: dependents first) or orphan (not deleted; our labels are
	// removed so the object lives on unmanaged).
	Propagation GCPropagation `json:"propagation,omitempty"`
}

// GCStrategy says when an object is collected.
type GCStrategy string

// GCStrategy values.
const (
	GCOnAppUpdate GCStrategy = "onAppUpdate"
	GCOnAppDelete GCStrategy = "onAppDelete"
	GCNever       GCStrategy = "never"
)

// GCPropagation says how an object is collected.
type GCPropagation string

// GCPropagation values.
const (
	GCPropagationOrphan    GCPropagation = "orphan"
	GCPropagationCascading GCPropagation = "cascading"
)

// ParsePolicies reads the resource policies out of an Application's
// spec.policies; policies of other types (topology, override, …) are
// ignored. Errors name the field path (spec.policies[i].properties.…) and
// what was expected.
func ParsePolicies(policies []common.AppPolicy) (Policies, error) {
	var out Policies
	var errs []error
	for i, p := range policies {
		path := fmt.Sprintf("spec.policies[%d].properties", i)
		var raw []byte
		if p.Properties != nil {
			raw = p.Properties.Raw
		}
		switch p.Type {
		case PolicyTakeOver, PolicySharedResource, PolicyReadOnly:
			var v struct {
				Rules []SelectorRule `json:"rules"`
			}
			if err := decodeStrict(path, raw, &v); err != nil {
				errs = append(errs, err)
				continue
			}
			switch p.Type {
			case PolicyTakeOver:
				out.TakeOver = append(out.TakeOver, v.Rules...)
			case PolicySharedResource:
				out.SharedResource = append(out.SharedResource, v.Rules...)
			default:
				out.ReadOnly = append(out.ReadOnly, v.Rules...)
			}
		case PolicyApplyOnce:
			var v ApplyOncePolicy
			if err := decodeStrict(path, raw, &v); err != nil {
				errs = append(errs, err)
				continue
			}
			for j, r := range v.Rules {
				if err := oneOf(fmt.Sprintf("%s.rules[%d].strategy.affect", path, j), string(r.Strategy.Affect),
					"", string(AffectOnUpdate), string(AffectOnStateKeep), string(AffectAlways)); err != nil {
					errs = append(errs, err)
				}
			}
			if out.ApplyOnce == nil {
				out.ApplyOnce = &v
			} else {
				out.ApplyOnce.Enable = out.ApplyOnce.Enable || v.Enable
				out.ApplyOnce.Rules = append(out.ApplyOnce.Rules, v.Rules...)
			}
		case PolicyResourceUpdate:
			var v struct {
				Rules []ResourceUpdateRule `json:"rules"`
			}
			if err := decodeStrict(path, raw, &v); err != nil {
				errs = append(errs, err)
				continue
			}
			for j, r := range v.Rules {
				if err := oneOf(fmt.Sprintf("%s.rules[%d].strategy.op", path, j), string(r.Strategy.Op),
					"", string(UpdateOpPatch), string(UpdateOpReplace)); err != nil {
					errs = append(errs, err)
				}
			}
			out.ResourceUpdate = append(out.ResourceUpdate, v.Rules...)
		case PolicyGarbageCollect:
			var v GarbageCollectPolicy
			if err := decodeStrict(path, raw, &v); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := oneOf(path+".order", string(v.Order), "", string(GCOrderDependency)); err != nil {
				errs = append(errs, err)
			}
			for j, r := range v.Rules {
				rp := fmt.Sprintf("%s.rules[%d]", path, j)
				if err := oneOf(rp+".strategy", string(r.Strategy), "", string(GCOnAppUpdate), string(GCOnAppDelete), string(GCNever)); err != nil {
					errs = append(errs, err)
				}
				if err := oneOf(rp+".propagation", string(r.Propagation), "", string(GCPropagationOrphan), string(GCPropagationCascading)); err != nil {
					errs = append(errs, err)
				}
			}
			if out.GarbageCollect == nil {
				out.GarbageCollect = &v
			} else {
				g := out.GarbageCollect
				g.KeepLegacyResource = g.KeepLegacyResource || v.KeepLegacyResource
				g.ContinueOnFailure = g.ContinueOnFailure || v.ContinueOnFailure
				if v.Order != "" {
					g.Order = v.Order
				}
				if v.ApplicationRevisionLimit != nil {
					g.ApplicationRevisionLimit = v.ApplicationRevisionLimit
				}
				g.Rules = append(g.Rules, v.Rules...)
			}
		}
	}
	return out, errors.Join(errs...)
}

// decodeStrict decodes JSON properties into v, refusing unknown fields, and
// names the field path in errors.
func decodeStrict(path string, raw []byte, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr):
		field := path
		if typeErr.Field != "" {
			field = path + "." + typeErr.Field
		}
		return fmt.Errorf("%s: expected %s, got a JSON %s", field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Errorf("%s: %s is not a known field", path, strings.TrimPrefix(err.Error(), "json: unknown field "))
	default:
		return fmt.Errorf("%s: %w", path, err)
	}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "slice", "array":
		return "a list"
	case "struct", "map":
		return "an object"
	case "bool":
		return "a boolean"
	case "string":
		return "a string"
	default:
		return "a number"
	}
}

func oneOf(path, got string, allowed ...string) error {
	if slices.Contains(allowed, got) {
		return nil
	}
	var names []string
	for _, a := range allowed {
		if a != "" {
			names = append(names, a)
		}
	}
	return fmt.Errorf("%s: expected one of %s, got %q", path, strings.Join(names, ", "), got)
}
