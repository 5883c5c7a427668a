package resourcekeeper

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// TestKeeperReadsOnce: within one reconcile's Keeper, what an Apply read or
// wrote is not read again — neither its ResourceTracker by the next Apply,
// nor its objects by the health check that follows (Reader) — while a
// read of anything else, and a later reconcile's Keeper, still ask the API
// server.
func TestKeeperReadsOnce(t *testing.T) {
	f := newFixture(t)
	app := f.app("shop")
	k := f.keeper(app, 1)
	ctx := f.t.Context()
	require.NoError(t, k.Apply(ctx, "", objs(deployment(app, 1, "web", "web"), service(app, 1, "web", "web"))))

	cases := []struct {
		reason    string
		read      func() error
		wantReads int64
	}{
		{
			reason: "the next Apply of this Keeper takes the tracker it wrote: the worker's own read only",
			read: func() error {
				return k.Apply(ctx, "", objs(deployment(app, 1, "worker", "worker")))
			},
			wantReads: 1,
		},
		{
			reason: "the health check reads the Deployment the Apply wrote from the Apply's answer",
			read: func() error {
				u := &unstructured.Unstructured{}
				u.SetAPIVersion("apps/v1")
				u.SetKind("Deployment")
				if err := k.Reader("", f.c).Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "web"}, u); err != nil {
					return err
				}
				assert.Equal(t, "web", u.GetName())
				assert.NotEmpty(t, u.GetResourceVersion(), "as the API server answered")
				return nil
			},
			wantReads: 0,
		},
		{
			reason: "an object the Keeper did not see is read from the API server",
			read: func() error {
				u := &unstructured.Unstructured{}
				u.SetAPIVersion("v1")
				u.SetKind("ConfigMap")
				return client.IgnoreNotFound(k.Reader("", f.c).Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "web"}, u))
			},
			wantReads: 1,
		},
		{
			reason: "a later reconcile's Keeper reads the tracker again (no cache here: from the API server)",
			read: func() error {
				return f.keeper(app, 1).Apply(ctx, "", objs(deployment(app, 1, "web", "web")))
			},
			wantReads: 2,
		},
	}
	for _, tc := range cases {
		f.counter.reset()
		require.NoError(t, tc.read(), tc.reason)
		assert.Equal(t, tc.wantReads, f.counter.reads.Load(), tc.reason)
	}
	rt := f.tracker(VersionedTrackerName("shop", f.ns, 1))
	require.NotNil(t, rt)
	assert.Len(t, rt.Spec.ManagedResources, 3, "web, its Service and the worker are all recorded")
}

// TestKeeperReadsOnceNeverHidesALoss: what a Keeper remembers never stands
// in for the API server where a stale answer would do harm: a tracker
// deleted after the Keeper wrote it is created again (by the next Apply,
// whose update of the remembered copy finds it gone, and by a rebuild's
// upsert, which never reads a remembered or cached copy), and an object
// read only as a later step's expected one is read again by that step's
// health check.
func TestKeeperReadsOnceNeverHidesALoss(t *testing.T) {
	ctx := t.Context()
	cases := []struct {
		reason string
		again  func(f *fixture, k *Keeper, app *v1beta1.Application) error
	}{
		{
			reason: "the next Apply: its remembered copy is gone, so it reads and creates",
			again: func(f *fixture, k *Keeper, app *v1beta1.Application) error {
				return k.Apply(ctx, "", objs(deployment(app, 1, "worker", "worker")))
			},
		},
		{
			reason: "a rebuild's upsert: from the API server",
			again: func(f *fixture, k *Keeper, app *v1beta1.Application) error {
				hub, err := k.hub(ctx)
				if err != nil {
					return err
				}
				e, err := entryFor("", deployment(app, 1, "web", "web"))
				if err != nil {
					return err
				}
				return k.upsertEntries(ctx, hub, v1beta1.ResourceTrackerTypeVersioned, []v1beta1.ManagedResource{e}, false)
			},
		},
	}
	for _, tc := range cases {
		f := newFixture(t)
		app := f.app("shop")
		k := f.keeper(app, 1)
		require.NoError(t, k.Apply(ctx, "", objs(deployment(app, 1, "web", "web"))), tc.reason)
		name := VersionedTrackerName("shop", f.ns, 1)
		rt := f.tracker(name)
		require.NotNil(t, rt, tc.reason)
		require.NoError(t, env.Client.Delete(ctx, rt), tc.reason)
		require.NoError(t, tc.again(f, k, app), tc.reason)
		assert.NotNil(t, f.tracker(name), "%s: the tracker is there again", tc.reason)
	}

	f := newFixture(t)
	app := f.app("shop")
	require.NoError(t, env.Client.Create(ctx, deployment(app, 1, "worker", "worker")))
	k := f.keeper(app, 1)
	k.Expect("", objs(deployment(app, 1, "worker", "worker")))
	require.NoError(t, k.Apply(ctx, "", objs(deployment(app, 1, "web", "web"))))
	f.counter.reset()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	require.NoError(t, k.Reader("", f.c).Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "worker"}, u))
	assert.Equal(t, int64(1), f.counter.reads.Load(), "an object read as expected, not applied, is read again for its health")
}
