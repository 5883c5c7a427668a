// Package appfile turns an Application into an AppFile: its components,
// traits, policies and workflow steps with their definitions resolved and
// their properties validated against the definitions' CUE `parameter`.
// Parse reports every problem at once, each naming its field path; nothing
// is rendered here (see package render).
package appfile

import (
	"context"
	"fmt"
	"sync"

	oamv1alpha1 "github.com/kubevela/pkg/apis/oam/v1alpha1"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/cuex"
)

// Workflow modes (OAM spelling).
const (
	ModeStepByStep = "StepByStep"
	ModeDAG        = "DAG"
)

// Step types the workflow engine runs without a definition.
const (
	StepTypeSuspend   = "suspend"
	StepTypeStepGroup = "step-group"
	// StepTypeApplyComponent and StepTypeDeploy are the step types of the
	// default workflow.
	StepTypeApplyComponent = "apply-component"
	StepTypeDeploy         = "deploy"
)

// Policy types with a meaning for rendering.
const (
	PolicyTopology = "topology"
	PolicyOverride = "override"
	// PolicyReplication is KubeVela's replication policy: deploy steps
	// using it replicate the components it selects once per key.
	PolicyReplication = "replication"
)

// AppFile is a parsed and validated Application.
type AppFile struct {
	// Name and Namespace of the Application (Namespace "default" when unset).
	Name, Namespace string
	Labels          map[string]string
	Annotations     map[string]string
	// PublishVersion is the app.oam.dev/publishVersion annotation.
	PublishVersion string
	// Generation is the Application's metadata.generation.
	Generation int64
	Components []*Component
	Policies   []*Policy
	Workflow   *Workflow
	// Warnings are problems that do not stop the Application from being
	// deployed (a trait outside its appliesToWorkloads), each as
	// `<field path>: <what> (<subject>)`.
	Warnings []string
	// App is the Application as given.
	App *v1beta1.Application
	// Engine compiles and evaluates the definitions' CUE; Parse takes it
	// from the context (WithEngine) or makes a new one.
	Engine *cuex.Engine
	// Source is where the definitions came from (used to re-parse the app
	// with override policies applied).
	Source DefinitionSource
	// contextComponents is context.components of App, built once by Parse
	// and shared read-only by every component's context (building it per
	// component made contexts cost O(components²)).
	contextComponents []any
}

// Component is one validated component.
type Component struct {
	Name string
	// Type is the component type as written (may carry "@vN").
	Type       string
	Definition *Definition
	// Properties is the JSON data of spec.components[i].properties
	// (integers as int64, other numbers as float64).
	Properties       map[string]any
	Traits           []*Trait
	DependsOn        []string
	Inputs           oamv1alpha1.StepInputs
	Outputs          oamv1alpha1.StepOutputs
	ExternalRevision string
	// Pending says a required property is missing that workflow inputs or
	// an override policy supply: the component can only be rendered with
	// them (in its workflow step), not with its own properties.
	Pending bool
}

// Trait is one validated trait of a component; order is patch order.
type Trait struct {
	Type       string
	Definition *Definition
	Properties map[string]any
}

// Policy is one validated policy.
type Policy struct {
	// Name is spec.policies[Index].name, or for a policy without one the
	// name KubeVela gives it (AutoPolicyName).
	Name, Type string
	Definition *Definition
	Properties map[string]any
	// Index is the policy's position in spec.policies.
	Index int
}

// Workflow is spec.workflow, or the default workflow when it is empty.
type Workflow struct {
	// Ref names a standalone Workflow object (steps are then empty).
	Ref string
	// Mode and SubStepMode are StepByStep or DAG.
	Mode, SubStepMode string
	Steps             []*WorkflowStep
	// Default says the steps were generated (no spec.workflow steps).
	Default bool
}

// WorkflowStep is one step (or sub-step). Its definition is resolved when
// first asked for (Definition), so an AppFile can be built without step
// definitions at hand.
type WorkflowStep struct {
	Name, Type string
	Properties map[string]any
	DependsOn  []string
	If         string
	Timeout    string
	Inputs     oamv1alpha1.StepInputs
	Outputs    oamv1alpha1.StepOutputs
	Meta       *oamv1alpha1.WorkflowStepMeta
	// Mode is the mode of SubSteps (step-group only).
	Mode     string
	SubSteps []*WorkflowStep

	src  DefinitionSource
	once sync.Once
	def  *Definition
	err  error
}

// Definition resolves the step's definition (once). Steps of the types the
// engine runs itself (suspend, step-group) have none: it returns nil, nil.
func (s *WorkflowStep) Definition(ctx context.Context) (*Definition, error) {
	if s.Type == StepTypeSuspend || s.Type == StepTypeStepGroup {
		return nil, nil
	}
	s.once.Do(func() {
		if s.def != nil {
			return
		}
		if s.src == nil {
			s.err = fmt.Errorf("workflow step %q: no definition source", s.Name)
			return
		}
		s.def, s.err = s.src.Get(ctx, KindWorkflowStep, s.Type)
	})
	return s.def, s.err
}

// Component returns the component named name, or nil.
func (af *AppFile) Component(name string) *Component {
	for _, c := range af.Components {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// PoliciesOfType returns the policies of one type, in spec order.
func (af *AppFile) PoliciesOfType(typ string) []*Policy {
	var out []*Policy
	for _, p := range af.Policies {
		if p.Type == typ {
			out = append(out, p)
		}
	}
	return out
}

// Policy returns the policy named name, or nil.
func (af *AppFile) Policy(name string) *Policy {
	for _, p := range af.Policies {
		if p.Name == name {
			return p
		}
	}
	return nil
}

type engineKey struct{}

// WithEngine returns a context carrying e; Parse uses it so that compiled
// CUE is shared across parses (a controller keeps one Engine per worker).
func WithEngine(ctx context.Context, e *cuex.Engine) context.Context {
	return context.WithValue(ctx, engineKey{}, e)
}

// EngineFrom returns the Engine carried by ctx, or nil.
func EngineFrom(ctx context.Context) *cuex.Engine {
	e, _ := ctx.Value(engineKey{}).(*cuex.Engine)
	return e
}
