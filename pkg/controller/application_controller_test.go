package controller

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/render"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
	"github.com/oamflow/oamflow/pkg/workflow"
)

// The API server starts on first use, so the table tests of this package
// run without the Kubernetes binaries.
var (
	envOnce sync.Once
	testEnv *envtest.Environment
	envErr  error
)

func env(t testing.TB) *envtest.Environment {
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
			workflow.SetupLibrary(testEnv.Client, 3)
		}
	})
	require.NoError(t, envErr)
	return testEnv
}

func TestMain(m *testing.M) {
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

// harness is one namespace with a Reconciler working in it.
type harness struct {
	t        testing.TB
	c        client.Client
	ns       string
	r        *Reconciler
	recorder *record.FakeRecorder
	writes   atomic.Int64
	reads    atomic.Int64
}

var nsSeq atomic.Int64

type harnessOpt struct {
	with []Option
	// stepTimeout overrides the default step timeout (1 minute).
	stepTimeout time.Duration
}

func newHarness(t testing.TB, o harnessOpt) *harness {
	t.Helper()
	e := env(t)
	ctx := context.Background()
	h := &harness{t: t, ns: fmt.Sprintf("ctrl-%d", nsSeq.Add(1))}
	require.NoError(t, e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}}))
	// Every write the reconciler makes is counted.
	count := func() { h.writes.Add(1) }
	base, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	require.NoError(t, err)
	h.c = interceptor.NewClient(base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			h.reads.Add(1)
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			h.reads.Add(1)
			return c.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			count()
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			count()
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			count()
			return c.Patch(ctx, obj, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			count()
			return c.Delete(ctx, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			count()
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			count()
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	})
	builtins, err := appfile.NewFSSource(definitions.FS, ".")
	require.NoError(t, err)
	steps, err := workflow.BuiltinTemplates(definitions.FS, "workflowsteps")
	require.NoError(t, err)
	timeout := o.stepTimeout
	if timeout == 0 {
		timeout = time.Minute
	}
	eng, err := workflow.NewEngine(h.c, workflow.Options{DefaultStepTimeout: timeout, Builtins: steps})
	require.NoError(t, err)
	h.recorder = record.NewFakeRecorder(1000)
	h.r = New(h.c, h.c, h.recorder, eng, "oamflow-system", builtins,
		Options{StepTimeout: timeout, UnhealthyRequeue: 100 * time.Millisecond}, o.with...)
	return h
}

func (h *harness) app(name, spec string) *v1beta1.Application {
	h.t.Helper()
	app := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}}
	require.NoError(h.t, yaml.UnmarshalStrict([]byte(spec), &app.Spec))
	require.NoError(h.t, env(h.t).Client.Create(context.Background(), app))
	return app
}

func (h *harness) get(app *v1beta1.Application) *v1beta1.Application {
	h.t.Helper()
	out := &v1beta1.Application{}
	require.NoError(h.t, env(h.t).Client.Get(context.Background(), client.ObjectKeyFromObject(app), out))
	return out
}

func (h *harness) reconcile(app *v1beta1.Application) (ctrl.Result, error) {
	ctx := ctrl.LoggerInto(context.Background(), ctrl.Log.WithName("test"))
	return h.r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(app)})
}

// readyDeployments plays kube-controller-manager: every Deployment of the
// namespace reports all its replicas ready.
func (h *harness) readyDeployments() {
	h.t.Helper()
	c := env(h.t).Client
	list := &appsv1.DeploymentList{}
	require.NoError(h.t, c.List(context.Background(), list, client.InNamespace(h.ns)))
	for i := range list.Items {
		d := &list.Items[i]
		r := int32(1)
		if d.Spec.Replicas != nil {
			r = *d.Spec.Replicas
		}
		if d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas == r {
			continue
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: r, UpdatedReplicas: r, ReadyReplicas: r, AvailableReplicas: r,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
			}}
		require.NoError(h.t, c.Status().Update(context.Background(), d))
	}
}

// until reconciles (making Deployments ready when ready is set) until done
// holds for the stored Application.
// deleteUntilGone deletes app and reconciles until the controller has
// released it (its finalizers removed, the object gone), for 30 s at most.
func (h *harness) deleteUntilGone(app *v1beta1.Application) {
	h.t.Helper()
	ctx := context.Background()
	require.NoError(h.t, env(h.t).Client.Delete(ctx, h.get(app)))
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := h.reconcile(app)
		require.NoError(h.t, err)
		cur := &v1beta1.Application{}
		if err := env(h.t).Client.Get(ctx, client.ObjectKeyFromObject(app), cur); apierrors.IsNotFound(err) {
			return
		}
		require.True(h.t, time.Now().Before(deadline), "the Application was not released: finalizers %v", cur.Finalizers)
		time.Sleep(200 * time.Millisecond)
	}
}

func (h *harness) until(app *v1beta1.Application, ready bool, deadline time.Duration, done func(*v1beta1.Application) bool) *v1beta1.Application {
	h.t.Helper()
	end := time.Now().Add(deadline)
	for {
		res, err := h.reconcile(app)
		require.NoError(h.t, err)
		got := h.get(app)
		if done(got) {
			return got
		}
		if time.Now().After(end) {
			h.t.Fatalf("Application did not get there within %s: phase %s, conditions %+v, workflow %+v", deadline, got.Status.Phase, got.Status.Conditions, got.Status.Workflow)
		}
		if ready {
			h.readyDeployments()
		}
		wait := res.RequeueAfter
		if wait <= 0 || wait > 300*time.Millisecond {
			wait = 300 * time.Millisecond
		}
		time.Sleep(wait)
	}
}

func phaseIs(p common.ApplicationPhase) func(*v1beta1.Application) bool {
	return func(a *v1beta1.Application) bool { return a.Status.Phase == p }
}

func (h *harness) deployment(name string) (*appsv1.Deployment, bool) {
	d := &appsv1.Deployment{}
	err := env(h.t).Client.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: name}, d)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	require.NoError(h.t, err)
	return d, true
}

func (h *harness) revisions(app string) []string {
	list := &v1beta1.ApplicationRevisionList{}
	require.NoError(h.t, env(h.t).Client.List(context.Background(), list, client.InNamespace(h.ns), client.MatchingLabels{v1beta1.LabelAppName: app}))
	var out []string
	for _, r := range list.Items {
		out = append(out, r.Name)
	}
	return out
}

func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (h *harness) update(app *v1beta1.Application, mod func(*v1beta1.Application)) {
	h.t.Helper()
	c := env(h.t).Client
	for i := 0; i < 5; i++ {
		cur := h.get(app)
		mod(cur)
		err := c.Update(context.Background(), cur)
		if err == nil {
			return
		}
		require.True(h.t, apierrors.IsConflict(err), err)
	}
	h.t.Fatal("could not update the Application")
}

func (h *harness) updateStatus(app *v1beta1.Application, mod func(*v1beta1.Application)) {
	h.t.Helper()
	cur := h.get(app)
	mod(cur)
	require.NoError(h.t, env(h.t).Client.Status().Update(context.Background(), cur))
}

const exampleApp = `
components:
- name: web
  type: webservice
  properties: {image: "nginx:1.27", port: 80}
  traits:
  - type: scaler
    properties: {replicas: 2}
  - type: expose
    properties: {port: [80]}
- name: worker
  type: worker
  dependsOn: [web]
  properties: {image: "busybox:1.36"}
`

func TestExampleAppLifecycle(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	ctx := context.Background()
	// An unrelated Deployment carrying the same labels must survive
	// everything below.
	stranger := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "stranger", Namespace: h.ns, Labels: map[string]string{v1beta1.LabelAppName: "shop", v1beta1.LabelAppComponent: "worker"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "stranger"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "stranger"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
		},
	}
	require.NoError(t, env(t).Client.Create(ctx, stranger))
	app := h.app("shop", exampleApp)

	// First pass: web is applied, the worker waits for it.
	_, err := h.reconcile(app)
	require.NoError(t, err)
	got := h.get(app)
	assert.Equal(t, common.ApplicationRunningWorkflow, got.Status.Phase)
	assert.Contains(t, got.Finalizers, Finalizer)
	require.NotNil(t, got.Status.LatestRevision)
	assert.Equal(t, "shop-v1", got.Status.LatestRevision.Name)
	_, ok := h.deployment("web")
	assert.True(t, ok, "web is applied")
	_, ok = h.deployment("worker")
	assert.False(t, ok, "the worker depends on web")
	// The default workflow applies every component: its first apply
	// recorded the worker too, before anything was written.
	rt := &v1beta1.ResourceTracker{}
	require.NoError(t, env(t).Client.Get(ctx, client.ObjectKey{Name: resourcekeeper.VersionedTrackerName("shop", h.ns, 1)}, rt))
	require.NoError(t, v1beta1.DecodeTracker(rt))
	var tracked []string
	for _, e := range rt.Spec.ManagedResources {
		tracked = append(tracked, e.Kind+"/"+e.Name)
	}
	assert.ElementsMatch(t, []string{"Deployment/web", "Service/web", "Deployment/worker"}, tracked)

	got = h.until(app, true, 60*time.Second, phaseIs(common.ApplicationRunning))
	require.NoError(t, env(t).Client.Get(ctx, client.ObjectKey{Name: rt.Name}, rt))
	assert.Equal(t, int64(1), rt.Generation, "the run wrote its tracker once: the worker's apply found its entry")
	web, _ := h.deployment("web")
	assert.Equal(t, int32(2), *web.Spec.Replicas)
	require.Len(t, got.Status.Services, 2)
	for _, s := range got.Status.Services {
		assert.True(t, s.Healthy, "%s: %s", s.Name, s.Message)
	}
	assert.NotEmpty(t, got.Status.AppliedResources)
	assert.Equal(t, got.Generation, got.Status.ObservedGeneration)
	ready := meta.FindStatusCondition(got.Status.Conditions, common.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionTrue, ready.Status)
	rev1 := &v1beta1.ApplicationRevision{}
	require.NoError(t, env(t).Client.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: "shop-v1"}, rev1))
	assert.True(t, rev1.Status.Succeeded)
	assert.Contains(t, rev1.Spec.ComponentDefinitions, "webservice", "the revision snapshots the definitions used")
	assert.Contains(t, rev1.Spec.TraitDefinitions, "scaler")
	assert.Contains(t, rev1.Spec.WorkflowStepDefinitions, "apply-component")
	evs := strings.Join(h.events(), "\n")
	assert.NotContains(t, evs, "RunningWorkflow", "a new Application's first phase is no Event")
	assert.Contains(t, evs, "Normal Running")

	// Scale: a new revision, v1 kept.
	h.update(app, func(a *v1beta1.Application) {
		a.Spec.Components[0].Traits[0].Properties.Raw = []byte(`{"replicas":3}`)
	})
	h.until(app, true, 60*time.Second, func(a *v1beta1.Application) bool {
		return a.Status.LatestRevision.Name == "shop-v2" && a.Status.Phase == common.ApplicationRunning
	})
	evs = strings.Join(h.events(), "\n")
	assert.Contains(t, evs, "Normal RunningWorkflow", "an update starting the workflow again is an Event")
	assert.Contains(t, evs, "Normal Running")
	web, _ = h.deployment("web")
	assert.Equal(t, int32(3), *web.Spec.Replicas)
	assert.ElementsMatch(t, []string{"shop-v1", "shop-v2"}, h.revisions("shop"))

	// Remove the worker: its Deployment goes, nothing else.
	h.update(app, func(a *v1beta1.Application) { a.Spec.Components = a.Spec.Components[:1] })
	h.until(app, true, 60*time.Second, func(a *v1beta1.Application) bool {
		return a.Status.LatestRevision.Name == "shop-v3" && a.Status.Phase == common.ApplicationRunning
	})
	_, ok = h.deployment("worker")
	assert.False(t, ok, "the dropped component's Deployment is collected")
	_, ok = h.deployment("web")
	assert.True(t, ok)
	_, ok = h.deployment("stranger")
	assert.True(t, ok)

	// Delete: everything it deployed goes, the stranger stays.
	h.deleteUntilGone(app)
	_, ok = h.deployment("web")
	assert.False(t, ok)
	svc := &corev1.Service{}
	assert.True(t, apierrors.IsNotFound(env(t).Client.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: "web"}, svc)))
	_, ok = h.deployment("stranger")
	assert.True(t, ok, "an unrelated Deployment with the same labels is untouched")
	assert.Empty(t, h.revisions("shop"))
	cm := &corev1.ConfigMap{}
	assert.True(t, apierrors.IsNotFound(env(t).Client.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: workflow.ContextName("shop")}, cm)))
}

// TestOrphanResourceFinalizer: an Application deleted with KubeVela's
// orphan-resource finalizer (`oamflow delete --orphan`, `vela delete
// --orphan`) leaves every object it deployed in place, without its
// ownership labels, and is released (it used to hang on the finalizer
// after its resources were deleted).
func TestOrphanResourceFinalizer(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	ctx := context.Background()
	app := h.app("kept", exampleApp)
	h.until(app, true, 60*time.Second, phaseIs(common.ApplicationRunning))

	h.update(app, func(a *v1beta1.Application) {
		a.Finalizers = append(a.Finalizers, v1beta1.FinalizerOrphanResource)
	})
	h.deleteUntilGone(app)
	objs := []client.Object{&appsv1.Deployment{}, &appsv1.Deployment{}, &corev1.Service{}}
	for i, name := range []string{"web", "worker", "web"} {
		obj := objs[i]
		require.NoError(t, env(t).Client.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: name}, obj), "%T %s is kept", obj, name)
		assert.Nil(t, obj.GetDeletionTimestamp(), "%T %s", obj, name)
		for _, l := range []string{v1beta1.LabelAppName, v1beta1.LabelAppNamespace, v1beta1.LabelAppComponent, v1beta1.LabelAppRevision} {
			assert.NotContains(t, obj.GetLabels(), l, "%T %s", obj, name)
		}
	}
	var rts v1beta1.ResourceTrackerList
	require.NoError(t, env(t).Client.List(ctx, &rts, client.MatchingLabels{v1beta1.LabelAppName: "kept", v1beta1.LabelAppNamespace: h.ns}))
	assert.Empty(t, rts.Items)
	assert.Empty(t, h.revisions("kept"))
}

func TestNoOpReconcileWritesNothing(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	app := h.app("quiet", `
components:
- name: web
  type: webservice
  properties: {image: "nginx:1.27"}
  traits:
  - type: scaler
    properties: {replicas: 1}
`)
	h.until(app, true, 60*time.Second, phaseIs(common.ApplicationRunning))
	// Let the health settle, then count.
	_, err := h.reconcile(app)
	require.NoError(t, err)
	h.writes.Store(0)
	for i := 0; i < 3; i++ {
		_, err := h.reconcile(app)
		require.NoError(t, err)
	}
	assert.Zero(t, h.writes.Load(), "a no-op reconcile of a healthy app writes nothing")
	assert.Equal(t, common.ApplicationRunning, h.get(app).Status.Phase)
}

func TestHealthFlips(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	app := h.app("flip", `
components:
- name: web
  type: webservice
  properties: {image: "nginx:1.27"}
`)
	h.until(app, true, 60*time.Second, phaseIs(common.ApplicationRunning))
	d, _ := h.deployment("web")
	d.Status.ReadyReplicas, d.Status.AvailableReplicas = 0, 0
	require.NoError(t, env(t).Client.Status().Update(context.Background(), d))
	got := h.until(app, false, 10*time.Second, phaseIs(common.ApplicationUnhealthy))
	ready := meta.FindStatusCondition(got.Status.Conditions, common.ConditionReady)
	assert.Equal(t, common.ReasonUnhealthy, ready.Reason)
	assert.Contains(t, ready.Message, "web")
	assert.Contains(t, strings.Join(h.events(), "\n"), "Warning Unhealthy")
	h.until(app, true, 10*time.Second, phaseIs(common.ApplicationRunning))
}

func TestInvalidApplicationFailsWithFieldPath(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	app := h.app("bad", `
components:
- name: web
  type: no-such-type
  properties: {image: "nginx"}
- name: api
  type: webservice
  properties: {image: 42}
`)
	res, err := h.reconcile(app)
	require.NoError(t, err, "an invalid Application is not retried")
	assert.Zero(t, res.RequeueAfter)
	got := h.get(app)
	assert.Equal(t, common.ApplicationWorkflowFailed, got.Status.Phase)
	parsed := meta.FindStatusCondition(got.Status.Conditions, common.ConditionParsed)
	require.NotNil(t, parsed)
	assert.Equal(t, common.ReasonInvalidApplication, parsed.Reason)
	assert.Contains(t, parsed.Message, "spec.components[0].type")
	assert.Contains(t, parsed.Message, "spec.components[1].properties.image")
	assert.Contains(t, strings.Join(h.events(), "\n"), "Warning WorkflowFailed")
	_, ok := h.deployment("api")
	assert.False(t, ok, "nothing is applied")
	assert.Empty(t, h.revisions("bad"))

	// Fixing it deploys.
	h.update(app, func(a *v1beta1.Application) {
		a.Spec.Components = a.Spec.Components[1:]
		a.Spec.Components[0].Properties.Raw = []byte(`{"image":"nginx"}`)
	})
	h.until(app, true, 60*time.Second, phaseIs(common.ApplicationRunning))
}

func TestRenderFailureEndsWorkflowFailed(t *testing.T) {
	h := newHarness(t, harnessOpt{with: []Option{WithRenderer(RendererFn(func(ctx context.Context, af *appfile.AppFile, comp string, opts render.Options) ([]render.Resource, error) {
		if comp == "broken" {
			return nil, fmt.Errorf("component %q: template: output.spec.replicas: conflicting values 1 and \"x\"", comp)
		}
		return render.RenderComponent(ctx, af, comp, opts)
	}))}})
	app := h.app("rf", `
components:
- name: ok
  type: webservice
  properties: {image: "nginx"}
- name: broken
  type: webservice
  properties: {image: "nginx"}
`)
	res, err := h.reconcile(app)
	require.NoError(t, err, "a render failure is the Application's: not retried")
	assert.Zero(t, res.RequeueAfter)
	got := h.get(app)
	assert.Equal(t, common.ApplicationWorkflowFailed, got.Status.Phase)
	rc := meta.FindStatusCondition(got.Status.Conditions, common.ConditionRender)
	require.NotNil(t, rc)
	assert.Equal(t, metav1.ConditionFalse, rc.Status)
	assert.Equal(t, common.ReasonRenderFailed, rc.Reason)
	assert.Contains(t, rc.Message, "spec.components[1]")
	assert.Contains(t, rc.Message, "broken")
	assert.Contains(t, rc.Message, "output.spec.replicas")
	ready := meta.FindStatusCondition(got.Status.Conditions, common.ConditionReady)
	assert.Equal(t, common.ReasonRenderFailed, ready.Reason)
	assert.Contains(t, strings.Join(h.events(), "\n"), "Warning WorkflowFailed")
	assert.Nil(t, got.Status.Workflow, "the workflow did not start")
	for _, name := range []string{"ok", "broken"} {
		_, ok := h.deployment(name)
		assert.False(t, ok, "nothing of the revision is applied (%s)", name)
	}

	// Later reconciles (resyncs) fail the same way; once the conditions
	// name the stored revision, they write nothing.
	_, err = h.reconcile(app)
	require.NoError(t, err)
	h.writes.Store(0)
	_, err = h.reconcile(app)
	require.NoError(t, err)
	assert.Zero(t, h.writes.Load())
	assert.Equal(t, common.ApplicationWorkflowFailed, h.get(app).Status.Phase)
}

func TestRenderConditionOnSuccess(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	app := h.app("rok", `
components:
- name: web
  type: webservice
  properties: {image: "nginx"}
- name: api
  type: webservice
  dependsOn: [web]
  inputs:
  - {from: web-image, parameterKey: image}
  properties: {image: "placeholder"}
`)
	_, err := h.reconcile(app)
	require.NoError(t, err)
	got := h.get(app)
	rc := meta.FindStatusCondition(got.Status.Conditions, common.ConditionRender)
	require.NotNil(t, rc)
	assert.Equal(t, metav1.ConditionTrue, rc.Status)
	assert.Equal(t, common.ReasonRendered, rc.Reason)
	assert.Equal(t, "1 components rendered; 1 wait for workflow inputs or override policies and render in their step", rc.Message)
	assert.Equal(t, common.ApplicationRunningWorkflow, got.Status.Phase)
}

func TestPanicIsRecovered(t *testing.T) {
	h := newHarness(t, harnessOpt{with: []Option{WithRenderer(RendererFn(func(context.Context, *appfile.AppFile, string, render.Options) ([]render.Resource, error) {
		panic("boom")
	}))}})
	app := h.app("panicky", `
components:
- name: web
  type: webservice
  properties: {image: "nginx"}
`)
	var err error
	require.NotPanics(t, func() { _, err = h.reconcile(app) })
	// The library recovers panics inside steps and fails the step; either
	// way the reconcile survives and the status says what happened.
	got := h.get(app)
	if err != nil {
		ready := meta.FindStatusCondition(got.Status.Conditions, common.ConditionReady)
		assert.Equal(t, common.ReasonReconcilePanic, ready.Reason)
		return
	}
	got = h.until(app, false, 30*time.Second, func(a *v1beta1.Application) bool { return a.Status.Workflow != nil && a.Status.Workflow.Finished })
	assert.Equal(t, common.ApplicationWorkflowFailed, got.Status.Phase)
	assert.Contains(t, meta.FindStatusCondition(got.Status.Conditions, common.ConditionWorkflow).Message, "boom")
}

func TestPublishVersionPinsTheRevision(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	app := h.app("pinned", `
components:
- name: web
  type: webservice
  properties: {image: "nginx:1"}
`)
	h.update(app, func(a *v1beta1.Application) { a.Annotations = map[string]string{v1beta1.AnnoPublishVersion: "alpha"} })
	h.until(app, true, 60*time.Second, phaseIs(common.ApplicationRunning))

	h.update(app, func(a *v1beta1.Application) { a.Spec.Components[0].Properties.Raw = []byte(`{"image":"nginx:2"}`) })
	got := h.until(app, true, 10*time.Second, phaseIs(common.ApplicationRunning))
	assert.Equal(t, "pinned-v1", got.Status.LatestRevision.Name, "a spec edit under the same publishVersion is not deployed")
	d, _ := h.deployment("web")
	assert.Equal(t, "nginx:1", d.Spec.Template.Spec.Containers[0].Image)

	h.update(app, func(a *v1beta1.Application) { a.Annotations[v1beta1.AnnoPublishVersion] = "beta" })
	got = h.until(app, true, 60*time.Second, func(a *v1beta1.Application) bool {
		return a.Status.LatestRevision.Name == "pinned-v2" && a.Status.Phase == common.ApplicationRunning
	})
	d, _ = h.deployment("web")
	assert.Equal(t, "nginx:2", d.Spec.Template.Spec.Containers[0].Image)
	rev := &v1beta1.ApplicationRevision{}
	require.NoError(t, env(t).Client.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: got.Status.LatestRevision.Name}, rev))
	assert.Equal(t, "beta", rev.Spec.Application.Annotations[v1beta1.AnnoPublishVersion])
}

func TestDefinitionEditNeedsAutoUpdate(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	ctx := context.Background()
	def := &v1beta1.ComponentDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "plain-cm", Namespace: h.ns},
		Spec: v1beta1.ComponentDefinitionSpec{
			Workload:  common.WorkloadTypeDescriptor{Definition: &common.WorkloadGVK{APIVersion: "v1", Kind: "ConfigMap"}},
			Schematic: &common.Schematic{CUE: &common.CUE{Template: "output: {apiVersion: \"v1\", kind: \"ConfigMap\", data: v: \"one\"}\nparameter: {}\n"}},
		},
	}
	require.NoError(t, env(t).Client.Create(ctx, def))
	app := h.app("defs", `
components:
- name: cfg
  type: plain-cm
`)
	h.until(app, false, 30*time.Second, phaseIs(common.ApplicationRunning))
	cm := func() string {
		o := &corev1.ConfigMap{}
		require.NoError(t, env(t).Client.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: "cfg"}, o))
		return o.Data["v"]
	}
	require.Equal(t, "one", cm())

	require.NoError(t, env(t).Client.Get(ctx, client.ObjectKeyFromObject(def), def))
	def.Spec.Schematic.CUE.Template = strings.Replace(def.Spec.Schematic.CUE.Template, `"one"`, `"two"`, 1)
	require.NoError(t, env(t).Client.Update(ctx, def))
	got := h.until(app, false, 10*time.Second, phaseIs(common.ApplicationRunning))
	assert.Equal(t, "defs-v1", got.Status.LatestRevision.Name, "editing a definition does not change a deployed app")
	assert.Equal(t, "one", cm())

	h.update(app, func(a *v1beta1.Application) { a.Annotations = map[string]string{v1beta1.AnnoAutoUpdate: "true"} })
	h.until(app, false, 30*time.Second, func(a *v1beta1.Application) bool {
		return a.Status.LatestRevision.Name == "defs-v2" && a.Status.Phase == common.ApplicationRunning
	})
	assert.Equal(t, "two", cm())
}

func TestRestartAnnotationRerunsTheWorkflow(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	app := h.app("again", `
components:
- name: web
  type: webservice
  properties: {image: "nginx"}
`)
	first := h.until(app, true, 60*time.Second, phaseIs(common.ApplicationRunning))
	started := first.Status.Workflow.StartTime
	time.Sleep(1100 * time.Millisecond)
	h.update(app, func(a *v1beta1.Application) { a.Annotations = map[string]string{v1beta1.AnnoRestartWorkflow: "true"} })
	got := h.until(app, true, 60*time.Second, func(a *v1beta1.Application) bool {
		return a.Status.Workflow.StartTime.After(started.Time) && a.Status.Phase == common.ApplicationRunning
	})
	assert.NotContains(t, got.Annotations, v1beta1.AnnoRestartWorkflow, "the restart request is consumed")
	assert.Equal(t, "again-v1", got.Status.LatestRevision.Name, "same content, same revision")
}

func TestSuspendResumeThroughStatus(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	app := h.app("ops", `
components:
- name: web
  type: webservice
  properties: {image: "nginx"}
workflow:
  steps:
  - {name: approve, type: suspend}
  - {name: deploy, type: apply-component, properties: {component: web}}
`)
	got := h.until(app, false, 30*time.Second, phaseIs(common.ApplicationWorkflowSuspending))
	assert.True(t, got.Status.Workflow.Suspend)
	_, ok := h.deployment("web")
	assert.False(t, ok)

	h.updateStatus(app, func(a *v1beta1.Application) { require.NoError(t, workflow.Resume(a.Status.Workflow)) })
	h.until(app, true, 60*time.Second, phaseIs(common.ApplicationRunning))
	_, ok = h.deployment("web")
	assert.True(t, ok)
}

func TestTerminateThroughStatus(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	app := h.app("stop", `
components:
- name: web
  type: webservice
  properties: {image: "nginx"}
workflow:
  steps:
  - {name: approve, type: suspend}
  - {name: deploy, type: apply-component, properties: {component: web}}
`)
	h.until(app, false, 30*time.Second, phaseIs(common.ApplicationWorkflowSuspending))
	h.updateStatus(app, func(a *v1beta1.Application) { require.NoError(t, workflow.Terminate(a.Status.Workflow)) })
	got := h.until(app, false, 30*time.Second, phaseIs(common.ApplicationWorkflowTerminated))
	assert.Equal(t, wfv1alpha1.WorkflowStateTerminated, got.Status.Workflow.Status)
	_, ok := h.deployment("web")
	assert.False(t, ok)
}

func TestPanicAtTheBoundaryIsReported(t *testing.T) {
	h := newHarness(t, harnessOpt{with: []Option{WithValidator(ValidatorFn(func(context.Context, *v1beta1.Application, appfile.DefinitionSource, appfile.Clusters) (*appfile.AppFile, []string, error) {
		panic("parser exploded")
	}))}})
	app := h.app("boundary", `
components:
- name: web
  type: webservice
  properties: {image: "nginx"}
`)
	var err error
	require.NotPanics(t, func() { _, err = h.reconcile(app) })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "parser exploded")
	ready := meta.FindStatusCondition(h.get(app).Status.Conditions, common.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, common.ReasonReconcilePanic, ready.Reason)
	assert.Contains(t, strings.Join(h.events(), "\n"), "Warning ReconcilePanic")
}

func TestRevisionLimitFromGarbageCollectPolicy(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	app := h.app("hist", `
components:
- name: cfg
  type: k8s-objects
  properties:
    objects:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: hist}, data: {v: "1"}}
policies:
- name: gc
  type: garbage-collect
  properties: {applicationRevisionLimit: 2}
`)
	h.until(app, false, 30*time.Second, phaseIs(common.ApplicationRunning))
	for v := 2; v <= 4; v++ {
		h.update(app, func(a *v1beta1.Application) {
			a.Spec.Components[0].Properties.Raw = []byte(fmt.Sprintf(`{"objects":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"hist"},"data":{"v":"%d"}}]}`, v))
		})
		want := fmt.Sprintf("hist-v%d", v)
		h.until(app, false, 30*time.Second, func(a *v1beta1.Application) bool {
			return a.Status.LatestRevision.Name == want && a.Status.Phase == common.ApplicationRunning
		})
	}
	assert.ElementsMatch(t, []string{"hist-v3", "hist-v4"}, h.revisions("hist"))
}

func TestTwoAppsClaimingOneDeployment(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	spec := `
components:
- name: web
  type: webservice
  properties: {image: "nginx"}
`
	first := h.app("first", spec)
	h.until(first, true, 60*time.Second, phaseIs(common.ApplicationRunning))
	second := h.app("second", spec)
	got := h.until(second, true, 30*time.Second, phaseIs(common.ApplicationWorkflowFailed))
	wc := meta.FindStatusCondition(got.Status.Conditions, common.ConditionWorkflow)
	assert.Contains(t, wc.Message, "first", "the error names the owner")
	assert.Contains(t, strings.Join(h.events(), "\n"), "Warning WorkflowFailed")
	d, _ := h.deployment("web")
	assert.Equal(t, "first", d.Labels[v1beta1.LabelAppName], "the owner keeps it")
}

func TestSharedResourcePolicy(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	spec := `
components:
- name: web
  type: webservice
  properties: {image: "nginx"}
policies:
- name: share
  type: shared-resource
  properties:
    rules:
    - selector: {resourceTypes: [Deployment]}
`
	a := h.app("share-a", spec)
	h.until(a, true, 60*time.Second, phaseIs(common.ApplicationRunning))
	b := h.app("share-b", spec)
	h.until(b, true, 60*time.Second, phaseIs(common.ApplicationRunning))

	require.NoError(t, env(t).Client.Delete(context.Background(), h.get(a)))
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := h.reconcile(a)
		require.NoError(t, err)
		if err := env(t).Client.Get(context.Background(), client.ObjectKeyFromObject(a), &v1beta1.Application{}); apierrors.IsNotFound(err) {
			break
		}
		require.True(t, time.Now().Before(deadline))
		time.Sleep(200 * time.Millisecond)
	}
	_, ok := h.deployment("web")
	assert.True(t, ok, "the other sharer keeps the Deployment")
	h.until(b, true, 30*time.Second, phaseIs(common.ApplicationRunning))
}

func TestControllerRestartResumesWorkflow(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	app := h.app("resume", `
components:
- name: a
  type: webservice
  properties: {image: "nginx"}
- name: b
  type: webservice
  properties: {image: "nginx"}
workflow:
  steps:
  - {name: first, type: apply-component, properties: {component: a}}
  - {name: approve, type: suspend}
  - {name: second, type: apply-component, properties: {component: b}}
`)
	before := h.until(app, true, 60*time.Second, phaseIs(common.ApplicationWorkflowSuspending))
	first := before.Status.Workflow.Steps[0]
	require.Equal(t, wfv1alpha1.WorkflowStepPhaseSucceeded, first.Phase)

	// A new controller process: new reconciler, new engine, no memory.
	workflow.Forget(app)
	h2 := newHarness(t, harnessOpt{})
	h2.ns = h.ns
	h.updateStatus(app, func(a *v1beta1.Application) { require.NoError(t, workflow.Resume(a.Status.Workflow)) })
	got := h2.until(app, true, 60*time.Second, phaseIs(common.ApplicationRunning))
	assert.Equal(t, first.LastExecuteTime, got.Status.Workflow.Steps[0].LastExecuteTime, "the succeeded step did not run again")
	assert.Equal(t, first.ID, got.Status.Workflow.Steps[0].ID)
	_, ok := h.deployment("b")
	assert.True(t, ok)
}

func TestTopologyAndOverrideDeploy(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	target := h.ns + "-prod"
	require.NoError(t, env(t).Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: target}}))
	app := h.app("multi", fmt.Sprintf(`
components:
- name: db
  type: webservice
  properties: {image: "postgres:15"}
- name: web
  type: webservice
  dependsOn: [db]
  properties: {image: "nginx:1"}
policies:
- name: prod
  type: topology
  properties: {clusters: [local], namespace: %s}
- name: bump
  type: override
  properties:
    components:
    - name: web
      properties: {image: "nginx:2"}
`, target))
	ready := func() {
		list := &appsv1.DeploymentList{}
		require.NoError(t, env(t).Client.List(context.Background(), list, client.InNamespace(target)))
		for i := range list.Items {
			d := &list.Items[i]
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
			require.NoError(t, env(t).Client.Status().Update(context.Background(), d))
		}
	}
	end := time.Now().Add(60 * time.Second)
	var got *v1beta1.Application
	for {
		_, err := h.reconcile(app)
		require.NoError(t, err)
		got = h.get(app)
		if got.Status.Phase == common.ApplicationRunning {
			break
		}
		require.True(t, time.Now().Before(end), "phase %s: %+v", got.Status.Phase, got.Status.Conditions)
		ready()
		time.Sleep(200 * time.Millisecond)
	}
	require.NotNil(t, got.Status.Workflow)
	assert.Equal(t, "deploy", got.Status.Workflow.Steps[0].Name)
	d := &appsv1.Deployment{}
	require.NoError(t, env(t).Client.Get(context.Background(), client.ObjectKey{Namespace: target, Name: "web"}, d))
	assert.Equal(t, "nginx:2", d.Spec.Template.Spec.Containers[0].Image, "the override applies")
	_, ok := h.deployment("web")
	assert.False(t, ok, "nothing in the app's own namespace")
	require.Len(t, got.Status.Services, 2)
	for _, s := range got.Status.Services {
		assert.Equal(t, target, s.Namespace)
		assert.True(t, s.Healthy, s.Message)
	}
}

// TestHealthRecheckUsesOverriddenProperties: after the deploy step, health
// is judged again at every reconcile; a definition whose health depends on
// its parameters must see the properties the override policy deployed,
// not the Application's own.
func TestHealthRecheckUsesOverriddenProperties(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	ctx := context.Background()
	target := h.ns + "-prod"
	require.NoError(t, env(t).Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: target}}))
	require.NoError(t, env(t).Client.Create(ctx, &v1beta1.ComponentDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "counted", Namespace: h.ns},
		Spec: v1beta1.ComponentDefinitionSpec{
			Workload: common.WorkloadTypeDescriptor{Definition: &common.WorkloadGVK{APIVersion: "apps/v1", Kind: "Deployment"}},
			Schematic: &common.Schematic{CUE: &common.CUE{Template: `
output: {
	apiVersion: "apps/v1"
	kind:       "Deployment"
	spec: {
		replicas: parameter.replicas
		selector: matchLabels: app: context.name
		template: {
			metadata: labels: app: context.name
			spec: containers: [{name: "c", image: "nginx"}]
		}
	}
}
parameter: replicas: *1 | int
`}},
			Status: &common.Status{
				HealthPolicy: "isHealth: context.output.status.readyReplicas != _|_ && context.output.status.readyReplicas == parameter.replicas",
				CustomStatus: `message: "want \(parameter.replicas)"`,
			},
		},
	}))
	app := h.app("over", fmt.Sprintf(`
components:
- name: api
  type: counted
  properties: {replicas: 1}
policies:
- name: prod
  type: topology
  properties: {clusters: [local], namespace: %s}
- name: more
  type: override
  properties:
    components:
    - name: api
      properties: {replicas: 2}
`, target))
	ready := func() {
		list := &appsv1.DeploymentList{}
		require.NoError(t, env(t).Client.List(ctx, list, client.InNamespace(target)))
		for i := range list.Items {
			d := &list.Items[i]
			r := *d.Spec.Replicas
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: r, UpdatedReplicas: r, ReadyReplicas: r, AvailableReplicas: r}
			require.NoError(t, env(t).Client.Status().Update(ctx, d))
		}
	}
	end := time.Now().Add(60 * time.Second)
	for {
		_, err := h.reconcile(app)
		require.NoError(t, err)
		if h.get(app).Status.Phase == common.ApplicationRunning {
			break
		}
		require.True(t, time.Now().Before(end), "phase %s: %+v", h.get(app).Status.Phase, h.get(app).Status.Conditions)
		ready()
		time.Sleep(200 * time.Millisecond)
	}
	// The resyncs after the run re-check health against the override.
	for i := 0; i < 2; i++ {
		_, err := h.reconcile(app)
		require.NoError(t, err)
	}
	got := h.get(app)
	assert.Equal(t, common.ApplicationRunning, got.Status.Phase)
	require.Len(t, got.Status.Services, 1)
	assert.True(t, got.Status.Services[0].Healthy)
	assert.Equal(t, "want 2", got.Status.Services[0].Message, "health sees the overridden properties")
	assert.Equal(t, target, got.Status.Services[0].Namespace)
}

// TestTargetNamespaces: a topology's missing namespace is created for the
// Application (labelled, with a Normal Event) and the app runs; with
// createNamespace: false the deploy step waits, naming cluster and
// namespace, and goes on once the namespace is created by hand, without
// any edit of the Application.
func TestTargetNamespaces(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	ctx := context.Background()
	spec := func(ns string, create bool) string {
		return fmt.Sprintf(`
components:
- name: cfg
  type: k8s-objects
  properties:
    objects:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: cfg}, data: {k: v}}
policies:
- name: there
  type: topology
  properties: {clusters: [local], namespace: %s, createNamespace: %t}
`, ns, create)
	}
	created := h.ns + "-created"
	app := h.app("made", spec(created, true))
	h.until(app, false, 30*time.Second, phaseIs(common.ApplicationRunning))
	ns := &corev1.Namespace{}
	require.NoError(t, env(t).Client.Get(ctx, client.ObjectKey{Name: created}, ns))
	assert.Equal(t, "oamflow", ns.Labels[resourcekeeper.LabelCreatedBy])
	assert.Equal(t, "made", ns.Labels[resourcekeeper.LabelCreatedForApp])
	assert.Contains(t, strings.Join(h.events(), "\n"), "Normal NamespaceCreated created namespace "+created+" in cluster local")
	require.NoError(t, env(t).Client.Get(ctx, client.ObjectKey{Namespace: created, Name: "cfg"}, &corev1.ConfigMap{}))

	byHand := h.ns + "-by-hand"
	waiting := h.app("waits", spec(byHand, false))
	want := `namespace "` + byHand + `" does not exist in cluster local and the topology sets createNamespace: false: waiting for it to be created`
	got := h.until(waiting, false, 30*time.Second, func(a *v1beta1.Application) bool {
		return a.Status.Workflow != nil && len(a.Status.Workflow.Steps) > 0 && strings.Contains(a.Status.Workflow.Steps[0].Message, want)
	})
	assert.NotEqual(t, common.ApplicationWorkflowFailed, got.Status.Phase)
	assert.NotEqual(t, "failed", string(got.Status.Workflow.Steps[0].Phase), "the step waits: %+v", got.Status.Workflow.Steps[0])
	require.True(t, apierrors.IsNotFound(env(t).Client.Get(ctx, client.ObjectKey{Name: byHand}, &corev1.Namespace{})), "not created")
	require.NoError(t, env(t).Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: byHand}}))
	h.until(waiting, false, 60*time.Second, phaseIs(common.ApplicationRunning))
	require.NoError(t, env(t).Client.Get(ctx, client.ObjectKey{Namespace: byHand, Name: "cfg"}, &corev1.ConfigMap{}))
}
