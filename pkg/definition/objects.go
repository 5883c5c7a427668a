package definition

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// CRD kind names of the four definition kinds.
const (
	ComponentDefinitionKind    = "ComponentDefinition"
	TraitDefinitionKind        = "TraitDefinition"
	PolicyDefinitionKind       = "PolicyDefinition"
	WorkflowStepDefinitionKind = "WorkflowStepDefinition"
)

// CRDKind returns the CRD kind name of k ("ComponentDefinition", …).
func (k Kind) CRDKind() string {
	switch k {
	case KindComponent:
		return ComponentDefinitionKind
	case KindTrait:
		return TraitDefinitionKind
	case KindPolicy:
		return PolicyDefinitionKind
	case KindWorkflowStep:
		return WorkflowStepDefinitionKind
	}
	return ""
}

// KindOf returns the definition kind of a CRD object, or "" for any other object.
func KindOf(obj client.Object) Kind {
	switch obj.(type) {
	case *v1beta1.ComponentDefinition:
		return KindComponent
	case *v1beta1.TraitDefinition:
		return KindTrait
	case *v1beta1.PolicyDefinition:
		return KindPolicy
	case *v1beta1.WorkflowStepDefinition:
		return KindWorkflowStep
	}
	return ""
}

// NewObject returns an empty CRD object of kind k with its TypeMeta set.
func NewObject(k Kind) (client.Object, error) {
	var obj client.Object
	switch k {
	case KindComponent:
		obj = &v1beta1.ComponentDefinition{}
	case KindTrait:
		obj = &v1beta1.TraitDefinition{}
	case KindPolicy:
		obj = &v1beta1.PolicyDefinition{}
	case KindWorkflowStep:
		obj = &v1beta1.WorkflowStepDefinition{}
	default:
		return nil, fmt.Errorf("unknown definition kind %q (want component, trait, policy or workflow-step)", k)
	}
	obj.GetObjectKind().SetGroupVersionKind(v1beta1.GroupVersion.WithKind(k.CRDKind()))
	return obj, nil
}

// Template returns the CUE template of a definition object ("" when it has none).
func Template(obj client.Object) string {
	var s *common.Schematic
	switch d := obj.(type) {
	case *v1beta1.ComponentDefinition:
		s = d.Spec.Schematic
	case *v1beta1.TraitDefinition:
		s = d.Spec.Schematic
	case *v1beta1.PolicyDefinition:
		s = d.Spec.Schematic
	case *v1beta1.WorkflowStepDefinition:
		s = d.Spec.Schematic
	}
	if s == nil || s.CUE == nil {
		return ""
	}
	return s.CUE.Template
}

// Object builds the CRD object described by f in namespace (may be empty).
// The attributes are decoded into the kind's spec; keys the spec does not
// know are ignored (KubeVela files carry a few that oamflow does not use).
func (f *File) Object(namespace string) (client.Object, error) {
	obj, err := NewObject(f.Kind)
	if err != nil {
		return nil, fmt.Errorf("definition %q: %w", f.Name, err)
	}
	obj.SetName(f.Name)
	obj.SetNamespace(namespace)
	annos := map[string]string{}
	for k, v := range f.Annotations {
		annos[k] = v
	}
	if f.Description != "" {
		annos[AnnoDescription] = f.Description
	}
	if f.Alias != "" {
		annos[AnnoAlias] = f.Alias
	}
	if len(annos) > 0 {
		obj.SetAnnotations(annos)
	}
	if len(f.Labels) > 0 {
		obj.SetLabels(f.Labels)
	}
	raw, err := attributesJSON(f.Attributes)
	if err != nil {
		return nil, fmt.Errorf("definition %q: encoding attributes: %w", f.Name, err)
	}
	schematic := &common.Schematic{CUE: &common.CUE{Template: f.Template}}
	switch d := obj.(type) {
	case *v1beta1.ComponentDefinition:
		err = json.Unmarshal(raw, &d.Spec)
		d.Spec.Schematic = schematic
		if d.Spec.Workload.Type == "" && d.Spec.Workload.Definition == nil {
			d.Spec.Workload.Type = "autodetects.core.oam.dev"
		}
	case *v1beta1.TraitDefinition:
		err = json.Unmarshal(raw, &d.Spec)
		d.Spec.Schematic = schematic
	case *v1beta1.PolicyDefinition:
		err = json.Unmarshal(raw, &d.Spec)
		d.Spec.Schematic = schematic
	case *v1beta1.WorkflowStepDefinition:
		err = json.Unmarshal(raw, &d.Spec)
		d.Spec.Schematic = schematic
	}
	if err != nil {
		return nil, fmt.Errorf("definition %q: attributes do not match the %s spec: %w", f.Name, f.Kind.CRDKind(), err)
	}
	return obj, nil
}

// FromObject turns a definition CRD object into the .cue file model: the
// spec without schematic becomes the attributes.
func FromObject(obj client.Object) (*File, error) {
	kind := KindOf(obj)
	if kind == "" {
		return nil, fmt.Errorf("%T is not a definition object", obj)
	}
	var spec any
	switch d := obj.(type) {
	case *v1beta1.ComponentDefinition:
		s := d.Spec.DeepCopy()
		s.Schematic = nil
		spec = s
	case *v1beta1.TraitDefinition:
		s := d.Spec.DeepCopy()
		s.Schematic = nil
		spec = s
	case *v1beta1.PolicyDefinition:
		s := d.Spec.DeepCopy()
		s.Schematic = nil
		spec = s
	case *v1beta1.WorkflowStepDefinition:
		s := d.Spec.DeepCopy()
		s.Schematic = nil
		spec = s
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("definition %q: encoding spec: %w", obj.GetName(), err)
	}
	var attrs map[string]any
	if err := json.Unmarshal(raw, &attrs); err != nil {
		return nil, fmt.Errorf("definition %q: decoding spec: %w", obj.GetName(), err)
	}
	f := &File{
		Name:       obj.GetName(),
		Kind:       kind,
		Attributes: attrs,
		Template:   Template(obj),
		Labels:     obj.GetLabels(),
	}
	for k, v := range obj.GetAnnotations() {
		switch k {
		case AnnoDescription:
			f.Description = v
		case AnnoAlias:
			f.Alias = v
		case "kubectl.kubernetes.io/last-applied-configuration":
		default:
			if f.Annotations == nil {
				f.Annotations = map[string]string{}
			}
			f.Annotations[k] = v
		}
	}
	return f, nil
}

// ErrNotDefinition is wrapped by DecodeYAML's error for a document that is
// not a definition object (an Application, a Deployment, …).
var ErrNotDefinition = errors.New("not a core.oam.dev definition")

// DecodeYAML reads definition CRD objects from (multi-document) YAML or
// JSON. Documents of other kinds are an error naming the document (it
// wraps ErrNotDefinition); empty documents are skipped.
func DecodeYAML(filename string, data []byte) ([]client.Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []client.Object
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: reading YAML document %d: %w", filename, i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 || isOnlyComments(doc) {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("%s: YAML document %d: %w", filename, i, err)
		}
		var kind Kind
		for _, k := range Kinds {
			if k.CRDKind() == tm.Kind {
				kind = k
			}
		}
		if kind == "" || !strings.HasPrefix(tm.APIVersion, v1beta1.GroupVersion.Group+"/") {
			return nil, fmt.Errorf("%s: YAML document %d is %s %s, %w (ComponentDefinition, TraitDefinition, PolicyDefinition, WorkflowStepDefinition)", filename, i, tm.APIVersion, tm.Kind, ErrNotDefinition)
		}
		obj, _ := NewObject(kind)
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			// Unknown fields are tolerated; anything else is reported.
			if err2 := yaml.Unmarshal(doc, obj); err2 != nil {
				return nil, fmt.Errorf("%s: YAML document %d (%s): %w", filename, i, tm.Kind, err2)
			}
		}
		obj.GetObjectKind().SetGroupVersionKind(v1beta1.GroupVersion.WithKind(kind.CRDKind()))
		if obj.GetName() == "" {
			return nil, fmt.Errorf("%s: YAML document %d (%s): metadata.name is empty", filename, i, tm.Kind)
		}
		out = append(out, obj)
	}
	return out, nil
}

func isOnlyComments(doc []byte) bool {
	for _, l := range strings.Split(string(doc), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// EncodeYAML writes objects as multi-document YAML, dropping empty status
// and creationTimestamp so the output is what a user would apply.
func EncodeYAML(objs ...client.Object) ([]byte, error) {
	var out bytes.Buffer
	for i, obj := range objs {
		raw, err := json.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", obj.GetName(), err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		delete(m, "status")
		if md, ok := m["metadata"].(map[string]any); ok {
			delete(md, "creationTimestamp")
		}
		y, err := yaml.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", obj.GetName(), err)
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(y)
	}
	return out.Bytes(), nil
}
