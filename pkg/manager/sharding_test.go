package manager_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/controller"
	"github.com/oamflow/oamflow/pkg/manager"
	"github.com/oamflow/oamflow/pkg/sharding"
)

// appLog records which Applications each shard reconciled.
type appLog struct {
	mu   sync.Mutex
	seen map[string]map[string]int // shard -> app -> reconciles
}

type appObserver struct {
	shard string
	log   *appLog
}

func (o appObserver) ObservePhase(string, time.Duration, error) {}

func (o appObserver) ObserveReconcile(before, _ *v1beta1.Application, _ time.Duration, _ error) {
	o.log.mu.Lock()
	defer o.log.mu.Unlock()
	if o.log.seen[o.shard] == nil {
		o.log.seen[o.shard] = map[string]int{}
	}
	o.log.seen[o.shard][before.Name]++
}

func (l *appLog) count(shard, app string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[shard][app]
}

// TestSharding runs a master and two shards on one API server: the master
// labels new Applications round-robin (its Supervisor: the webhook is off
// here; TestRecorderSchedulesShards covers the webhook's labelling), each
// shard reconciles only its own and labels their revisions and trackers;
// re-labelling moves an Application without a new revision, a re-run or
// a re-created object; a stopped shard's Applications are left alone by
// the others and say which shard they wait for.
func TestSharding(t *testing.T) {
	c := env.Client
	ctx := context.Background()
	for _, name := range []string{"oamflow-system", "sharding"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	log := &appLog{seen: map[string]map[string]int{}}
	opts := func(shard string) manager.Options {
		o := testOptions()
		o.LeaderElect = true
		o.LeaderElectionID = "sharding-test"
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 3*time.Second, 2*time.Second, 500*time.Millisecond
		o.Sharding = sharding.Config{Enabled: true, ShardID: shard}
		if shard == sharding.MasterShardID {
			o.Sharding.SchedulableShards = []string{"shard-0", "shard-1"}
			o.ShardingInterval = 500 * time.Millisecond
		}
		o.ControllerOptions = []controller.Option{controller.WithMetrics(appObserver{shard: shard, log: log})}
		return o
	}
	startManager(t, opts(sharding.MasterShardID))
	startManager(t, opts("shard-0"))
	stop1 := startManager(t, opts("shard-1"))

	const n = 6
	for i := range n {
		name := fmt.Sprintf("app-%d", i)
		app := application(t, name, `
components:
- name: settings
  type: k8s-objects
  properties:
    objects:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: `+name+`}, data: {k: v}}
`)
		app.Namespace = "sharding"
		require.NoError(t, c.Create(ctx, app))
	}
	get := func(name string) *v1beta1.Application {
		app := &v1beta1.Application{}
		require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: "sharding", Name: name}, app))
		return app
	}
	require.Eventually(t, func() bool {
		for i := range n {
			if get(fmt.Sprintf("app-%d", i)).Status.Phase != common.ApplicationRunning {
				return false
			}
		}
		return true
	}, 90*time.Second, 250*time.Millisecond, "every Application runs")

	shardOf := map[string]string{}
	perShard := map[string]int{}
	for i := range n {
		name := fmt.Sprintf("app-%d", i)
		app := get(name)
		shard := app.Labels[sharding.LabelScheduledShardID]
		shardOf[name] = shard
		perShard[shard]++
		assert.Equal(t, "reconciled by shard "+shard, scheduled(app).Message, name)
		assert.Zero(t, log.count(other(shard), name), "%s is reconciled by %s only", name, shard)
		assert.Positive(t, log.count(shard, name), name)
		assert.Zero(t, log.count(sharding.MasterShardID, name), "the master reconciles only its own shard")
		assertOwnedLabelled(t, app, shard)
	}
	assert.Equal(t, map[string]int{"shard-0": n / 2, "shard-1": n / 2}, perShard, "round-robin")

	// Move an Application of shard-0 to shard-1.
	var moved string
	for i := range n {
		if name := fmt.Sprintf("app-%d", i); shardOf[name] == "shard-0" {
			moved = name
			break
		}
	}
	before := get(moved)
	cm := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: "sharding", Name: moved}, cm))
	patch := client.MergeFrom(before.DeepCopy())
	app := before.DeepCopy()
	app.Labels[sharding.LabelScheduledShardID] = "shard-1"
	require.NoError(t, c.Patch(ctx, app, patch))
	require.Eventually(t, func() bool {
		return scheduled(get(moved)).Message == "reconciled by shard shard-1"
	}, 30*time.Second, 200*time.Millisecond, "shard-1 takes %s over", moved)
	after := get(moved)
	assertOwnedLabelled(t, after, "shard-1")
	assert.Equal(t, before.Status.LatestRevision, after.Status.LatestRevision, "no new revision")
	require.NotNil(t, after.Status.Workflow)
	assert.Equal(t, before.Status.Workflow.StartTime, after.Status.Workflow.StartTime, "the workflow did not run again")
	for i, s := range after.Status.Workflow.Steps {
		assert.Equal(t, before.Status.Workflow.Steps[i].FirstExecuteTime, s.FirstExecuteTime, "step %s did not run again", s.Name)
	}
	cmAfter := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: "sharding", Name: moved}, cmAfter))
	assert.Equal(t, cm.UID, cmAfter.UID, "the deployed object was neither deleted nor re-created")
	// An update of the moved Application reaches shard-1 only.
	reconciled0 := log.count("shard-0", moved)
	reconciled1 := log.count("shard-1", moved)
	app = get(moved)
	patch = client.MergeFrom(app.DeepCopy())
	app.Annotations = map[string]string{"touched": "yes"}
	require.NoError(t, c.Patch(ctx, app, patch))
	require.Eventually(t, func() bool { return log.count("shard-1", moved) > reconciled1 }, 30*time.Second, 200*time.Millisecond)
	assert.Equal(t, reconciled0, log.count("shard-0", moved), "shard-0 no longer touches %s", moved)

	// Stop shard-1: its Applications wait for it, and say so.
	stop1()
	counts0 := map[string]int{}
	for name := range shardOf {
		counts0[name] = log.count("shard-0", name)
	}
	for i := range n {
		name := fmt.Sprintf("app-%d", i)
		if name != moved && shardOf[name] != "shard-1" {
			continue
		}
		require.Eventually(t, func() bool {
			c := scheduled(get(name))
			return c.Status == metav1.ConditionFalse && c.Reason == sharding.ReasonShardNotRunning
		}, 30*time.Second, 200*time.Millisecond, "%s says it waits", name)
		c := scheduled(get(name))
		assert.Contains(t, c.Message, "waiting for shard shard-1: no controller holds the Lease oamflow-system/sharding-test-shard-1")
		assert.Equal(t, counts0[name], log.count("shard-0", name), "shard-0 leaves %s alone", name)
	}
	// Shard-1 back: it finishes its Applications' deletion.
	startManager(t, opts("shard-1"))
	deleteAllAndWait(t, "sharding")
}

func other(shard string) string {
	if shard == "shard-0" {
		return "shard-1"
	}
	return "shard-0"
}

func scheduled(app *v1beta1.Application) metav1.Condition {
	if c := meta.FindStatusCondition(app.Status.Conditions, sharding.ConditionScheduled); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// assertOwnedLabelled checks that the Application's revisions and
// trackers carry its shard label.
func assertOwnedLabelled(t *testing.T, app *v1beta1.Application, shard string) {
	t.Helper()
	ctx := context.Background()
	revs := &v1beta1.ApplicationRevisionList{}
	require.NoError(t, env.Client.List(ctx, revs, client.InNamespace(app.Namespace), client.MatchingLabels{v1beta1.LabelAppName: app.Name}))
	require.NotEmpty(t, revs.Items)
	for _, r := range revs.Items {
		assert.Equal(t, shard, r.Labels[sharding.LabelScheduledShardID], "ApplicationRevision %s", r.Name)
	}
	rts := &v1beta1.ResourceTrackerList{}
	require.NoError(t, env.Client.List(ctx, rts, client.MatchingLabels{v1beta1.LabelAppName: app.Name, v1beta1.LabelAppNamespace: app.Namespace}))
	require.NotEmpty(t, rts.Items)
	for _, r := range rts.Items {
		assert.Equal(t, shard, r.Labels[sharding.LabelScheduledShardID], "ResourceTracker %s", r.Name)
	}
}
