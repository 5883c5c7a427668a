package resourcekeeper

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/errclass"
	"github.com/oamflow/oamflow/pkg/multicluster"
)

func TestApplyRecordsAndWrites(t *testing.T) {
	f := newFixture(t)
	app := f.app("shop")
	k := f.keeper(app, 1)
	require.NoError(t, k.Apply(f.t.Context(), "", objs(deployment(app, 1, "web", "web"), service(app, 1, "web", "web"))))

	d := f.get("apps/v1", "Deployment", "web")
	require.NotNil(t, d)
	assert.Equal(t, "shop", d.GetLabels()[v1beta1.LabelAppName])
	assert.Equal(t, f.ns, d.GetLabels()[v1beta1.LabelAppNamespace])
	assert.NotEmpty(t, d.GetAnnotations()[AnnoAppliedHash])
	assert.True(t, managedByUs(d), "written by server-side apply with field manager oamflow")
	require.NotNil(t, f.get("v1", "Service", "web"))

	rt := f.tracker(VersionedTrackerName("shop", f.ns, 1))
	require.NotNil(t, rt, "versioned tracker <app>-v<N>-<namespace>")
	assert.Equal(t, v1beta1.ResourceTrackerTypeVersioned, rt.Spec.Type)
	require.Len(t, rt.Spec.ManagedResources, 2)
	got := rt.Spec.ManagedResources
	assert.Equal(t, common.ClusterObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: f.ns, Name: "web"}, got[0].ClusterObjectReference)
	assert.Equal(t, "web", got[0].Component)
	assert.Empty(t, got[0].Trait)
	assert.Equal(t, "expose", got[1].Trait)
	assert.NotNil(t, got[0].Data)

	refs, err := k.AppliedResources(f.t.Context())
	require.NoError(t, err)
	assert.Len(t, refs, 2)

	f.counter.reset()
	require.NoError(t, k.Apply(f.t.Context(), "local", objs(deployment(app, 1, "web", "web"), service(app, 1, "web", "web"))))
	assert.Zero(t, f.counter.writes.Load(), "applying unchanged objects again writes nothing")
}

func TestOwnership(t *testing.T) {
	shared := Policies{SharedResource: []SelectorRule{{Selector: ResourceSelector{ResourceTypes: []string{"ConfigMap"}}}}}
	takeOver := Policies{TakeOver: []SelectorRule{{Selector: ResourceSelector{ResourceNames: []string{"cfg"}}}}}

	t.Run("a second Application is refused with an error naming the owner", func(t *testing.T) {
		f := newFixture(t)
		a, b := f.app("alpha"), f.app("beta")
		require.NoError(t, f.keeper(a, 1).Apply(f.t.Context(), "", objs(configMap(a, 1, "c", "cfg"))))
		err := f.keeper(b, 1).Apply(f.t.Context(), "", objs(configMap(b, 1, "c", "cfg"), configMap(b, 1, "c", "other")))
		var oe *OwnershipError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, "alpha", oe.OwnerName)
		assert.Equal(t, f.ns, oe.OwnerNamespace)
		assert.Contains(t, err.Error(), "ConfigMap "+f.ns+"/cfg is owned by Application "+f.ns+"/alpha")
		assert.Nil(t, f.tracker(VersionedTrackerName("beta", f.ns, 1)), "nothing tracked")
		assert.Nil(t, f.get("v1", "ConfigMap", "other"), "nothing written when one object is refused")
		assert.Equal(t, "alpha", f.get("v1", "ConfigMap", "cfg").GetLabels()[v1beta1.LabelAppName])
	})

	t.Run("an object not created by oamflow is refused, even with our labels", func(t *testing.T) {
		f := newFixture(t)
		a := f.app("alpha")
		pre := configMap(a, 1, "c", "cfg")
		require.NoError(t, env.Client.Create(f.t.Context(), pre))
		err := f.keeper(a, 1).Apply(f.t.Context(), "", objs(configMap(a, 1, "c", "cfg")))
		var oe *OwnershipError
		require.ErrorAs(t, err, &oe)
		assert.Empty(t, oe.OwnerName)
		assert.Contains(t, err.Error(), "not managed by any Application")
	})

	t.Run("take-over adopts an unmanaged object, never one owned by another Application", func(t *testing.T) {
		f := newFixture(t)
		a, b := f.app("alpha"), f.app("beta")
		require.NoError(t, env.Client.Create(f.t.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: f.ns}, Data: map[string]string{"user": "data"}}))
		require.NoError(t, f.keeper(a, 1, takeOver).Apply(f.t.Context(), "", objs(configMap(a, 1, "c", "cfg"))))
		live := f.get("v1", "ConfigMap", "cfg")
		assert.Equal(t, "alpha", live.GetLabels()[v1beta1.LabelAppName])
		assert.Equal(t, map[string]any{"key": "value", "user": "data"}, live.Object["data"], "fields of the old manager stay")

		err := f.keeper(b, 1, takeOver).Apply(f.t.Context(), "", objs(configMap(b, 1, "c", "cfg", withField("stolen", "data", "key"))))
		var oe *OwnershipError
		require.ErrorAs(t, err, &oe)
		assert.True(t, oe.TakeOver)
		assert.Equal(t, "alpha", oe.OwnerName)
		assert.Contains(t, err.Error(), "take-over adopts only objects that belong to no Application")
		after := f.get("v1", "ConfigMap", "cfg")
		assert.Equal(t, "alpha", after.GetLabels()[v1beta1.LabelAppName], "the owner stays")
		assert.Equal(t, live.Object["data"], after.Object["data"], "nothing written")
		assert.Nil(t, f.tracker(VersionedTrackerName("beta", f.ns, 1)), "nothing tracked")
	})

	t.Run("shared-resource: both succeed, deleting one keeps the object for the other", func(t *testing.T) {
		f := newFixture(t)
		a, b := f.app("alpha"), f.app("beta")
		ka, kb := f.keeper(a, 1, shared), f.keeper(b, 1, shared)
		require.NoError(t, ka.Apply(f.t.Context(), "", objs(configMap(a, 1, "c", "cfg"))))
		require.NoError(t, kb.Apply(f.t.Context(), "", objs(configMap(b, 1, "c", "cfg"))))
		live := f.get("v1", "ConfigMap", "cfg")
		assert.Equal(t, f.ns+"/alpha,"+f.ns+"/beta", live.GetAnnotations()[AnnoSharedBy])
		assert.Equal(t, "alpha", live.GetLabels()[v1beta1.LabelAppName], "the first stays the owner")

		f.counter.reset()
		require.NoError(t, ka.StateKeep(f.t.Context()))
		require.NoError(t, kb.StateKeep(f.t.Context()))
		assert.Zero(t, f.counter.writes.Load(), "sharers do not fight over the object")

		done, err := ka.Delete(f.t.Context())
		require.NoError(t, err)
		assert.True(t, done)
		live = f.get("v1", "ConfigMap", "cfg")
		require.NotNil(t, live, "the other sharer keeps it")
		assert.Equal(t, "beta", live.GetLabels()[v1beta1.LabelAppName], "handed over to the next sharer")
		assert.Equal(t, f.ns+"/beta", live.GetAnnotations()[AnnoSharedBy])

		done, err = kb.Delete(f.t.Context())
		require.NoError(t, err)
		assert.True(t, done)
		assert.Nil(t, f.get("v1", "ConfigMap", "cfg"), "the last sharer deletes it")
	})

	t.Run("shared-resource: a sharer leaving keeps the object with its owner", func(t *testing.T) {
		f := newFixture(t)
		a, b := f.app("alpha"), f.app("beta")
		ka, kb := f.keeper(a, 1, shared), f.keeper(b, 1, shared)
		require.NoError(t, ka.Apply(f.t.Context(), "", objs(configMap(a, 1, "c", "cfg"))))
		require.NoError(t, kb.Apply(f.t.Context(), "", objs(configMap(b, 1, "c", "cfg"))))
		done, err := kb.Delete(f.t.Context())
		require.NoError(t, err)
		assert.True(t, done)
		live := f.get("v1", "ConfigMap", "cfg")
		require.NotNil(t, live)
		assert.Equal(t, "alpha", live.GetLabels()[v1beta1.LabelAppName])
		assert.Equal(t, f.ns+"/alpha", live.GetAnnotations()[AnnoSharedBy])
	})

	t.Run("shared-resource needs the owner to share too", func(t *testing.T) {
		f := newFixture(t)
		a, b := f.app("alpha"), f.app("beta")
		require.NoError(t, f.keeper(a, 1).Apply(f.t.Context(), "", objs(configMap(a, 1, "c", "cfg"))))
		var oe *OwnershipError
		require.ErrorAs(t, f.keeper(b, 1, shared).Apply(f.t.Context(), "", objs(configMap(b, 1, "c", "cfg"))), &oe)
	})
}

func TestReadOnly(t *testing.T) {
	f := newFixture(t)
	app := f.app("ro")
	p := Policies{ReadOnly: []SelectorRule{{Selector: ResourceSelector{ResourceNames: []string{"cfg"}}}}}
	k := f.keeper(app, 1, p)

	err := k.Apply(f.t.Context(), "", objs(configMap(app, 1, "c", "cfg")))
	var me *ReadOnlyMissingError
	require.ErrorAs(t, err, &me)
	assert.Contains(t, err.Error(), "read-only")

	require.NoError(t, env.Client.Create(f.t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: f.ns}, Data: map[string]string{"mine": "yes"}}))
	f.counter.reset()
	require.NoError(t, k.Apply(f.t.Context(), "", objs(configMap(app, 1, "c", "cfg"))))
	assert.Zero(t, f.counter.writes.Load(), "read-only objects are only read")
	live := f.get("v1", "ConfigMap", "cfg")
	assert.Equal(t, map[string]any{"mine": "yes"}, live.Object["data"])
	assert.Empty(t, live.GetLabels())
}

func TestApplyOnce(t *testing.T) {
	t.Run("listed paths keep their live values on update, others follow the new revision", func(t *testing.T) {
		f := newFixture(t)
		app := f.app("once")
		p := Policies{ApplyOnce: &ApplyOncePolicy{Enable: true, Rules: []ApplyOnceRule{{
			Selector: ResourceSelector{ResourceTypes: []string{"Deployment"}},
			Strategy: ApplyOnceStrategy{Path: []string{"spec.replicas"}},
		}}}}
		require.NoError(t, f.keeper(app, 1, p).Apply(f.t.Context(), "", objs(deployment(app, 1, "web", "web"))))
		scale(t, f, "web", 5)

		k2 := f.keeper(app, 2, p)
		require.NoError(t, k2.Apply(f.t.Context(), "", objs(deployment(app, 2, "web", "web",
			withField(int64(3), "spec", "replicas"), withImage("nginx:1.28")))))
		live := f.get("apps/v1", "Deployment", "web")
		assert.Equal(t, int64(5), replicas(live), "kept at the live value")
		assert.Equal(t, "nginx:1.28", image(live), "the rest follows the new revision")

		scale(t, f, "web", 7)
		require.NoError(t, k2.StateKeep(f.t.Context()))
		assert.Equal(t, int64(7), replicas(f.get("apps/v1", "Deployment", "web")), "state-keep leaves it too (affect always)")
	})

	t.Run("the whole object is applied once", func(t *testing.T) {
		f := newFixture(t)
		app := f.app("once")
		p := Policies{ApplyOnce: &ApplyOncePolicy{Enable: true}}
		require.NoError(t, f.keeper(app, 1, p).Apply(f.t.Context(), "", objs(deployment(app, 1, "web", "web"))))
		scale(t, f, "web", 4)
		f.counter.reset()
		require.NoError(t, f.keeper(app, 2, p).Apply(f.t.Context(), "", objs(deployment(app, 2, "web", "web", withImage("nginx:1.28")))))
		live := f.get("apps/v1", "Deployment", "web")
		assert.Equal(t, int64(4), replicas(live))
		assert.Equal(t, "nginx:1.27", image(live))
		assert.EqualValues(t, 1, f.counter.writes.Load(), "only the tracker of revision 2 is written")
	})

	t.Run("affect onUpdate: state-keep repairs the path", func(t *testing.T) {
		f := newFixture(t)
		app := f.app("once")
		p := Policies{ApplyOnce: &ApplyOncePolicy{Enable: true, Rules: []ApplyOnceRule{{
			Strategy: ApplyOnceStrategy{Path: []string{"spec.replicas"}, Affect: AffectOnUpdate},
		}}}}
		k := f.keeper(app, 1, p)
		require.NoError(t, k.Apply(f.t.Context(), "", objs(deployment(app, 1, "web", "web"))))
		scale(t, f, "web", 9)
		require.NoError(t, k.StateKeep(f.t.Context()))
		assert.Equal(t, int64(2), replicas(f.get("apps/v1", "Deployment", "web")))
	})
}

func TestResourceUpdate(t *testing.T) {
	t.Run("replace drops fields others added", func(t *testing.T) {
		f := newFixture(t)
		app := f.app("upd")
		p := Policies{ResourceUpdate: []ResourceUpdateRule{{Strategy: ResourceUpdateStrategy{Op: UpdateOpReplace}}}}
		require.NoError(t, f.keeper(app, 1, p).Apply(f.t.Context(), "", objs(configMap(app, 1, "c", "cfg"))))
		cm := &corev1.ConfigMap{}
		require.NoError(t, env.Client.Get(f.t.Context(), client.ObjectKey{Namespace: f.ns, Name: "cfg"}, cm))
		cm.Data["extra"] = "x"
		require.NoError(t, env.Client.Update(f.t.Context(), cm, client.FieldOwner("someone")))

		require.NoError(t, f.keeper(app, 2, p).Apply(f.t.Context(), "", objs(configMap(app, 2, "c", "cfg"))))
		assert.Equal(t, map[string]any{"key": "value"}, f.get("v1", "ConfigMap", "cfg").Object["data"])
	})

	t.Run("a changed recreate field deletes and re-creates the object", func(t *testing.T) {
		f := newFixture(t)
		app := f.app("upd")
		p := Policies{ResourceUpdate: []ResourceUpdateRule{{Strategy: ResourceUpdateStrategy{RecreateFields: []string{"data.key"}}}}}
		require.NoError(t, f.keeper(app, 1, p).Apply(f.t.Context(), "", objs(configMap(app, 1, "c", "cfg"))))
		uid := f.get("v1", "ConfigMap", "cfg").GetUID()

		require.NoError(t, f.keeper(app, 2, p).Apply(f.t.Context(), "", objs(configMap(app, 2, "c", "cfg", withField("other", "data", "more")))))
		assert.Equal(t, uid, f.get("v1", "ConfigMap", "cfg").GetUID(), "other fields are patched")

		require.NoError(t, f.keeper(app, 3, p).Apply(f.t.Context(), "", objs(configMap(app, 3, "c", "cfg", withField("changed", "data", "key")))))
		live := f.get("v1", "ConfigMap", "cfg")
		assert.NotEqual(t, uid, live.GetUID(), "re-created")
		assert.Equal(t, "changed", live.Object["data"].(map[string]any)["key"])
	})
}

func TestGarbageCollect(t *testing.T) {
	t.Run("removes exactly the dropped object, not a look-alike nor one now owned by another app", func(t *testing.T) {
		f := newFixture(t)
		app, other := f.app("shop"), f.app("other")
		require.NoError(t, f.keeper(app, 1).Apply(f.t.Context(), "", objs(
			deployment(app, 1, "web", "web"), deployment(app, 1, "worker", "worker"), configMap(app, 1, "worker", "taken"))))
		// A Deployment nobody tracks, carrying the same labels.
		unrelated := deployment(app, 1, "worker", "unrelated")
		require.NoError(t, env.Client.Create(f.t.Context(), unrelated))
		// Another Application owns one object now (as a shared-resource
		// hand-over leaves it).
		f.giveTo("v1", "ConfigMap", "taken", other)

		k2 := f.keeper(app, 2)
		require.NoError(t, k2.Apply(f.t.Context(), "", objs(deployment(app, 2, "web", "web"))))
		done, err := k2.GarbageCollect(f.t.Context())
		require.NoError(t, err)
		assert.True(t, done)

		assert.Nil(t, f.get("apps/v1", "Deployment", "worker"), "dropped by revision 2")
		assert.NotNil(t, f.get("apps/v1", "Deployment", "web"), "still in the current revision")
		assert.NotNil(t, f.get("apps/v1", "Deployment", "unrelated"), "never tracked")
		taken := f.get("v1", "ConfigMap", "taken")
		require.NotNil(t, taken, "owned by another Application now")
		assert.Equal(t, "other", taken.GetLabels()[v1beta1.LabelAppName])
		assert.Nil(t, f.tracker(VersionedTrackerName("shop", f.ns, 1)), "the collected tracker is dropped")
		assert.NotNil(t, f.tracker(VersionedTrackerName("shop", f.ns, 2)))

		f.counter.reset()
		done, err = k2.GarbageCollect(f.t.Context())
		require.NoError(t, err)
		assert.True(t, done)
		assert.Zero(t, f.counter.writes.Load(), "nothing left to collect: no writes")
	})

	t.Run("orphan propagation keeps the object without our labels", func(t *testing.T) {
		f := newFixture(t)
		app := f.app("shop")
		p := Policies{GarbageCollect: &GarbageCollectPolicy{Rules: []GarbageCollectRule{{
			Selector: ResourceSelector{ComponentNames: []string{"worker"}}, Propagation: GCPropagationOrphan}}}}
		require.NoError(t, f.keeper(app, 1, p).Apply(f.t.Context(), "", objs(deployment(app, 1, "web", "web"), deployment(app, 1, "worker", "worker"))))
		k2 := f.keeper(app, 2, p)
		require.NoError(t, k2.Apply(f.t.Context(), "", objs(deployment(app, 2, "web", "web"))))
		done, err := k2.GarbageCollect(f.t.Context())
		require.NoError(t, err)
		assert.True(t, done)
		live := f.get("apps/v1", "Deployment", "worker")
		require.NotNil(t, live)
		for _, l := range []string{v1beta1.LabelAppName, v1beta1.LabelAppNamespace, v1beta1.LabelAppComponent, v1beta1.LabelAppRevision} {
			assert.NotContains(t, live.GetLabels(), l)
		}
		assert.NotContains(t, live.GetAnnotations(), AnnoAppliedHash)
	})

	t.Run("onAppDelete and keepLegacyResource keep the object until the app is deleted; never keeps it for good", func(t *testing.T) {
		f := newFixture(t)
		app := f.app("shop")
		p := Policies{GarbageCollect: &GarbageCollectPolicy{Rules: []GarbageCollectRule{
			{Selector: ResourceSelector{ResourceNames: []string{"keep-until-delete"}}, Strategy: GCOnAppDelete},
			{Selector: ResourceSelector{ResourceNames: []string{"keep-forever"}}, Strategy: GCNever},
		}}}
		require.NoError(t, f.keeper(app, 1, p).Apply(f.t.Context(), "", objs(
			configMap(app, 1, "c", "keep-until-delete"), configMap(app, 1, "c", "keep-forever"), configMap(app, 1, "c", "current"))))
		k2 := f.keeper(app, 2, p)
		require.NoError(t, k2.Apply(f.t.Context(), "", objs(configMap(app, 2, "c", "current"))))
		done, err := k2.GarbageCollect(f.t.Context())
		require.NoError(t, err)
		assert.True(t, done)
		assert.NotNil(t, f.get("v1", "ConfigMap", "keep-until-delete"))
		assert.NotNil(t, f.get("v1", "ConfigMap", "keep-forever"))
		root := f.tracker(RootTrackerName("shop", f.ns))
		require.NotNil(t, root)
		assert.Len(t, root.Spec.ManagedResources, 2)
		assert.Nil(t, f.tracker(VersionedTrackerName("shop", f.ns, 1)))

		done, err = k2.Delete(f.t.Context())
		require.NoError(t, err)
		assert.True(t, done)
		assert.Nil(t, f.get("v1", "ConfigMap", "keep-until-delete"))
		assert.Nil(t, f.get("v1", "ConfigMap", "current"))
		assert.NotNil(t, f.get("v1", "ConfigMap", "keep-forever"))
		assert.Nil(t, f.tracker(RootTrackerName("shop", f.ns)))

		f2 := newFixture(t)
		app = f2.app("legacy")
		keep := Policies{GarbageCollect: &GarbageCollectPolicy{KeepLegacyResource: true}}
		require.NoError(t, f2.keeper(app, 1, keep).Apply(f2.t.Context(), "", objs(configMap(app, 1, "c", "old"))))
		k2 = f2.keeper(app, 2, keep)
		require.NoError(t, k2.Apply(f2.t.Context(), "", objs(configMap(app, 2, "c", "new"))))
		done, err = k2.GarbageCollect(f2.t.Context())
		require.NoError(t, err)
		assert.True(t, done)
		assert.NotNil(t, f2.get("v1", "ConfigMap", "old"))
	})

	t.Run("cascading deletes in the foreground and waits", func(t *testing.T) {
		f := newFixture(t)
		app := f.app("shop")
		p := Policies{GarbageCollect: &GarbageCollectPolicy{Rules: []GarbageCollectRule{{Propagation: GCPropagationCascading}}}}
		require.NoError(t, f.keeper(app, 1, p).Apply(f.t.Context(), "", objs(deployment(app, 1, "worker", "worker"))))
		k2 := f.keeper(app, 2, p)
		require.NoError(t, k2.Apply(f.t.Context(), "", objs(deployment(app, 2, "web", "web"))))
		done, err := k2.GarbageCollect(f.t.Context())
		require.NoError(t, err)
		// envtest runs no garbage collector: the foreground finalizer stays.
		assert.False(t, done)
		live := f.get("apps/v1", "Deployment", "worker")
		require.NotNil(t, live)
		assert.NotNil(t, live.GetDeletionTimestamp())
		assert.Contains(t, live.GetFinalizers(), metav1.FinalizerDeleteDependents)
		assert.NotNil(t, f.tracker(VersionedTrackerName("shop", f.ns, 1)), "kept until the object is gone")

		removeFinalizers(t, f, "worker")
		done, err = k2.GarbageCollect(f.t.Context())
		require.NoError(t, err)
		assert.True(t, done)
		assert.Nil(t, f.tracker(VersionedTrackerName("shop", f.ns, 1)))
	})

	t.Run("dependency order deletes dependents first", func(t *testing.T) {
		f := newFixture(t)
		app := f.app("shop", func(a *v1beta1.Application) {
			a.Spec.Components = []common.ApplicationComponent{{Name: "web", Type: "webservice"}}
		})
		p := Policies{GarbageCollect: &GarbageCollectPolicy{Order: GCOrderDependency}}
		require.NoError(t, f.keeper(app, 1, p).Apply(f.t.Context(), "", objs(
			configMap(app, 1, "db", "db"), configMap(app, 1, "api", "api", func(u *unstructured.Unstructured) { u.SetFinalizers([]string{"example.com/hold"}) }))))
		// Revision 2 dropped api (which depended on db) and db.
		k2, err := New(app, 2, Options{Clients: multicluster.HubOnly{Hub: f.c}, Policies: p, Dependencies: map[string][]string{"api": {"db"}}})
		require.NoError(t, err)
		require.NoError(t, k2.Apply(f.t.Context(), "", objs(configMap(app, 2, "web", "web"))))

		done, err := k2.GarbageCollect(f.t.Context())
		require.NoError(t, err)
		assert.False(t, done)
		assert.NotNil(t, f.get("v1", "ConfigMap", "api").GetDeletionTimestamp(), "the dependent is being deleted")
		assert.Nil(t, f.get("v1", "ConfigMap", "db").GetDeletionTimestamp(), "its dependency waits")

		removeFinalizers(t, f, "api")
		done, err = k2.GarbageCollect(f.t.Context())
		require.NoError(t, err)
		assert.True(t, done)
		assert.Nil(t, f.get("v1", "ConfigMap", "db"))
	})

	t.Run("continueOnFailure collects the others", func(t *testing.T) {
		// A tracked object in a cluster that cannot be reached fails; the
		// hub object is still collected.
		f := newFixture(t)
		app := f.app("shop")
		p := Policies{GarbageCollect: &GarbageCollectPolicy{ContinueOnFailure: true}}
		require.NoError(t, f.keeper(app, 1, p).Apply(f.t.Context(), "", objs(configMap(app, 1, "c", "gone"))))
		rt := f.tracker(VersionedTrackerName("shop", f.ns, 1))
		rt.Spec.ManagedResources = append([]v1beta1.ManagedResource{{ClusterObjectReference: common.ClusterObjectReference{
			Cluster: "edge", APIVersion: "v1", Kind: "ConfigMap", Namespace: f.ns, Name: "far"}, Component: "c"}}, rt.Spec.ManagedResources...)
		require.NoError(t, env.Client.Update(f.t.Context(), rt))

		k2 := f.keeper(app, 2, p)
		require.NoError(t, k2.Apply(f.t.Context(), "", objs(configMap(app, 2, "c", "current"))))
		done, err := k2.GarbageCollect(f.t.Context())
		require.Error(t, err)
		assert.Contains(t, err.Error(), `cluster "edge" is not registered`)
		assert.False(t, done)
		assert.Nil(t, f.get("v1", "ConfigMap", "gone"))
		assert.NotNil(t, f.get("v1", "ConfigMap", "current"))
		assert.NotNil(t, f.tracker(VersionedTrackerName("shop", f.ns, 1)), "kept: one object is not collected yet")
	})
}

func TestDelete(t *testing.T) {
	f := newFixture(t)
	app := f.app("shop")
	require.NoError(t, f.keeper(app, 1).Apply(f.t.Context(), "", objs(deployment(app, 1, "worker", "worker"), configMap(app, 1, "c", "cfg"))))
	k2 := f.keeper(app, 2)
	require.NoError(t, k2.Apply(f.t.Context(), "", objs(deployment(app, 2, "web", "web"), service(app, 2, "web", "web"))))
	unrelated := deployment(app, 1, "web", "unrelated")
	require.NoError(t, env.Client.Create(f.t.Context(), unrelated))

	done, err := k2.Delete(f.t.Context())
	require.NoError(t, err)
	assert.True(t, done)
	for _, n := range []struct{ apiVersion, kind, name string }{
		{"apps/v1", "Deployment", "worker"}, {"v1", "ConfigMap", "cfg"}, {"apps/v1", "Deployment", "web"}, {"v1", "Service", "web"},
	} {
		assert.Nil(t, f.get(n.apiVersion, n.kind, n.name), "%s %s", n.kind, n.name)
	}
	assert.NotNil(t, f.get("apps/v1", "Deployment", "unrelated"), "a look-alike nobody tracked stays")
	var list v1beta1.ResourceTrackerList
	require.NoError(t, env.Client.List(f.t.Context(), &list, client.MatchingLabels{v1beta1.LabelAppName: "shop", v1beta1.LabelAppNamespace: f.ns}))
	assert.Empty(t, list.Items)

	done, err = k2.Delete(f.t.Context())
	require.NoError(t, err)
	assert.True(t, done, "idempotent")
}

// TestOrphanFinalizer: with KubeVela's orphan-resource finalizer on the
// Application, deleting it keeps every tracked object, strategy never
// included, without the Application's ownership labels, and drops the
// trackers; a revision's garbage collection orphans too.
func TestOrphanFinalizer(t *testing.T) {
	orphaning := func(a *v1beta1.Application) { a.Finalizers = []string{v1beta1.FinalizerOrphanResource} }
	ownedBy := func(t *testing.T, obj *unstructured.Unstructured) {
		t.Helper()
		for _, l := range ownershipLabels {
			assert.NotContains(t, obj.GetLabels(), l, "%s %s", obj.GetKind(), obj.GetName())
		}
		assert.NotContains(t, obj.GetAnnotations(), AnnoAppliedHash)
	}
	t.Run("delete keeps everything", func(t *testing.T) {
		f := newFixture(t)
		app := f.app("shop", orphaning)
		p := Policies{GarbageCollect: &GarbageCollectPolicy{Rules: []GarbageCollectRule{
			{Selector: ResourceSelector{ResourceNames: []string{"forever"}}, Strategy: GCNever},
		}}}
		require.NoError(t, f.keeper(app, 1, p).Apply(f.t.Context(), "", objs(deployment(app, 1, "worker", "worker"), configMap(app, 1, "c", "forever"))))
		k2 := f.keeper(app, 2, p)
		require.NoError(t, k2.Apply(f.t.Context(), "", objs(deployment(app, 2, "web", "web"), service(app, 2, "web", "web"))))

		done, err := k2.Delete(f.t.Context())
		require.NoError(t, err)
		assert.True(t, done)
		for _, n := range []struct{ apiVersion, kind, name string }{
			{"apps/v1", "Deployment", "worker"}, {"v1", "ConfigMap", "forever"}, {"apps/v1", "Deployment", "web"}, {"v1", "Service", "web"},
		} {
			live := f.get(n.apiVersion, n.kind, n.name)
			require.NotNil(t, live, "%s %s is kept", n.kind, n.name)
			assert.Nil(t, live.GetDeletionTimestamp())
			ownedBy(t, live)
		}
		var list v1beta1.ResourceTrackerList
		require.NoError(t, env.Client.List(f.t.Context(), &list, client.MatchingLabels{v1beta1.LabelAppName: "shop", v1beta1.LabelAppNamespace: f.ns}))
		assert.Empty(t, list.Items, "the trackers go")
	})
	t.Run("garbage collection orphans", func(t *testing.T) {
		f := newFixture(t)
		app := f.app("shop", orphaning)
		require.NoError(t, f.keeper(app, 1).Apply(f.t.Context(), "", objs(deployment(app, 1, "worker", "worker"), deployment(app, 1, "web", "web"))))
		k2 := f.keeper(app, 2)
		require.NoError(t, k2.Apply(f.t.Context(), "", objs(deployment(app, 2, "web", "web"))))
		done, err := k2.GarbageCollect(f.t.Context())
		require.NoError(t, err)
		assert.True(t, done)
		live := f.get("apps/v1", "Deployment", "worker")
		require.NotNil(t, live, "dropped by revision 2 but kept")
		ownedBy(t, live)
	})
}

func TestStateKeep(t *testing.T) {
	t.Run("a no-op state-keep issues zero write requests", func(t *testing.T) {
		f := newFixture(t)
		app := f.app("shop")
		k := f.keeper(app, 1)
		require.NoError(t, k.Apply(f.t.Context(), "", objs(deployment(app, 1, "web", "web"), service(app, 1, "web", "web"), configMap(app, 1, "web", "cfg"))))
		f.counter.reset()
		for range 3 {
			require.NoError(t, k.StateKeep(f.t.Context()))
		}
		assert.Zero(t, f.counter.writes.Load(), "no POST/PUT/PATCH/DELETE")
		assert.Positive(t, f.counter.reads.Load())
	})

	t.Run("drift is repaired, then state-keep is quiet again", func(t *testing.T) {
		f := newFixture(t)
		app := f.app("shop")
		k := f.keeper(app, 1)
		require.NoError(t, k.Apply(f.t.Context(), "", objs(deployment(app, 1, "web", "web"), configMap(app, 1, "web", "cfg"), configMap(app, 1, "web", "labels"))))

		scale(t, f, "web", 5)
		require.NoError(t, env.Client.Delete(f.t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: f.ns}}))
		cm := &corev1.ConfigMap{}
		require.NoError(t, env.Client.Get(f.t.Context(), client.ObjectKey{Namespace: f.ns, Name: "labels"}, cm))
		delete(cm.Labels, v1beta1.LabelAppComponent)
		require.NoError(t, env.Client.Update(f.t.Context(), cm, client.FieldOwner("kubectl-edit")))

		f.counter.reset()
		require.NoError(t, k.StateKeep(f.t.Context()))
		assert.EqualValues(t, 3, f.counter.writes.Load(), "one apply per drifted object")
		assert.Equal(t, int64(2), replicas(f.get("apps/v1", "Deployment", "web")))
		assert.NotNil(t, f.get("v1", "ConfigMap", "cfg"))
		assert.Equal(t, "web", f.get("v1", "ConfigMap", "labels").GetLabels()[v1beta1.LabelAppComponent])

		f.counter.reset()
		require.NoError(t, k.StateKeep(f.t.Context()))
		assert.Zero(t, f.counter.writes.Load())
	})

	t.Run("an object taken over by another Application is left alone", func(t *testing.T) {
		f := newFixture(t)
		app, other := f.app("shop"), f.app("other")
		k := f.keeper(app, 1)
		require.NoError(t, k.Apply(f.t.Context(), "", objs(configMap(app, 1, "c", "cfg"))))
		f.giveTo("v1", "ConfigMap", "cfg", other)
		require.NoError(t, f.keeper(other, 1).Apply(f.t.Context(), "", objs(configMap(other, 1, "c", "cfg", withField("theirs", "data", "key")))))
		f.counter.reset()
		require.NoError(t, k.StateKeep(f.t.Context()))
		assert.Zero(t, f.counter.writes.Load())
		assert.Equal(t, "theirs", f.get("v1", "ConfigMap", "cfg").Object["data"].(map[string]any)["key"])
	})
}

func TestNewValidates(t *testing.T) {
	_, err := New(&v1beta1.Application{}, 1, Options{})
	require.Error(t, err)
	_, err = New(&v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n"}}, 0, Options{})
	require.Error(t, err)
	_, err = New(&v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n"}}, 1, Options{})
	require.ErrorContains(t, err, "Options.Clients is required")
}

// scale sets a Deployment's replicas the way `kubectl scale` would (an
// Update by another field manager).
func scale(t *testing.T, f *fixture, name string, n int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	require.NoError(t, env.Client.Get(f.t.Context(), client.ObjectKey{Namespace: f.ns, Name: name}, d))
	d.Spec.Replicas = ptr.To(n)
	require.NoError(t, env.Client.Update(f.t.Context(), d, client.FieldOwner("kubectl-scale")))
}

func removeFinalizers(t *testing.T, f *fixture, name string) {
	t.Helper()
	for _, kind := range []client.Object{&appsv1.Deployment{}, &corev1.ConfigMap{}} {
		if err := env.Client.Get(f.t.Context(), client.ObjectKey{Namespace: f.ns, Name: name}, kind); err != nil {
			continue
		}
		kind.SetFinalizers(nil)
		require.NoError(t, env.Client.Update(f.t.Context(), kind))
	}
}

func replicas(u *unstructured.Unstructured) int64 {
	n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	return n
}

func image(u *unstructured.Unstructured) string {
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	return cs[0].(map[string]any)["image"].(string)
}

func withImage(img string) objMod {
	return func(u *unstructured.Unstructured) {
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		cs[0].(map[string]any)["image"] = img
		if err := unstructured.SetNestedSlice(u.Object, cs, "spec", "template", "spec", "containers"); err != nil {
			panic(err)
		}
	}
}

// TestNothingHalfApplied: when one object of an Apply cannot be written
// as rendered (it does not match its kind's schema, or is invalid), no
// other object of it is written either, and the error is terminal and
// names the object.
func TestNothingHalfApplied(t *testing.T) {
	cases := []struct {
		reason string
		bad    func(app *v1beta1.Application) *unstructured.Unstructured
		want   string
	}{
		{"a field of the wrong type (the API server's typed patch fails)", func(app *v1beta1.Application) *unstructured.Unstructured {
			cm := configMap(app, 1, "cfg", "bad")
			cm.Object["data"] = map[string]any{"x": int64(1)}
			return cm
		}, "applying ConfigMap"},
		{"an invalid object", func(app *v1beta1.Application) *unstructured.Unstructured {
			cm := configMap(app, 1, "cfg", "bad")
			cm.Object["data"] = map[string]any{"not a key!": "v"}
			return cm
		}, "applying ConfigMap"},
	}
	for i, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			f := newFixture(t)
			app := f.app(fmt.Sprintf("half-%d", i))
			k := f.keeper(app, 1)
			for _, order := range [][]string{{"good", "bad"}, {"bad", "good"}} {
				set := map[string]*unstructured.Unstructured{"good": configMap(app, 1, "cfg", "good"), "bad": tc.bad(app)}
				err := k.Apply(f.t.Context(), "", objs(set[order[0]], set[order[1]]))
				require.Error(t, err, "%v", order)
				assert.Contains(t, err.Error(), tc.want, "%v", order)
				assert.Contains(t, err.Error(), "bad", "the error names the object")
				assert.True(t, errclass.IsTerminal(err), "%v: retrying the same objects cannot help: %v", order, err)
				assert.Nil(t, f.get("v1", "ConfigMap", "good"), "%v: the good ConfigMap is not written", order)
			}
		})
	}
}
