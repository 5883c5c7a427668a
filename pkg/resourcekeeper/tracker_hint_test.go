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

// hintCache answers Lists of ResourceTrackers made where the cache may
// answer (observed.CachedReads: under observed.MayLag, say) as an
// observed-state cache that has not seen the tracker named unseen, and
// counts the Lists that go to the API server.
type hintCache struct {
	client.Client
	unseen string
	direct *int
}

func (h hintCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	rts, ok := list.(*v1beta1.ResourceTrackerList)
	if !ok || !observed.CachedReads(ctx) {
		*h.direct++
		return h.Client.List(ctx, list, opts...)
	}
	if err := h.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	kept := rts.Items[:0]
	for _, rt := range rts.Items {
		if rt.Name != h.unseen {
			kept = append(kept, rt)
		}
	}
	rts.Items = kept
	return nil
}

// Whether older trackers remain is asked of the observed-state cache; the
// API server is asked only when the cache lists neither an older tracker
// nor the current revision's (it may then have missed older ones too).
// GarbageCollect reads them again before deleting anything.
func TestHasGarbageAsksTheCacheFirst(t *testing.T) {
	cases := []struct {
		reason     string
		collected  bool // revision 2's collection is done
		lagging    bool // the cache has not seen revision 2's tracker
		want       bool
		wantDirect int
	}{
		{"the cache lists an older revision's tracker", false, false, true, 0},
		{"the cache has seen the current tracker and none older is left", true, false, false, 0},
		{"the cache lists an older tracker but not the current one", false, true, true, 0},
		{"the cache has not seen the current tracker: the API server answers", true, true, false, 1},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			f := newFixture(t)
			app := f.app("shop")
			ctx := f.t.Context()
			require.NoError(t, f.keeper(app, 1).Apply(ctx, "", objs(deployment(app, 1, "web", "web"), deployment(app, 1, "worker", "worker"))))
			require.NoError(t, f.keeper(app, 2).Apply(ctx, "", objs(deployment(app, 2, "web", "web"))))
			if tc.collected {
				done, err := f.keeper(app, 2).GarbageCollect(ctx)
				require.NoError(t, err)
				require.True(t, done)
			}
			unseen := ""
			if tc.lagging {
				unseen = VersionedTrackerName("shop", f.ns, 2)
			}
			direct := 0
			k, err := New(app, 2, Options{Clients: multicluster.HubOnly{Hub: hintCache{Client: f.c, unseen: unseen, direct: &direct}}})
			require.NoError(t, err)
			got, err := k.HasGarbage(ctx)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantDirect, direct, "Lists sent to the API server")
			require.NoError(t, k.CheckTrackers(ctx))
			assert.Equal(t, tc.wantDirect, direct, "CheckTrackers reads the cache")
		})
	}
}
