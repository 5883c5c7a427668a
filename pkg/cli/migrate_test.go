package cli

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/testing/corpus"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

// TestMigrateFromKubeVela is issue 24's acceptance of `migrate
// from-kubevela`: over what KubeVela v1.11 left (kubevela-state) both
// Applications are adoptable with no change (exit 0); an Application
// using a Terraform component, or a vela-core still running, exit 1.
func TestMigrateFromKubeVela(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1beta1.AddToScheme(s))
	env := envtest.New(t, envtest.WithCRDs("charts/oamflow/crds"), envtest.WithScheme(s))
	ctx := context.Background()
	c := env.Client
	for _, ns := range []string{"vela-system", "oamflow-system", "infra"} {
		require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	corpus.LoadKubeVelaState(t, c, "applications-and-revisions.yaml", "resourcetrackers.yaml", "workloads.yaml", "configmaps.yaml")
	e := &cliEnv{env: env, c: c, kubeconfig: writeKubeconfig(t, env.Config)}

	res := e.run("", "migrate", "from-kubevela", "--dry-run", "-n", "shop")
	t.Log(res.out)
	require.Equal(t, ExitOK, res.code, "%v\n%s", res.err, res.out)
	assert.Contains(t, res.out, "shop/settings: adoptable, 0 changes (2 objects)")
	assert.Contains(t, res.out, "shop/storefront: adoptable, 0 changes (3 objects)")
	assert.Contains(t, res.out, "2 Applications: 2 adoptable with no change, 0 would change, 0 not supported")

	// KubeVela's revisions are the history oamflow shows.
	res = e.run("", "revision", "list", "storefront", "-n", "shop")
	require.Equal(t, ExitOK, res.code, "%v", res.err)
	assert.Contains(t, res.out, "storefront-v1")
	assert.Contains(t, res.out, "storefront-v2")
	t.Log(res.out)

	// Scaled by hand since: oamflow's render would set it back.
	scale := []byte(`{"spec":{"replicas":5}}`)
	frontend := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "frontend"}}
	require.NoError(t, c.Patch(ctx, frontend, client.RawPatch(types.MergePatchType, scale), client.FieldOwner("kubectl")))
	res = e.run("", "migrate", "from-kubevela", "--dry-run", "-n", "shop")
	t.Log(res.out)
	assert.Equal(t, ExitUserError, res.code, "differences exit 1")
	assert.Contains(t, res.out, "shop/storefront: would re-render differently (1 change)")
	assert.Contains(t, res.out, "Deployment shop/frontend:\n      spec.replicas: 5 -> 3")
	require.NoError(t, c.Patch(ctx, frontend, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`)), client.FieldOwner("kubevela")))

	// A Terraform component (KubeVela's alibaba-rds kind of definition;
	// its terraform schematic is pruned by oamflow's schema, its workload
	// says what it is).
	tf := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "core.oam.dev/v1beta1", "kind": "ComponentDefinition",
		"metadata": map[string]any{"name": "alibaba-rds", "namespace": "vela-system"},
		"spec": map[string]any{
			"workload":  map[string]any{"definition": map[string]any{"apiVersion": "terraform.core.oam.dev/v1beta2", "kind": "Configuration"}},
			"schematic": map[string]any{"terraform": map[string]any{"configuration": "resource \"x\" \"y\" {}"}},
		},
	}}
	require.NoError(t, c.Create(ctx, tf))
	db := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "infra"}}
	db.Spec.Components = []common.ApplicationComponent{{Name: "orders-db", Type: "alibaba-rds"}}
	require.NoError(t, c.Create(ctx, db))
	res = e.run("", "migrate", "from-kubevela", "--dry-run", "-n", "infra")
	t.Log(res.out)
	assert.Equal(t, ExitUserError, res.code, "%v", res.err)
	assert.Contains(t, res.out, "infra/db: not supported")
	assert.Contains(t, res.out, `component "orders-db" (type "alibaba-rds") is a Terraform component`)

	// vela-core still running: nothing is changed.
	core := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "kubevela-vela-core", Namespace: "vela-system"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "vela-core"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "vela-core"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kubevela", Image: "oamdev/vela-core:v1.11.0"}}}}}}
	require.NoError(t, c.Create(ctx, core))
	cluster := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: "vela-system",
		Labels: map[string]string{v1beta1.LabelClusterCredType: "ServiceAccountToken", "region": "eu"}},
		Data: map[string][]byte{"endpoint": []byte("https://edge.example.com:6443"), "token": []byte("t0ken")}}
	require.NoError(t, c.Create(ctx, cluster))
	res = e.run("", "migrate", "from-kubevela", "-n", "shop")
	t.Log(res.out)
	assert.Equal(t, ExitUserError, res.code)
	assert.Contains(t, res.out, "vela-core is running (Deployment vela-system/kubevela-vela-core has replicas)")
	require.Error(t, c.Get(ctx, client.ObjectKey{Namespace: "oamflow-system", Name: "edge"}, &corev1.Secret{}), "nothing registered")

	// Stopped: clusters are registered and the Applications marked.
	core.Spec.Replicas = ptr.To(int32(0))
	require.NoError(t, c.Update(ctx, core))
	res = e.run("", "migrate", "from-kubevela", "-n", "shop")
	t.Log(res.out)
	require.Equal(t, ExitOK, res.code, "%v\n%s", res.err, res.out)
	assert.Contains(t, res.out, "cluster edge: registered")
	assert.Contains(t, res.out, "shop/storefront: marked for adoption")
	got := &corev1.Secret{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "oamflow-system", Name: "edge"}, got))
	assert.Equal(t, cluster.Data, got.Data)
	assert.Equal(t, "eu", got.Labels["region"])
	app := &v1beta1.Application{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "storefront"}, app))
	assert.Contains(t, app.Finalizers, v1beta1.FinalizerResourceTracker)
	assert.Equal(t, int64(1), app.Generation, "the spec is untouched")
}
