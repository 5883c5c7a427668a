//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/e2e/framework"
	"github.com/oamflow/oamflow/pkg/testing/corpus"
)

// wrCallThenWaitDefinition is a custom step in KubeVela's classic vela/op
// dialect: POST to parameter.url, then wait until the ConfigMap
// parameter.gate exists in the Application's namespace.
const wrCallThenWaitDefinition = `import "vela/op"

"call-then-wait": {
	type:        "workflow-step"
	description: "POST to a URL, then wait for a ConfigMap"
	annotations: {}
	labels: {}
}
template: {
	call: op.#HTTPDo & {
		method: "POST"
		url:    parameter.url
		request: body: "{\"ticket\": \"open\"}"
	}
	gate: op.#Read & {
		value: {
			apiVersion: "v1"
			kind:       "ConfigMap"
			metadata: {name: parameter.gate, namespace: context.namespace}
		}
	}
	wait: op.#ConditionalWait & {
		continue: call.response.statusCode == 200 && gate.err == _|_
		message:  "waiting for ConfigMap \(parameter.gate)"
	}
	parameter: {
		url:  string
		gate: string
	}
}
`

// wrConfigMap is a k8s-objects component holding one ConfigMap.
func wrConfigMap(component, name string) string {
	return fmt.Sprintf(`
    - name: %s
      type: k8s-objects
      properties:
        objects:
          - apiVersion: v1
            kind: ConfigMap
            metadata: {name: %s}
            data: {made-by: %s}`, component, name, component)
}

// wrEnv is what the sub-tests of TestWorkflowRuntime share.
type wrEnv struct {
	env *framework.Env
	hub *framework.Cluster
	oam client.Client
}

// TestWorkflowRuntime is the acceptance test of issue 15's engine items on
// one cluster with the in-process controller: side effects once (and a
// workflow-only Application of KubeVela's request and webhook steps),
// resume of a timed suspend in a step group, a failed dependency skips its
// dependent, and the orphan-resource finalizer. The empty cluster selector
// is asserted on a hub and two members by TestMultiClusterApplication.
func TestWorkflowRuntime(t *testing.T) {
	env := framework.Start(t, 1)
	hub := env.Cluster(t, "local")
	framework.StartController(t, hub)
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1beta1.AddToScheme(s))
	oam, err := client.New(hub.Config, client.Options{Scheme: s})
	require.NoError(t, err)
	x := &wrEnv{env: env, hub: hub, oam: oam}

	t.Run("SideEffectsOnce", x.sideEffectsOnce)
	t.Run("ResumeTimedSuspendInGroup", x.resumeTimedSuspend)
	t.Run("FailedDependencySkipsDependent", x.failedDependency)
	t.Run("OrphanDelete", x.orphanDelete)
}

// create creates the Application of yaml text.
func (x *wrEnv) create(t *testing.T, text string) client.ObjectKey {
	t.Helper()
	app := &v1beta1.Application{}
	require.NoError(t, yaml.Unmarshal([]byte(text), app))
	require.NoError(t, x.oam.Create(context.Background(), app))
	return client.ObjectKeyFromObject(app)
}

func (x *wrEnv) app(t *testing.T, key client.ObjectKey) *v1beta1.Application {
	t.Helper()
	a := &v1beta1.Application{}
	require.NoError(t, x.oam.Get(context.Background(), key, a))
	return a
}

// waitApp waits until cond holds for the Application.
func (x *wrEnv) waitApp(t *testing.T, key client.ObjectKey, timeout time.Duration, desc string, cond func(*v1beta1.Application) bool) *v1beta1.Application {
	t.Helper()
	var last *v1beta1.Application
	framework.WaitFor(t, timeout, fmt.Sprintf("%s: %s", key, desc), func(ctx context.Context) (bool, error) {
		a := &v1beta1.Application{}
		if err := x.oam.Get(ctx, key, a); err != nil {
			return false, err
		}
		last = a
		return cond(a), fmt.Errorf("phase %q, workflow %s", a.Status.Phase, mcWorkflowSummary(a))
	})
	return last
}

// step returns the status of step (or "group/sub") of a, or nil.
func wrStep(a *v1beta1.Application, path string) *wfv1alpha1.StepStatus {
	if a.Status.Workflow == nil {
		return nil
	}
	group, sub, isSub := strings.Cut(path, "/")
	for i := range a.Status.Workflow.Steps {
		s := &a.Status.Workflow.Steps[i]
		if s.Name != group {
			continue
		}
		if !isSub {
			return &s.StepStatus
		}
		for j := range s.SubStepsStatus {
			if s.SubStepsStatus[j].Name == sub {
				return &s.SubStepsStatus[j]
			}
		}
	}
	return nil
}

// nudge changes an operational annotation of the Application, which makes
// the controller reconcile it without a new revision, until step was
// evaluated again (its lastExecuteTime, kept in whole seconds, moved; a
// reconcile within the same second does not show, so it nudges again).
func (x *wrEnv) nudge(t *testing.T, key client.ObjectKey, step string) {
	t.Helper()
	before := wrStep(x.app(t, key), step)
	require.NotNil(t, before, "no status for step %s", step)
	n := 0
	framework.WaitFor(t, time.Minute, fmt.Sprintf("%s: step %s evaluated again", key, step), func(ctx context.Context) (bool, error) {
		a := &v1beta1.Application{}
		if err := x.oam.Get(ctx, key, a); err != nil {
			return false, err
		}
		if s := wrStep(a, step); s != nil && s.LastExecuteTime.After(before.LastExecuteTime.Time) {
			return true, nil
		}
		if n%8 == 0 { // every 2 s
			if a.Annotations == nil {
				a.Annotations = map[string]string{}
			}
			// An operational annotation: a reconcile, not a new revision
			// (which would start a new run).
			a.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = fmt.Sprintf(`{"nudge":"%s-%d"}`, step, n)
			if err := x.oam.Update(ctx, a); err != nil && !apierrors.IsConflict(err) {
				return false, err
			}
		}
		n++
		return false, fmt.Errorf("phase %q, workflow %s", a.Status.Phase, mcWorkflowSummary(a))
	})
}

func (x *wrEnv) sideEffectsOnce(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ticket":"T-1"}`))
	}))
	defer srv.Close()
	def := filepath.Join(t.TempDir(), "call-then-wait.cue")
	require.NoError(t, os.WriteFile(def, []byte(wrCallThenWaitDefinition), 0o600))
	_, err := framework.Oamflow(t, x.hub.Kubeconfig, "def", "apply", def)
	require.NoError(t, err)

	key := x.create(t, `
apiVersion: core.oam.dev/v1beta1
kind: Application
metadata: {name: once, namespace: default}
spec:
  components:`+wrConfigMap("marker", "once-marker")+`
  workflow:
    steps:
      - name: call
        type: call-then-wait
        properties: {url: "`+srv.URL+`/ticket", gate: once-gate}
      - name: approve
        type: suspend
        properties: {message: "approve the ticket"}
      - name: deploy
        type: apply-component
        properties: {component: marker}
`)
	x.waitApp(t, key, 2*time.Minute, "step call waits for its gate", func(a *v1beta1.Application) bool {
		s := wrStep(a, "call")
		return s != nil && s.Phase == wfv1alpha1.WorkflowStepPhaseRunning
	})
	for i := 0; i < 3; i++ {
		x.nudge(t, key, "call")
	}
	assert.Equal(t, int32(1), calls.Load(), "the waiting step called once, evaluated 4+ times")

	require.NoError(t, x.hub.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "once-gate", Namespace: "default"}}))
	x.waitApp(t, key, 2*time.Minute, "suspended at approve", func(a *v1beta1.Application) bool {
		s := wrStep(a, "approve")
		return a.Status.Phase == common.ApplicationWorkflowSuspending && s != nil && s.Phase == wfv1alpha1.WorkflowStepPhaseSuspending
	})
	for i := 0; i < 2; i++ {
		x.nudge(t, key, "approve")
	}
	assert.Equal(t, int32(1), calls.Load(), "the suspended phase made no call")

	_, err = framework.Oamflow(t, x.hub.Kubeconfig, "workflow", "resume", "once")
	require.NoError(t, err)
	x.waitApp(t, key, 2*time.Minute, "running", func(a *v1beta1.Application) bool { return a.Status.Phase == common.ApplicationRunning })
	assert.Equal(t, int32(1), calls.Load(), "calls to the server for the whole run")
	assert.Equal(t, "once-v1", x.app(t, key).Status.LatestRevision.Name, "one run: the nudges made no revision")
	t.Logf("server calls for one wait/suspend/resume cycle: %d", calls.Load())
	require.NoError(t, x.hub.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "once-marker"}, &corev1.ConfigMap{}))

	// KubeVela's own request and webhook definitions, installed as a
	// KubeVela user would, against the same server, in a workflow-only
	// Application (components: []): once each, and it runs.
	_, err = framework.Oamflow(t, x.hub.Kubeconfig, "def", "apply", corpus.StepDefinition(t, "request"), corpus.StepDefinition(t, "webhook"))
	require.NoError(t, err)
	calls.Store(0)
	key = x.create(t, `
apiVersion: core.oam.dev/v1beta1
kind: Application
metadata: {name: kubevela-steps, namespace: default}
spec:
  components: []
  workflow:
    steps:
      - name: ask
        type: request
        properties: {url: "`+srv.URL+`/request", method: POST, body: {a: 1}}
      - name: tell
        type: webhook
        properties: {url: {value: "`+srv.URL+`/webhook"}, data: {b: 2}}
      - name: approve
        type: suspend
`)
	x.waitApp(t, key, 2*time.Minute, "suspended at approve", func(a *v1beta1.Application) bool {
		return a.Status.Phase == common.ApplicationWorkflowSuspending
	})
	x.nudge(t, key, "approve")
	_, err = framework.Oamflow(t, x.hub.Kubeconfig, "workflow", "resume", "kubevela-steps")
	require.NoError(t, err)
	a := x.waitApp(t, key, 2*time.Minute, "workflow succeeded", func(a *v1beta1.Application) bool {
		return a.Status.Workflow != nil && a.Status.Workflow.Finished
	})
	assert.Equal(t, wfv1alpha1.WorkflowStateSucceeded, a.Status.Workflow.Status, "%s", mcWorkflowSummary(a))
	assert.Equal(t, int32(2), calls.Load(), "one call for request, one for webhook")
	a = x.waitApp(t, key, time.Minute, "running", func(a *v1beta1.Application) bool { return a.Status.Phase == common.ApplicationRunning })
	assert.Empty(t, a.Spec.Components, "a workflow-only Application")
	assert.Empty(t, a.Status.Services, "no components, no services")
}

func (x *wrEnv) resumeTimedSuspend(t *testing.T) {
	key := x.create(t, `
apiVersion: core.oam.dev/v1beta1
kind: Application
metadata: {name: timed, namespace: default}
spec:
  components:`+wrConfigMap("after", "timed-after")+`
  workflow:
    steps:
      - name: group
        type: step-group
        subSteps:
          - name: cool-down
            type: suspend
            properties: {duration: 300s, message: "cooling down"}
      - name: deploy
        type: apply-component
        properties: {component: after}
`)
	x.waitApp(t, key, 2*time.Minute, "suspended in the group", func(a *v1beta1.Application) bool {
		s := wrStep(a, "group/cool-down")
		return s != nil && s.Phase == wfv1alpha1.WorkflowStepPhaseSuspending
	})
	_, err := framework.Oamflow(t, x.hub.Kubeconfig, "workflow", "resume", "timed")
	require.NoError(t, err)
	start := time.Now()
	// 300 s of duration: running within a minute means the resume did it.
	a := x.waitApp(t, key, time.Minute, "running after the resume", func(a *v1beta1.Application) bool { return a.Status.Phase == common.ApplicationRunning })
	t.Logf("running %s after the resume", time.Since(start).Round(100*time.Millisecond))
	assert.Equal(t, wfv1alpha1.WorkflowStepPhaseSucceeded, wrStep(a, "group/cool-down").Phase)
	require.NoError(t, x.hub.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "timed-after"}, &corev1.ConfigMap{}))
}

func (x *wrEnv) failedDependency(t *testing.T) {
	// The broken component's ConfigMap name is refused by the API server
	// (a run-time failure: it renders fine).
	key := x.create(t, `
apiVersion: core.oam.dev/v1beta1
kind: Application
metadata: {name: deps, namespace: default}
spec:
  components:`+wrConfigMap("bad", "Not_A_Valid_Name")+wrConfigMap("dependent", "deps-dependent")+wrConfigMap("independent", "deps-independent")+`
  workflow:
    mode: {steps: DAG}
    steps:
      - name: broken
        type: apply-component
        properties: {component: bad}
      - name: needs-broken
        type: apply-component
        dependsOn: [broken]
        properties: {component: dependent}
      - name: free
        type: apply-component
        properties: {component: independent}
`)
	a := x.waitApp(t, key, 2*time.Minute, "workflow failed", func(a *v1beta1.Application) bool {
		return a.Status.Workflow != nil && a.Status.Workflow.Finished
	})
	assert.Equal(t, wfv1alpha1.WorkflowStateFailed, a.Status.Workflow.Status)
	dep := wrStep(a, "needs-broken")
	require.NotNil(t, dep, "%s", mcWorkflowSummary(a))
	assert.Equal(t, wfv1alpha1.WorkflowStepPhaseSkipped, dep.Phase)
	assert.Equal(t, `not run: step "broken" failed`, dep.Message)
	assert.Equal(t, wfv1alpha1.WorkflowStepPhaseSucceeded, wrStep(a, "free").Phase)
	err := x.hub.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "deps-dependent"}, &corev1.ConfigMap{})
	assert.True(t, apierrors.IsNotFound(err), "nothing of the dependent applied: %v", err)
}

func (x *wrEnv) orphanDelete(t *testing.T) {
	ctx := context.Background()
	key := x.create(t, `
apiVersion: core.oam.dev/v1beta1
kind: Application
metadata: {name: orphans, namespace: default}
spec:
  components:`+wrConfigMap("one", "orphan-one")+wrConfigMap("two", "orphan-two")+`
`)
	x.waitApp(t, key, 2*time.Minute, "running", func(a *v1beta1.Application) bool { return a.Status.Phase == common.ApplicationRunning })
	_, err := framework.Oamflow(t, x.hub.Kubeconfig, "delete", "orphans", "--orphan", "--wait", "--timeout", "2m")
	require.NoError(t, err)
	assert.True(t, apierrors.IsNotFound(x.oam.Get(ctx, key, &v1beta1.Application{})), "the Application is gone")
	for _, name := range []string{"orphan-one", "orphan-two"} {
		cm := &corev1.ConfigMap{}
		require.NoError(t, x.hub.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, cm), "%s is kept", name)
		assert.Nil(t, cm.DeletionTimestamp)
		for _, l := range []string{v1beta1.LabelAppName, v1beta1.LabelAppNamespace, v1beta1.LabelAppComponent, v1beta1.LabelAppRevision} {
			assert.NotContains(t, cm.Labels, l, name)
		}
	}
	rts := &v1beta1.ResourceTrackerList{}
	require.NoError(t, x.oam.List(ctx, rts, client.MatchingLabels{v1beta1.LabelAppName: "orphans"}))
	assert.Empty(t, rts.Items)
}
