// Package v1beta1 contains the core.oam.dev/v1beta1 API: Application,
// ComponentDefinition, TraitDefinition, PolicyDefinition,
// WorkflowStepDefinition, DefinitionRevision, ApplicationRevision and
// ResourceTracker. Field names follow the OAM model as KubeVela serves it.
// +kubebuilder:object:generate=true
// +groupName=core.oam.dev
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is core.oam.dev/v1beta1.
	GroupVersion = schema.GroupVersion{Group: "core.oam.dev", Version: "v1beta1"}

	// SchemeBuilder registers the types of this package.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
