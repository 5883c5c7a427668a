package resourcekeeper

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExpectRecordsOnce: objects a run will apply later (Expect) are
// recorded by the first Apply in its own tracker write, so that the later
// Apply writes only the objects; an object that exists and is not this
// Application's own is left to its own Apply, which still refuses it.
func TestExpectRecordsOnce(t *testing.T) {
	t.Run("a dependent component's objects ride on the first tracker write", func(t *testing.T) {
		f := newFixture(t)
		app := f.app("shop")
		k := f.keeper(app, 1)
		k.Expect("", objs(deployment(app, 1, "web", "web"), service(app, 1, "web", "web"), deployment(app, 1, "worker", "worker")))

		f.counter.reset()
		require.NoError(t, k.Apply(f.t.Context(), "", objs(deployment(app, 1, "web", "web"), service(app, 1, "web", "web"))))
		rt := f.tracker(VersionedTrackerName("shop", f.ns, 1))
		require.NotNil(t, rt)
		var names []string
		for _, e := range rt.Spec.ManagedResources {
			names = append(names, e.Kind+"/"+e.Name)
			assert.NotNil(t, e.Data, "%s/%s recorded with its desired state", e.Kind, e.Name)
		}
		assert.ElementsMatch(t, []string{"Deployment/web", "Service/web", "Deployment/worker"}, names)
		assert.Nil(t, f.get("apps/v1", "Deployment", "worker"), "recorded, not applied")
		// The tracker create, the Service's preflight dry run, two applies.
		assert.Equal(t, int64(4), f.counter.writes.Load())

		f.counter.reset()
		require.NoError(t, k.Apply(f.t.Context(), "", objs(deployment(app, 1, "worker", "worker"))))
		assert.Equal(t, int64(1), f.counter.writes.Load(), "the worker's apply writes the Deployment only: its entry is there")
		require.NotNil(t, f.get("apps/v1", "Deployment", "worker"))

		// A later reconcile's Keeper (nothing expected) finds the same.
		f.counter.reset()
		require.NoError(t, f.keeper(app, 1).Apply(f.t.Context(), "", objs(deployment(app, 1, "worker", "worker"))))
		assert.Zero(t, f.counter.writes.Load())
	})

	t.Run("what the Apply writes itself is not read again", func(t *testing.T) {
		f := newFixture(t)
		app := f.app("shop")
		k := f.keeper(app, 1)
		web, svc := deployment(app, 1, "web", "web"), service(app, 1, "web", "web")
		svc.SetNamespace("") // defaulted to the Application's by plan
		var applying []*plan
		for _, o := range objs(web, svc) {
			p, err := k.plan(f.t.Context(), f.c, "", o, false)
			require.NoError(t, err)
			applying = append(applying, p)
		}
		k.Expect("", objs(web, svc, deployment(app, 1, "worker", "worker")))
		f.counter.reset()
		got := k.planExpected(f.t.Context(), f.c, "", applying)
		require.Len(t, got, 1)
		assert.Equal(t, "worker", got[0].desired.GetName())
		assert.Equal(t, int64(1), f.counter.reads.Load(), "the worker alone is read")
		assert.Nil(t, k.planExpected(f.t.Context(), f.c, "", applying), "taken once")
	})

	t.Run("an existing object not written by oamflow is not recorded early", func(t *testing.T) {
		f := newFixture(t)
		app := f.app("shop")
		// Labelled for the Application by someone else: only a tracker
		// listing it would make it adoptable.
		require.NoError(t, env.Client.Create(f.t.Context(), configMap(app, 1, "worker", "cfg")))
		k := f.keeper(app, 1)
		k.Expect("", objs(configMap(app, 1, "worker", "cfg")))
		require.NoError(t, k.Apply(f.t.Context(), "", objs(configMap(app, 1, "web", "web"))))
		rt := f.tracker(VersionedTrackerName("shop", f.ns, 1))
		require.NotNil(t, rt)
		require.Len(t, rt.Spec.ManagedResources, 1)
		assert.Equal(t, "web", rt.Spec.ManagedResources[0].Name)

		var oe *OwnershipError
		require.ErrorAs(t, k.Apply(f.t.Context(), "", objs(configMap(app, 1, "worker", "cfg"))), &oe, "its own apply refuses it")
		live := f.get("v1", "ConfigMap", "cfg")
		require.NotNil(t, live)
		assert.False(t, managedByUs(live), "not written")
	})

	t.Run("expected objects are taken once, by the Apply to their cluster", func(t *testing.T) {
		f := newFixture(t)
		app := f.app("shop")
		k := f.keeper(app, 1)
		k.Expect("member", objs(deployment(app, 1, "worker", "worker")))
		require.NoError(t, k.Apply(f.t.Context(), "local", objs(deployment(app, 1, "web", "web"))))
		rt := f.tracker(VersionedTrackerName("shop", f.ns, 1))
		require.NotNil(t, rt)
		assert.Len(t, rt.Spec.ManagedResources, 1, "another cluster's expected objects wait for an Apply there")
		assert.Len(t, k.expected[normCluster("member")], 1)
	})
}
