package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ApplicationRevisionSpec snapshots an Application's spec together with every
// definition it used, so that a later edit of a definition does not change
// what a deployed revision renders.
type ApplicationRevisionSpec struct {
	// Application is the Application as it was when the revision was made
	// (metadata: name, namespace, labels, annotations; spec; no status).
	Application Application `json:"application"`
	// ComponentDefinitions used by the Application, by type name.
	ComponentDefinitions map[string]ComponentDefinition `json:"componentDefinitions,omitempty"`
	// TraitDefinitions used by the Application, by type name.
	TraitDefinitions map[string]TraitDefinition `json:"traitDefinitions,omitempty"`
	// PolicyDefinitions used by the Application, by type name.
	PolicyDefinitions map[string]PolicyDefinition `json:"policyDefinitions,omitempty"`
	// WorkflowStepDefinitions used by the Application's workflow, by type name.
	WorkflowStepDefinitions map[string]WorkflowStepDefinition `json:"workflowStepDefinitions,omitempty"`

	// The fields below are KubeVela's, accepted and kept so that its
	// revisions are stored whole; oamflow does not read them.

	// WorkloadDefinitions KubeVela recorded, by name.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	WorkloadDefinitions *runtime.RawExtension `json:"workloadDefinitions,omitempty"`
	// PolicyVersions KubeVela recorded, by policy name.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	PolicyVersions *runtime.RawExtension `json:"policyVersions,omitempty"`
	// Policies are KubeVela's external Policy objects the Application used.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Policies *runtime.RawExtension `json:"policies,omitempty"`
	// Workflow is KubeVela's external Workflow object the Application used.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Workflow *runtime.RawExtension `json:"workflow,omitempty"`
	// ReferredObjects are the objects KubeVela's ref-objects read.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	ReferredObjects []runtime.RawExtension `json:"referredObjects,omitempty"`
	// Compression holds the fields above compressed, as KubeVela stores
	// them (zstd or gzip); oamflow reads it (DecodeRevision) and never
	// writes it.
	// +optional
	Compression *Compression `json:"compression,omitempty"`
}

// ApplicationRevisionStatus records the outcome of the revision's workflow.
type ApplicationRevisionStatus struct {
	// Succeeded is true once the revision's workflow finished successfully.
	Succeeded bool `json:"succeeded"`
	// WorkflowFinishedAt is when the workflow finished.
	WorkflowFinishedAt *metav1.Time `json:"workflowFinishedAt,omitempty"`
	// Workflow is KubeVela's record of the revision's workflow, kept as
	// stored.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Workflow *runtime.RawExtension `json:"workflow,omitempty"`
	// WorkflowContext is KubeVela's copy of the workflow context, kept as
	// stored.
	// +optional
	WorkflowContext map[string]string `json:"workflowContext,omitempty"`
}

// ApplicationRevision is an immutable snapshot of an Application and its
// definitions, named "<app>-v<N>" and labelled app.oam.dev/app-revision-hash.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=apprev,categories={oam}
// +kubebuilder:printcolumn:name="REVISION",type=string,JSONPath=`.metadata.name`
// +kubebuilder:printcolumn:name="HASH",type=string,JSONPath=`.metadata.labels.app\.oam\.dev/app-revision-hash`
// +kubebuilder:printcolumn:name="SUCCEEDED",type=boolean,JSONPath=`.status.succeeded`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type ApplicationRevision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ApplicationRevisionSpec   `json:"spec,omitempty"`
	Status ApplicationRevisionStatus `json:"status,omitempty"`
}

// ApplicationRevisionList is a list of ApplicationRevisions.
// +kubebuilder:object:root=true
type ApplicationRevisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ApplicationRevision `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ApplicationRevision{}, &ApplicationRevisionList{})
}
