package workflow

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	oamv1alpha1 "github.com/kubevela/pkg/apis/oam/v1alpha1"
	monitorContext "github.com/kubevela/pkg/monitor/context"
	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	wfContext "github.com/kubevela/workflow/pkg/context"
	"github.com/kubevela/workflow/pkg/cue/process"
	wftypes "github.com/kubevela/workflow/pkg/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/errclass"
)

// TestNativeStepsAsCUE: apply-component steps run without CUE (native.go)
// leave, pass by pass, the same workflow status and the same applies as
// kubevela/workflow's CUE task runner running the built-in template —
// waiting for health and for a dependency, retrying a failing apply until
// it fails for good, failing at once on a terminal apply error or a
// render error, skipping what depends on a failed step — step IDs and
// times aside.
func TestNativeStepsAsCUE(t *testing.T) {
	dag := func(steps ...*appfile.WorkflowStep) *appfile.Workflow {
		return &appfile.Workflow{Mode: "DAG", SubStepMode: "DAG", Default: true, Steps: steps}
	}
	after := func(dep string) func(*appfile.WorkflowStep) {
		return func(s *appfile.WorkflowStep) { s.DependsOn = []string{dep} }
	}
	steps := func(mode string, steps ...*appfile.WorkflowStep) *appfile.Workflow {
		return &appfile.Workflow{Mode: mode, SubStepMode: "DAG", Steps: steps}
	}
	cases := []struct {
		reason string
		wf     *appfile.Workflow
		comps  []Component
		setup  func(d *fakeDeployer, pass *int)
		opts   Options
		// between is the time between passes (0: none).
		between time.Duration
	}{
		{"a dependency unhealthy for two passes, then healthy",
			dag(applyStep("db", "db"), applyStep("web", "web", after("db"))), comps("db", "web"),
			func(d *fakeDeployer, pass *int) { d.healthy = func(c string) bool { return c != "db" || *pass > 2 } }, Options{}, 0},
		{"a retryable apply error until the retries are spent",
			dag(applyStep("flaky", "a")), comps("a"),
			func(d *fakeDeployer, _ *int) {
				d.applyErr = func(string) error { return errors.New("connection refused") }
			}, Options{}, 0},
		{"a retryable apply error once, then success",
			dag(applyStep("flaky", "a")), comps("a"),
			func(d *fakeDeployer, pass *int) {
				d.applyErr = func(string) error {
					if *pass == 1 {
						return errors.New("connection refused")
					}
					return nil
				}
			}, Options{}, 0},
		{"a terminal apply error fails at once",
			dag(applyStep("owned", "a")), comps("a"),
			func(d *fakeDeployer, _ *int) {
				d.applyErr = func(string) error {
					return errclass.Terminal(errors.New("ConfigMap default/x belongs to Application default/other"))
				}
			}, Options{}, 0},
		{"a render error fails the step and skips its dependents",
			dag(applyStep("broken", "bad"), applyStep("dependent", "b", after("broken")), applyStep("independent", "c")), comps("bad", "b", "c"),
			func(d *fakeDeployer, _ *int) {
				d.renderErr = func(c string) error {
					if c == "bad" {
						return errors.New(`spec.components[0].properties.image: conflicting values "x" and int`)
					}
					return nil
				}
			}, Options{}, 0},
		{"a step naming a component the Application does not have",
			dag(applyStep("ghost", "nobody")), comps("a"), func(*fakeDeployer, *int) {}, Options{}, 0},
		{reason: "step by step: a terminal failure skips the next step",
			wf: steps("StepByStep", applyStep("first", "a"), applyStep("second", "b")), comps: comps("a", "b"),
			setup: func(d *fakeDeployer, _ *int) {
				d.applyErr = func(c string) error {
					if c == "a" {
						return errclass.Terminal(errors.New("ConfigMap default/x belongs to Application default/other"))
					}
					return nil
				}
			}},
		{reason: "a step that times out while waiting for health",
			wf: steps("StepByStep", applyStep("never", "a")), comps: comps("a"),
			setup:   func(d *fakeDeployer, _ *int) { d.healthy = func(string) bool { return false } },
			opts:    Options{DefaultStepTimeout: time.Second},
			between: 1500 * time.Millisecond},
		{"cluster and namespace given",
			dag(applyStep("placed", "a", func(s *appfile.WorkflowStep) {
				s.Properties["cluster"] = "local"
				s.Properties["namespace"] = "default"
			})), comps("a"), func(*fakeDeployer, *int) {}, Options{}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			native := newHarness(t, tc.wf, tc.opts, tc.comps...)
			cue := newHarness(t, tc.wf, tc.opts, tc.comps...)
			cue.engine.cueSteps = true
			requireNative(t, native)
			var nPass, cPass int
			tc.setup(native.deployer, &nPass)
			tc.setup(cue.deployer, &cPass)
			for i := 1; i <= testMaxRetries+3; i++ {
				nPass, cPass = i, i
				n, c := native.pass(), cue.pass()
				assert.Equal(t, normalized(c), normalized(n), "pass %d", i)
				assert.Equal(t, cue.deployer.applied, native.deployer.applied, "pass %d: applies", i)
				if n.Status.Finished && c.Status.Finished {
					break
				}
				time.Sleep(tc.between)
			}
		})
	}
}

// requireNative fails unless every step of h's plan runs natively (else
// the comparison would compare the library with itself).
func requireNative(t *testing.T, h *harness) {
	t.Helper()
	inst := &wftypes.WorkflowInstance{Steps: h.run.Plan.Steps}
	runners := make([]wftypes.TaskRunner, len(inst.Steps))
	for i, st := range inst.Steps {
		runners[i] = namedRunner(st.Name)
	}
	runners = h.engine.nativeRunners(context.Background(), inst, runners, loader{src: h.run.Templates, builtins: h.engine.opts.Builtins}, nil)
	for _, r := range runners {
		_, ok := r.(*nativeApply)
		require.True(t, ok, "step %s does not run natively", r.Name())
	}
}

// normalized is r without what differs between two runs of the same
// workflow: the Applications' names, step IDs and times.
func normalized(r Result) string {
	st := r.Status.DeepCopy()
	ended := !st.EndTime.IsZero()
	st.AppRevision, st.StartTime.Time, st.EndTime.Time = "", time.Time{}, time.Time{}
	for i := range st.Steps {
		s := &st.Steps[i]
		s.ID, s.FirstExecuteTime.Time, s.LastExecuteTime.Time = "", time.Time{}, time.Time{}
	}
	return fmt.Sprintf("%+v ended:%v requeue:%v services:%+v", *st, ended, r.RequeueAfter > 0, r.Services)
}

// TestNativeRunners: which steps run natively — only apply-component steps
// of the built-in template, naming a component with nothing else but
// cluster and namespace strings.
func TestNativeRunners(t *testing.T) {
	builtin := stepTemplates(t)[StepTypeApplyComponent]
	props := func(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }
	apply := func(p string, mods ...func(*oamv1alpha1.WorkflowStep)) oamv1alpha1.WorkflowStep {
		st := oamv1alpha1.WorkflowStep{WorkflowStepBase: oamv1alpha1.WorkflowStepBase{Name: "s", Type: StepTypeApplyComponent, Properties: props(p)}}
		for _, m := range mods {
			m(&st)
		}
		return st
	}
	cases := []struct {
		reason   string
		step     oamv1alpha1.WorkflowStep
		template string
		want     bool
	}{
		{"a default workflow's step", apply(`{"component":"web"}`), builtin, true},
		{"with cluster, namespace, dependsOn and a timeout", apply(`{"component":"web","cluster":"east","namespace":"x"}`, func(s *oamv1alpha1.WorkflowStep) {
			s.DependsOn, s.Timeout = []string{"db"}, "5m"
		}), builtin, true},
		{"another template for apply-component", apply(`{"component":"web"}`), builtin + "\n// patched", false},
		{"properties merged over the component's", apply(`{"component":"web","properties":{"image":"x"}}`), builtin, false},
		{"a cluster that is not a string", apply(`{"component":"web","cluster":1}`), builtin, false},
		{"no component", apply(`{"cluster":"east"}`), builtin, false},
		{"an if", apply(`{"component":"web"}`, func(s *oamv1alpha1.WorkflowStep) { s.If = "always" }), builtin, false},
		{"inputs", apply(`{"component":"web"}`, func(s *oamv1alpha1.WorkflowStep) {
			s.Inputs = oamv1alpha1.StepInputs{{From: "x", ParameterKey: "properties.x"}}
		}), builtin, false},
		{"outputs", apply(`{"component":"web"}`, func(s *oamv1alpha1.WorkflowStep) {
			s.Outputs = oamv1alpha1.StepOutputs{{Name: "x", ValueFrom: "output.status"}}
		}), builtin, false},
		{"another step type", apply(`{"component":"web"}`, func(s *oamv1alpha1.WorkflowStep) { s.Type = "apply-object" }), builtin, false},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			e := &Engine{}
			inst := &wftypes.WorkflowInstance{Steps: []oamv1alpha1.WorkflowStep{tc.step}}
			src := func(context.Context, string) (string, error) { return tc.template, nil }
			templates := loader{src: src, builtins: map[string]string{StepTypeApplyComponent: builtin}}
			runners := e.nativeRunners(context.Background(), inst, []wftypes.TaskRunner{namedRunner("s")}, templates, nil)
			require.Len(t, runners, 1)
			_, native := runners[0].(*nativeApply)
			assert.Equal(t, tc.want, native)
		})
	}
}

// namedRunner is a TaskRunner of that name doing nothing.
type namedRunner string

func (n namedRunner) Name() string { return string(n) }
func (namedRunner) Pending(monitorContext.Context, wfContext.Context, map[string]wfv1alpha1.StepStatus) (bool, wfv1alpha1.StepStatus) {
	return false, wfv1alpha1.StepStatus{}
}
func (namedRunner) Run(wfContext.Context, *wftypes.TaskRunOptions) (wfv1alpha1.StepStatus, *wftypes.Operation, error) {
	return wfv1alpha1.StepStatus{}, nil, nil
}
func (namedRunner) FillContextData(monitorContext.Context, process.Context) wftypes.ContextDataResetter {
	return func(process.Context) {}
}
