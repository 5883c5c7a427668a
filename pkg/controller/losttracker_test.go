package controller

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// failingGCKeeper fails GarbageCollect (as rebuilding a lost tracker
// fails while a member cluster cannot be listed) while failing is set.
type failingGCKeeper struct {
	Keeper
	failing *atomic.Bool
}

func (k *failingGCKeeper) GarbageCollect(ctx context.Context) (bool, error) {
	if k.failing.Load() {
		return false, errors.New("injected failure: a member cluster cannot be listed")
	}
	return k.Keeper.GarbageCollect(ctx)
}

// TestLostTrackerRebuiltAfterAFailedRebuild: the ResourceTrackers of a
// running Application are deleted by hand and the first rebuild fails.
// status.appliedResources, which bounds the rebuild, must not be emptied
// by that reconcile (the lost tracker lists nothing), or no later
// reconcile would know the tracker was lost: the next one rebuilds it.
// (Found by the fault suite, seed 1796298983802562352: a member down
// while app-2's trackers were deleted.)
func TestLostTrackerRebuiltAfterAFailedRebuild(t *testing.T) {
	var failing atomic.Bool
	keepers := wrappedKeepers(t, func(k Keeper) Keeper { return &failingGCKeeper{Keeper: k, failing: &failing} })
	h := newHarness(t, harnessOpt{with: []Option{WithKeepers(keepers)}})
	app := h.app("lostrt", exampleApp)
	running := h.until(app, true, 60*time.Second, phaseIs(common.ApplicationRunning))
	applied := running.Status.AppliedResources
	require.NotEmpty(t, applied)

	ctx := context.Background()
	trackers := func() []v1beta1.ResourceTracker {
		list := &v1beta1.ResourceTrackerList{}
		require.NoError(t, env(t).Client.List(ctx, list, client.MatchingLabels{v1beta1.LabelAppName: app.Name, v1beta1.LabelAppNamespace: app.Namespace}))
		return list.Items
	}
	for _, rt := range trackers() {
		require.NoError(t, env(t).Client.Delete(ctx, &rt))
	}
	require.Eventually(t, func() bool { return len(trackers()) == 0 }, 10*time.Second, 100*time.Millisecond)

	failing.Store(true)
	_, _ = h.reconcile(app)
	require.Equal(t, applied, h.get(app).Status.AppliedResources, "a failed rebuild keeps the record it is bounded by")

	failing.Store(false)
	h.until(app, true, 30*time.Second, func(*v1beta1.Application) bool { return len(trackers()) > 0 })
	require.Equal(t, applied, h.get(app).Status.AppliedResources)
}
