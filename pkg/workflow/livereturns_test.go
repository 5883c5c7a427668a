package workflow

import (
	"context"
	"testing"

	oamv1alpha1 "github.com/kubevela/pkg/apis/oam/v1alpha1"
	"github.com/stretchr/testify/assert"
)

// TestReadsLiveReturns: apply-component steps hand their components' live
// objects to CUE only when a step may read them: a step declaring outputs,
// a step of another type, or an apply-component template not the
// built-in one.
func TestReadsLiveReturns(t *testing.T) {
	builtin := map[string]string{StepTypeApplyComponent: "template: {}"}
	apply := func(name string, outputs ...string) oamv1alpha1.WorkflowStep {
		st := oamv1alpha1.WorkflowStep{WorkflowStepBase: oamv1alpha1.WorkflowStepBase{Name: name, Type: StepTypeApplyComponent}}
		for _, o := range outputs {
			st.Outputs = append(st.Outputs, oamv1alpha1.OutputItem{Name: o, ValueFrom: "output.status"})
		}
		return st
	}
	group := oamv1alpha1.WorkflowStep{WorkflowStepBase: oamv1alpha1.WorkflowStepBase{Name: "g", Type: StepTypeStepGroup},
		SubSteps: []oamv1alpha1.WorkflowStepBase{apply("a").WorkflowStepBase, {Name: "n", Type: "notification"}}}
	cases := []struct {
		reason   string
		steps    []oamv1alpha1.WorkflowStep
		template string
		want     bool
	}{
		{reason: "a default workflow: apply-component steps without outputs", steps: []oamv1alpha1.WorkflowStep{apply("a"), apply("b")}, want: false},
		{reason: "a step declaring outputs reads them", steps: []oamv1alpha1.WorkflowStep{apply("a"), apply("b", "st")}, want: true},
		{reason: "another step type may read them through its own template", steps: []oamv1alpha1.WorkflowStep{apply("a"), {WorkflowStepBase: oamv1alpha1.WorkflowStepBase{Name: "d", Type: "deploy"}}}, want: true},
		{reason: "a sub-step of another type counts too", steps: []oamv1alpha1.WorkflowStep{group}, want: true},
		{reason: "an apply-component template that is not the built-in one may read them", steps: []oamv1alpha1.WorkflowStep{apply("a")}, template: "template: {x: 1}", want: true},
	}
	for _, tc := range cases {
		src := func(context.Context, string) (string, error) { return tc.template, nil }
		got := readsLiveReturns(context.Background(), Plan{Steps: tc.steps}, loader{src: src, builtins: builtin})
		assert.Equal(t, tc.want, got, tc.reason)
	}
}
