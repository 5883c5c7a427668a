package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
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
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

func TestJudge(t *testing.T) {
	at := func(gen int64) waitTarget { return waitTarget{generation: gen} }
	rev := func(name string) appMod {
		return func(a *v1beta1.Application) {
			a.Status.LatestRevision = &common.Revision{Name: name}
			if a.Status.Workflow != nil {
				a.Status.Workflow.AppRevision = name
			}
		}
	}
	cases := []struct {
		reason  string
		app     *v1beta1.Application
		target  waitTarget
		want    verdict
		wantMsg string
	}{
		{reason: "a status older than the applied generation is not an answer",
			app: fixtureApp(withPhase(common.ApplicationRunning)), target: at(3), want: keepWaiting},
		{reason: "running at the applied generation is success",
			app: fixtureApp(withPhase(common.ApplicationRunning)), target: at(2), want: isRunning},
		{reason: "workflowFailed with an Invalid* reason is the user's to fix",
			app:    fixtureApp(withPhase(common.ApplicationWorkflowFailed), withCondition("Parsed", false, "InvalidApplication", "component web: type nope not found")),
			target: at(2), want: isInvalid, wantMsg: "(InvalidApplication) component web: type nope not found"},
		{reason: "an invalid policy is the user's too",
			app:    fixtureApp(withPhase(common.ApplicationWorkflowFailed), withCondition("Policy", false, "InvalidPolicy", "topology: no cluster matches")),
			target: at(2), want: isInvalid, wantMsg: "(InvalidPolicy) topology: no cluster matches"},
		{reason: "a failed workflow is a runtime failure with the Workflow condition's message",
			app:    fixtureApp(withPhase(common.ApplicationWorkflowFailed), withCondition("Workflow", false, "WorkflowFailed", "step deploy failed")),
			target: at(2), want: hasFailed, wantMsg: "the workflow failed: step deploy failed"},
		{reason: "a terminated workflow is a failure",
			app: fixtureApp(withPhase(common.ApplicationWorkflowTerminated)), target: at(2), want: hasFailed, wantMsg: "terminated"},
		{reason: "suspended, unhealthy and running-workflow phases keep the wait going",
			app: fixtureApp(withPhase(common.ApplicationWorkflowSuspending)), target: at(2), want: keepWaiting},
		{reason: "unhealthy may still heal",
			app: fixtureApp(withPhase(common.ApplicationUnhealthy)), target: at(2), want: keepWaiting},
		{reason: "a new publishVersion waits for a revision other than the previous one",
			app: fixtureApp(withPhase(common.ApplicationRunning), rev("demo-v1")), target: waitTarget{generation: 2, newRevision: true, prevRevision: "demo-v1"}, want: keepWaiting},
		{reason: "… and accepts the new one",
			app: fixtureApp(withPhase(common.ApplicationRunning), rev("demo-v2")), target: waitTarget{generation: 2, newRevision: true, prevRevision: "demo-v1"}, want: isRunning},
		{reason: "a workflow still about an older revision is not an answer",
			app: fixtureApp(withPhase(common.ApplicationRunning), withSteps(), func(a *v1beta1.Application) {
				a.Status.LatestRevision.Name = "demo-v3"
			}), target: at(2), want: keepWaiting},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			got, msg := judge(tc.app, tc.target)
			assert.Equal(t, tc.want, got)
			assert.Contains(t, msg, tc.wantMsg)
		})
	}
}

func TestApplyObject(t *testing.T) {
	app := fixtureApp(withPhase(common.ApplicationRunning), func(a *v1beta1.Application) {
		a.ResourceVersion, a.UID = "42", "uid"
		a.Spec.Components[0].Properties = &runtime.RawExtension{Raw: []byte(`{"image":"nginx","ports":[{"port":80}]}`)}
	})
	u, err := applyObject(app)
	require.NoError(t, err)
	assert.Equal(t, "core.oam.dev/v1beta1", u.GetAPIVersion())
	assert.Equal(t, "Application", u.GetKind())
	assert.NotContains(t, u.Object, "status", "status is the controller's")
	md := u.Object["metadata"].(map[string]any)
	assert.Equal(t, map[string]any{"name": "demo", "namespace": "default"}, md, "only what the user owns: no resourceVersion, uid, generation or timestamps")
	comps := u.Object["spec"].(map[string]any)["components"].([]any)
	assert.Equal(t, map[string]any{"image": "nginx", "ports": []any{map[string]any{"port": float64(80)}}}, comps[0].(map[string]any)["properties"])
}

// TestCommandsAgainstAPIServer runs up, ls, delete, revision and status
// against one real kube-apiserver with the oamflow CRDs. No controller
// runs: the tests write the statuses it would write.
func TestCommandsAgainstAPIServer(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1beta1.AddToScheme(s))
	env := envtest.New(t, envtest.WithCRDs("charts/oamflow/crds"), envtest.WithScheme(s))
	ctx := context.Background()
	for _, ns := range []string{"oamflow-system", "staging", "other"} {
		require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	e := &cliEnv{env: env, c: env.Client, kubeconfig: writeKubeconfig(t, env.Config)}
	t.Run("up", func(t *testing.T) { testUp(t, e) })
	t.Run("up --wait", func(t *testing.T) { testUpWait(t, e) })
	t.Run("up refuses an invalid Application", func(t *testing.T) { testUpInvalid(t, e) })
	t.Run("up and dry-run refuse an unregistered cluster", func(t *testing.T) { testUpUnknownCluster(t, e) })
	t.Run("ls", func(t *testing.T) { testLs(t, e) })
	t.Run("delete", func(t *testing.T) { testDelete(t, e) })
	t.Run("revision", func(t *testing.T) { testRevision(t, e) })
	t.Run("status", func(t *testing.T) { testStatus(t, e) })
	t.Run("completion of names", func(t *testing.T) { testCompleteApps(t, e) })
}

const upApp = `apiVersion: core.oam.dev/v1beta1
kind: Application
metadata:
  name: web
spec:
  components:
    - name: web
      type: webservice
      properties: {image: "nginx:1.27"}
      traits:
        - type: my-labels
          properties: {team: shop}
---
apiVersion: core.oam.dev/v1alpha1
kind: Policy
metadata: {name: gc}
type: garbage-collect
properties: {keepLegacyResource: true}
---
apiVersion: core.oam.dev/v1beta1
kind: TraitDefinition
metadata: {name: my-labels}
spec:
  schematic:
    cue:
      template: |
        parameter: [string]: string
        patch: metadata: labels: parameter
`

// appYAML is a one-component Application named name with image.
func appYAML(name, image string) string {
	return `apiVersion: core.oam.dev/v1beta1
kind: Application
metadata:
  name: ` + name + `
spec:
  components:
    - name: web
      type: webservice
      properties: {image: "` + image + `"}
`
}

func (e *cliEnv) getApp(t *testing.T, ns, name string) *v1beta1.Application {
	t.Helper()
	app := &v1beta1.Application{}
	require.NoError(t, e.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, app))
	return app
}

func testUp(t *testing.T, e *cliEnv) {
	dir := t.TempDir()
	file := writeFile(t, dir, "app.yaml", upApp)

	r := e.run("", "up", "-f", file)
	require.Equal(t, ExitOK, r.code, r.err)
	assert.Equal(t, "TraitDefinition/my-labels created in oamflow-system\nApplication default/web created\n", r.out)
	app := e.getApp(t, "default", "web")
	require.Len(t, app.Spec.Policies, 1, "the standalone Policy is folded into the Application")
	assert.Equal(t, "garbage-collect", app.Spec.Policies[0].Type)
	managers := map[string]metav1.ManagedFieldsOperationType{}
	for _, m := range app.ManagedFields {
		managers[m.Manager] = m.Operation
	}
	assert.Equal(t, metav1.ManagedFieldsOperationApply, managers[FieldManager], "server-side apply as %s", FieldManager)
	require.NoError(t, e.c.Get(context.Background(), client.ObjectKey{Namespace: "oamflow-system", Name: "my-labels"}, &v1beta1.TraitDefinition{}))

	r = e.run("", "up", "-f", file)
	require.Equal(t, ExitOK, r.code, r.err)
	assert.Equal(t, "TraitDefinition/my-labels unchanged in oamflow-system\nApplication default/web unchanged\n", r.out)

	cueDef := writeFile(t, dir, "team.cue", `"team-label": {
	type: "trait"
	description: "Labels the workload with its team"
	attributes: appliesToWorkloads: ["*"]
}
template: {
	parameter: team: string
	patch: metadata: labels: team: parameter.team
}
`)
	r = e.run("", "up", "-f", cueDef, "-n", "staging")
	require.Equal(t, ExitOK, r.code, r.err)
	assert.Equal(t, "TraitDefinition/team-label created in staging\n", r.out, ".cue definition files are installed too, in -n")

	r = e.run(appYAML("web", "nginx:1.28"), "up", "-f", "-")
	require.Equal(t, ExitOK, r.code, r.err)
	assert.Equal(t, "Application default/web configured\n", r.out)
	app = e.getApp(t, "default", "web")
	assert.Equal(t, int64(2), app.Generation)
	assert.JSONEq(t, `{"image":"nginx:1.28"}`, string(app.Spec.Components[0].Properties.Raw))
	assert.Empty(t, app.Spec.Policies, "fields the CLI applied before and no longer applies are removed")

	r = e.run(appYAML("web", "nginx:1.28"), "up", "-f", "-", "-n", "staging", "--publish-version", "v7")
	require.Equal(t, ExitOK, r.code, r.err)
	assert.Equal(t, "Application staging/web created\n", r.out)
	assert.Equal(t, "v7", e.getApp(t, "staging", "web").Annotations[v1beta1.AnnoPublishVersion])

	cases := []struct {
		reason   string
		stdin    string
		args     []string
		wantCode int
		wantErr  string
	}{
		{reason: "-f is required", args: []string{"up"}, wantCode: ExitUserError, wantErr: "-f"},
		{reason: "a missing file", args: []string{"up", "-f", filepath.Join(dir, "nope.yaml")}, wantCode: ExitUserError, wantErr: "nope.yaml"},
		{reason: "an unknown field", stdin: strings.Replace(appYAML("x", "a"), "components:", "componets: []\n  components:", 1), args: []string{"up", "-f", "-"},
			wantCode: ExitUserError, wantErr: "componets"},
		{reason: "the API server's schema refuses an empty component type", stdin: strings.Replace(appYAML("x", "a"), "type: webservice", `type: ""`, 1), args: []string{"up", "-f", "-"},
			wantCode: ExitUserError, wantErr: "spec.components[0].type"},
		{reason: "a namespace in the file that contradicts -n", stdin: strings.Replace(appYAML("x", "a"), "name: x", "name: x\n  namespace: prod", 1), args: []string{"up", "-f", "-", "-n", "staging"},
			wantCode: ExitUserError, wantErr: `metadata.namespace is "prod" but -n says "staging"`},
		{reason: "a namespace that does not exist", stdin: appYAML("x", "a"), args: []string{"up", "-f", "-", "-n", "nowhere"},
			wantCode: ExitUserError, wantErr: "create the namespace first"},
		{reason: "standalone policies with two Applications", stdin: appYAML("a", "a") + "---\n" + appYAML("b", "b") + "---\napiVersion: core.oam.dev/v1alpha1\nkind: Policy\nmetadata: {name: p}\ntype: topology\n",
			args: []string{"up", "-f", "-"}, wantCode: ExitUserError, wantErr: "exactly one Application"},
		{reason: "an invalid definition stops everything", stdin: appYAML("x", "a") + "---\napiVersion: core.oam.dev/v1beta1\nkind: TraitDefinition\nmetadata: {name: broken}\nspec:\n  schematic:\n    cue:\n      template: 'patch: {'\n",
			args: []string{"up", "-f", "-"}, wantCode: ExitUserError, wantErr: "broken"},
		{reason: "an invalid .cue definition", args: []string{"up", "-f", writeFile(t, dir, "bad.cue", "\"bad\": {type: \"trait\"}\ntemplate: {patch: {\n")},
			wantCode: ExitUserError, wantErr: "bad.cue"},
		{reason: "nothing to apply", stdin: "# just a comment\n", args: []string{"up", "-f", "-"}, wantCode: ExitUserError, wantErr: "no Application"},
		{reason: "a positional argument", args: []string{"up", "app.yaml"}, wantCode: ExitUserError, wantErr: "-f"},
		{reason: "a zero timeout", stdin: appYAML("x", "a"), args: []string{"up", "-f", "-", "--wait", "--timeout", "0s"}, wantCode: ExitUserError, wantErr: "--timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			r := e.run(tc.stdin, tc.args...)
			assert.Equal(t, tc.wantCode, r.code, "err: %v", r.err)
			if assert.Error(t, r.err) {
				assert.Contains(t, r.err.Error(), tc.wantErr)
			}
		})
	}
	assert.True(t, apierrors.IsNotFound(e.c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "x"}, &v1beta1.Application{})),
		"nothing of a refused input is applied")
}

// patchAppStatus changes the status of Application ns/name the way the
// controller would.
func (e *cliEnv) patchAppStatus(t *testing.T, ns, name string, change func(*v1beta1.Application)) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		app := &v1beta1.Application{}
		if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, app); err != nil {
			return err
		}
		change(app)
		return e.c.Status().Update(context.Background(), app)
	}))
}

// waitForGeneration waits until Application ns/name exists with at least
// generation gen and returns its generation.
func (e *cliEnv) waitForGeneration(t *testing.T, ns, name string, gen int64) int64 {
	t.Helper()
	var got int64
	require.Eventually(t, func() bool {
		app := &v1beta1.Application{}
		if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, app); err != nil {
			return false
		}
		got = app.Generation
		return got >= gen
	}, 20*time.Second, 20*time.Millisecond)
	return got
}

func testUpWait(t *testing.T, e *cliEnv) {
	dir := t.TempDir()
	wait := []string{"--wait", "--timeout", "30s", "--poll-interval", "20ms"}
	upWait := func(name string, extra ...string) *background {
		file := writeFile(t, dir, name+".yaml", appYAML(name, "nginx"))
		return e.start(append(append([]string{"up", "-f", file}, wait...), extra...)...)
	}
	result := func(t *testing.T, b *background) cliResult {
		t.Helper()
		select {
		case r := <-b.done:
			return r
		case <-time.After(30 * time.Second):
			t.Fatal("up --wait did not return")
		}
		return cliResult{}
	}

	t.Run("follows the workflow until running", func(t *testing.T) {
		ch := upWait("ok")
		gen := e.waitForGeneration(t, "default", "ok", 1)
		ch.waitOutput(t, "waiting for the controller to pick it up")
		e.patchAppStatus(t, "default", "ok", func(a *v1beta1.Application) {
			a.Status.ObservedGeneration = gen
			a.Status.Phase = common.ApplicationRunningWorkflow
			a.Status.LatestRevision = &common.Revision{Name: "ok-v1", Revision: 1}
			a.Status.Workflow = &common.WorkflowStatus{AppRevision: "ok-v1", StartTime: metav1.Now(), Steps: []wfv1alpha1.WorkflowStepStatus{
				{StepStatus: wfv1alpha1.StepStatus{ID: "s1", Name: "web", Type: "apply-component", Phase: wfv1alpha1.WorkflowStepPhaseRunning, FirstExecuteTime: metav1.Now()}}}}
		})
		ch.waitOutput(t, "step web (apply-component) started")
		time.Sleep(100 * time.Millisecond) // more polls of the running step print nothing new
		e.patchAppStatus(t, "default", "ok", func(a *v1beta1.Application) {
			a.Status.Phase = common.ApplicationRunning
			a.Status.Workflow.Steps[0].Phase = wfv1alpha1.WorkflowStepPhaseSucceeded
			a.Status.Workflow.Steps[0].LastExecuteTime = metav1.NewTime(a.Status.Workflow.Steps[0].FirstExecuteTime.Add(2 * time.Second))
			a.Status.Services = []common.ApplicationComponentStatus{{Name: "web", Namespace: "default", Healthy: true, Message: "Ready:1/1"}}
		})
		r := result(t, ch)
		require.Equal(t, ExitOK, r.code, "%v\n%s", r.err, r.out)
		for _, want := range []string{
			"Application default/ok created",
			"Application default/ok: waiting for the controller to pick it up",
			"phase runningWorkflow", "workflow started for revision ok-v1",
			"step web (apply-component) started", "step web succeeded in 2s",
			"web@local: healthy (Ready:1/1)", "phase running",
			"Application default/ok is running (revision ok-v1) after",
		} {
			assert.Contains(t, r.out, want)
		}
		assert.Equal(t, 1, strings.Count(r.out, "step web (apply-component) started"), "plain output prints each change once:\n%s", r.out)
	})

	t.Run("exits 1 when the controller finds the Application invalid", func(t *testing.T) {
		ch := upWait("bad")
		gen := e.waitForGeneration(t, "default", "bad", 1)
		e.patchAppStatus(t, "default", "bad", func(a *v1beta1.Application) {
			a.Status.ObservedGeneration = gen
			a.Status.Phase = common.ApplicationWorkflowFailed
			a.Status.Conditions = []metav1.Condition{{Type: "Parsed", Status: metav1.ConditionFalse, Reason: "InvalidApplication",
				Message: `application default/bad is invalid: component "web": type "webservice" not found`, LastTransitionTime: metav1.Now()}}
		})
		r := result(t, ch)
		assert.Equal(t, ExitUserError, r.code, "%v", r.err)
		require.Error(t, r.err)
		assert.Equal(t, `Application default/bad is invalid (InvalidApplication) component "web": type "webservice" not found`, r.err.Error(),
			"the controller's message, without repeating which Application")
	})

	t.Run("exits 2 when the workflow fails", func(t *testing.T) {
		ch := upWait("boom")
		gen := e.waitForGeneration(t, "default", "boom", 1)
		e.patchAppStatus(t, "default", "boom", func(a *v1beta1.Application) {
			a.Status.ObservedGeneration = gen
			a.Status.Phase = common.ApplicationWorkflowFailed
			a.Status.Conditions = []metav1.Condition{{Type: "Workflow", Status: metav1.ConditionFalse, Reason: "WorkflowFailed",
				Message: "step web failed (Timeout): web did not become healthy", LastTransitionTime: metav1.Now()}}
		})
		r := result(t, ch)
		assert.Equal(t, ExitRuntimeErr, r.code, "%v", r.err)
		require.Error(t, r.err)
		assert.Contains(t, r.err.Error(), "the workflow failed: step web failed (Timeout): web did not become healthy")
	})

	t.Run("exits 2 on timeout, saying where it was stuck", func(t *testing.T) {
		file := writeFile(t, dir, "slow.yaml", appYAML("slow", "nginx"))
		r := e.run("", "up", "-f", file, "--wait", "--timeout", "300ms", "--poll-interval", "20ms")
		assert.Equal(t, ExitRuntimeErr, r.code, "%v", r.err)
		require.Error(t, r.err)
		assert.Contains(t, r.err.Error(), "timed out after 300ms waiting for Application default/slow")
		assert.Contains(t, r.err.Error(), "has not seen generation 1 yet (is oamflow-controller running?)")
	})

	t.Run("a new publish version waits for a new revision", func(t *testing.T) {
		// ok runs revision ok-v1; the same spec with a new publishVersion
		// must not count as running until the controller made ok-v2.
		ch := upWait("ok", "--publish-version", "2")
		select {
		case r := <-ch.done:
			t.Fatalf("returned before the new revision ran: %v\n%s", r.err, r.out)
		case <-time.After(300 * time.Millisecond):
		}
		e.patchAppStatus(t, "default", "ok", func(a *v1beta1.Application) {
			a.Status.LatestRevision = &common.Revision{Name: "ok-v2", Revision: 2}
			a.Status.Workflow.AppRevision = "ok-v2"
		})
		r := result(t, ch)
		require.Equal(t, ExitOK, r.code, "%v\n%s", r.err, r.out)
		assert.Contains(t, r.out, "Application default/ok configured")
		assert.Contains(t, r.out, "is running (revision ok-v2)")
	})
}

// testUpInvalid: an Application with a misspelt property, a wrongly typed
// trait property and an unknown component type is refused with every
// field-path error, exit 1, and nothing is created (newcomer report: it used
// to be stored, then fail in the controller).
func testUpInvalid(t *testing.T, e *cliEnv) {
	file := writeFile(t, t.TempDir(), "bad.yaml", `apiVersion: core.oam.dev/v1beta1
kind: Application
metadata:
  name: typo
spec:
  components:
    - name: web
      type: webservice
      properties: {imag: "nginx"}
      traits:
        - type: scaler
          properties: {replicas: "three"}
    - name: other
      type: webservise
`)
	r := e.run("", "up", "-f", file)
	require.Equal(t, ExitUserError, r.code, r.err)
	for _, want := range []string{
		"spec.components[0].properties.imag",
		"spec.components[0].properties.image",
		"spec.components[0].traits[0].properties.replicas",
		`spec.components[1].type: unknown component type "webservise"`,
	} {
		assert.Contains(t, r.err.Error(), want)
	}
	err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "typo"}, &v1beta1.Application{})
	assert.True(t, apierrors.IsNotFound(err), "nothing is created: %v", err)

	// --validate=false leaves the judgement to the controller.
	r = e.run("", "up", "-f", file, "--validate=false")
	require.Equal(t, ExitOK, r.code, r.err)
	require.NoError(t, e.c.Delete(context.Background(), e.getApp(t, "default", "typo")))
}

func testUpUnknownCluster(t *testing.T, e *cliEnv) {
	ctx := context.Background()
	// A registered member: a cluster Secret in oamflow-system (its
	// credentials are not used to validate names).
	member := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "member-1", Namespace: "oamflow-system",
		Labels: map[string]string{v1beta1.LabelClusterCredType: "X509Certificate"}}}
	require.NoError(t, e.c.Create(ctx, member))
	t.Cleanup(func() { _ = e.c.Delete(ctx, member) })
	app := func(clusters string) string {
		return `apiVersion: core.oam.dev/v1beta1
kind: Application
metadata:
  name: placed
spec:
  components:
    - name: web
      type: webservice
      properties: {image: "nginx:1.27"}
  policies:
    - name: everywhere
      type: topology
      properties: {clusters: ` + clusters + `}
`
	}
	cases := []struct {
		reason   string
		clusters string
		// refused is a substring of the exit-1 error, "" when accepted.
		refused string
	}{
		{"an unregistered cluster is refused, naming the field", `["local", "member-9"]`,
			`spec.policies[0].properties.clusters[1]: cluster "member-9" not registered`},
		{"the hub and a registered member are accepted", `["local", "member-1"]`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			file := writeFile(t, t.TempDir(), "placed.yaml", app(tc.clusters))
			for _, args := range [][]string{{"dry-run", "-f", file}, {"up", "-f", file}} {
				r := e.run("", args...)
				if tc.refused == "" {
					require.Equal(t, ExitOK, r.code, "oamflow %v: %v", args, r.err)
					continue
				}
				require.Equal(t, ExitUserError, r.code, "oamflow %v: %v", args, r.err)
				assert.Contains(t, r.err.Error(), tc.refused, "oamflow %v", args)
			}
			if tc.refused != "" {
				err := e.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "placed"}, &v1beta1.Application{})
				assert.True(t, apierrors.IsNotFound(err), "nothing is created: %v", err)
			}
		})
	}
	require.NoError(t, e.c.Delete(ctx, e.getApp(t, "default", "placed")))
}

func TestRefusedInput(t *testing.T) {
	gr := v1beta1.GroupVersion.WithResource("applications").GroupResource()
	webhookDenial := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
		Message: `admission webhook "applications.validate.core.oam.dev" denied the request: spec.components[0].type: unknown component type "webservic"`,
	}}
	cases := []struct {
		reason string
		err    error
		want   bool
	}{
		{"an admission webhook denial (403, as controller-runtime's Denied answers) is the input's fault",
			webhookDenial, true},
		{"wrapped, too", fmt.Errorf("applying Application default/typo: %w", webhookDenial), true},
		{"a ValidatingAdmissionPolicy denial", apierrors.NewForbidden(gr, "typo",
			errors.New(`ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no`)), true},
		{"an invalid object", apierrors.NewInvalid(v1beta1.GroupVersion.WithKind("Application").GroupKind(), "typo", nil), true},
		{"a bad request", apierrors.NewBadRequest("bad"), true},
		{"forbidden by RBAC is the environment's", apierrors.NewForbidden(gr, "typo", errors.New(`User "bob" cannot patch resource`)), false},
		{"a conflict", apierrors.NewConflict(gr, "typo", errors.New("changed")), false},
		{"a timeout", apierrors.NewTimeoutError("slow", 1), false},
		{"not an API error", errors.New("connection refused"), false},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, refusedInput(tc.err))
		})
	}
}
