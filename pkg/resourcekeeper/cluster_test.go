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
