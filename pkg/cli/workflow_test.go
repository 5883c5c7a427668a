package cli

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

func writeKubeconfig(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin", Namespace: "default"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
	return path
}

// runWorkflowCLI runs oamflow with args and returns its output and error.
func runWorkflowCLI(kubeconfig string, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	root := NewRootCommand(&out, &errOut)
	root.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
	err := root.ExecuteContext(context.Background())
	return out.String() + errOut.String(), err
}

func stepStatus(name string, phase wfv1alpha1.WorkflowStepPhase) wfv1alpha1.WorkflowStepStatus {
	return wfv1alpha1.WorkflowStepStatus{StepStatus: wfv1alpha1.StepStatus{ID: name, Name: name, Phase: phase}}
}

func TestWorkflowCommands(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1beta1.AddToScheme(scheme))
	env := envtest.New(t, envtest.WithCRDs("charts/oamflow/crds"), envtest.WithScheme(scheme))
	kc := writeKubeconfig(t, env.Config)
	c := env.Client
	ctx := context.Background()

	newApp := func(name, image string, wf *common.WorkflowStatus) *v1beta1.Application {
		t.Helper()
		app := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: v1beta1.ApplicationSpec{Components: []common.ApplicationComponent{
				{Name: "a", Type: "webservice", Properties: &runtime.RawExtension{Raw: []byte(`{"image":"` + image + `"}`)}},
				{Name: "b", Type: "webservice", DependsOn: []string{"a"}},
			}}}
		require.NoError(t, c.Create(ctx, app))
		app.Status.Workflow = wf
		require.NoError(t, c.Status().Update(ctx, app))
		return app
	}
	get := func(name string) *v1beta1.Application {
		t.Helper()
		app := &v1beta1.Application{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, app))
		return app
	}
	isUser := func(err error) bool {
		var ue *UserError
		return errors.As(err, &ue)
	}
	running := func() *common.WorkflowStatus {
		return &common.WorkflowStatus{AppRevision: "x-v1", Status: wfv1alpha1.WorkflowStateExecuting, StartTime: metav1.Now(),
			Steps: []wfv1alpha1.WorkflowStepStatus{stepStatus("a", wfv1alpha1.WorkflowStepPhaseSucceeded), stepStatus("b", wfv1alpha1.WorkflowStepPhaseRunning)}}
	}

	t.Run("suspend, resume and terminate a running workflow", func(t *testing.T) {
		newApp("ops", "nginx", running())
		out, err := runWorkflowCLI(kc, "workflow", "suspend", "ops")
		require.NoError(t, err)
		assert.Contains(t, out, "Application default/ops: workflow suspended")
		assert.True(t, get("ops").Status.Workflow.Suspend)

		_, err = runWorkflowCLI(kc, "workflow", "resume", "ops")
		require.NoError(t, err)
		assert.False(t, get("ops").Status.Workflow.Suspend)

		_, err = runWorkflowCLI(kc, "workflow", "resume", "ops")
		require.Error(t, err)
		assert.True(t, isUser(err))
		assert.Contains(t, err.Error(), "not suspended")

		_, err = runWorkflowCLI(kc, "workflow", "terminate", "ops")
		require.NoError(t, err)
		st := get("ops").Status.Workflow
		assert.True(t, st.Terminated)
		assert.Equal(t, wfv1alpha1.WorkflowStepPhaseFailed, st.Steps[1].Phase)
		assert.Equal(t, wfv1alpha1.WorkflowStepPhaseSucceeded, st.Steps[0].Phase)
	})

	t.Run("operations on a finished workflow are refused", func(t *testing.T) {
		newApp("done", "nginx", &common.WorkflowStatus{AppRevision: "done-v1", Finished: true, Status: wfv1alpha1.WorkflowStateSucceeded, StartTime: metav1.Now()})
		_, err := runWorkflowCLI(kc, "workflow", "suspend", "done")
		require.Error(t, err)
		assert.True(t, isUser(err))
		assert.Contains(t, err.Error(), "oamflow workflow restart done")
	})

	t.Run("restart asks the controller", func(t *testing.T) {
		newApp("again", "nginx", running())
		_, err := runWorkflowCLI(kc, "workflow", "restart", "again")
		require.NoError(t, err)
		assert.Equal(t, "true", get("again").Annotations[v1beta1.AnnoRestartWorkflow])
	})

	t.Run("restart from a step keeps the steps before it", func(t *testing.T) {
		st := running()
		st.Finished, st.Terminated, st.Status = true, true, wfv1alpha1.WorkflowStateFailed
		st.Steps[1].Phase = wfv1alpha1.WorkflowStepPhaseFailed
		newApp("partial", "nginx", st)
		_, err := runWorkflowCLI(kc, "workflow", "restart", "partial", "--step", "b")
		require.NoError(t, err)
		got := get("partial").Status.Workflow
		assert.False(t, got.Finished)
		require.Len(t, got.Steps, 1)
		assert.Equal(t, "a", got.Steps[0].Name)

		_, err = runWorkflowCLI(kc, "workflow", "restart", "partial", "--step", "nope")
		require.Error(t, err)
		assert.True(t, isUser(err))
	})

	t.Run("rollback restores the last succeeded spec", func(t *testing.T) {
		app := newApp("rb", "nginx:3", nil)
		for i, rv := range []struct {
			image string
			ok    bool
		}{{"nginx:1", true}, {"nginx:2", true}, {"nginx:3", false}} {
			rev := &v1beta1.ApplicationRevision{ObjectMeta: metav1.ObjectMeta{
				Name: "rb-v" + string(rune('1'+i)), Namespace: "default", Labels: map[string]string{v1beta1.LabelAppName: "rb"}}}
			rev.Spec.Application = *app.DeepCopy()
			rev.Spec.Application.Status = common.AppStatus{}
			rev.Spec.Application.ResourceVersion, rev.Spec.Application.UID = "", ""
			rev.Spec.Application.Spec.Components[0].Properties = &runtime.RawExtension{Raw: []byte(`{"image":"` + rv.image + `"}`)}
			require.NoError(t, c.Create(ctx, rev))
			rev.Status.Succeeded = rv.ok
			require.NoError(t, c.Status().Update(ctx, rev))
		}
		cur := get("rb")
		cur.Status.LatestRevision = &common.Revision{Name: "rb-v3", Revision: 3}
		require.NoError(t, c.Status().Update(ctx, cur))

		out, err := runWorkflowCLI(kc, "workflow", "rollback", "rb")
		require.NoError(t, err)
		assert.Contains(t, out, "rolled back to revision rb-v2")
		assert.JSONEq(t, `{"image":"nginx:2"}`, string(get("rb").Spec.Components[0].Properties.Raw))
	})

	t.Run("rollback without an earlier success", func(t *testing.T) {
		newApp("fresh", "nginx", nil)
		_, err := runWorkflowCLI(kc, "workflow", "rollback", "fresh")
		require.Error(t, err)
		assert.True(t, isUser(err))
		assert.Contains(t, err.Error(), "nothing to roll back to")
	})

	t.Run("unknown Application", func(t *testing.T) {
		_, err := runWorkflowCLI(kc, "workflow", "suspend", "ghost")
		require.Error(t, err)
		assert.True(t, isUser(err))
		assert.Contains(t, err.Error(), "Application default/ghost not found")
	})

	e := &cliEnv{env: env, c: c, kubeconfig: kc}
	t.Run("a missing Application: the -n hint only when -n was not given", func(t *testing.T) {
		testMissingAppHint(t, e)
	})
	t.Run("writes refused by an admission policy are the user's", func(t *testing.T) {
		testWorkflowAdmissionDenied(t, e, newApp)
	})
}

// testMissingAppHint: every command reading an Application through getApp
// suggests -n only when the namespace did not come from -n (it used to
// suggest it after `-n other` too); the namespace looked in is named
// either way.
func testMissingAppHint(t *testing.T, e *cliEnv) {
	commands := [][]string{
		{"workflow", "suspend", "ghost"},
		{"workflow", "resume", "ghost"},
		{"workflow", "terminate", "ghost"},
		{"workflow", "restart", "ghost"},
		{"workflow", "restart", "ghost", "--step", "a"},
		{"workflow", "rollback", "ghost"},
		{"revision", "list", "ghost"},
		{"status", "ghost"},
	}
	flags := []struct {
		reason string
		args   []string
		want   string
	}{
		{reason: "without -n: the context's namespace, and how to choose another",
			want: "Application default/ghost not found (set the namespace with -n)"},
		{reason: "with -n: no hint to set what was set", args: []string{"-n", "other"},
			want: "Application other/ghost not found"},
	}
	for _, cmd := range commands {
		for _, f := range flags {
			t.Run(strings.Join(cmd, " ")+": "+f.reason, func(t *testing.T) {
				r := e.run("", append(append([]string{}, cmd...), f.args...)...)
				assert.Equal(t, ExitUserError, r.code)
				require.Error(t, r.err)
				assert.Equal(t, f.want, r.err.Error())
			})
		}
	}
}

// testWorkflowAdmissionDenied: a write of a workflow subcommand that an
// admission policy denies (here a ValidatingAdmissionPolicy freezing
// Applications labelled change-freeze=true, status included) is the
// user's error, exit 1, with the API server's message as it gave it; it
// used to exit 2. oamflow's own webhook refuses rollbacks the same way
// (TestWorkflowRollbackDeniedByWebhook).
func testWorkflowAdmissionDenied(t *testing.T, e *cliEnv, newApp func(string, string, *common.WorkflowStatus) *v1beta1.Application) {
	ctx := context.Background()
	c := e.c
	frozen := func(name string, wf *common.WorkflowStatus) *v1beta1.Application {
		app := newApp(name, "nginx", wf)
		app.Labels = map[string]string{"change-freeze": "true"}
		require.NoError(t, c.Update(ctx, app))
		return app
	}
	suspended := &common.WorkflowStatus{AppRevision: "x-v1", Status: wfv1alpha1.WorkflowStateSuspending, Suspend: true, StartTime: metav1.Now(),
		Steps: []wfv1alpha1.WorkflowStepStatus{stepStatus("a", wfv1alpha1.WorkflowStepPhaseSucceeded), stepStatus("b", wfv1alpha1.WorkflowStepPhasePending)}}
	frozen("frozen-run", &common.WorkflowStatus{AppRevision: "x-v1", Status: wfv1alpha1.WorkflowStateExecuting, StartTime: metav1.Now(),
		Steps: []wfv1alpha1.WorkflowStepStatus{stepStatus("a", wfv1alpha1.WorkflowStepPhaseSucceeded), stepStatus("b", wfv1alpha1.WorkflowStepPhaseRunning)}})
	frozen("frozen-suspended", suspended)
	rb := frozen("frozen-rb", nil)
	rev := &v1beta1.ApplicationRevision{ObjectMeta: metav1.ObjectMeta{Name: "frozen-rb-v1", Namespace: "default",
		Labels: map[string]string{v1beta1.LabelAppName: "frozen-rb"}}}
	rev.Spec.Application = *rb.DeepCopy()
	rev.Spec.Application.ResourceVersion, rev.Spec.Application.UID = "", ""
	rev.Spec.Application.Status = common.AppStatus{}
	rev.Spec.Application.Spec.Components[0].Properties = &runtime.RawExtension{Raw: []byte(`{"image":"nginx:1"}`)}
	require.NoError(t, c.Create(ctx, rev))
	rev.Status.Succeeded = true
	require.NoError(t, c.Status().Update(ctx, rev))
	rb.Status.LatestRevision = &common.Revision{Name: "frozen-rb-v2", Revision: 2}
	require.NoError(t, c.Status().Update(ctx, rb))

	const msg = "metadata.labels.change-freeze: Applications labelled change-freeze=true may not change"
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "change-freeze"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"change-freeze": "true"}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{v1beta1.GroupVersion.Group}, APIVersions: []string{v1beta1.GroupVersion.Version},
						Resources: []string{"applications", "applications/status"}},
				}}},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: msg}},
		}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "change-freeze"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "change-freeze",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	require.NoError(t, c.Create(ctx, policy))
	require.NoError(t, c.Create(ctx, binding))
	t.Cleanup(func() {
		assert.NoError(t, c.Delete(ctx, binding))
		assert.NoError(t, c.Delete(ctx, policy))
	})
	// The API server enforces a new policy within a second or so.
	require.Eventually(t, func() bool {
		app := &v1beta1.Application{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "frozen-run"}, app); err != nil {
			return false
		}
		return refusedInput(c.Status().Update(ctx, app, client.DryRunAll)) && refusedInput(c.Update(ctx, app, client.DryRunAll))
	}, 30*time.Second, 200*time.Millisecond, "the policy is enforced")

	denial := "ValidatingAdmissionPolicy 'change-freeze' with binding 'change-freeze' denied request: " + msg
	cases := []struct {
		reason string
		args   []string
		// doing begins the error, before the API server's message.
		doing string
	}{
		{"suspend writes the status", []string{"suspend", "frozen-run"}, "updating the workflow status of Application default/frozen-run: "},
		{"resume writes the status", []string{"resume", "frozen-suspended"}, "updating the workflow status of Application default/frozen-suspended: "},
		{"terminate writes the status", []string{"terminate", "frozen-run"}, "updating the workflow status of Application default/frozen-run: "},
		{"restart --step writes the status", []string{"restart", "frozen-run", "--step", "b"}, "updating the workflow status of Application default/frozen-run: "},
		{"restart sets an annotation", []string{"restart", "frozen-run"}, "asking to restart Application default/frozen-run: "},
		{"rollback writes the spec", []string{"rollback", "frozen-rb"}, "rolling back Application default/frozen-rb: "},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			before := &v1beta1.Application{}
			require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: tc.args[1]}, before))
			r := e.run("", append([]string{"workflow"}, tc.args...)...)
			assert.Equal(t, ExitUserError, r.code, "%v", r.err)
			require.Error(t, r.err)
			assert.True(t, strings.HasPrefix(r.err.Error(), tc.doing), r.err.Error())
			assert.Contains(t, r.err.Error(), denial)
			after := &v1beta1.Application{}
			require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: tc.args[1]}, after))
			assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "nothing was written")
		})
	}
}
