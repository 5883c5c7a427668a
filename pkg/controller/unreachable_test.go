package controller

import (
	"context"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/multicluster"
)

// TestClusterUnreachableOverTime: a target cluster that cannot be reached
// keeps its components' last status (Ready says the health check failed
// and since when) until it has been unreachable for longer than
// ClusterUnreachableAfter; then they are unhealthy with reason
// ClusterUnreachable, and so is the Application. Reachable again, they
// are judged as usual: healthy, nothing applied again, no new run. The
// clock is a fake one: no test waits five minutes.
func TestClusterUnreachableOverTime(t *testing.T) {
	var down atomic.Bool
	var hub client.Client
	clients := multicluster.ClusterClientsFn(func(_ context.Context, cluster string) (client.Client, error) {
		if down.Load() {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		}
		return multicluster.HubOnly{Hub: hub}.Client(context.Background(), cluster)
	})
	start := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	h := newHarness(t, harnessOpt{with: []Option{WithClusterClients(clients), WithClock(clk)}})
	hub = h.c
	app := h.app("far", `
components:
- name: web
  type: webservice
  properties: {image: "nginx:1.27"}
`)
	running := h.until(app, true, 60*time.Second, phaseIs(common.ApplicationRunning))
	require.Len(t, running.Status.Placement, 1)
	assert.Equal(t, common.PlacementStatus{Cluster: "local", Namespace: h.ns, Reason: "named by apply-component step web"}, running.Status.Placement[0])
	d, _ := h.deployment("web")
	ready := func(a *v1beta1.Application) *metav1.Condition {
		return meta.FindStatusCondition(a.Status.Conditions, common.ConditionReady)
	}

	down.Store(true)
	_, err := h.reconcile(app)
	require.NoError(t, err)
	got := h.get(app)
	require.NotNil(t, got.Status.Placement[0].UnreachableSince, "the first failure is recorded")
	assert.Equal(t, start, got.Status.Placement[0].UnreachableSince.UTC())
	require.Len(t, got.Status.Services, 1)
	assert.True(t, got.Status.Services[0].Healthy, "before the threshold the last status stands")
	assert.Equal(t, common.ReasonHealthCheckError, ready(got).Reason)
	assert.Contains(t, ready(got).Message, "cluster local unreachable since 2026-12-02T01:00:00Z (its components turn unhealthy after 5m0s)")

	clk.SetTime(start.Add(4 * time.Minute))
	_, err = h.reconcile(app)
	require.NoError(t, err)
	got = h.get(app)
	assert.True(t, got.Status.Services[0].Healthy, "still before the threshold")
	assert.Equal(t, start, got.Status.Placement[0].UnreachableSince.UTC(), "the first failure's time is kept")

	clk.SetTime(start.Add(5*time.Minute + time.Second))
	_, err = h.reconcile(app)
	require.NoError(t, err)
	got = h.get(app)
	svc := got.Status.Services[0]
	assert.False(t, svc.Healthy)
	assert.Equal(t, common.ReasonClusterUnreachable, svc.Details["reason"])
	assert.Contains(t, svc.Message, "cluster local has been unreachable since 2026-12-02T01:00:00Z (longer than 5m0s)")
	assert.Equal(t, common.ApplicationUnhealthy, got.Status.Phase)
	assert.Equal(t, common.ReasonClusterUnreachable, ready(got).Reason)

	down.Store(false)
	got = h.until(app, true, 30*time.Second, phaseIs(common.ApplicationRunning))
	assert.True(t, got.Status.Services[0].Healthy)
	assert.Nil(t, got.Status.Placement[0].UnreachableSince, "reachable again")
	assert.Equal(t, running.Status.Workflow.StartTime, got.Status.Workflow.StartTime, "no new workflow run")
	after, _ := h.deployment("web")
	assert.Equal(t, d.UID, after.UID, "nothing deleted")
	assert.Equal(t, d.Generation, after.Generation, "nothing applied again")
}
