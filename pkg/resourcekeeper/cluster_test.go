package resourcekeeper

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/multicluster"
)

// TestApplyStampsTheMemberCluster: an object applied to a member cluster
// carries app.oam.dev/cluster naming it (the hub's objects do not).
func TestApplyStampsTheMemberCluster(t *testing.T) {
	cases := []struct {
		reason  string
		cluster string
		want    string
	}{
		{"a member is named", "member-1", "member-1"},
		{"the hub is not labelled", "", ""},
		{"the hub by name is not labelled", "local", ""},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			f := newFixture(t)
			app := f.app("shop")
			// Every cluster name reaches the test API server.
			clients := multicluster.ClusterClientsFn(func(context.Context, string) (client.Client, error) { return f.c, nil })
			k, err := New(app, 1, Options{Clients: clients})
			require.NoError(t, err)
			require.NoError(t, k.Apply(f.t.Context(), c.cluster, objs(configMap(app, 1, "c", "cfg"))))
			live := f.get("v1", "ConfigMap", "cfg")
			require.NotNil(t, live)
			got, ok := live.GetLabels()[v1beta1.LabelAppCluster]
			assert.Equal(t, c.want != "", ok)
			assert.Equal(t, c.want, got)
		})
	}
}

// TestConcurrentAppliesShareOneTracker: a deploy step applies to several
// clusters at once through one Keeper; every object is recorded and no
// apply fails on a ResourceTracker write conflict.
func TestConcurrentAppliesShareOneTracker(t *testing.T) {
	f := newFixture(t)
	app := f.app("shop")
	clients := multicluster.ClusterClientsFn(func(context.Context, string) (client.Client, error) { return f.c, nil })
	k, err := New(app, 1, Options{Clients: clients})
	require.NoError(t, err)
	const n = 16
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = k.Apply(f.t.Context(), fmt.Sprintf("member-%d", i), objs(configMap(app, 1, "c", fmt.Sprintf("cfg-%d", i))))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "apply %d", i)
	}
	rt := f.tracker(VersionedTrackerName("shop", f.ns, 1))
	assert.Len(t, rt.Spec.ManagedResources, n)
}

// TestDeleteWithAClusterGone: an Application whose member cluster is no
// longer registered (detached, or gone for good) can still be deleted:
// what is on the hub is deleted, what is on the gone member is left and
// named (LeftOnGoneClusters), and the trackers go. A revision's garbage
// collection, whose Application lives on, waits for the cluster instead.
func TestDeleteWithAClusterGone(t *testing.T) {
	f := newFixture(t)
	ctx := f.t.Context()
	app := f.app("shop")
	gone := false
	clients := multicluster.ClusterClientsFn(func(_ context.Context, cluster string) (client.Client, error) {
		if cluster == "member-1" && gone {
			return nil, &multicluster.ClusterNotFoundError{Names: []string{cluster}, Namespace: "vela-system"}
		}
		return f.c, nil // every registered cluster is the test API server
	})
	keeper := func(rev int64) *Keeper {
		k, err := New(app, rev, Options{Clients: clients})
		require.NoError(t, err)
		return k
	}
	require.NoError(t, keeper(1).Apply(ctx, "", objs(configMap(app, 1, "hub", "on-hub"))))
	require.NoError(t, keeper(1).Apply(ctx, "member-1", objs(configMap(app, 1, "member", "on-member"))))
	k2 := keeper(2)
	require.NoError(t, k2.Apply(ctx, "", objs(configMap(app, 2, "hub", "on-hub"))))
	gone = true

	_, err := k2.GarbageCollect(ctx)
	require.ErrorIs(t, err, multicluster.ErrClusterNotFound, "GC of a living Application waits for the cluster")
	assert.NotNil(t, f.get("v1", "ConfigMap", "on-member"))
	assert.Empty(t, k2.LeftOnGoneClusters())

	done, err := k2.Delete(ctx)
	require.NoError(t, err)
	assert.True(t, done, "the deletion finishes")
	assert.Nil(t, f.get("v1", "ConfigMap", "on-hub"), "the hub's object is deleted")
	assert.NotNil(t, f.get("v1", "ConfigMap", "on-member"), "nothing can reach the gone member")
	assert.Equal(t, []string{"ConfigMap " + f.ns + "/on-member in cluster member-1"}, k2.LeftOnGoneClusters())
	var list v1beta1.ResourceTrackerList
	require.NoError(t, env.Client.List(ctx, &list, client.MatchingLabels{v1beta1.LabelAppName: "shop", v1beta1.LabelAppNamespace: f.ns}))
	assert.Empty(t, list.Items, "the trackers go")
}
