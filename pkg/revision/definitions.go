package revision

import (
	"context"
	"fmt"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
)

// Definitions are the definitions an Application used, by the type name the
// Application wrote (so a pinned "webservice@v2" is its own key). They are
// what an ApplicationRevision snapshots next to the Application.
type Definitions struct {
	Components    map[string]v1beta1.ComponentDefinition
	Traits        map[string]v1beta1.TraitDefinition
	Policies      map[string]v1beta1.PolicyDefinition
	WorkflowSteps map[string]v1beta1.WorkflowStepDefinition

	// versions names, by kind and key, the stored object version an entry
	// was read from (see Add), which the entries' own metadata leaves out.
	// A Hasher reuses the canonical JSON of an entry's spec only when it
	// has one.
	versions map[entryKey]objectVersion
}

// entryKey is an entry of Definitions: its kind and its key.
type entryKey struct {
	kind appfile.DefinitionKind
	key  string
}

// objectVersion identifies one stored version of an object, whose content
// never changes.
type objectVersion struct {
	namespace, name, resourceVersion string
	uid                              types.UID
}

// version returns the stored version the entry kind/key was read from.
// ok is false when it was not read from a stored object (see Add), or when
// the entry's name and namespace are not that object's.
func (d *Definitions) version(kind appfile.DefinitionKind, key string, meta *metav1.ObjectMeta) (objectVersion, bool) {
	v, ok := d.versions[entryKey{kind, key}]
	if !ok || v.namespace != meta.Namespace || v.name != meta.Name {
		return objectVersion{}, false
	}
	return v, true
}

// remember notes that entry kind/key holds the spec of obj, a stored
// version, or forgets what it noted for the entry when obj is none: an
// object without a UID or resourceVersion (made in memory), or one served
// for a "name@vN" pin (a copy held by a DefinitionRevision, whose metadata
// is not that of the object it was taken from).
func (d *Definitions) remember(kind appfile.DefinitionKind, key string, obj client.Object) {
	k := entryKey{kind, key}
	if obj.GetUID() == "" || obj.GetResourceVersion() == "" || strings.Contains(key, "@") {
		delete(d.versions, k)
		return
	}
	if d.versions == nil {
		d.versions = map[entryKey]objectVersion{}
	}
	d.versions[k] = objectVersion{namespace: obj.GetNamespace(), name: obj.GetName(), resourceVersion: obj.GetResourceVersion(), uid: obj.GetUID()}
}

// Add records obj (a *v1beta1.ComponentDefinition, *TraitDefinition,
// *PolicyDefinition or *WorkflowStepDefinition) under name. Only the spec
// and the identifying metadata (name, namespace, labels, annotations) are
// kept, so that server-set fields never make two snapshots differ. Other
// object types are an error.
//
// Which stored version obj is (UID and resourceVersion) is remembered
// aside, for Hasher: obj's spec must be the content of that version, as
// read from the API server or its cache. Entries must only be set with
// Add: replacing one in the maps directly leaves Hasher the version Add
// remembered for its key.
func (d *Definitions) Add(name string, obj client.Object) error {
	meta := metav1.ObjectMeta{
		Name:        obj.GetName(),
		Namespace:   obj.GetNamespace(),
		Labels:      obj.GetLabels(),
		Annotations: obj.GetAnnotations(),
	}
	switch o := obj.(type) {
	case *v1beta1.ComponentDefinition:
		if d.Components == nil {
			d.Components = map[string]v1beta1.ComponentDefinition{}
		}
		d.Components[name] = v1beta1.ComponentDefinition{TypeMeta: typeMeta("ComponentDefinition"), ObjectMeta: meta, Spec: *o.Spec.DeepCopy()}
		d.remember(appfile.KindComponent, name, obj)
	case *v1beta1.TraitDefinition:
		if d.Traits == nil {
			d.Traits = map[string]v1beta1.TraitDefinition{}
		}
		d.Traits[name] = v1beta1.TraitDefinition{TypeMeta: typeMeta("TraitDefinition"), ObjectMeta: meta, Spec: *o.Spec.DeepCopy()}
		d.remember(appfile.KindTrait, name, obj)
	case *v1beta1.PolicyDefinition:
		if d.Policies == nil {
			d.Policies = map[string]v1beta1.PolicyDefinition{}
		}
		d.Policies[name] = v1beta1.PolicyDefinition{TypeMeta: typeMeta("PolicyDefinition"), ObjectMeta: meta, Spec: *o.Spec.DeepCopy()}
		d.remember(appfile.KindPolicy, name, obj)
	case *v1beta1.WorkflowStepDefinition:
		if d.WorkflowSteps == nil {
			d.WorkflowSteps = map[string]v1beta1.WorkflowStepDefinition{}
		}
		d.WorkflowSteps[name] = v1beta1.WorkflowStepDefinition{TypeMeta: typeMeta("WorkflowStepDefinition"), ObjectMeta: meta, Spec: *o.Spec.DeepCopy()}
		d.remember(appfile.KindWorkflowStep, name, obj)
	default:
		return fmt.Errorf("definition %q: %T is not a definition type", name, obj)
	}
	return nil
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: kind}
}

// FromRevision returns the definitions snapshotted in rev.
func FromRevision(rev *v1beta1.ApplicationRevision) Definitions {
	return Definitions{
		Components:    rev.Spec.ComponentDefinitions,
		Traits:        rev.Spec.TraitDefinitions,
		Policies:      rev.Spec.PolicyDefinitions,
		WorkflowSteps: rev.Spec.WorkflowStepDefinitions,
	}
}

// Recorder is an appfile.DefinitionSource that asks another source and
// remembers every definition it served, so that after appfile.Parse (and
// resolving the workflow steps) Definitions holds exactly what the
// Application used. It is safe for concurrent use.
type Recorder struct {
	src  appfile.DefinitionSource
	mu   sync.Mutex
	defs Definitions
	err  error
}

// NewRecorder records what src serves.
func NewRecorder(src appfile.DefinitionSource) *Recorder { return &Recorder{src: src} }

// Get implements appfile.DefinitionSource.
func (r *Recorder) Get(ctx context.Context, kind appfile.DefinitionKind, name string) (*appfile.Definition, error) {
	d, err := r.src.Get(ctx, kind, name)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if aerr := r.defs.Add(name, d.Object); aerr != nil && r.err == nil {
		r.err = aerr
	}
	return d, nil
}

// Definitions returns what was served so far; the error reports a served
// object that is not a definition type.
func (r *Recorder) Definitions() (Definitions, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.defs, r.err
}

// snapshotSource serves the definitions of one ApplicationRevision.
type snapshotSource struct {
	origin   string
	defs     Definitions
	builtins appfile.DefinitionSource
}

// Source returns an appfile.DefinitionSource serving the definitions
// snapshotted in rev, looked up by the type name the Application wrote.
// A type the snapshot lacks is reported as appfile.ErrDefinitionNotFound,
// except a workflow-step or policy type when builtins is not nil: it is
// served by builtins. oamflow's revisions hold every definition they used,
// so this only serves KubeVela's revisions, which leave out KubeVela's
// built-in steps (apply-component, deploy, suspend, ...) and policies
// (garbage-collect, apply-once, ...): those are compiled into vela-core,
// never read from a definition.
func Source(rev *v1beta1.ApplicationRevision, builtins appfile.DefinitionSource) appfile.DefinitionSource {
	return &snapshotSource{origin: "revision " + rev.Namespace + "/" + rev.Name, defs: FromRevision(rev), builtins: builtins}
}

// Get implements appfile.DefinitionSource.
func (s *snapshotSource) Get(ctx context.Context, kind appfile.DefinitionKind, name string) (*appfile.Definition, error) {
	var obj client.Object
	switch kind {
	case appfile.KindComponent:
		if d, ok := s.defs.Components[name]; ok {
			obj = d.DeepCopy()
		}
	case appfile.KindTrait:
		if d, ok := s.defs.Traits[name]; ok {
			obj = d.DeepCopy()
		}
	case appfile.KindPolicy:
		if d, ok := s.defs.Policies[name]; ok {
			obj = d.DeepCopy()
		}
	case appfile.KindWorkflowStep:
		if d, ok := s.defs.WorkflowSteps[name]; ok {
			obj = d.DeepCopy()
		}
	}
	if obj == nil && s.builtins != nil && (kind == appfile.KindWorkflowStep || kind == appfile.KindPolicy) {
		return s.builtins.Get(ctx, kind, name)
	}
	if obj == nil {
		return nil, fmt.Errorf("%s %q in %s: %w", kind, name, s.origin, appfile.ErrDefinitionNotFound)
	}
	_, pin, err := appfile.SplitRevision(name)
	if err != nil {
		return nil, err
	}
	return &appfile.Definition{Kind: kind, Name: obj.GetName(), Revision: pin, Origin: s.origin, Object: obj}, nil
}
