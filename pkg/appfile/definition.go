package appfile

import (
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/cuex"
	"github.com/oamflow/oamflow/pkg/definition"
)

// DefinitionKind is "component", "trait", "policy" or "workflow-step".
type DefinitionKind = definition.Kind

// Definition kinds.
const (
	KindComponent    = definition.KindComponent
	KindTrait        = definition.KindTrait
	KindPolicy       = definition.KindPolicy
	KindWorkflowStep = definition.KindWorkflowStep
)

// Definition is one resolved definition: its CRD object plus where it came
// from, so CUE errors can point into the user's file.
type Definition struct {
	Kind DefinitionKind
	// Name is the definition's name (without any @vN pin).
	Name string
	// Revision is N when the definition was pinned with "name@vN" and
	// resolved from DefinitionRevision "<name>-vN"; 0 otherwise.
	Revision int64
	// Origin says where the definition was found: a file path, or
	// "cluster <namespace>/<name>".
	Origin string
	// Object is the typed CRD object: *v1beta1.ComponentDefinition,
	// *v1beta1.TraitDefinition, *v1beta1.PolicyDefinition or
	// *v1beta1.WorkflowStepDefinition.
	Object client.Object
	// File, LineOffset and ImportLines map template lines to lines of the
	// .cue file the definition was read from (File empty: no file).
	File                    string
	LineOffset, ImportLines int
	// ColumnOffset maps template columns to file columns on the same
	// lines LineOffset maps (the template block's indentation).
	ColumnOffset int
	// ImportFirstLine is the file line of the first import line (0: the
	// imports are not mapped).
	ImportFirstLine int
}

// Template returns the CUE template ("" if the definition has none).
func (d *Definition) Template() string { return definition.Template(d.Object) }

// CUESource names the template for the CUE engine (errors and positions).
func (d *Definition) CUESource() cuex.Source {
	return cuex.Source{
		Kind:            string(d.Kind),
		Name:            d.Name,
		File:            d.File,
		LineOffset:      d.LineOffset,
		ImportLines:     d.ImportLines,
		ColumnOffset:    d.ColumnOffset,
		ImportFirstLine: d.ImportFirstLine,
	}
}

// Status returns the health and custom-status CUE of a component or trait
// definition (nil when it has none).
func (d *Definition) Status() *common.Status {
	switch o := d.Object.(type) {
	case *v1beta1.ComponentDefinition:
		return o.Spec.Status
	case *v1beta1.TraitDefinition:
		return o.Spec.Status
	}
	return nil
}

// ComponentSpec returns the spec of a component definition, else nil.
func (d *Definition) ComponentSpec() *v1beta1.ComponentDefinitionSpec {
	if o, ok := d.Object.(*v1beta1.ComponentDefinition); ok {
		return &o.Spec
	}
	return nil
}

// TraitSpec returns the spec of a trait definition, else nil.
func (d *Definition) TraitSpec() *v1beta1.TraitDefinitionSpec {
	if o, ok := d.Object.(*v1beta1.TraitDefinition); ok {
		return &o.Spec
	}
	return nil
}

// PolicySpec returns the spec of a policy definition, else nil.
func (d *Definition) PolicySpec() *v1beta1.PolicyDefinitionSpec {
	if o, ok := d.Object.(*v1beta1.PolicyDefinition); ok {
		return &o.Spec
	}
	return nil
}

// WorkloadNames returns the names a trait's appliesToWorkloads may use to
// match this component definition: the definition name, the workload type
// ("deployments.apps"), the workload kind ("Deployment") and
// "<kind>.<group>" / "<resource>.<group>" forms.
func (d *Definition) WorkloadNames() []string {
	names := []string{d.Name}
	spec := d.ComponentSpec()
	if spec == nil {
		return names
	}
	if t := spec.Workload.Type; t != "" {
		names = append(names, t)
	}
	if def := spec.Workload.Definition; def != nil && def.Kind != "" {
		names = append(names, KindNames(def.APIVersion, def.Kind)...)
	}
	return names
}

// AutodetectWorkload is the workload type of components whose workload
// kind is known only once rendered (k8s-objects, ref-objects).
const AutodetectWorkload = "autodetects.core.oam.dev"

// IsAutodetect reports whether the component definition's workload kind
// is only known from its rendered output.
func (d *Definition) IsAutodetect() bool {
	spec := d.ComponentSpec()
	return spec != nil && spec.Workload.Definition == nil && (spec.Workload.Type == "" || spec.Workload.Type == AutodetectWorkload)
}

// KindNames are the names appliesToWorkloads may use for a kind: "Kind",
// "kind", "<plural>.<group>" and "<Kind>.<group>" (plural: lower-case kind
// + "s"; the core group has no suffix).
func KindNames(apiVersion, kind string) []string {
	group := ""
	if i := strings.Index(apiVersion, "/"); i >= 0 {
		group = apiVersion[:i]
	}
	plural := strings.ToLower(kind) + "s"
	names := []string{kind, strings.ToLower(kind)}
	if group != "" {
		return append(names, plural+"."+group, kind+"."+group)
	}
	return append(names, plural)
}

// AppliesTo matches a trait's appliesToWorkloads against names of a
// workload: "*" matches all, other entries match case-insensitively.
func AppliesTo(list []string, names []string) bool {
	for _, a := range list {
		if a == "*" {
			return true
		}
		for _, n := range names {
			if strings.EqualFold(a, n) {
				return true
			}
		}
	}
	return false
}

// fromObject builds a Definition from a CRD object.
func fromObject(obj client.Object, origin string) (*Definition, error) {
	kind := definition.KindOf(obj)
	if kind == "" {
		return nil, fmt.Errorf("%s: %T is not a definition", origin, obj)
	}
	return &Definition{Kind: kind, Name: obj.GetName(), Origin: origin, Object: obj}, nil
}

// AppliesToWarning is the warning for a trait attached to a workload its
// definition's appliesToWorkloads does not list: path is the trait's field
// path (spec.components[i].traits[j]), workload says what it is attached
// to. The trait is rendered anyway, as KubeVela renders it.
func AppliesToWarning(path, component, trait string, appliesTo []string, workload string) string {
	return FieldError{
		Path:    path + ".type",
		Message: fmt.Sprintf("trait %q applies to %s, not to %s; rendering it anyway", trait, strings.Join(appliesTo, ", "), workload),
		Subject: fmt.Sprintf("component %q, trait %q", component, trait),
	}.String()
}
