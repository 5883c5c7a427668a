package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
)

// ResourceTrackerType says what a ResourceTracker tracks.
type ResourceTrackerType string

// ResourceTracker types.
const (
	// ResourceTrackerTypeRoot tracks resources kept for the Application's whole
	// life (deleted only with the Application).
	ResourceTrackerTypeRoot ResourceTrackerType = "root"
	// ResourceTrackerTypeVersioned tracks what one revision applied.
	ResourceTrackerTypeVersioned ResourceTrackerType = "versioned"
)

// ManagedResource is one object a revision applied.
type ManagedResource struct {
	common.ClusterObjectReference `json:",inline"`
	// Component is the component that rendered the object.
	Component string `json:"component,omitempty"`
	// Trait is the trait type that rendered the object; empty for the workload.
	Trait string `json:"trait,omitempty"`
	// Deleted marks an object already garbage-collected.
	Deleted bool `json:"deleted,omitempty"`
	// Data is the object as last applied (the desired state, without
	// status); state-keep re-applies it when the live object drifts.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Data *runtime.RawExtension `json:"data,omitempty"`
}

// ResourceTrackerSpec lists what an Application revision applied.
type ResourceTrackerSpec struct {
	// +kubebuilder:validation:Enum=root;versioned
	Type ResourceTrackerType `json:"type"`
	// ApplicationGeneration is the Application's metadata.generation when tracked.
	ApplicationGeneration int64 `json:"applicationGeneration"`
	// ManagedResources are the tracked objects.
	ManagedResources []ManagedResource `json:"managedResources,omitempty"`
}

// ResourceTracker records, per Application revision, every object applied to
// any cluster, so that garbage collection deletes exactly what a newer
// revision dropped. Cluster-scoped, stored on the hub; named
// "<app>-v<N>-<namespace>" (versioned) or "<app>-<namespace>" (root).
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=rt,categories={oam}
// +kubebuilder:printcolumn:name="TYPE",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type ResourceTracker struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ResourceTrackerSpec `json:"spec,omitempty"`
}

// ResourceTrackerList is a list of ResourceTrackers.
// +kubebuilder:object:root=true
type ResourceTrackerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceTracker `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ResourceTracker{}, &ResourceTrackerList{})
}
