package workflow

import (
	"testing"
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	wftypes "github.com/kubevela/workflow/pkg/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/pkg/appfile"
)

// unprovidedApply applies a ConfigMap, then uses what follows it.
func unprovidedApply(imports, use string) string {
	return `import (
	"vela/kube"
` + imports + `
)

record: kube.#Apply & {$params: value: {
	apiVersion: "v1"
	kind:       "ConfigMap"
	metadata: {name: "record-\(context.name)", namespace: context.namespace}
}}
` + use + `
parameter: {}
`
}

// TestStepUsingUnprovidedFails: a step whose definition uses an import or
// an action oamflow does not provide (def vet warns about it) fails for
// good when it runs, naming it as the warning does, before doing anything
// else; the steps after it are not run. It used to succeed without the
// action, or fail each retry with CUE's "builtin package undefined".
func TestStepUsingUnprovidedFails(t *testing.T) {
	cases := []struct {
		reason string
		tmpl   string
		// inGroup runs the step as the sub-step of a step group.
		inGroup bool
		want    string
	}{
		{
			reason: "an action its package lacks",
			tmpl:   unprovidedApply("", "read: kube.#Nope & {$params: value: record.$returns.value}"),
			want:   `workflow-step "uses-unprovided": uses kube.#Nope, which oamflow's vela/kube does not provide`,
		},
		{
			reason:  "a package oamflow does not serve, in a step group",
			tmpl:    unprovidedApply(`	"vela/gadget"`, "g: gadget.#Do & {$params: x: 1}"),
			inGroup: true,
			want:    `workflow-step "uses-unprovided": imports vela/gadget, which oamflow does not provide`,
		},
		{
			reason: "a legacy vela/op action that does not exist, and another one",
			tmpl:   unprovidedApply(`	"vela/op"`, "g: op.#Gadget & {x: 1}\nh: kube.#Nope & {}"),
			want:   `workflow-step "uses-unprovided": uses kube.#Nope, which oamflow's vela/kube does not provide; uses op.#Gadget, which oamflow's vela/op does not provide`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			step := &appfile.WorkflowStep{Name: "odd", Type: "uses-unprovided"}
			steps := []*appfile.WorkflowStep{step, applyStep("after", "web")}
			if tc.inGroup {
				steps[0] = &appfile.WorkflowStep{Name: "group", Type: "step-group", SubSteps: []*appfile.WorkflowStep{step}}
			}
			h := newHarness(t, &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: steps}, Options{}, comps("web")...)
			withTemplates(h, map[string]string{"uses-unprovided": tc.tmpl})
			res := h.until(30*time.Second, finished)
			assert.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status)
			path := "odd"
			if tc.inGroup {
				path = "group/odd"
			}
			got, s, ok := FailedStep(&res.Status)
			require.True(t, ok, "%+v", res.Status)
			assert.Equal(t, path, got)
			assert.Equal(t, tc.want, s.Message)
			assert.Equal(t, wftypes.StatusReasonAction, s.Reason, "failed for good, not retried")
			assert.Empty(t, h.deployer.objects, "nothing of the step (its ConfigMap) nor of the steps after it applied")
			assert.NotEqual(t, succeeded, phaseOf(res.Status)["after"])
		})
	}
}
