package manager_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/controller"
	"github.com/oamflow/oamflow/pkg/manager"
)

// interval is one reconcile seen by a reconcileLog.
type interval struct {
	manager    string
	start, end time.Time
}

// reconcileLog records the reconciles of several managers (it is their
// controller.Metrics).
type reconcileLog struct {
	mu  sync.Mutex
	all []interval
}

type observer struct {
	name string
	log  *reconcileLog
}

func (o observer) ObservePhase(string, time.Duration, error) {}

func (o observer) ObserveReconcile(_, _ *v1beta1.Application, d time.Duration, _ error) {
	now := time.Now()
	o.log.mu.Lock()
	defer o.log.mu.Unlock()
	o.log.all = append(o.log.all, interval{manager: o.name, start: now.Add(-d), end: now})
}

func (l *reconcileLog) count(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, i := range l.all {
		if i.manager == name {
			n++
		}
	}
	return n
}

// overlaps returns pairs of reconciles of different managers that ran at
// the same time.
func (l *reconcileLog) overlaps() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for i, a := range l.all {
		for _, b := range l.all[i+1:] {
			if a.manager != b.manager && a.start.Before(b.end) && b.start.Before(a.end) {
				out = append(out, a.manager+"/"+b.manager+" at "+a.start.Format(time.RFC3339Nano))
			}
		}
	}
	return out
}

// TestLeaderElection runs two controllers with leader election against one
// API server: only the leader reconciles; when it stops, the other takes
// over; no two reconciles of different controllers ever overlap.
func TestLeaderElection(t *testing.T) {
	c := env.Client
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "oamflow-system"}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	log := &reconcileLog{}
	opts := func(name string) manager.Options {
		o := testOptions()
		o.LeaderElect = true
		o.LeaderElectionID = "leader-test"
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 3*time.Second, 2*time.Second, 500*time.Millisecond
		o.ControllerOptions = []controller.Option{controller.WithMetrics(observer{name: name, log: log})}
		return o
	}
	stopA := startManager(t, opts("a"))
	stopB := startManager(t, opts("b"))

	running := func(name string) {
		t.Helper()
		app := application(t, name, `
components:
- name: settings
  type: k8s-objects
  properties:
    objects:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: `+name+`}, data: {k: v}}
`)
		require.NoError(t, c.Create(ctx, app))
		require.Eventually(t, func() bool {
			got := &v1beta1.Application{}
			return c.Get(ctx, client.ObjectKeyFromObject(app), got) == nil && got.Status.Phase == common.ApplicationRunning
		}, 60*time.Second, 200*time.Millisecond, "%s runs", name)
	}
	running("first")
	leader, follower, stopLeader := "a", "b", stopA
	if log.count("a") == 0 {
		leader, follower, stopLeader = "b", "a", stopB
	}
	require.Positive(t, log.count(leader))
	assert.Zero(t, log.count(follower), "the follower does not reconcile while the leader runs")

	stopLeader()
	led := log.count(leader)
	running("second")
	assert.Positive(t, log.count(follower), "the follower took over")
	assert.Equal(t, led, log.count(leader), "the stopped leader reconciles nothing more")
	assert.Empty(t, log.overlaps(), "reconciles of the two controllers never overlap")
	deleteAllAndWait(t, "default")
}
