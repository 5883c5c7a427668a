package resourcekeeper

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/pkg/errclass"
)

// TestEnsureNamespaces: a missing target namespace is waited for when it
// may not be created, and otherwise created, labelled for the app and
// recorded as skipGC before it exists; neither a new revision's garbage
// collection nor the Application's deletion removes it, while the app's
// objects in it go.
func TestEnsureNamespaces(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	app := f.app("edge")
	target := f.ns + "-team-x"
	inTarget := func(u *unstructured.Unstructured) { u.SetNamespace(target) }
	k := f.keeper(app, 1)
	objs := objs(deployment(app, 1, "web", "web", inTarget), configMap(app, 1, "web", "cfg", inTarget))

	created, err := k.EnsureNamespaces(ctx, "", objs, false)
	var missing *NamespaceMissingError
	require.True(t, errors.As(err, &missing), "a *NamespaceMissingError: %v", err)
	assert.Empty(t, created)
	assert.EqualError(t, err, `namespace "`+target+`" does not exist in cluster local and the topology sets createNamespace: false: waiting for it to be created`)
	assert.True(t, errclass.IsWaiting(err), "the step waits")
	assert.False(t, errclass.IsTerminal(err), "it is not terminal")
	ns := &corev1.Namespace{}
	require.True(t, client.IgnoreNotFound(env.Client.Get(ctx, client.ObjectKey{Name: target}, ns)) == nil && ns.Name == "", "not created")

	created, err = k.EnsureNamespaces(ctx, "", objs, true)
	require.NoError(t, err)
	assert.Equal(t, []string{target}, created)
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: target}, ns))
	assert.Equal(t, map[string]string{LabelCreatedBy: "oamflow", LabelCreatedForApp: "edge", LabelCreatedForNamespace: f.ns, "kubernetes.io/metadata.name": target}, ns.Labels)
	assert.Equal(t, f.ns+"/edge", ns.Annotations[AnnoCreatedFor])
	root := f.tracker(RootTrackerName(app.Name, app.Namespace))
	require.NotNil(t, root, "recorded in the root tracker")
	require.Len(t, root.Spec.ManagedResources, 1)
	assert.Equal(t, "Namespace", root.Spec.ManagedResources[0].Kind)
	assert.Equal(t, target, root.Spec.ManagedResources[0].Name)
	assert.True(t, root.Spec.ManagedResources[0].SkipGC, "never garbage-collected")

	created, err = k.EnsureNamespaces(ctx, "", objs, true)
	require.NoError(t, err)
	assert.Empty(t, created, "an existing namespace is left alone")
	require.NoError(t, k.Apply(ctx, "", objs))

	k2 := f.keeper(app, 2)
	require.NoError(t, k2.Apply(ctx, "", []*unstructured.Unstructured{configMap(app, 2, "other", "other")}))
	done, err := k2.GarbageCollect(ctx)
	require.NoError(t, err)
	assert.True(t, done)
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: target}, ns))
	assert.Nil(t, ns.DeletionTimestamp, "garbage collection keeps the namespace")

	done, err = k2.Delete(ctx)
	require.NoError(t, err)
	assert.True(t, done)
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: target}, ns))
	assert.Nil(t, ns.DeletionTimestamp, "deleting the app keeps the namespace")
	assert.Equal(t, "oamflow", ns.Labels[LabelCreatedBy])
	assert.Nil(t, f.tracker(RootTrackerName(app.Name, app.Namespace)), "the trackers go")
}

// TestEnsureNamespacesSkips: namespaces the objects create themselves and
// cluster-scoped objects need nothing; objects without a namespace go to
// the Application's, which exists.
func TestEnsureNamespacesSkips(t *testing.T) {
	f := newFixture(t)
	app := f.app("own")
	own := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": f.ns + "-own"}}}
	cm := configMap(app, 1, "c", "cfg")
	cm.SetNamespace(f.ns + "-own")
	plain := configMap(app, 1, "c", "plain")
	plain.SetNamespace("")
	created, err := f.keeper(app, 1).EnsureNamespaces(t.Context(), "", []*unstructured.Unstructured{own, cm, plain}, true)
	require.NoError(t, err)
	assert.Empty(t, created)
	assert.Nil(t, f.tracker(RootTrackerName(app.Name, app.Namespace)), "nothing recorded")
}
