package cli

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/manager"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
	oamwebhook "github.com/oamflow/oamflow/pkg/webhook"
)

// dbTemplate renders a ConfigMap; engine may be left out, but once set it
// may not change or go away (`// +immutable`, checked by oamflow's webhook
// on updates).
const dbTemplate = `output: {
	apiVersion: "v1"
	kind:       "ConfigMap"
	data: {
		size: parameter.size
		if parameter.engine != _|_ {
			engine: parameter.engine
		}
	}
}
parameter: {
	size: *"1Gi" | string
	// +immutable
	engine?: string
}
`

// TestWorkflowRollbackDeniedByWebhook runs the controller with its
// validating webhook (as `oamflow-controller` out of the cluster does) and
// rolls an Application back to a revision its webhook refuses: revision 1
// had no engine, revision 2 set the `+immutable` engine, and putting back
// revision 1's spec would remove it. The denial is the user's to fix:
// exit 1, with the API server's message, which names the field path (it
// used to exit 2, as if the cluster had failed).
//
// rollback is the one workflow subcommand oamflow's webhook can refuse:
// suspend, resume, terminate and restart --step write the status
// subresource, which the webhook's rules (applications) do not cover,
// and restart only sets an annotation, which the webhook admits (spec
// unchanged). Their refusals by other admission (a policy) are covered
// by TestWorkflowCommands.
func TestWorkflowRollbackDeniedByWebhook(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1beta1.AddToScheme(s))
	env := envtest.New(t, envtest.WithCRDs("charts/oamflow/crds"), envtest.WithScheme(s))
	c := env.Client
	ctx := context.Background()
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "oamflow-system"}}))
	startManagerWithWebhook(t, env)

	def := &v1beta1.ComponentDefinition{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: v1beta1.ComponentDefinitionSpec{
			Workload:  common.WorkloadTypeDescriptor{Definition: &common.WorkloadGVK{APIVersion: "v1", Kind: "ConfigMap"}},
			Schematic: &common.Schematic{CUE: &common.CUE{Template: dbTemplate}},
		}}
	require.NoError(t, c.Create(ctx, def))
	props := func(js string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(js)} }
	app := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: "store", Namespace: "default"},
		Spec: v1beta1.ApplicationSpec{Components: []common.ApplicationComponent{{Name: "db", Type: "db", Properties: props(`{"size":"1Gi"}`)}}}}
	// The API server calls a new webhook configuration within a second
	// or so: wait until it refuses a dry-run of an unknown type.
	require.Eventually(t, func() bool {
		bad := app.DeepCopy()
		bad.Spec.Components[0].Type = "no-such-type"
		err := c.Create(ctx, bad, client.DryRunAll)
		return err != nil && refusedInput(err)
	}, 60*time.Second, 200*time.Millisecond, "the webhook is registered and serving")

	key := client.ObjectKeyFromObject(app)
	deployed := func(rev string) func() bool {
		return func() bool {
			got := &v1beta1.Application{}
			return c.Get(ctx, key, got) == nil && got.Status.Phase == common.ApplicationRunning &&
				got.Status.ObservedGeneration == got.Generation &&
				got.Status.LatestRevision != nil && got.Status.LatestRevision.Name == rev
		}
	}
	require.NoError(t, c.Create(ctx, app))
	require.Eventually(t, deployed("store-v1"), 60*time.Second, 200*time.Millisecond, "revision 1 runs")
	// Setting the immutable engine for the first time is admitted.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &v1beta1.Application{}
		if err := c.Get(ctx, key, cur); err != nil {
			return err
		}
		cur.Spec.Components[0].Properties = props(`{"size":"2Gi","engine":"pg"}`)
		return c.Update(ctx, cur)
	}))
	require.Eventually(t, deployed("store-v2"), 60*time.Second, 200*time.Millisecond, "revision 2 runs")
	rev1 := &v1beta1.ApplicationRevision{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "store-v1"}, rev1))
	require.True(t, rev1.Status.Succeeded, "revision 1 is one rollback may go back to")

	e := &cliEnv{env: env, c: c, kubeconfig: writeKubeconfig(t, env.Config)}
	r := e.run("", "workflow", "rollback", "store")
	assert.Equal(t, ExitUserError, r.code, "a webhook denial is the user's error: %v", r.err)
	require.Error(t, r.err)
	assert.Equal(t, `rolling back Application default/store: admission webhook "`+oamwebhook.ApplicationWebhookName+
		`" denied the request: application default/store is invalid: spec.components[0].properties.engine: `+
		`is immutable (marked +immutable in component "db") and cannot be removed; it was "pg"`, r.err.Error())
	got := &v1beta1.Application{}
	require.NoError(t, c.Get(ctx, key, got))
	assert.JSONEq(t, `{"size":"2Gi","engine":"pg"}`, string(got.Spec.Components[0].Properties.Raw), "the refused rollback changed nothing")
}

// startManagerWithWebhook runs the controller on env with its validating
// webhooks (failure policy Fail), as `oamflow-controller` out of the
// cluster does, until the test ends. The namespace oamflow-system must
// exist. The API server calls a new webhook configuration only after a
// second or so: callers wait for a refusal before relying on it.
func startManagerWithWebhook(t *testing.T, env *envtest.Environment) {
	t.Helper()
	o := manager.DefaultOptions()
	o.MetricsAddr, o.ProbeAddr = "0", "0"
	o.Webhook.Enabled = true
	o.Webhook.Port = freeTCPPort(t)
	o.Webhook.FailurePolicy = string(admissionregistrationv1.Fail)
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- manager.Run(mctx, env.Config, o) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err, "manager.Run")
		case <-time.After(30 * time.Second):
			t.Error("the manager did not stop within 30 s")
		}
	})
}

// freeTCPPort returns a TCP port free on 127.0.0.1 right now.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
