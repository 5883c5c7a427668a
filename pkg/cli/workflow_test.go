package cli

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

func writeKubeconfig(t *testing.T, cfg *rest.Config) string {
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
}
