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
	steps := crossClusterSteps(applyComponent)
	wf := &appfile.Workflow{Mode: mode, SubStepMode: "DAG", Steps: steps}
	db := Component{Name: "db", Properties: map[string]any{"image": "postgres"},
		Outputs: oamv1alpha1.StepOutputs{{Name: "dbImage", ValueFrom: "output.data.image"}}}
	web := Component{Name: "web", Properties: map[string]any{"image": "nginx"},
		Inputs: oamv1alpha1.StepInputs{{From: "dbImage", ParameterKey: "db"}}}
	h := newHarness(t, wf, Options{MaxStepRetries: 3}, db, web)
	h.run.Deployer = &placedDeployer{fakeDeployer: h.deployer, placed: map[string][]string{"east": {"db"}, "west": {"web"}}}
	return h
}

// crossVariant is a workflow mode and step kind the cross-cluster tests
// run in.
type crossVariant struct {
	mode           string
	applyComponent bool
}

var crossVariants = []crossVariant{{"DAG", false}, {"StepByStep", false}, {"DAG", true}}

func (v crossVariant) name() string {
	if v.applyComponent {
		return v.mode + "/apply-component"
	}
	return v.mode + "/deploy"
}

// crossClusterSteps deploy component db to cluster east and web to
// cluster west: deploy steps, or apply-component steps.
func crossClusterSteps(applyComponent bool) []*appfile.WorkflowStep {
	if applyComponent {
		return []*appfile.WorkflowStep{
			applyStep("deploy-db", "db", func(s *appfile.WorkflowStep) { s.Properties["cluster"] = "east" }),
			applyStep("deploy-web", "web", func(s *appfile.WorkflowStep) { s.Properties["cluster"] = "west" }),
		}
	}
	return []*appfile.WorkflowStep{
		{Name: "deploy-db", Type: "deploy", Properties: map[string]any{"policies": []any{"east"}}},
		{Name: "deploy-web", Type: "deploy", Properties: map[string]any{"policies": []any{"west"}}},
	}
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
		for _, v := range crossVariants {
			t.Run(tc.reason+"/"+v.name(), func(t *testing.T) {
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
	steps := crossClusterSteps(applyComponent)
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
// cluster). It is applied only once the dependency is healthy; until then
// it waits naming the dependency and the step; when that step fails for
// good its step fails at once naming them, and nothing of it is applied.
func TestCrossStepComponentDependsOn(t *testing.T) {
	waiting := `component "web" waits for component "db", which it depends on (deployed by step "deploy-db")`
	failed := `not run: component "web" depends on component "db", which cannot be deployed: step "deploy-db" failed`
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
				assert.Equal(t, wfv1alpha1.WorkflowStepPhaseRunning, web.Phase, "%+v", web)
				assert.Contains(t, web.Message, waiting)
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
			if h.run.Plan.Mode.Steps == wfv1alpha1.WorkflowModeDAG {
				assert.Equal(t, wfv1alpha1.WorkflowStepPhaseFailed, web.Phase, "%+v", web)
				assert.Equal(t, wftypes.StatusReasonInput, web.Reason)
				assert.Equal(t, failed, web.Message)
			} else {
				assert.Equal(t, wfv1alpha1.WorkflowStepPhaseSkipped, web.Phase, "StepByStep: skipped after the failed step, as the library does: %+v", web)
			}
			assert.Equal(t, 0, h.deployer.count("web"), "nothing of the dependent applied")
		}},
	}
	for _, tc := range cases {
		for _, v := range crossVariants {
			t.Run(tc.reason+"/"+v.name(), func(t *testing.T) {
				tc.run(t, dependsOnRun(t, v.mode, v.applyComponent, false))
			})
		}
	}
}

// TestCrossStepDependsOnShapes: workflows around a cross-step dependsOn
// that must neither hang nor change what they did before (review of the
// first version, which made whole steps wait).
func TestCrossStepDependsOnShapes(t *testing.T) {
	db := Component{Name: "db", Properties: map[string]any{"image": "postgres"}}
	web := Component{Name: "web", Properties: map[string]any{"image": "nginx"}, DependsOn: []string{"db"}}
	dbFails := func(h *harness) {
		h.deployer.renderErr = func(c string) error {
			if c == "db" {
				return errors.New(`properties.image: conflicting values "x" and int`)
			}
			return nil
		}
	}
	late := `not run: component "web" depends on component "db", which only step "deploy-db" deploys, and it runs after this step`
	cases := []struct {
		reason     string
		wf         *appfile.Workflow
		comps      []Component
		placed     map[string][]string
		setup      func(h *harness)
		wantStatus wfv1alpha1.WorkflowRunPhase
		// step, and its phase and message (message "": not checked).
		step, phase, message string
		applied              map[string]int
	}{
		{reason: "default workflow: the dependent's step is skipped when the dependency's fails, as the library does",
			wf: &appfile.Workflow{Mode: "DAG", SubStepMode: "DAG", Default: true, Steps: []*appfile.WorkflowStep{
				applyStep("db", "db"),
				applyStep("web", "web", func(s *appfile.WorkflowStep) { s.DependsOn = []string{"db"} }),
			}},
			comps: []Component{db, web}, setup: dbFails, wantStatus: wfv1alpha1.WorkflowStateFailed,
			step: "web", phase: "skipped", message: `not run: step "db" failed`, applied: map[string]int{"web": 0}},
		{reason: "the dependency is deployed by one of two steps with if; the other one skipped by its condition is no failure",
			wf: &appfile.Workflow{Mode: "DAG", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
				applyStep("deploy-db-prod", "db", func(s *appfile.WorkflowStep) { s.If = "true" }),
				applyStep("deploy-db-staging", "db", func(s *appfile.WorkflowStep) { s.If = "false" }),
				applyStep("deploy-web", "web"),
			}},
			comps: []Component{db, web}, wantStatus: wfv1alpha1.WorkflowStateSucceeded,
			step: "deploy-web", phase: "succeeded", applied: map[string]int{"web": 1}},
		{reason: "components wait one by one: two steps depending on each other's components both finish",
			wf: &appfile.Workflow{Mode: "DAG", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
				{Name: "deploy-east", Type: "deploy", Properties: map[string]any{"policies": []any{"east"}}},
				{Name: "deploy-west", Type: "deploy", Properties: map[string]any{"policies": []any{"west"}}},
			}},
			comps: []Component{
				{Name: "api", Properties: map[string]any{"image": "api"}, DependsOn: []string{"db"}},
				{Name: "cache", Properties: map[string]any{"image": "redis"}},
				db,
				{Name: "worker", Properties: map[string]any{"image": "worker"}, DependsOn: []string{"cache"}},
			},
			placed:     map[string][]string{"east": {"api", "cache"}, "west": {"db", "worker"}},
			wantStatus: wfv1alpha1.WorkflowStateSucceeded, step: "deploy-east", phase: "succeeded",
			applied: map[string]int{"api": 1, "worker": 1}},
		{reason: "one deploy step, two clusters: the dependent waits for the dependency's cluster",
			wf: &appfile.Workflow{Mode: "DAG", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
				{Name: "deploy", Type: "deploy", Properties: map[string]any{"policies": []any{"east", "west"}}},
			}},
			comps: []Component{db, web}, placed: map[string][]string{"east": {"db"}, "west": {"web"}},
			setup: func(h *harness) {
				h.deployer.healthy = func(c string) bool {
					if c == "web" {
						assert.GreaterOrEqual(t, h.deployer.count("db"), 1, "db applied before web")
					}
					return true
				}
			},
			wantStatus: wfv1alpha1.WorkflowStateSucceeded, step: "deploy", phase: "succeeded", applied: map[string]int{"web": 1}},
		{reason: "an if: always step is left alone: it runs after the dependency's step failed",
			wf: &appfile.Workflow{Mode: "DAG", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
				applyStep("deploy-db", "db"),
				applyStep("deploy-web", "web", func(s *appfile.WorkflowStep) { s.If = "always"; s.DependsOn = []string{"deploy-db"} }),
			}},
			comps: []Component{db, web}, setup: dbFails, wantStatus: wfv1alpha1.WorkflowStateFailed,
			step: "deploy-web", phase: "succeeded", applied: map[string]int{"web": 1}},
		{reason: "DAG, the dependency's step dependsOn the dependent's: it fails at once",
			wf: &appfile.Workflow{Mode: "DAG", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
				applyStep("deploy-web", "web"),
				applyStep("deploy-db", "db", func(s *appfile.WorkflowStep) { s.DependsOn = []string{"deploy-web"} }),
			}},
			comps: []Component{db, web}, wantStatus: wfv1alpha1.WorkflowStateFailed,
			step: "deploy-web", phase: "failed", message: late, applied: map[string]int{"web": 0}},
		{reason: "StepByStep, the dependent's step first: it fails at once",
			wf: &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
				applyStep("deploy-web", "web"),
				applyStep("deploy-db", "db"),
			}},
			comps: []Component{db, web}, wantStatus: wfv1alpha1.WorkflowStateFailed,
			step: "deploy-web", phase: "failed", message: late, applied: map[string]int{"web": 0, "db": 0}},
		{reason: "StepByStep, the dependent in a step group before the dependency's step: it fails at once",
			wf: &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
				{Name: "group", Type: "step-group", SubSteps: []*appfile.WorkflowStep{applyStep("deploy-web", "web")}},
				applyStep("deploy-db", "db"),
			}},
			comps: []Component{db, web}, wantStatus: wfv1alpha1.WorkflowStateFailed, applied: map[string]int{"web": 0}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			h := newHarness(t, tc.wf, Options{MaxStepRetries: 3}, tc.comps...)
			if tc.placed != nil {
				h.run.Deployer = &placedDeployer{fakeDeployer: h.deployer, placed: tc.placed}
			}
			if tc.setup != nil {
				tc.setup(h)
			}
			res := h.until(20*time.Second, finished)
			assert.Equal(t, tc.wantStatus, res.Status.Status, "%+v", res.Status)
			if tc.step != "" {
				s := stepStatus(t, res, tc.step)
				assert.Equal(t, tc.phase, string(s.Phase), "%+v", s)
				if tc.message != "" {
					assert.Equal(t, tc.message, s.Message)
				}
			}
			for c, n := range tc.applied {
				assert.Equal(t, n, h.deployer.count(c), "applies of %s", c)
			}
		})
	}
}
