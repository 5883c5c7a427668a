package resourcekeeper

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/observed"
)

// laggingCache answers Lists of ResourceTrackers made under cached reads
// as an observed-state cache that has not yet seen the tracker named
// unseen (its watch lags, or was cut by an API-server restart).
type laggingCache struct {
	client.Client
	unseen string
}

func (l laggingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := l.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	rts, ok := list.(*v1beta1.ResourceTrackerList)
	if !ok || !observed.CachedReads(ctx) {
		return nil
	}
	kept := rts.Items[:0]
	for _, rt := range rts.Items {
		if rt.Name != l.unseen {
			kept = append(kept, rt)
		}
	}
	rts.Items = kept
	return nil
}

// The controller retries a failed garbage collection in the resync of a
// steady Application, under observed.WithCachedReads; what it deletes must
// never be decided from a cached (possibly lagging) list of trackers.
func TestGarbageCollectDecidesFromFreshReads(t *testing.T) {
	cases := []struct {
		reason string
		ctx    func(context.Context) context.Context
	}{
		{"a plain reconcile", func(ctx context.Context) context.Context { return ctx }},
		{"the resync of a steady Application (cached reads) whose cache has not seen the current tracker", observed.WithCachedReads},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			f := newFixture(t)
			app := f.app("shop")
			require.NoError(t, f.keeper(app, 1).Apply(f.t.Context(), "", objs(
				deployment(app, 1, "web", "web"), deployment(app, 1, "worker", "worker"))), tc.reason)
			require.NoError(t, f.keeper(app, 2).Apply(f.t.Context(), "", objs(deployment(app, 2, "web", "web"))), tc.reason)

			hub := laggingCache{Client: f.c, unseen: VersionedTrackerName("shop", f.ns, 2)}
			k2, err := New(app, 2, Options{Clients: multicluster.HubOnly{Hub: hub}})
			require.NoError(t, err, tc.reason)
			_, err = k2.GarbageCollect(tc.ctx(f.t.Context()))
			require.NoError(t, err, tc.reason)

			assert.NotNil(t, f.get("apps/v1", "Deployment", "web"), "%s: still in the current revision: must not be collected", tc.reason)
			assert.Nil(t, f.get("apps/v1", "Deployment", "worker"), "%s: dropped by revision 2", tc.reason)
		})
	}
}
