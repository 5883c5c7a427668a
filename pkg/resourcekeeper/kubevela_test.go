package resourcekeeper

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/testing/corpus"
)

// loadKubeVelaState creates the objects of kubevela-state's file as
// they are (managedFields included; status, uid, resourceVersion and a
// Service's cluster IPs dropped, as the API server assigns them: the
// recorded IP may be taken by a Service another test made here).
func loadKubeVelaState(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpus.KubeVelaStateDir(t), file))
	require.NoError(t, err)
	var list struct {
		Items []map[string]any `json:"items"`
	}
	require.NoError(t, yaml.Unmarshal(b, &list))
	var out []*unstructured.Unstructured
	for _, item := range list.Items {
		u := &unstructured.Unstructured{Object: item}
		u.SetUID("")
		u.SetResourceVersion("")
		u.SetCreationTimestamp(metav1.Time{})
		delete(u.Object, "status")
		if u.GetKind() == "Service" {
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIPs")
		}
		require.NoError(t, env.Client.Create(context.Background(), u, client.FieldOwner("kubevela")), "creating %s %s", u.GetKind(), u.GetName())
		out = append(out, u)
	}
	return out
}

// TestAdoptKubeVela: what KubeVela v1.11 left for Application shop/storefront
// (zstd-compressed trackers, Deployments managed by "kubevela") is adopted in
// place, and what the next revision drops is collected through KubeVela's
// tracker.
func TestAdoptKubeVela(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}))
	loadKubeVelaState(t, "workloads.yaml")
	loadKubeVelaState(t, "resourcetrackers.yaml")

	// The render of revision 3 (orders removed): KubeVela's own render of
	// frontend, as its tracker recorded it.
	kv := &v1beta1.ResourceTracker{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: "storefront-v2-shop"}, kv))
	require.NoError(t, v1beta1.DecodeTracker(kv))
	var desired []*unstructured.Unstructured
	for _, e := range kv.Spec.ManagedResources {
		if e.Component == "frontend" {
			u := &unstructured.Unstructured{}
			require.NoError(t, json.Unmarshal(e.Data.Raw, &u.Object))
			desired = append(desired, u)
		}
	}
	require.Len(t, desired, 2)

	get := func(kind, apiVersion, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "shop", Name: name}, u); err != nil {
			require.NoError(t, client.IgnoreNotFound(err))
			return nil
		}
		return u
	}
	before := get("Deployment", "apps/v1", "frontend")
	t.Logf("managers before: %v", managers(before))

	app := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: "storefront", Namespace: "shop", Generation: 3}}
	k, err := New(app, 3, Options{Clients: multicluster.HubOnly{Hub: env.Client}})
	require.NoError(t, err)
	require.NoError(t, k.CheckTrackers(ctx))
	require.NoError(t, k.Apply(ctx, "", desired), "objects KubeVela applied for this Application are adopted")

	after := get("Deployment", "apps/v1", "frontend")
	require.Equal(t, before.GetUID(), after.GetUID(), "adopted in place, not re-created")
	// The same render changes nothing in the spec, so no rollout; the
	// annotations are left as they are (the hash goes in a label), so
	// the Deployment's metadata.generation, which counts annotation
	// changes, does not move either.
	require.Equal(t, before.Object["spec"], after.Object["spec"], "the same render changes nothing: no rollout")
	require.Equal(t, before.GetGeneration(), after.GetGeneration(), "annotations untouched: generation unchanged")
	require.Equal(t, before.GetAnnotations(), after.GetAnnotations())
	require.NotEmpty(t, after.GetLabels()[LabelAppliedHash])
	require.True(t, managedByUs(after))
	for _, mf := range after.GetManagedFields() {
		if mf.Manager == KubeVelaFieldManager && mf.Subresource == "" {
			require.NotContains(t, string(mf.FieldsV1.Raw), `"f:image"`, "what oamflow renders is no longer KubeVela's")
			require.Contains(t, string(mf.FieldsV1.Raw), AnnoKubeVelaLastApplied, "what it does not render stays KubeVela's")
		}
	}
	// A second apply of the same render finds it in sync: no write.
	rv := after.GetResourceVersion()
	require.NoError(t, k.Apply(ctx, "", desired))
	require.Equal(t, rv, get("Deployment", "apps/v1", "frontend").GetResourceVersion(), "in sync after adoption")

	done, err := k.GarbageCollect(ctx)
	require.NoError(t, err)
	require.True(t, done)
	require.Nil(t, get("Deployment", "apps/v1", "orders"), "what revision 3 dropped is collected through KubeVela's tracker")
	require.NotNil(t, get("Service", "v1", "frontend"))
	require.NotNil(t, get("Deployment", "apps/v1", "cache"), "another Application's object is never touched")
	gone := &v1beta1.ResourceTracker{}
	require.True(t, client.IgnoreNotFound(env.Client.Get(ctx, client.ObjectKey{Name: "storefront-v2-shop"}, gone)) == nil &&
		gone.Name == "", "KubeVela's collected tracker is deleted despite its finalizer")

	// Another Application never adopts settings' Deployment.
	other := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: "intruder", Namespace: "shop", Generation: 1}}
	ko, err := New(other, 1, Options{Clients: multicluster.HubOnly{Hub: env.Client}})
	require.NoError(t, err)
	cache := get("Deployment", "apps/v1", "cache")
	cache.SetManagedFields(nil)
	cache.SetResourceVersion("")
	err = ko.Apply(ctx, "", []*unstructured.Unstructured{cache})
	require.ErrorContains(t, err, "is owned by Application shop/settings")

	// An undecodable tracker leaves its Application untouched.
	bad := &v1beta1.ResourceTracker{ObjectMeta: metav1.ObjectMeta{Name: "settings-v9-shop",
		Labels: map[string]string{v1beta1.LabelAppName: "settings", v1beta1.LabelAppNamespace: "shop"}},
		Spec: v1beta1.ResourceTrackerSpec{Type: v1beta1.ResourceTrackerTypeVersioned, Compression: &v1beta1.Compression{Type: "zstd", Data: "aGVsbG8="}}}
	require.NoError(t, env.Client.Create(ctx, bad))
	settings := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "shop", Generation: 2}}
	ks, err := New(settings, 2, Options{Clients: multicluster.HubOnly{Hub: env.Client}})
	require.NoError(t, err)
	require.ErrorContains(t, ks.CheckTrackers(ctx), "ResourceTracker settings-v9-shop cannot be decoded")
	_, err = ks.GarbageCollect(ctx)
	require.ErrorContains(t, err, "cannot be decoded")
	require.NotNil(t, get("Deployment", "apps/v1", "cache"))
}

func managers(u *unstructured.Unstructured) []string {
	var out []string
	for _, mf := range u.GetManagedFields() {
		out = append(out, mf.Manager+"/"+string(mf.Operation))
	}
	return out
}
