package resourcekeeper

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// TestRebuildTakesOnlyWhatItMust: rebuilding a lost tracker, or looking
// for what no tracker lists when an Application is deleted, neither takes
// (and so deletes) an object it must not, nor leaks one it must find.
// Each case is an input a review found to break an earlier version.
func TestRebuildTakesOnlyWhatItMust(t *testing.T) {
	cases := []struct {
		reason string
		run    func(t *testing.T)
	}{
		{"a copy of an applied object (labels and applied hash copied) stays, tracker kept", func(t *testing.T) { reviewCopy(t, false) }},
		{"a copy of an applied object (labels and applied hash copied) stays, tracker lost", func(t *testing.T) { reviewCopy(t, true) }},
		{"what an earlier Application of the same name left on purpose stays, tracker kept", func(t *testing.T) { reviewNever(t, false) }},
		{"what an earlier Application of the same name left on purpose stays, tracker lost", func(t *testing.T) { reviewNever(t, true) }},
		{"a revision that applied nothing collects what the previous one applied", reviewEmptyRevisionCollects},
		{"an object kept in the root tracker goes with the Application when every tracker was lost", reviewRootTrackerLostLeaks},
		{"what an older revision dropped goes with the Application when its tracker was lost", reviewOldTrackerLostLeaks},
		{"a Helm release a never rule keeps stays installed, tracker kept", func(t *testing.T) { reviewReleaseRule(t, false) }},
		{"a Helm release a never rule keeps stays installed, tracker lost", func(t *testing.T) { reviewReleaseRule(t, true) }},
		{"the current tracker lost while an older one waits: nothing the current revision applies is collected", reviewRebuildWithOldTracker},
	}
	for _, c := range cases {
		t.Run(c.reason, c.run)
	}
}

// settle records, as the controller does once revision rev's workflow
// finished, what the revision applied in app's status.
func settle(app *v1beta1.Application, rev int64, refs []common.ClusterObjectReference) {
	app.Status.AppliedResources = refs
	app.Status.Workflow = &common.WorkflowStatus{AppRevision: fmt.Sprintf("%s-v%d", app.Name, rev), Finished: true}
}

func reviewCopy(t *testing.T, lose bool) {
	f := newFixture(t)
	ctx := t.Context()
	app := f.app("shop")
	k1 := f.keeper(app, 1)
	require.NoError(t, k1.Apply(ctx, "", objs(deployment(app, 1, "web", "web"))))
	refs, err := k1.AppliedResources(ctx)
	require.NoError(t, err)
	settle(app, 1, refs)

	cp := f.get("apps/v1", "Deployment", "web")
	cp.SetName("web-debug")
	cp.SetResourceVersion("")
	cp.SetUID("")
	cp.SetManagedFields(nil)
	cp.SetCreationTimestamp(cp.GetCreationTimestamp())
	require.NoError(t, env.Client.Create(ctx, cp))

	if lose {
		require.NoError(t, env.Client.DeleteAllOf(ctx, &v1beta1.ResourceTracker{}, client.MatchingLabels{v1beta1.LabelAppName: "shop", v1beta1.LabelAppNamespace: f.ns}))
	}
	k := f.keeper(app, 1)
	done, err := k.Delete(ctx)
	require.NoError(t, err)
	assert.True(t, done)
	t.Logf("rebuilt: %q", k.RebuiltTracker())
	assert.Nil(t, f.get("apps/v1", "Deployment", "web"))
	assert.NotNil(t, f.get("apps/v1", "Deployment", "web-debug"), "a copy oamflow never wrote must stay")
}

func reviewNever(t *testing.T, lose bool) {
	f := newFixture(t)
	ctx := t.Context()
	app := f.app("shop")
	p := Policies{GarbageCollect: &GarbageCollectPolicy{Rules: []GarbageCollectRule{
		{Selector: ResourceSelector{ResourceNames: []string{"keep-forever"}}, Strategy: GCNever}}}}
	k1 := f.keeper(app, 1, p)
	require.NoError(t, k1.Apply(ctx, "", objs(configMap(app, 1, "c", "keep-forever"), configMap(app, 1, "c", "cur"))))
	refs, err := k1.AppliedResources(ctx)
	require.NoError(t, err)
	settle(app, 1, refs)
	done, err := f.keeper(app, 1, p).Delete(ctx)
	require.NoError(t, err)
	require.True(t, done)
	require.NotNil(t, f.get("v1", "ConfigMap", "keep-forever"), "never: left when the app is deleted")

	// The Application is created again under the same name, without the rule.
	app2 := f.app("shop")
	kept := f.get("v1", "ConfigMap", "keep-forever").GetCreationTimestamp()
	app2.CreationTimestamp = metav1.NewTime(kept.Add(time.Second))
	k := f.keeper(app2, 1)
	require.NoError(t, k.Apply(ctx, "", objs(configMap(app2, 1, "c", "new"))))
	refs, err = k.AppliedResources(ctx)
	require.NoError(t, err)
	settle(app2, 1, refs)
	if lose {
		require.NoError(t, env.Client.DeleteAllOf(ctx, &v1beta1.ResourceTracker{}, client.MatchingLabels{v1beta1.LabelAppName: "shop", v1beta1.LabelAppNamespace: f.ns}))
	}
	kd := f.keeper(app2, 1)
	done, err = kd.Delete(ctx)
	require.NoError(t, err)
	assert.True(t, done)
	t.Logf("rebuilt: %q", kd.RebuiltTracker())
	assert.NotNil(t, f.get("v1", "ConfigMap", "keep-forever"), "left for good by the earlier app; the new one never applied it")
}

// a revision that applies nothing (topology allowEmpty selecting no
// cluster, components: []) must collect what the previous one applied;
// status.appliedResources still lists the previous revision's objects
// when collectGarbage runs (checkHealth refreshes it afterwards).
func reviewEmptyRevisionCollects(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	app := f.app("shop")
	k1 := f.keeper(app, 1)
	require.NoError(t, k1.Apply(ctx, "", objs(configMap(app, 1, "c", "cfg"))))
	refs, err := k1.AppliedResources(ctx)
	require.NoError(t, err)
	settle(app, 1, refs) // as the controller recorded after revision 1

	k2 := f.keeper(app, 2) // revision 2 applied nothing
	done, err := k2.GarbageCollect(ctx)
	require.NoError(t, err)
	assert.True(t, done)
	t.Logf("rebuilt: %q", k2.RebuiltTracker())
	assert.Nil(t, f.get("v1", "ConfigMap", "cfg"), "revision 2 dropped it")
}

// keepLegacyResource keeps a dropped object in the root tracker; all
// trackers are deleted by hand; deleting the Application leaves it
// (still labelled as the app's): the search is bounded by the kinds of the
// current revision's status.
func reviewRootTrackerLostLeaks(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	app := f.app("shop")
	p := Policies{GarbageCollect: &GarbageCollectPolicy{KeepLegacyResource: true}}
	require.NoError(t, f.keeper(app, 1, p).Apply(ctx, "", objs(deployment(app, 1, "old", "old"), configMap(app, 1, "c", "cur"))))
	k2 := f.keeper(app, 2, p)
	require.NoError(t, k2.Apply(ctx, "", objs(configMap(app, 2, "c", "cur"))))
	done, err := k2.GarbageCollect(ctx)
	require.NoError(t, err)
	require.True(t, done)
	require.NotNil(t, f.get("apps/v1", "Deployment", "old"))
	refs, err := k2.AppliedResources(ctx)
	require.NoError(t, err)
	settle(app, 2, refs)
	require.NoError(t, env.Client.DeleteAllOf(ctx, &v1beta1.ResourceTracker{}, client.MatchingLabels{v1beta1.LabelAppName: "shop", v1beta1.LabelAppNamespace: f.ns}))

	kd := f.keeper(app, 2, p)
	done, err = kd.Delete(ctx)
	require.NoError(t, err)
	assert.True(t, done)
	t.Logf("rebuilt: %q", kd.RebuiltTracker())
	assert.Nil(t, f.get("apps/v1", "Deployment", "old"), "kept until the app is deleted: must go with it")
}

// an older revision's tracker deleted by hand before its garbage was
// collected: the dropped object (a kind the current revision does not
// deploy) leaks silently, even through the Application's deletion.
func reviewOldTrackerLostLeaks(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	app := f.app("shop")
	k1 := f.keeper(app, 1)
	require.NoError(t, k1.Apply(ctx, "", objs(deployment(app, 1, "worker", "worker"), configMap(app, 1, "c", "cur"))))
	refs, err := k1.AppliedResources(ctx)
	require.NoError(t, err)
	settle(app, 1, refs)
	k2 := f.keeper(app, 2)
	require.NoError(t, k2.Apply(ctx, "", objs(configMap(app, 2, "c", "cur"))))
	require.NoError(t, env.Client.Delete(ctx, f.tracker(VersionedTrackerName("shop", f.ns, 1))))
	done, err := k2.GarbageCollect(ctx)
	require.NoError(t, err)
	assert.True(t, done)
	t.Logf("gc rebuilt: %q", k2.RebuiltTracker())
	refs, err = k2.AppliedResources(ctx)
	require.NoError(t, err)
	settle(app, 2, refs)
	kd := f.keeper(app, 2)
	done, err = kd.Delete(ctx)
	require.NoError(t, err)
	assert.True(t, done)
	t.Logf("delete rebuilt: %q", kd.RebuiltTracker())
	assert.Nil(t, f.get("apps/v1", "Deployment", "worker"), "dropped by revision 2: must not leak")
}

// a Helm release under a garbage-collect rule that selects it by
// component (strategy never / propagation orphan) is uninstalled when the
// Application is deleted after its tracker was lost: the rebuilt release
// entry has no component and no data, so the rule no longer selects it.
func reviewReleaseRule(t *testing.T, lose bool) {
	{
		{
			f := newFixture(t)
			ctx := t.Context()
			app := f.app("store")
			var uninstalled []string
			h := ReleaseHandlerFns{
				EnsureFn: func(ctx context.Context, cluster, appNamespace string, obj *unstructured.Unstructured) (ReleaseResult, error) {
					return ReleaseResult{}, nil
				},
				UninstallFn: func(ctx context.Context, cluster string, e v1beta1.ManagedResource) error {
					uninstalled = append(uninstalled, e.Name)
					return nil
				},
			}
			p := Policies{GarbageCollect: &GarbageCollectPolicy{Rules: []GarbageCollectRule{
				{Selector: ResourceSelector{ComponentNames: []string{"db"}}, Strategy: GCNever}}}}
			k1 := f.helmKeeper(app, 1, h, p)
			require.NoError(t, k1.Apply(ctx, "", objs(helmRelease(app, 1, "db", nil))))
			refs, err := k1.AppliedResources(ctx)
			require.NoError(t, err)
			settle(app, 1, refs)
			if lose {
				require.NoError(t, env.Client.DeleteAllOf(ctx, &v1beta1.ResourceTracker{}, client.MatchingLabels{v1beta1.LabelAppName: "store", v1beta1.LabelAppNamespace: f.ns}))
			}
			kd := f.helmKeeper(app, 1, h, p)
			done, err := kd.Delete(ctx)
			require.NoError(t, err)
			assert.True(t, done)
			t.Logf("rebuilt: %q", kd.RebuiltTracker())
			assert.Empty(t, uninstalled, "strategy never: the release stays installed")
		}
	}
}

// the current revision's tracker is lost while an older revision's
// tracker is still there (its garbage not all collected yet: here a
// dropped object whose deletion waits on a finalizer). The rebuild skips
// what the old tracker lists, so the rebuilt current tracker lacks the
// objects both revisions apply, and garbage collection deletes them:
// a live object of the current revision is deleted.
func reviewRebuildWithOldTracker(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	app := f.app("shop")
	require.NoError(t, f.keeper(app, 1).Apply(ctx, "", objs(deployment(app, 1, "web", "web"), configMap(app, 1, "worker", "worker"))))
	w := f.get("v1", "ConfigMap", "worker")
	w.SetFinalizers([]string{"review.example/hold"})
	require.NoError(t, env.Client.Update(ctx, w))

	k2 := f.keeper(app, 2)
	require.NoError(t, k2.Apply(ctx, "", objs(deployment(app, 2, "web", "web"))))
	done, err := k2.GarbageCollect(ctx)
	require.NoError(t, err)
	require.False(t, done, "worker's deletion waits on its finalizer")
	require.NotNil(t, f.tracker(VersionedTrackerName("shop", f.ns, 1)), "revision 1's tracker stays until its garbage is gone")
	refs, err := k2.AppliedResources(ctx)
	require.NoError(t, err)
	settle(app, 2, refs)
	uid := f.get("apps/v1", "Deployment", "web").GetUID()

	// The current revision's tracker is deleted by hand.
	require.NoError(t, env.Client.Delete(ctx, f.tracker(VersionedTrackerName("shop", f.ns, 2))))
	k := f.keeper(app, 2)
	_, err = k.GarbageCollect(ctx)
	require.NoError(t, err)
	t.Logf("rebuilt: %q", k.RebuiltTracker())
	web := f.get("apps/v1", "Deployment", "web")
	require.NotNil(t, web, "revision 2 applies web: it must not be collected")
	assert.Equal(t, uid, web.GetUID())
	assert.Nil(t, web.GetDeletionTimestamp(), "revision 2 applies web: it must not be deleted")
}
