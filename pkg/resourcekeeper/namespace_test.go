package resourcekeeper

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/pkg/errclass"
	"github.com/oamflow/oamflow/pkg/multicluster"
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

// TestKnownNamespaces: a namespace seen existing is not read again for
// the memory's length (what changes meanwhile is seen once it ends), and
// an apply failing because the remembered namespace is gone forgets it at
// once, so the next attempt reads it and says it is missing.
func TestKnownNamespaces(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	known := NewKnownNamespaces(30*time.Second, func() time.Time { return now })
	app := f.app("memo")
	keeper := func() *Keeper {
		k, err := New(app, 1, Options{Clients: multicluster.HubOnly{Hub: f.c}, Namespaces: known})
		require.NoError(t, err)
		return k
	}
	going := f.ns + "-going"
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: going}}))
	inGoing := objs(configMap(app, 1, "c", "cfg", func(u *unstructured.Unstructured) { u.SetNamespace(going) }))

	cases := []struct {
		reason  string
		advance time.Duration
		prepare func(t *testing.T)
		wantErr any
	}{
		{reason: "an existing namespace is read and remembered"},
		{reason: "while remembered, a namespace being deleted is not read", advance: 10 * time.Second,
			prepare: func(t *testing.T) {
				require.NoError(t, env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: going}}))
			}},
		{reason: "once the memory has passed it is read again, and seen terminating", advance: 30 * time.Second, wantErr: new(*NamespaceTerminatingError)},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			now = now.Add(tc.advance)
			if tc.prepare != nil {
				tc.prepare(t)
			}
			_, err := keeper().EnsureNamespaces(ctx, "", inGoing, false)
			if tc.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorAs(t, err, tc.wantErr)
		})
	}

	t.Run("an apply into a remembered namespace that is gone forgets it", func(t *testing.T) {
		gone := f.ns + "-never"
		known.saw("", gone)
		inGone := objs(configMap(app, 1, "c", "cfg2", func(u *unstructured.Unstructured) { u.SetNamespace(gone) }))
		_, err := keeper().EnsureNamespaces(ctx, "", inGone, false)
		require.NoError(t, err, "remembered: not read")
		require.Error(t, keeper().Apply(ctx, "", inGone), "the namespace does not exist")
		_, err = keeper().EnsureNamespaces(ctx, "", inGone, false)
		var missing *NamespaceMissingError
		require.ErrorAs(t, err, &missing, "read again and found missing")
	})
}
