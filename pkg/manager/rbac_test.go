package manager_test

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/localcluster"
	"github.com/oamflow/oamflow/pkg/manager"
)

// chartObjects renders charts/oamflow (release oamflow in oamflow-system)
// with the default values and returns the objects of the given kinds.
func chartObjects(t *testing.T, kinds ...string) []*unstructured.Unstructured {
	return chartRelease(t, "oamflow", nil, kinds...)
}

// chartRelease renders charts/oamflow as release in oamflow-system with
// values and returns the objects of the given kinds.
func chartRelease(t *testing.T, release string, values map[string]any, kinds ...string) []*unstructured.Unstructured {
	t.Helper()
	wd, err := filepath.Abs(".")
	require.NoError(t, err)
	root, err := localcluster.FindModuleRoot(wd)
	require.NoError(t, err)
	chrt, err := loader.Load(filepath.Join(root, "charts", "oamflow"))
	require.NoError(t, err)
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = release, "oamflow-system"
	install.KubeVersion = &chartutil.KubeVersion{Version: "v1.34.2", Major: "1", Minor: "34"}
	rel, err := install.Run(chrt, values)
	require.NoError(t, err)
	want := map[string]bool{}
	for _, k := range kinds {
		want[k] = true
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(rel.Manifest), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		if want[u.GetKind()] {
			objs = append(objs, u)
		}
	}
	return objs
}

// TestChartRBACIsEnough runs the controller as the chart's ServiceAccount
// (impersonated) with the chart's RBAC and flags-equivalent options
// (leader election, webhook with its certificate Secret): an Application
// deploys, runs and is deleted with what it deployed.
func TestChartRBACIsEnough(t *testing.T) {
	c := env.Client
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "oamflow-system"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	for _, obj := range chartObjects(t, "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration") {
		if strings.HasSuffix(obj.GetKind(), "WebhookConfiguration") {
			// The API server cannot reach a Service here: let writes
			// through when the call fails; the test checks the caBundle.
			hooks, _, _ := unstructured.NestedSlice(obj.Object, "webhooks")
			for _, h := range hooks {
				h.(map[string]any)["failurePolicy"] = "Ignore"
			}
			require.NoError(t, unstructured.SetNestedSlice(obj.Object, hooks, "webhooks"))
		}
		err := c.Create(ctx, obj)
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		require.NoError(t, err, "%s %s", obj.GetKind(), obj.GetName())
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:oamflow-system:oamflow-controller"}

	o := testOptions()
	o.LeaderElect = true
	o.LeaderElectionID = "rbac-test"
	o.Webhook.Enabled = true
	o.Webhook.Port = freePort(t)
	o.Webhook.Registration = manager.RegisterService
	o.Webhook.ServiceName = "oamflow-webhook"
	ctx2, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- manager.Run(ctx2, cfg, o) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("the manager did not stop")
		}
	})

	app := application(t, "rbac", `
components:
- name: settings
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: rbac}, data: {k: v}}]
`)
	require.NoError(t, c.Create(ctx, app))
	require.Eventually(t, func() bool {
		got := &v1beta1.Application{}
		return c.Get(ctx, client.ObjectKeyFromObject(app), got) == nil && got.Status.Phase == common.ApplicationRunning
	}, 60*time.Second, 200*time.Millisecond, "the Application runs under the chart's RBAC")
	// The generated certificate is shared through the Secret, and the
	// chart's configuration got its caBundle.
	secret := &corev1.Secret{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "oamflow-system", Name: o.Webhook.SecretName}, secret))
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "oamflow-webhook"}, vwc))
	for _, h := range vwc.Webhooks {
		require.Contains(t, string(h.ClientConfig.CABundle), strings.TrimSpace(string(secret.Data["ca.crt"])), h.Name)
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "oamflow-webhook"}, mwc))
	require.Len(t, mwc.Webhooks, 1)
	require.Contains(t, string(mwc.Webhooks[0].ClientConfig.CABundle), strings.TrimSpace(string(secret.Data["ca.crt"])), "the recorder's caBundle")
	deleteAndWait(t, app)
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "rbac"}, &corev1.ConfigMap{}))
	}, 30*time.Second, 200*time.Millisecond, "deleting the Application deletes its ConfigMap")
}
