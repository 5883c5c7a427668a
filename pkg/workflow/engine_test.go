package workflow

import (
	"context"
	"errors"
	"fmt"
	"github.com/oamflow/oamflow/pkg/errclass"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	oamv1alpha1 "github.com/kubevela/pkg/apis/oam/v1alpha1"
	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	wftypes "github.com/kubevela/workflow/pkg/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/render"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

// The API server is started on first use, so the unit tests of this
// package run without the Kubernetes binaries.
var (
	envOnce sync.Once
	testEnv *envtest.Environment
	envErr  error
)

const testMaxRetries = 3

func env(t *testing.T) *envtest.Environment {
	t.Helper()
	if os.Getenv(envtest.SkipEnv) == "1" {
		t.Skipf("%s=1", envtest.SkipEnv)
	}
	envOnce.Do(func() {
		scheme := runtime.NewScheme()
		if envErr = clientgoscheme.AddToScheme(scheme); envErr != nil {
			return
		}
		if envErr = v1beta1.AddToScheme(scheme); envErr != nil {
			return
		}
		testEnv, envErr = envtest.Start(envtest.WithCRDs("charts/oamflow/crds"), envtest.WithScheme(scheme))
		if envErr == nil {
			SetupLibrary(testEnv.Client, testMaxRetries)
		}
	})
	require.NoError(t, envErr)
	return testEnv
}

func TestMain(m *testing.M) {
	// kubevela/workflow logs every step error through klog; keep test
	// output readable.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	code := m.Run()
	if testEnv != nil {
		if err := testEnv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

// fakeDeployer renders each component as a ConfigMap named
// "<app>-<component>" whose data are the properties, applies it to the API
// server and judges health with healthy (nil: healthy).
type fakeDeployer struct {
	c          client.Client
	app        string
	ns         string
	components map[string]Component
	healthy    func(comp string) bool
	applyErr   func(comp string) error
	renderErr  func(comp string) error

	mu      sync.Mutex
	applied map[string]int
	objects []string
}

func newFakeDeployer(c client.Client, app *v1beta1.Application, comps ...Component) *fakeDeployer {
	d := &fakeDeployer{c: c, app: app.Name, ns: app.Namespace, components: map[string]Component{}, applied: map[string]int{}}
	for _, comp := range comps {
		d.components[comp.Name] = comp
	}
	return d
}

func (d *fakeDeployer) count(comp string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.applied[comp]
}

// ComponentNames implements ComponentLister.
func (d *fakeDeployer) ComponentNames() []string {
	names := make([]string, 0, len(d.components))
	for n := range d.components {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (d *fakeDeployer) Component(name string) (Component, bool) {
	c, ok := d.components[name]
	return c, ok
}

func (d *fakeDeployer) Render(_ context.Context, req ComponentRequest) ([]render.Resource, error) {
	if d.renderErr != nil {
		if err := d.renderErr(req.Name); err != nil {
			return nil, err
		}
	}
	data := map[string]any{}
	for k, v := range req.Properties {
		data[k] = fmt.Sprint(v)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": d.app + "-" + req.Name, "namespace": d.ns,
			"labels": map[string]any{v1beta1.LabelAppComponent: req.Name}},
		"data": data,
	}}
	return []render.Resource{{Component: req.Name, Namespace: d.ns, Object: obj}}, nil
}

func (d *fakeDeployer) Apply(ctx context.Context, _ string, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		comp := o.GetLabels()[v1beta1.LabelAppComponent]
		if d.applyErr != nil {
			if err := d.applyErr(comp); err != nil {
				return err
			}
		}
		cp := o.DeepCopy()
		cp.SetManagedFields(nil)
		if err := d.c.Patch(ctx, cp, client.Apply, client.FieldOwner("test"), client.ForceOwnership); err != nil {
			return err
		}
		d.mu.Lock()
		d.applied[comp]++
		d.objects = append(d.objects, o.GetKind()+"/"+o.GetName())
		d.mu.Unlock()
	}
	return nil
}

func (d *fakeDeployer) Health(ctx context.Context, req ComponentRequest, res []render.Resource) (ComponentHealth, error) {
	h := ComponentHealth{Status: common.ApplicationComponentStatus{Name: req.Name, Namespace: d.ns, Healthy: true}}
	if d.healthy != nil && !d.healthy(req.Name) {
		h.Status.Healthy = false
		h.Status.Message = "not ready"
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(res[0].Object.GroupVersionKind())
	if err := d.c.Get(ctx, client.ObjectKeyFromObject(res[0].Object), live); err != nil {
		return h, err
	}
	h.Output = live.Object
	return h, nil
}

type harness struct {
	t        *testing.T
	engine   *Engine
	app      *v1beta1.Application
	deployer *fakeDeployer
	run      Run
}

var appSeq int

// newHarness creates Application name in the API server and a run of wf
// deploying comps.
func newHarness(t *testing.T, wf *appfile.Workflow, opts Options, comps ...Component) *harness {
	t.Helper()
	e := env(t)
	ctx := context.Background()
	if opts.HTTP == nil {
		opts.HTTP = allowLoopback(t)
	}
	appSeq++
	app := &v1beta1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("wf-%d", appSeq), Namespace: "default"},
		Spec:       v1beta1.ApplicationSpec{Components: []common.ApplicationComponent{{Name: "x", Type: "x"}}},
	}
	require.NoError(t, e.Client.Create(ctx, app))
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), app) })
	tmpls := stepTemplates(t)
	if opts.Builtins == nil {
		// As the controller runs it: plain apply-component steps of the
		// built-in template run natively (native.go).
		opts.Builtins = tmpls
	}
	engine, err := NewEngine(e.Client, opts)
	require.NoError(t, err)
	plan, err := PlanOf(wf, opts.DefaultStepTimeout)
	require.NoError(t, err)
	d := newFakeDeployer(e.Client, app, comps...)
	return &harness{t: t, engine: engine, app: app, deployer: d, run: Run{
		App: app, Revision: app.Name + "-v1", Plan: plan, Deployer: d,
		Templates: func(_ context.Context, typ string) (string, error) { return tmpls[typ], nil },
		Context:   map[string]any{"appName": app.Name, "appRevision": app.Name + "-v1"},
	}}
}

// pass runs one Execute and keeps its status for the next.
func (h *harness) pass() Result {
	h.t.Helper()
	res, err := h.engine.Execute(context.Background(), h.run)
	require.NoError(h.t, err)
	st := res.Status
	h.run.Status = &st
	// As the controller keeps them (reset when a run starts).
	h.run.App.Status.Services = MergeServices(h.run.App.Status.Services, res.Services)
	return res
}

// until runs passes (sleeping as asked, at most maxWait each) until done
// says stop or the deadline passes.
func (h *harness) until(deadline time.Duration, done func(Result) bool) Result {
	h.t.Helper()
	end := time.Now().Add(deadline)
	for {
		res := h.pass()
		if done(res) {
			return res
		}
		if time.Now().After(end) {
			h.t.Fatalf("workflow did not get there within %s; status: %+v", deadline, res.Status)
		}
		wait := res.RequeueAfter
		if wait <= 0 || wait > 500*time.Millisecond {
			wait = 500 * time.Millisecond
		}
		time.Sleep(wait)
	}
}

func finished(r Result) bool { return r.Status.Finished }

func phaseOf(st common.WorkflowStatus) map[string]wfv1alpha1.WorkflowStepPhase {
	return phases(&st)
}

func applyStep(name, comp string, mods ...func(*appfile.WorkflowStep)) *appfile.WorkflowStep {
	s := &appfile.WorkflowStep{Name: name, Type: "apply-component", Properties: map[string]any{"component": comp}}
	for _, m := range mods {
		m(s)
	}
	return s
}

func comps(names ...string) []Component {
	var out []Component
	for _, n := range names {
		out = append(out, Component{Name: n, Properties: map[string]any{"image": n}})
	}
	return out
}

func TestDefaultWorkflowDAG(t *testing.T) {
	wf := &appfile.Workflow{Mode: "DAG", SubStepMode: "DAG", Default: true, Steps: []*appfile.WorkflowStep{
		applyStep("db", "db"),
		applyStep("web", "web", func(s *appfile.WorkflowStep) { s.DependsOn = []string{"db"} }),
	}}
	h := newHarness(t, wf, Options{DefaultStepTimeout: time.Minute}, comps("db", "web")...)
	dbReady := false
	h.deployer.healthy = func(c string) bool { return c != "db" || dbReady }

	res := h.pass()
	assert.Equal(t, wfv1alpha1.WorkflowStateExecuting, res.Status.Status)
	assert.Equal(t, map[string]wfv1alpha1.WorkflowStepPhase{"db": running, "web": pending}, phaseOf(res.Status))
	assert.Equal(t, 0, h.deployer.count("web"), "web waits for db")
	require.Len(t, res.Services, 1)
	assert.False(t, res.Services[0].Healthy)
	assert.Equal(t, "DAG-DAG", res.Status.Mode)
	assert.Equal(t, h.app.Name+"-v1", res.Status.AppRevision)
	assert.Positive(t, res.RequeueAfter)

	dbReady = true
	res = h.until(30*time.Second, finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status)
	assert.Equal(t, map[string]wfv1alpha1.WorkflowStepPhase{"db": succeeded, "web": succeeded}, phaseOf(res.Status))
	assert.False(t, res.Status.EndTime.IsZero())
	assert.Zero(t, res.RequeueAfter)

	// A finished run is left alone.
	before := h.deployer.count("web")
	h.pass()
	assert.Equal(t, before, h.deployer.count("web"))

	err := env(t).Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: ContextName(h.app.Name)}, &corev1.ConfigMap{})
	assert.True(t, apierrors.IsNotFound(err), "steps that keep nothing write no workflow context: %v", err)
}

func TestSuspendWithDurationResumesByItself(t *testing.T) {
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		{Name: "pause", Type: "suspend", Properties: map[string]any{"duration": "2s"}},
		applyStep("deploy", "web"),
	}}
	h := newHarness(t, wf, Options{}, comps("web")...)
	start := time.Now()
	res := h.pass()
	assert.Equal(t, wfv1alpha1.WorkflowStateSuspending, res.Status.Status)
	assert.Equal(t, suspending, phaseOf(res.Status)["pause"])
	assert.Positive(t, res.RequeueAfter, "a timed suspend asks to come back")
	assert.LessOrEqual(t, res.RequeueAfter, 2*time.Second)
	assert.Equal(t, 0, h.deployer.count("web"))

	res = h.until(20*time.Second, finished)
	// The resume time is stored in RFC 3339 (whole seconds), so the pause
	// can be up to a second shorter than asked.
	assert.GreaterOrEqual(t, time.Since(start), time.Second)
	assert.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status)
	assert.Equal(t, 1, h.deployer.count("web"))
}

func TestManualSuspendResume(t *testing.T) {
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		applyStep("first", "a"),
		{Name: "approve", Type: "suspend"},
		applyStep("second", "b"),
	}}
	h := newHarness(t, wf, Options{}, comps("a", "b")...)
	res := h.pass()
	assert.Equal(t, wfv1alpha1.WorkflowStateSuspending, res.Status.Status)
	assert.True(t, res.Status.Suspend)
	assert.Zero(t, res.RequeueAfter, "a manual suspend waits for a person")
	for i := 0; i < 2; i++ {
		res = h.pass()
		assert.Equal(t, wfv1alpha1.WorkflowStateSuspending, res.Status.Status)
	}
	assert.Equal(t, 0, h.deployer.count("b"))

	require.NoError(t, Resume(h.run.Status))
	res = h.until(20*time.Second, finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status)
	assert.Equal(t, map[string]wfv1alpha1.WorkflowStepPhase{"first": succeeded, "approve": succeeded, "second": succeeded}, phaseOf(res.Status))
	assert.Equal(t, 1, h.deployer.count("a"), "succeeded steps do not run again")
	assert.Equal(t, 1, h.deployer.count("b"))
}

func TestSuspendWhileRunningAndTerminate(t *testing.T) {
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		applyStep("first", "a"),
		applyStep("second", "b"),
	}}
	h := newHarness(t, wf, Options{}, comps("a", "b")...)
	h.deployer.healthy = func(c string) bool { return c != "a" }
	res := h.pass()
	assert.Equal(t, running, phaseOf(res.Status)["first"])

	require.NoError(t, Suspend(h.run.Status))
	res = h.pass()
	assert.Equal(t, wfv1alpha1.WorkflowStateSuspending, res.Status.Status)

	require.NoError(t, Terminate(h.run.Status))
	res = h.pass()
	assert.True(t, res.Status.Finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateTerminated, res.Status.Status)
	assert.Equal(t, 0, h.deployer.count("b"), "nothing runs after terminate")
}

func TestStepGroupIfFalseIsSkipped(t *testing.T) {
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		{Name: "group", Type: "step-group", If: "false", SubSteps: []*appfile.WorkflowStep{applyStep("g1", "a"), applyStep("g2", "b")}},
		applyStep("after", "c"),
	}}
	h := newHarness(t, wf, Options{}, comps("a", "b", "c")...)
	res := h.until(20*time.Second, finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status)
	ph := phaseOf(res.Status)
	assert.Equal(t, skipped, ph["group"])
	for _, s := range []string{"group/g1", "group/g2"} {
		if p, ok := ph[s]; ok {
			assert.Equal(t, skipped, p, s)
		}
	}
	assert.Equal(t, succeeded, ph["after"])
	assert.Equal(t, 0, h.deployer.count("a"), "no side effects in a skipped group")
	assert.Equal(t, 0, h.deployer.count("b"))
	assert.Equal(t, 1, h.deployer.count("c"))
}

func TestFailedDependencySkipsDependents(t *testing.T) {
	wf := &appfile.Workflow{Mode: "DAG", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		applyStep("broken", "bad"),
		applyStep("dependent", "b", func(s *appfile.WorkflowStep) { s.DependsOn = []string{"broken"} }),
		applyStep("independent", "c"),
	}}
	h := newHarness(t, wf, Options{}, comps("bad", "b", "c")...)
	h.deployer.renderErr = func(c string) error {
		if c == "bad" {
			return errors.New(`spec.components[0].properties.image: conflicting values "x" and int`)
		}
		return nil
	}
	res := h.until(20*time.Second, finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status)
	ph := phaseOf(res.Status)
	assert.Equal(t, failed, ph["broken"])
	assert.Equal(t, skipped, ph["dependent"])
	assert.Equal(t, succeeded, ph["independent"])
	assert.Equal(t, 0, h.deployer.count("bad"), "nothing applied from a component whose render failed")
	assert.Equal(t, 0, h.deployer.count("b"))
	assert.Contains(t, res.Status.Message, "broken")
	assert.Contains(t, res.Status.Message, "properties.image")
}

func TestStepOutputsFeedInputs(t *testing.T) {
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		applyStep("producer", "a", func(s *appfile.WorkflowStep) {
			s.Outputs = oamv1alpha1.StepOutputs{{Name: "img", ValueFrom: "output.data.image"}}
		}),
		applyStep("consumer", "b", func(s *appfile.WorkflowStep) {
			s.Inputs = oamv1alpha1.StepInputs{{From: "img", ParameterKey: "properties.upstream"}}
		}),
	}}
	h := newHarness(t, wf, Options{}, comps("a", "b")...)
	res := h.until(20*time.Second, finished)
	require.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, "%+v", res.Status)
	cm := &corev1.ConfigMap{}
	require.NoError(t, env(t).Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: h.app.Name + "-b"}, cm))
	assert.Equal(t, "a", cm.Data["upstream"], "the step input reached the component's properties")

	wfc := &corev1.ConfigMap{}
	require.NoError(t, env(t).Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: ContextName(h.app.Name)}, wfc),
		"the workflow context keeps the output")
	assert.Contains(t, wfc.Data["vars"], "img")
	require.Len(t, wfc.OwnerReferences, 1, "the workflow context belongs to the Application")
	assert.Equal(t, h.app.UID, wfc.OwnerReferences[0].UID)
}

func TestComponentOutputsFeedComponentInputs(t *testing.T) {
	wf := &appfile.Workflow{Mode: "DAG", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		applyStep("db", "db"),
		applyStep("web", "web"),
	}}
	db := Component{Name: "db", Properties: map[string]any{"image": "postgres"},
		Outputs: oamv1alpha1.StepOutputs{{Name: "dbImage", ValueFrom: "output.data.image"}}}
	web := Component{Name: "web", Properties: map[string]any{"image": "nginx"},
		Inputs: oamv1alpha1.StepInputs{{From: "dbImage", ParameterKey: "env.DB"}}}
	h := newHarness(t, wf, Options{}, db, web)
	res := h.until(20*time.Second, finished)
	require.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, "%+v", res.Status)
	cm := &corev1.ConfigMap{}
	require.NoError(t, env(t).Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: h.app.Name + "-web"}, cm))
	assert.Equal(t, "map[DB:postgres]", cm.Data["env"])
}

func TestRestartResumesWithoutRerunningSucceededSteps(t *testing.T) {
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		applyStep("first", "a", func(s *appfile.WorkflowStep) {
			s.Outputs = oamv1alpha1.StepOutputs{{Name: "img", ValueFrom: "output.data.image"}}
		}),
		{Name: "approve", Type: "suspend"},
		applyStep("second", "b", func(s *appfile.WorkflowStep) {
			s.Inputs = oamv1alpha1.StepInputs{{From: "img", ParameterKey: "properties.upstream"}}
		}),
	}}
	h := newHarness(t, wf, Options{}, comps("a", "b")...)
	res := h.pass()
	require.Equal(t, wfv1alpha1.WorkflowStateSuspending, res.Status.Status)
	require.Equal(t, 1, h.deployer.count("a"))

	// The controller restarts: new engine, no in-memory state; only the
	// stored status and the context ConfigMap survive.
	Forget(h.app)
	engine, err := NewEngine(env(t).Client, Options{})
	require.NoError(t, err)
	h.engine = engine
	stored := h.run.Status.DeepCopy()
	h.run.Status = stored
	require.NoError(t, Resume(h.run.Status))
	res = h.until(20*time.Second, finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status)
	assert.Equal(t, 1, h.deployer.count("a"), "the succeeded step did not run again")
	assert.Equal(t, 1, h.deployer.count("b"))
	cm := &corev1.ConfigMap{}
	require.NoError(t, env(t).Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: h.app.Name + "-b"}, cm))
	assert.Equal(t, "a", cm.Data["upstream"], "outputs survive the restart")
}

func TestDefaultStepTimeout(t *testing.T) {
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{applyStep("never", "a")}}
	h := newHarness(t, wf, Options{DefaultStepTimeout: time.Second}, comps("a")...)
	h.deployer.healthy = func(string) bool { return false }
	res := h.until(20*time.Second, finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status)
	assert.Equal(t, wftypes.StatusReasonTimeout, res.Status.Steps[0].Reason)
}

func TestRetryLimit(t *testing.T) {
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{applyStep("flaky", "a")}}
	h := newHarness(t, wf, Options{}, comps("a")...)
	h.deployer.applyErr = func(string) error { return errors.New("connection refused") }
	passes := 0
	res := h.until(60*time.Second, func(r Result) bool { passes++; return finished(r) })
	assert.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status)
	assert.Equal(t, wftypes.StatusReasonFailedAfterRetries, res.Status.Steps[0].Reason)
	assert.Contains(t, res.Status.Steps[0].Message, "connection refused")
	assert.LessOrEqual(t, passes, testMaxRetries+2)
}

// TestHelmReleaseInProgressWaits: a component whose Helm release is held
// by another operation (a pending-* left by a controller killed mid-install,
// found by the fault suite) waits for it, however many passes that takes,
// instead of spending the step's retries and failing the workflow for good.
func TestHelmReleaseInProgressWaits(t *testing.T) {
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{applyStep("chart", "a")}}
	h := newHarness(t, wf, Options{}, comps("a")...)
	var held atomic.Bool
	held.Store(true)
	h.deployer.applyErr = func(string) error {
		if held.Load() {
			return fmt.Errorf("HelmRelease default/a: release default/a is pending-install (revision 1, 5s old; recovery after 5m0s): %w", helmspec.ErrOperationInProgress)
		}
		return nil
	}
	for range testMaxRetries + 3 {
		res := h.pass()
		require.False(t, res.Status.Finished, "the step waits: %s", res.Status.Message)
	}
	held.Store(false)
	res := h.until(30*time.Second, finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status)
}

func TestTerminalApplyErrorFailsAtOnce(t *testing.T) {
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{applyStep("owned", "a")}}
	h := newHarness(t, wf, Options{}, comps("a")...)
	h.deployer.applyErr = func(string) error {
		return errclass.Terminal(errors.New("ConfigMap default/x belongs to Application default/other"))
	}
	res := h.pass()
	assert.True(t, res.Status.Finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status)
	assert.Contains(t, res.Status.Message, "belongs to Application default/other")
}

func TestInputNobodyProducesFails(t *testing.T) {
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		applyStep("consumer", "a", func(s *appfile.WorkflowStep) {
			s.Inputs = oamv1alpha1.StepInputs{{From: "nobody", ParameterKey: "properties.x"}}
		}),
	}}
	h := newHarness(t, wf, Options{}, comps("a")...)
	res := h.until(10*time.Second, finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status)
	assert.Contains(t, res.Status.Message, "consumer")
	assert.Equal(t, 0, h.deployer.count("a"))
}

func TestApplyAndReadObject(t *testing.T) {
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		{Name: "create", Type: "apply-object", Properties: map[string]any{"value": map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "made-by-step"}, "data": map[string]any{"k": "v"},
		}}},
		{Name: "read", Type: "read-object", Properties: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "made-by-step"},
			Outputs: oamv1alpha1.StepOutputs{{Name: "k", ValueFrom: "output.value.data.k"}}},
		{Name: "say", Type: "print-message-in-status", Properties: map[string]any{"message": "hello"}},
	}}
	h := newHarness(t, wf, Options{})
	res := h.until(20*time.Second, finished)
	require.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, "%+v", res.Status)
	assert.Contains(t, h.deployer.objects, "ConfigMap/made-by-step", "apply-object goes through the Deployer (tracked)")
	assert.Equal(t, "hello", res.Status.Steps[2].Message)
}

func TestRequestAndWebhookSteps(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+string(b))
		mu.Unlock()
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"greeting":"hi"}`))
	}))
	defer srv.Close()
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		{Name: "call", Type: "request", Properties: map[string]any{"url": srv.URL + "/api", "method": "POST", "body": map[string]any{"a": 1}},
			Outputs: oamv1alpha1.StepOutputs{{Name: "greeting", ValueFrom: "response.greeting"}}},
		{Name: "say", Type: "print-message-in-status", Properties: map[string]any{"message": "?"},
			Inputs: oamv1alpha1.StepInputs{{From: "greeting", ParameterKey: "message"}}},
		{Name: "notify", Type: "webhook", Properties: map[string]any{"url": map[string]any{"value": srv.URL + "/hook"}, "data": map[string]any{"done": true}}},
	}}
	h := newHarness(t, wf, Options{})
	res := h.until(20*time.Second, finished)
	require.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, "%+v", res.Status)
	assert.Equal(t, "hi", res.Status.Steps[1].Message)
	mu.Lock()
	assert.Contains(t, got, `POST /api {"a":1}`)
	assert.Contains(t, got, `POST /hook {"done":true}`)
	mu.Unlock()

	failing := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		{Name: "call", Type: "request", Properties: map[string]any{"url": srv.URL + "/fail"}},
	}}
	h = newHarness(t, failing, Options{})
	res = h.until(20*time.Second, finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status)
	assert.Contains(t, res.Status.Message, "answered 500")
}

func TestDependsOnApp(t *testing.T) {
	e := env(t)
	ctx := context.Background()
	other := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: "upstream", Namespace: "default"},
		Spec: v1beta1.ApplicationSpec{Components: []common.ApplicationComponent{{Name: "x", Type: "x"}}}}
	require.NoError(t, e.Client.Create(ctx, other))
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		{Name: "wait-upstream", Type: "depends-on-app", Properties: map[string]any{"name": "upstream"}},
	}}
	h := newHarness(t, wf, Options{})
	res := h.pass()
	assert.Equal(t, running, phaseOf(res.Status)["wait-upstream"], "upstream is not running yet")
	other.Status.Phase = common.ApplicationRunning
	require.NoError(t, e.Client.Status().Update(ctx, other))
	res = h.until(20*time.Second, finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status)

	missing := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		{Name: "wait-ghost", Type: "depends-on-app", Properties: map[string]any{"name": "ghost"}},
	}}
	h = newHarness(t, missing, Options{})
	res = h.until(20*time.Second, finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status)
	assert.Contains(t, res.Status.Message, "no ConfigMap default/ghost")
}

func TestIfAlwaysAndStatusConditions(t *testing.T) {
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		applyStep("broken", "bad"),
		applyStep("next", "b"),
		{Name: "cleanup", Type: "print-message-in-status", If: "always", Properties: map[string]any{"message": "cleaned"}},
		{Name: "on-failure", Type: "print-message-in-status", If: "status.broken.failed", Properties: map[string]any{"message": "alerted"}},
		{Name: "on-success", Type: "print-message-in-status", If: "status.broken.succeeded", Properties: map[string]any{"message": "never"}},
	}}
	h := newHarness(t, wf, Options{}, comps("bad", "b")...)
	h.deployer.renderErr = func(c string) error {
		if c == "bad" {
			return errors.New("boom")
		}
		return nil
	}
	res := h.until(20*time.Second, finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status)
	assert.Equal(t, map[string]wfv1alpha1.WorkflowStepPhase{
		"broken": failed, "next": skipped, "cleanup": succeeded, "on-failure": succeeded, "on-success": skipped,
	}, phaseOf(res.Status))
	assert.Equal(t, 0, h.deployer.count("b"))
}

func TestRetryLimitIsPerEngine(t *testing.T) {
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{applyStep("flaky", "a")}}
	passesUntilFailed := func(limit int) int {
		h := newHarness(t, wf, Options{MaxStepRetries: limit}, comps("a")...)
		h.deployer.applyErr = func(string) error { return errors.New("connection refused") }
		passes := 0
		res := h.until(90*time.Second, func(r Result) bool { passes++; return finished(r) })
		assert.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status)
		assert.Equal(t, wftypes.StatusReasonFailedAfterRetries, res.Status.Steps[0].Reason)
		return passes
	}
	// Two engines in one process, each with its own limit.
	short := passesUntilFailed(2)
	long := passesUntilFailed(5)
	assert.LessOrEqual(t, short, 2+1)
	assert.GreaterOrEqual(t, long, 5)
	assert.LessOrEqual(t, long, 5+1)
}

func TestEnginesUseTheirOwnClient(t *testing.T) {
	// The library's workflow context store is process-wide; each Engine's
	// runs must still write through the Engine's own client (two managers
	// in one process, each against its own cluster).
	e := env(t)
	var creates [2]atomic.Int32
	engines := make([]*Engine, 2)
	base, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	require.NoError(t, err)
	for i := range engines {
		c := interceptor.NewClient(base, interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if _, ok := obj.(*corev1.ConfigMap); ok {
					creates[i].Add(1)
				}
				return c.Create(ctx, obj, opts...)
			},
		})
		var err error
		engines[i], err = NewEngine(c, Options{})
		require.NoError(t, err)
	}
	// The step's output is kept in the context, so the context is written.
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{applyStep("one", "a", func(s *appfile.WorkflowStep) {
		s.Outputs = oamv1alpha1.StepOutputs{{Name: "img", ValueFrom: "output.data.image"}}
	})}}
	for i, eng := range engines {
		h := newHarness(t, wf, Options{}, comps("a")...)
		h.engine = eng
		h.pass()
		assert.Equal(t, int32(1), creates[i].Load(), "engine %d created its context ConfigMap through its own client", i)
		if i == 0 {
			assert.Zero(t, creates[1].Load(), "engine 0 did not use engine 1's client")
		}
	}
}
