package helmspec

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// APIVersion and Kind of the virtual HelmRelease object rendered by the
// helm/helmchart component definitions (see the package documentation).
const (
	Group      = "helm.oamflow.dev"
	APIVersion = Group + "/v1alpha1"
	Kind       = "HelmRelease"
)

// IsHelmRelease reports whether obj is a virtual HelmRelease that the
// controller must route to this package instead of applying.
func IsHelmRelease(obj *unstructured.Unstructured) bool {
	return obj != nil && obj.GetAPIVersion() == APIVersion && obj.GetKind() == Kind
}

// SpecFromObject parses the spec of a virtual HelmRelease. Defaults fill
// the release name/namespace left empty in spec.release; metadata is not
// read (the definition copies the release there for display only).
func SpecFromObject(obj *unstructured.Unstructured, d Defaults) (*Spec, error) {
	if !IsHelmRelease(obj) {
		return nil, fmt.Errorf("object %s %s is not a %s %s", obj.GetAPIVersion(), obj.GetKind(), APIVersion, Kind)
	}
	spec, ok := obj.Object["spec"]
	if !ok {
		return nil, fmt.Errorf("%s %s has no spec", Kind, obj.GetName())
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encode %s spec: %w", Kind, err)
	}
	return ParseSpec(raw, d)
}
