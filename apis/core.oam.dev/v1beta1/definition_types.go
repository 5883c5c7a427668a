package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
)

// DefinitionStatus is the status shared by every definition kind.
type DefinitionStatus struct {
	// ObservedGeneration is the metadata.generation this status describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions report whether the definition's CUE compiles (type Ready).
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LatestRevision is the newest DefinitionRevision of this definition.
	LatestRevision *common.Revision `json:"latestRevision,omitempty"`
}

// ComponentDefinitionSpec describes how a component type renders.
type ComponentDefinitionSpec struct {
	// Workload names the kind of the main workload the template outputs.
	Workload common.WorkloadTypeDescriptor `json:"workload"`
	// Version is the definition's own semantic version.
	Version string `json:"version,omitempty"`
	// Schematic holds the CUE template.
	Schematic *common.Schematic `json:"schematic,omitempty"`
	// Status holds health and custom status expressions.
	Status *common.Status `json:"status,omitempty"`
	// PodSpecPath is the path of the pod spec inside the workload, for
	// traits that patch pods of non-standard workloads.
	PodSpecPath string `json:"podSpecPath,omitempty"`
	// Extension is free-form data for tools.
	// +kubebuilder:pruning:PreserveUnknownFields
	Extension *runtime.RawExtension `json:"extension,omitempty"`
}

// ComponentDefinition registers a component type written in CUE.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=comp,categories={oam}
// +kubebuilder:printcolumn:name="WORKLOAD-KIND",type=string,JSONPath=`.spec.workload.definition.kind`
// +kubebuilder:printcolumn:name="DESCRIPTION",type=string,JSONPath=`.metadata.annotations.definition\.oam\.dev/description`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type ComponentDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ComponentDefinitionSpec `json:"spec,omitempty"`
	Status DefinitionStatus        `json:"status,omitempty"`
}

// ComponentDefinitionList is a list of ComponentDefinitions.
// +kubebuilder:object:root=true
type ComponentDefinitionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ComponentDefinition `json:"items"`
}

// TraitDefinitionSpec describes how a trait patches or adds to a component.
type TraitDefinitionSpec struct {
	Version string `json:"version,omitempty"`
	// AppliesToWorkloads lists workload kinds/types/definition names this trait
	// may be attached to ("*" or empty: any).
	AppliesToWorkloads []string `json:"appliesToWorkloads,omitempty"`
	// ConflictsWith lists trait types that may not be attached together with this one.
	ConflictsWith []string `json:"conflictsWith,omitempty"`
	// PodDisruptive says whether changing the trait restarts pods.
	PodDisruptive bool `json:"podDisruptive,omitempty"`
	// WorkloadRefPath is the field path where the trait expects a workload reference.
	WorkloadRefPath string `json:"workloadRefPath,omitempty"`
	// ManageWorkload says the trait manages the workload's lifecycle.
	ManageWorkload bool `json:"manageWorkload,omitempty"`
	// ControlPlaneOnly says the trait's outputs go to the hub only.
	ControlPlaneOnly bool `json:"controlPlaneOnly,omitempty"`
	// Stage orders dispatch of trait outputs relative to the workload.
	// +kubebuilder:validation:Enum=PreDispatch;DefaultDispatch;PostDispatch
	Stage string `json:"stage,omitempty"`
	// Schematic holds the CUE template (patch, patchOutputs, outputs).
	Schematic *common.Schematic `json:"schematic,omitempty"`
	// Status holds health and custom status expressions.
	Status *common.Status `json:"status,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	Extension *runtime.RawExtension `json:"extension,omitempty"`
}

// TraitDefinition registers a trait type written in CUE.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=trait,categories={oam}
// +kubebuilder:printcolumn:name="APPLIES-TO",type=string,JSONPath=`.spec.appliesToWorkloads`
// +kubebuilder:printcolumn:name="DESCRIPTION",type=string,JSONPath=`.metadata.annotations.definition\.oam\.dev/description`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type TraitDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TraitDefinitionSpec `json:"spec,omitempty"`
	Status DefinitionStatus    `json:"status,omitempty"`
}

// TraitDefinitionList is a list of TraitDefinitions.
// +kubebuilder:object:root=true
type TraitDefinitionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TraitDefinition `json:"items"`
}

// PolicyDefinitionSpec describes a policy type.
type PolicyDefinitionSpec struct {
	Version string `json:"version,omitempty"`
	// Schematic holds the CUE template.
	Schematic *common.Schematic `json:"schematic,omitempty"`
	// ManageHealthCheck says the policy takes over health checking.
	ManageHealthCheck bool `json:"manageHealthCheck,omitempty"`
}

// PolicyDefinition registers a policy type written in CUE.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=def-policy,categories={oam}
// +kubebuilder:printcolumn:name="DESCRIPTION",type=string,JSONPath=`.metadata.annotations.definition\.oam\.dev/description`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type PolicyDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PolicyDefinitionSpec `json:"spec,omitempty"`
	Status DefinitionStatus     `json:"status,omitempty"`
}

// PolicyDefinitionList is a list of PolicyDefinitions.
// +kubebuilder:object:root=true
type PolicyDefinitionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PolicyDefinition `json:"items"`
}

// WorkflowStepDefinitionSpec describes a workflow step type.
type WorkflowStepDefinitionSpec struct {
	Version string `json:"version,omitempty"`
	// Schematic holds the CUE template; it may import provider packages
	// (vela/kube, vela/builtin, vela/op, …).
	Schematic *common.Schematic `json:"schematic,omitempty"`
}

// WorkflowStepDefinition registers a workflow step type written in CUE.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=workflowstep,categories={oam}
// +kubebuilder:printcolumn:name="DESCRIPTION",type=string,JSONPath=`.metadata.annotations.definition\.oam\.dev/description`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type WorkflowStepDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkflowStepDefinitionSpec `json:"spec,omitempty"`
	Status DefinitionStatus           `json:"status,omitempty"`
}

// WorkflowStepDefinitionList is a list of WorkflowStepDefinitions.
// +kubebuilder:object:root=true
type WorkflowStepDefinitionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkflowStepDefinition `json:"items"`
}

// DefinitionType names a definition kind in DefinitionRevision.spec.definitionType.
type DefinitionType string

// Definition types.
const (
	ComponentType    DefinitionType = "Component"
	TraitType        DefinitionType = "Trait"
	PolicyType       DefinitionType = "Policy"
	WorkflowStepType DefinitionType = "WorkflowStep"
)

// DefinitionRevisionSpec snapshots one definition; exactly the field matching
// DefinitionType is set.
type DefinitionRevisionSpec struct {
	// Revision is N of "<def>-v<N>".
	Revision int64 `json:"revision"`
	// RevisionHash is the content hash of the definition spec.
	RevisionHash string `json:"revisionHash"`
	// +kubebuilder:validation:Enum=Component;Trait;Policy;WorkflowStep
	DefinitionType         DefinitionType          `json:"definitionType"`
	ComponentDefinition    *ComponentDefinition    `json:"componentDefinition,omitempty"`
	TraitDefinition        *TraitDefinition        `json:"traitDefinition,omitempty"`
	PolicyDefinition       *PolicyDefinition       `json:"policyDefinition,omitempty"`
	WorkflowStepDefinition *WorkflowStepDefinition `json:"workflowStepDefinition,omitempty"`
}

// DefinitionRevision is an immutable snapshot of a definition, named "<def>-v<N>".
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=defrev,categories={oam}
// +kubebuilder:printcolumn:name="REVISION",type=integer,JSONPath=`.spec.revision`
// +kubebuilder:printcolumn:name="HASH",type=string,JSONPath=`.spec.revisionHash`
// +kubebuilder:printcolumn:name="TYPE",type=string,JSONPath=`.spec.definitionType`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type DefinitionRevision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec DefinitionRevisionSpec `json:"spec,omitempty"`
}

// DefinitionRevisionList is a list of DefinitionRevisions.
// +kubebuilder:object:root=true
type DefinitionRevisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DefinitionRevision `json:"items"`
}

func init() {
	SchemeBuilder.Register(
		&ComponentDefinition{}, &ComponentDefinitionList{},
		&TraitDefinition{}, &TraitDefinitionList{},
		&PolicyDefinition{}, &PolicyDefinitionList{},
		&WorkflowStepDefinition{}, &WorkflowStepDefinitionList{},
		&DefinitionRevision{}, &DefinitionRevisionList{},
	)
}
