package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

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
	// ResourceTrackerTypeComponentRevision is KubeVela's record of the
	// ControllerRevisions of an Application's components ("<app>-comp-rev-<ns>");
	// oamflow accepts and keeps it but never collects through it.
	ResourceTrackerTypeComponentRevision ResourceTrackerType = "component-revision"
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

	// The fields below are KubeVela's: accepted so that its trackers are
	// stored whole; DecodeTracker moves Raw into Data, the others are kept.

	// Raw is KubeVela's name for Data.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Raw *runtime.RawExtension `json:"raw,omitempty"`
	// Creator is KubeVela's (unused) creator of the reference.
	Creator string `json:"creator,omitempty"`
	// UID of the object when tracked (KubeVela's ObjectReference).
	UID types.UID `json:"uid,omitempty"`
	// ResourceVersion of the object when tracked (KubeVela's ObjectReference).
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// FieldPath is KubeVela's ObjectReference field path (unused).
	FieldPath string `json:"fieldPath,omitempty"`
	// Env is KubeVela's env-binding environment of the component.
	Env string `json:"env,omitempty"`
	// SkipGC marks an object KubeVela was told not to collect; oamflow
	// keeps it on garbage collection too.
	SkipGC bool `json:"skipGC,omitempty"`
}

// ResourceTrackerSpec lists what an Application revision applied.
type ResourceTrackerSpec struct {
	// +kubebuilder:validation:Enum=root;versioned;component-revision
	Type ResourceTrackerType `json:"type"`
	// ApplicationGeneration is the Application's metadata.generation when tracked.
	ApplicationGeneration int64 `json:"applicationGeneration"`
	// ManagedResources are the tracked objects.
	ManagedResources []ManagedResource `json:"managedResources,omitempty"`
	// Compression holds managedResources compressed, as KubeVela stores
	// them (zstd or gzip); oamflow reads it (DecodeTracker) and never
	// writes it.
	// +optional
	Compression *Compression `json:"compression,omitempty"`
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
