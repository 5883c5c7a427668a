package workflow

import (
	"context"
	"errors"
	"testing"
	"time"

	oamv1alpha1 "github.com/kubevela/pkg/apis/oam/v1alpha1"
	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	wftypes "github.com/kubevela/workflow/pkg/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/pkg/appfile"
)

// placedDeployer deploys, for each policy a deploy step names, the
// components placed[policy] to the cluster of that name.
type placedDeployer struct {
	*fakeDeployer
	placed map[string][]string
}

func (d *placedDeployer) PlanDeploy(_ context.Context, policies []string) ([]DeployTarget, error) {
	var out []DeployTarget
	for _, p := range policies {
		out = append(out, DeployTarget{Cluster: p, Components: d.placed[p], Deployer: d.fakeDeployer})
	}
	return out, nil
}

// dataflowRun is a workflow deploying component db to cluster east and
// component web, which reads db's output dbImage, to cluster west, with
// deploy steps (or apply-component steps) in mode.
func dataflowRun(t *testing.T, mode string, applyComponent bool) *harness {
	t.Helper()
	var steps []*appfile.WorkflowStep
	if applyComponent {
		steps = []*appfile.WorkflowStep{
			applyStep("deploy-db", "db", func(s *appfile.WorkflowStep) { s.Properties["cluster"] = "east" }),
			applyStep("deploy-web", "web", func(s *appfile.WorkflowStep) { s.Properties["cluster"] = "west" }),
		}
	} else {
		steps = []*appfile.WorkflowStep{
			{Name: "deploy-db", Type: "deploy", Properties: map[string]any{"policies": []any{"east"}}},
			{Name: "deploy-web", Type: "deploy", Properties: map[string]any{"policies": []any{"west"}}},
		}
	}
	wf := &appfile.Workflow{Mode: mode, SubStepMode: "DAG", Steps: steps}
	db := Component{Name: "db", Properties: map[string]any{"image": "postgres"},
		Outputs: oamv1alpha1.StepOutputs{{Name: "dbImage", ValueFrom: "output.data.image"}}}
	web := Component{Name: "web", Properties: map[string]any{"image": "nginx"},
		Inputs: oamv1alpha1.StepInputs{{From: "dbImage", ParameterKey: "db"}}}
	h := newHarness(t, wf, Options{MaxStepRetries: 3}, db, web)
	h.run.Deployer = &placedDeployer{fakeDeployer: h.deployer, placed: map[string][]string{"east": {"db"}, "west": {"web"}}}
	return h
}

func stepStatus(t *testing.T, r Result, name string) wfv1alpha1.StepStatus {
	t.Helper()
	for _, s := range r.Status.Steps {
		if s.Name == name {
			return s.StepStatus
		}
	}
	t.Fatalf("no status for step %s: %+v", name, r.Status.Steps)
	return wfv1alpha1.StepStatus{}
}

// TestCrossStepComponentInputs: a component deployed by one step (to one
// cluster) reads an output of a component deployed by another step (to
// another cluster). The value arrives; while it is not there the consumer
// waits naming the value, the producing component and its step; when the
// producing step fails for good the consumer fails at once (reason
// Input), naming them, and nothing of it is applied.
func TestCrossStepComponentInputs(t *testing.T) {
	type variant struct {
		mode           string
		applyComponent bool
	}
	variants := []variant{{"DAG", false}, {"StepByStep", false}, {"DAG", true}}
	name := func(v variant) string {
		if v.applyComponent {
			return v.mode + "/apply-component"
		}
		return v.mode + "/deploy"
	}
	waiting := `component "web" waits for input "dbImage", the output of component "db" (step "deploy-db")`
	cannotArrive := `input "dbImage" cannot arrive: step "deploy-db", which deploys component "db" producing it, failed`
	cases := []struct {
		reason string
		run    func(t *testing.T, h *harness)
	}{
		{reason: "the value arrives", run: func(t *testing.T, h *harness) {
			res := h.until(20*time.Second, finished)
			require.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, "%+v", res.Status)
			cm := &corev1.ConfigMap{}
			require.NoError(t, env(t).Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: h.app.Name + "-web"}, cm))
			assert.Equal(t, "postgres", cm.Data["db"])
		}},
		{reason: "the producer is not healthy yet: the consumer waits naming it", run: func(t *testing.T, h *harness) {
			h.deployer.healthy = func(c string) bool { return c != "db" }
			res := h.pass()
			require.False(t, res.Status.Finished)
			if h.run.Plan.Mode.Steps == wfv1alpha1.WorkflowModeDAG {
				web := stepStatus(t, res, "deploy-web")
				assert.Equal(t, wfv1alpha1.WorkflowStepPhaseRunning, web.Phase, "%+v", web)
				assert.Contains(t, web.Message, waiting)
			}
			assert.Equal(t, 0, h.deployer.count("web"))
			h.deployer.healthy = nil
			res = h.until(20*time.Second, finished)
			assert.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, "%+v", res.Status)
		}},
		{reason: "the producer fails for good: the consumer fails at once naming it", run: func(t *testing.T, h *harness) {
			h.deployer.renderErr = func(c string) error {
				if c == "db" {
					return errors.New(`properties.image: conflicting values "x" and int`)
				}
				return nil
			}
			res := h.pass()
			if !res.Status.Finished {
				res = h.pass()
			}
			require.True(t, res.Status.Finished, "finished by the second pass: %+v", res.Status)
			assert.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status)
			web := stepStatus(t, res, "deploy-web")
			assert.Equal(t, wfv1alpha1.WorkflowStepPhaseFailed, web.Phase, "%+v", web)
			assert.Equal(t, wftypes.StatusReasonInput, web.Reason)
			assert.Contains(t, web.Message, cannotArrive)
			assert.Equal(t, 0, h.deployer.count("web"), "nothing of the consumer applied")
			assert.Contains(t, res.Status.Message, "deploy-db", "the run's message names the failed producer")
		}},
		{reason: "the producer retries: the consumer waits, then fails when the retries are spent", run: func(t *testing.T, h *harness) {
			h.deployer.applyErr = func(c string) error {
				if c == "db" {
					// Retryable, and not an unreachable cluster (a deploy
					// step waits for those without spending retries).
					return errors.New(`Operation cannot be fulfilled on configmaps "db": the object has been modified`)
				}
				return nil
			}
			res := h.pass()
			require.False(t, res.Status.Finished)
			if h.run.Plan.Mode.Steps == wfv1alpha1.WorkflowModeDAG {
				assert.Contains(t, stepStatus(t, res, "deploy-web").Message, waiting)
			}
			res = h.until(30*time.Second, finished)
			assert.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status)
			assert.Equal(t, wftypes.StatusReasonFailedAfterRetries, stepStatus(t, res, "deploy-db").Reason)
			web := stepStatus(t, res, "deploy-web")
			assert.Equal(t, wfv1alpha1.WorkflowStepPhaseFailed, web.Phase, "%+v", web)
			assert.Contains(t, web.Message, cannotArrive)
			assert.Equal(t, 0, h.deployer.count("web"))
		}},
	}
	for _, tc := range cases {
		for _, v := range variants {
			t.Run(tc.reason+"/"+name(v), func(t *testing.T) {
				tc.run(t, dataflowRun(t, v.mode, v.applyComponent))
			})
		}
	}
}

// dependsOnRun is a workflow deploying component db to cluster east and
// component web, which dependsOn db, to cluster west, with deploy steps
// (or apply-component steps) in mode; webFirst puts web's step first.
func dependsOnRun(t *testing.T, mode string, applyComponent, webFirst bool) *harness {
	t.Helper()
	var steps []*appfile.WorkflowStep
	if applyComponent {
		steps = []*appfile.WorkflowStep{
			applyStep("deploy-db", "db", func(s *appfile.WorkflowStep) { s.Properties["cluster"] = "east" }),
			applyStep("deploy-web", "web", func(s *appfile.WorkflowStep) { s.Properties["cluster"] = "west" }),
		}
	} else {
		steps = []*appfile.WorkflowStep{
			{Name: "deploy-db", Type: "deploy", Properties: map[string]any{"policies": []any{"east"}}},
			{Name: "deploy-web", Type: "deploy", Properties: map[string]any{"policies": []any{"west"}}},
		}
	}
	if webFirst {
		steps[0], steps[1] = steps[1], steps[0]
	}
	wf := &appfile.Workflow{Mode: mode, SubStepMode: "DAG", Steps: steps}
	db := Component{Name: "db", Properties: map[string]any{"image": "postgres"}}
	web := Component{Name: "web", Properties: map[string]any{"image": "nginx"}, DependsOn: []string{"db"}}
	h := newHarness(t, wf, Options{MaxStepRetries: 3}, db, web)
	h.run.Deployer = &placedDeployer{fakeDeployer: h.deployer, placed: map[string][]string{"east": {"db"}, "west": {"web"}}}
	return h
}

// TestCrossStepComponentDependsOn: a component deployed by one step (to
// one cluster) dependsOn a component another step deploys (to another
// cluster). It is applied only once that step succeeded; until then its
// step waits naming the dependency and the step; when that step fails
// for good it fails at once naming them, and nothing of it is applied.
func TestCrossStepComponentDependsOn(t *testing.T) {
	type variant struct {
		mode           string
		applyComponent bool
	}
	variants := []variant{{"DAG", false}, {"StepByStep", false}, {"DAG", true}}
	name := func(v variant) string {
		if v.applyComponent {
			return v.mode + "/apply-component"
		}
		return v.mode + "/deploy"
	}
	waiting := `Pending on component "db" (dependsOn of component "web"), deployed by step "deploy-db"`
	failed := `not run: component "web" depends on component "db", and step "deploy-db", which deploys it, failed`
	cases := []struct {
		reason string
		run    func(t *testing.T, h *harness)
	}{
		{reason: "the dependency is deployed first", run: func(t *testing.T, h *harness) {
			h.deployer.healthy = func(c string) bool {
				if c == "web" {
					assert.Equal(t, 1, h.deployer.count("db"), "db applied before web")
				}
				return true
			}
			res := h.until(20*time.Second, finished)
			require.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, "%+v", res.Status)
			assert.Equal(t, 1, h.deployer.count("web"))
		}},
		{reason: "the dependency is not healthy yet: the dependent waits naming it", run: func(t *testing.T, h *harness) {
			h.deployer.healthy = func(c string) bool { return c != "db" }
			h.pass()
			res := h.pass()
			require.False(t, res.Status.Finished)
			if h.run.Plan.Mode.Steps == wfv1alpha1.WorkflowModeDAG {
				web := stepStatus(t, res, "deploy-web")
				assert.Equal(t, wfv1alpha1.WorkflowStepPhasePending, web.Phase, "%+v", web)
				assert.Equal(t, waiting, web.Message)
				assert.NotEmpty(t, web.ID)
				assert.Equal(t, stepType(h, "deploy-web"), web.Type)
			}
			assert.Equal(t, 0, h.deployer.count("web"), "nothing of the dependent applied")
			h.deployer.healthy = nil
			res = h.until(20*time.Second, finished)
			assert.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, "%+v", res.Status)
			assert.Equal(t, 1, h.deployer.count("web"))
		}},
		{reason: "the dependency's step fails for good: the dependent fails at once naming it", run: func(t *testing.T, h *harness) {
			h.deployer.renderErr = func(c string) error {
				if c == "db" {
					return errors.New(`properties.image: conflicting values "x" and int`)
				}
				return nil
			}
			res := h.until(20*time.Second, finished)
			assert.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status)
			web := stepStatus(t, res, "deploy-web")
			assert.Equal(t, wfv1alpha1.WorkflowStepPhaseFailed, web.Phase, "%+v", web)
			assert.Equal(t, wftypes.StatusReasonInput, web.Reason)
			assert.Equal(t, failed, web.Message)
			assert.Equal(t, 0, h.deployer.count("web"), "nothing of the dependent applied")
		}},
	}
	for _, tc := range cases {
		for _, v := range variants {
			t.Run(tc.reason+"/"+name(v), func(t *testing.T) {
				tc.run(t, dependsOnRun(t, v.mode, v.applyComponent, false))
			})
		}
	}

	t.Run("in StepByStep the dependent's step comes first: it fails saying the dependency cannot come before it", func(t *testing.T) {
		h := dependsOnRun(t, "StepByStep", false, true)
		res := h.until(20*time.Second, finished)
		assert.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status)
		web := stepStatus(t, res, "deploy-web")
		assert.Equal(t, wfv1alpha1.WorkflowStepPhaseFailed, web.Phase, "%+v", web)
		assert.Equal(t, `waits for component "db" (dependsOn of component "web"), deployed by step "deploy-db", which cannot be deployed before it`, web.Message)
		assert.Equal(t, 0, h.deployer.count("web"))
		assert.Equal(t, 0, h.deployer.count("db"))
	})
}

func stepType(h *harness, name string) string {
	for _, s := range h.run.Plan.Steps {
		if s.Name == name {
			return s.Type
		}
	}
	return ""
}
