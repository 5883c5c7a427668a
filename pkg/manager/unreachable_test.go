package manager_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

// outage makes a member's API server unreachable for the controller: while
// down, every request to host fails as a refused connection does; the
// test's own clients of the member are not affected.
type outage struct {
	host string
	down atomic.Bool
}

func (o *outage) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFn(func(req *http.Request) (*http.Response, error) {
		if o.down.Load() && req.URL.Host == o.host {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		}
		return rt.RoundTrip(req)
	})
}

// TestMemberUnreachableOverTime: a member the controller cannot reach
// (noticed by the prober, not at the 5-minute resync) for longer than
// --cluster-unreachable-after turns the app's components
// there unhealthy (reason ClusterUnreachable, the message naming the
// cluster and since when) and the Application unhealthy; nothing is
// deleted there meanwhile. Back reachable, the components are judged
// again and healthy, what drifted meanwhile is put back, and what did not
// drift is not written (no new run, no new revision). status.placement
// names the member, the policy and why, and says since when it is
// unreachable.
func TestMemberUnreachableOverTime(t *testing.T) {
	ctx := context.Background()
	c := env.Client
	east := envtest.New(t)
	require.NoError(t, ignoreExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "oamflow-system"}})))
	ns := "reach"
	require.NoError(t, ignoreExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))
	joinMember(t, "reach-east", east, nil)
	u, err := url.Parse(east.Config.Host)
	require.NoError(t, err)
	cut := &outage{host: u.Host}
	o := testOptions()
	o.ClusterUnreachableAfter = 3 * time.Second
	o.WrapTransport = cut.wrap
	startManager(t, o)

	app := tenantApp(t, ns, "far", `
components:
- name: cfg
  type: k8s-objects
  properties:
    objects:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: far-a}, data: {k: v}}
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: far-b}, data: {k: v}}
policies:
- name: far
  type: topology
  properties: {clusters: [reach-east], namespace: team-r}
`, nil)
	require.NoError(t, c.Create(ctx, app))
	running := waitPhase(t, app, common.ApplicationRunning)
	assert.Equal(t, []common.PlacementStatus{{Cluster: "reach-east", Namespace: "team-r", Policy: "far", Reason: "named in policy far clusters"}},
		running.Status.Placement)
	get := func(name string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{}
		require.NoError(t, east.Client.Get(ctx, client.ObjectKey{Namespace: "team-r", Name: name}, cm))
		return cm
	}
	a, b := get("far-a"), get("far-b")

	cut.down.Store(true)
	got := &v1beta1.Application{}
	require.Eventually(t, func() bool {
		if c.Get(ctx, client.ObjectKeyFromObject(app), got) != nil || len(got.Status.Services) != 1 {
			return false
		}
		return got.Status.Services[0].Details["reason"] == common.ReasonClusterUnreachable
	}, 60*time.Second, 200*time.Millisecond, "the member's components never turned unhealthy")
	svc := got.Status.Services[0]
	assert.False(t, svc.Healthy)
	assert.Equal(t, "reach-east", svc.Cluster)
	assert.Regexp(t, `^cluster reach-east has been unreachable since 20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ \(longer than 3s\): `, svc.Message)
	require.Eventually(t, func() bool {
		return c.Get(ctx, client.ObjectKeyFromObject(app), got) == nil && got.Status.Phase == common.ApplicationUnhealthy
	}, 30*time.Second, 200*time.Millisecond)
	ready := meta.FindStatusCondition(got.Status.Conditions, common.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, common.ReasonClusterUnreachable, ready.Reason)
	require.Len(t, got.Status.Placement, 1)
	require.NotNil(t, got.Status.Placement[0].UnreachableSince)
	assert.Contains(t, svc.Message, got.Status.Placement[0].UnreachableSince.UTC().Format(time.RFC3339))

	// Meanwhile someone edits one object on the member.
	drifted := a.DeepCopy()
	drifted.Data["k"] = "edited"
	require.NoError(t, east.Client.Update(ctx, drifted))

	cut.down.Store(false)
	require.Eventually(t, func() bool {
		return c.Get(ctx, client.ObjectKeyFromObject(app), got) == nil && got.Status.Phase == common.ApplicationRunning
	}, 60*time.Second, 200*time.Millisecond, "the Application never recovered")
	assert.True(t, got.Status.Services[0].Healthy)
	assert.Nil(t, got.Status.Placement[0].UnreachableSince)
	assert.Equal(t, running.Status.LatestRevision.Name, got.Status.LatestRevision.Name, "no new revision")
	assert.Equal(t, running.Status.Workflow.StartTime, got.Status.Workflow.StartTime, "no new run")
	require.Eventually(t, func() bool { return get("far-a").Data["k"] == "v" }, 30*time.Second, 200*time.Millisecond, "the drift is put back")
	assert.Equal(t, a.UID, get("far-a").UID, "nothing deleted on the member")
	assert.Equal(t, b.UID, get("far-b").UID, "nothing deleted on the member")
	assert.Equal(t, b.ResourceVersion, get("far-b").ResourceVersion, "what did not drift is not written again")
	deleteAndWait(t, app)
}
