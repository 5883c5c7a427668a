package resourcekeeper

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// TestLostTrackerRebuilt: a ResourceTracker deleted by hand is rebuilt from
// the live objects before garbage collection or the Application's
// deletion, so that nothing the Application deployed leaks; a look-alike
// object (our labels, never written by oamflow) is not taken.
func TestLostTrackerRebuilt(t *testing.T) {
	type world struct {
		f   *fixture
		app *v1beta1.Application
	}
	// deploy applies revision 1 (a Deployment, a ConfigMap, and a
	// ConfigMap shared with Application "other", which owns it now),
	// records status.appliedResources as the controller does, adds a
	// look-alike, then deletes every tracker of the Application.
	deploy := func(t *testing.T) world {
		f := newFixture(t)
		ctx := f.t.Context()
		app := f.app("shop")
		k1 := f.keeper(app, 1)
		require.NoError(t, k1.Apply(ctx, "", objs(deployment(app, 1, "web", "web"), configMap(app, 1, "cfg", "cfg"), configMap(app, 1, "cfg", "shared"))))
		refs, err := k1.AppliedResources(ctx)
		require.NoError(t, err)
		settle(app, 1, refs)
		f.giveTo("v1", "ConfigMap", "shared", f.app("other"))
		shared := f.get("v1", "ConfigMap", "shared")
		shared.SetAnnotations(map[string]string{AnnoSharedBy: f.ns + "/other," + f.ns + "/shop"})
		require.NoError(t, env.Client.Update(ctx, shared))

		look := configMap(app, 1, "cfg", "look-alike")
		require.NoError(t, env.Client.Create(ctx, look))
		require.NoError(t, env.Client.DeleteAllOf(ctx, &v1beta1.ResourceTracker{}, client.MatchingLabels{v1beta1.LabelAppName: "shop", v1beta1.LabelAppNamespace: f.ns}))
		return world{f: f, app: app}
	}
	cases := []struct {
		reason string
		run    func(t *testing.T, w world)
	}{
		{
			reason: "deleting the Application deletes what the lost tracker listed and leaves the shared object to its owner",
			run: func(t *testing.T, w world) {
				k := w.f.keeper(w.app, 1)
				done, err := k.Delete(w.f.t.Context())
				require.NoError(t, err)
				assert.True(t, done)
				assert.Contains(t, k.RebuiltTracker(), VersionedTrackerName("shop", w.f.ns, 1))
				assert.Nil(t, w.f.get("apps/v1", "Deployment", "web"), "the Deployment does not leak")
				assert.Nil(t, w.f.get("v1", "ConfigMap", "cfg"), "the ConfigMap does not leak")
				shared := w.f.get("v1", "ConfigMap", "shared")
				require.NotNil(t, shared, "the shared object stays with its owner")
				assert.Equal(t, w.f.ns+"/other", shared.GetAnnotations()[AnnoSharedBy], "shop left its sharers")
				assert.NotNil(t, w.f.get("v1", "ConfigMap", "look-alike"), "a look-alike oamflow never wrote stays")
				assert.Nil(t, w.f.tracker(VersionedTrackerName("shop", w.f.ns, 1)), "the rebuilt tracker goes with the Application")
			},
		},
		{
			reason: "deleting the Application finds what a tracker deleted in the middle of a run no longer lists",
			run: func(t *testing.T, w world) {
				ctx := w.f.t.Context()
				// The run goes on: its next step records the ConfigMap in
				// a new tracker, which does not list the Deployment.
				require.NoError(t, w.f.keeper(w.app, 1).Apply(ctx, "", objs(configMap(w.app, 1, "cfg", "cfg"))))
				k := w.f.keeper(w.app, 1)
				done, err := k.Delete(ctx)
				require.NoError(t, err)
				assert.True(t, done)
				assert.Contains(t, k.RebuiltTracker(), "in no ResourceTracker")
				assert.Nil(t, w.f.get("apps/v1", "Deployment", "web"), "the Deployment does not leak")
				assert.Nil(t, w.f.get("v1", "ConfigMap", "cfg"))
				assert.NotNil(t, w.f.get("v1", "ConfigMap", "look-alike"), "a look-alike oamflow never wrote stays")
			},
		},
		{
			reason: "a later revision collects what it dropped from the rebuilt tracker",
			run: func(t *testing.T, w world) {
				ctx := w.f.t.Context()
				k1 := w.f.keeper(w.app, 1)
				done, err := k1.GarbageCollect(ctx)
				require.NoError(t, err)
				assert.True(t, done)
				assert.NotEmpty(t, k1.RebuiltTracker())
				rt := w.f.tracker(VersionedTrackerName("shop", w.f.ns, 1))
				require.NotNil(t, rt, "the tracker is back")
				var names []string
				for _, e := range rt.Spec.ManagedResources {
					names = append(names, e.Kind+"/"+e.Name)
				}
				assert.ElementsMatch(t, []string{"Deployment/web", "ConfigMap/cfg", "ConfigMap/shared"}, names)

				k2 := w.f.keeper(w.app, 2)
				require.NoError(t, k2.Apply(ctx, "", objs(deployment(w.app, 2, "web", "web"))))
				done, err = k2.GarbageCollect(ctx)
				require.NoError(t, err)
				assert.True(t, done)
				assert.Empty(t, k2.RebuiltTracker(), "nothing was lost this time")
				assert.NotNil(t, w.f.get("apps/v1", "Deployment", "web"), "kept: revision 2 has it")
				assert.Nil(t, w.f.get("v1", "ConfigMap", "cfg"), "dropped by revision 2: collected")
				assert.NotNil(t, w.f.get("v1", "ConfigMap", "look-alike"))
			},
		},
		{
			reason: "with nothing left live the search runs once: an empty tracker marks it done",
			run: func(t *testing.T, w world) {
				ctx := w.f.t.Context()
				require.NoError(t, env.Client.DeleteAllOf(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}},
					client.InNamespace(w.f.ns), client.MatchingLabels{v1beta1.LabelAppName: "shop"}))
				web := w.f.get("apps/v1", "Deployment", "web")
				require.NoError(t, env.Client.Delete(ctx, web))
				shared := w.f.get("v1", "ConfigMap", "shared")
				require.NoError(t, env.Client.Delete(ctx, shared))

				k := w.f.keeper(w.app, 1)
				_, err := k.GarbageCollect(ctx)
				require.NoError(t, err)
				assert.Contains(t, k.RebuiltTracker(), "0 live object(s)")
				rt := w.f.tracker(VersionedTrackerName("shop", w.f.ns, 1))
				require.NotNil(t, rt)
				assert.Empty(t, rt.Spec.ManagedResources)
				again := w.f.keeper(w.app, 1)
				pending, err := again.HasGarbage(ctx)
				require.NoError(t, err)
				assert.False(t, pending, "nothing to rebuild any more")
			},
		},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) { c.run(t, deploy(t)) })
	}
}
