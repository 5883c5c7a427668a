package resourcekeeper

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/render"
)

// TestSelectorOnRenderedLabels: selectors read the labels rendering
// stamps. componentTypes selects a component's main workload only, as
// KubeVela's rule selector does (its trait and auxiliary objects carry no
// workload.oam.dev/type); componentNames selects all of them.
func TestSelectorOnRenderedLabels(t *testing.T) {
	af := &appfile.AppFile{Name: "shop", Namespace: "prod"}
	comp := &appfile.Component{Name: "web", Type: "webservice"}
	stamped := func(kind, trait, output string) *unstructured.Unstructured {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": "web"}}}
		render.StampMetadata(af, comp, render.Options{}, render.Resource{Component: "web", Trait: trait, Output: output, Object: obj})
		return obj
	}
	workload := stamped("Deployment", "", "")
	auxiliary := stamped("Service", "", "webserviceExpose")
	trait := stamped("Ingress", "gateway", "ingress")
	cases := []struct {
		reason   string
		selector ResourceSelector
		obj      *unstructured.Unstructured
		want     bool
	}{
		{reason: "componentTypes selects the main workload", selector: ResourceSelector{ComponentTypes: []string{"webservice"}}, obj: workload, want: true},
		{reason: "componentTypes does not select an object of the component's outputs", selector: ResourceSelector{ComponentTypes: []string{"webservice"}}, obj: auxiliary, want: false},
		{reason: "componentTypes does not select a trait's object", selector: ResourceSelector{ComponentTypes: []string{"webservice"}}, obj: trait, want: false},
		{reason: "componentNames selects a trait's object", selector: ResourceSelector{ComponentNames: []string{"web"}}, obj: trait, want: true},
		{reason: "traitTypes selects a trait's object", selector: ResourceSelector{TraitTypes: []string{"gateway"}}, obj: trait, want: true},
		{reason: "traitTypes AuxiliaryWorkload selects the component's outputs", selector: ResourceSelector{TraitTypes: []string{"AuxiliaryWorkload"}}, obj: auxiliary, want: true},
		{reason: "oamTypes TRAIT selects outputs and traits, not the workload", selector: ResourceSelector{OAMTypes: []string{"trait"}}, obj: workload, want: false},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.selector.Matches(tc.obj))
		})
	}
}
