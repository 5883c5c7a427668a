//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/e2e/framework"
	"github.com/oamflow/oamflow/pkg/manager"
	"github.com/oamflow/oamflow/pkg/sharding"
)

// controllerProc is one oamflow-controller process run outside the
// cluster with a Deployment's arguments.
type controllerProc struct {
	cmd     *exec.Cmd
	metrics string
	once    sync.Once
}

func runController(t *testing.T, bin, kubeconfig string, dep *appsv1.Deployment) *controllerProc {
	t.Helper()
	p := &controllerProc{metrics: fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))}
	args := append([]string{}, dep.Spec.Template.Spec.Containers[0].Args...)
	args = append(args, "--kubeconfig="+kubeconfig, "--metrics-bind-address="+p.metrics, "--metrics-secure=false",
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", freeTCPPort(t)), fmt.Sprintf("--webhook-port=%d", freeTCPPort(t)))
	t.Logf("$ oamflow-controller %s", strings.Join(args, " "))
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = io.Discard, framework.LogWriter(t)
	require.NoError(t, p.cmd.Start())
	t.Cleanup(func() { p.stop(t) })
	return p
}

func (p *controllerProc) stop(t *testing.T) {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case err := <-done:
			assert.NoError(t, err, "the controller exits cleanly on SIGTERM")
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			t.Error("the controller did not stop within 30 s")
		}
	})
}

var (
	runningGauge = regexp.MustCompile(`(?m)^oamflow_applications\{phase="running"\} (\d+)$`)
	// reconcileCounter is controller-runtime's count of the Application
	// controller's reconciles, one line per result (success, error,
	// requeue, requeue_after).
	reconcileCounter = regexp.MustCompile(`(?m)^controller_runtime_reconcile_total\{controller="application",result="[a-z_]+"\} (\d+)$`)
)

// scrape is the shard's /metrics ("" when it cannot be read).
func (p *controllerProc) scrape() string {
	resp, err := http.Get("http://" + p.metrics + "/metrics") //nolint:noctx // local endpoint
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	return string(data)
}

// runningApps is the shard's oamflow_applications{phase="running"}: the
// Applications in its cache.
func (p *controllerProc) runningApps() string {
	if m := runningGauge.FindStringSubmatch(p.scrape()); m != nil {
		return m[1]
	}
	return "0"
}

// reconciles is the shard's controller_runtime_reconcile_total of the
// Application controller, summed over results: how many Application
// reconciles this process ran; -1 when /metrics cannot be read.
func (p *controllerProc) reconciles() int {
	text := p.scrape()
	if text == "" {
		return -1
	}
	n := 0
	for _, m := range reconcileCounter.FindAllStringSubmatch(text, -1) {
		v, _ := strconv.Atoi(m[1])
		n += v
	}
	return n
}

// settledReconciles waits until no shard in procs reconciles anything
// for a few seconds and returns each one's reconcile count.
func settledReconciles(t *testing.T, procs map[string]*controllerProc) map[string]int {
	t.Helper()
	read := func() map[string]int {
		counts := map[string]int{}
		for shard, p := range procs {
			counts[shard] = p.reconciles()
		}
		return counts
	}
	var last map[string]int
	framework.WaitFor(t, 2*time.Minute, "the shards stop reconciling", func(context.Context) (bool, error) {
		a := read()
		time.Sleep(3 * time.Second)
		last = read()
		for _, n := range last {
			if n < 0 {
				return false, fmt.Errorf("a shard's /metrics cannot be read: %v", last)
			}
		}
		return maps.Equal(a, last), nil
	})
	return last
}

// touch changes an annotation of each Application named, which makes the
// shard that reconciles it reconcile it once more (and nothing else).
func touch(t *testing.T, c client.Client, names []string, value string) {
	t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"e2e.oamflow.dev/touched":"`+value+`"}}}`))
	for _, name := range names {
		app := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		require.NoError(t, c.Patch(context.Background(), app, patch), "touching %s", name)
	}
}

// TestShardingOutOfCluster installs the chart with sharding on (a master
// and shards shard-0 and shard-1) into a local cluster and runs the three
// controllers outside it with their Deployments' arguments: 20 new
// Applications are labelled half for each shard by the master's webhook;
// each shard's metrics show that it reconciles only its own (touching one
// shard's Applications moves that shard's controller_runtime_reconcile_total
// and no other's) and caches only its own (oamflow_applications);
// re-labelling one moves it without re-creating its objects or re-running
// its workflow; when shard-1 stops, its Applications are left alone (no
// other shard reconciles them when they change) and say which shard they
// wait for.
func TestShardingOutOfCluster(t *testing.T) {
	env := framework.Start(t, 1, framework.WithNodes(1))
	hub := env.Cluster(t, "local")
	ctx := context.Background()
	const ns = "oamflow-system"
	// No periodic resync during the test: a shard's reconcile count moves
	// only when one of its Applications changes.
	framework.InstallChart(t, hub, ns, map[string]any{
		"sharding":   map[string]any{"enabled": true, "shards": []any{"shard-0", "shard-1"}},
		"controller": map[string]any{"resyncPeriod": "1h"},
	})

	scheme, err := manager.Scheme()
	require.NoError(t, err)
	c, err := client.New(hub.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	bin := framework.BuildController(t)
	procs := map[string]*controllerProc{}
	for shard, name := range map[string]string{"master": "oamflow-controller", "shard-0": "oamflow-controller-shard-0", "shard-1": "oamflow-controller-shard-1"} {
		dep := &appsv1.Deployment{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep))
		procs[shard] = runController(t, bin, hub.Kubeconfig, dep)
	}

	const n = 20
	appName := func(i int) string { return fmt.Sprintf("shard-app-%02d", i) }
	for i := range n {
		app := &v1beta1.Application{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "Application"},
			ObjectMeta: metav1.ObjectMeta{Name: appName(i), Namespace: "default"},
		}
		require.NoError(t, yaml.Unmarshal([]byte(`
components:
- name: settings
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: `+appName(i)+`}, data: {k: v}}]
`), &app.Spec))
		framework.WaitFor(t, 2*time.Minute, "the master's webhook admits "+app.Name, func(ctx context.Context) (bool, error) {
			return c.Create(ctx, app.DeepCopy()) == nil, nil
		})
	}
	get := func(name string) *v1beta1.Application {
		app := &v1beta1.Application{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, app))
		return app
	}
	framework.WaitFor(t, 5*time.Minute, "the 20 Applications run", func(ctx context.Context) (bool, error) {
		for i := range n {
			if get(appName(i)).Status.Phase != common.ApplicationRunning {
				return false, nil
			}
		}
		return true, nil
	})
	shardOf := map[string]string{}
	perShard := map[string]int{}
	for i := range n {
		shard := get(appName(i)).Labels[sharding.LabelScheduledShardID]
		shardOf[appName(i)] = shard
		perShard[shard]++
	}
	t.Logf("Applications per shard: %v", perShard)
	assert.Equal(t, map[string]int{"shard-0": n / 2, "shard-1": n / 2}, perShard, "the webhook splits new Applications round-robin")

	// Each shard reconciles its own Applications only: touching the
	// Applications of one shard moves that shard's
	// controller_runtime_reconcile_total by at least one reconcile each,
	// and the other shards' not at all.
	for _, shard := range []string{"shard-1", "shard-0"} {
		var names []string
		for name, s := range shardOf {
			if s == shard {
				names = append(names, name)
			}
		}
		before := settledReconciles(t, procs)
		touch(t, c, names, shard)
		framework.WaitFor(t, time.Minute, shard+" reconciles its touched Applications", func(context.Context) (bool, error) {
			return procs[shard].reconciles() >= before[shard]+len(names), nil
		})
		after := settledReconciles(t, procs)
		t.Logf("reconciles before and after touching the %d Applications of %s: %v -> %v", len(names), shard, before, after)
		for other := range procs {
			if other != shard {
				assert.Equal(t, before[other], after[other], "%s reconciled none of %s's Applications", other, shard)
			}
		}
	}
	framework.WaitFor(t, time.Minute, "each shard's metrics count its own Applications only", func(context.Context) (bool, error) {
		return procs["shard-0"].runningApps() == "10" && procs["shard-1"].runningApps() == "10" && procs["master"].runningApps() == "0", nil
	})

	// Move one Application of shard-0 to shard-1.
	var moved string
	for i := range n {
		if shardOf[appName(i)] == "shard-0" {
			moved = appName(i)
			break
		}
	}
	before := get(moved)
	cm := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: moved}, cm))
	app := before.DeepCopy()
	app.Labels[sharding.LabelScheduledShardID] = "shard-1"
	require.NoError(t, c.Patch(ctx, app, client.MergeFrom(before.DeepCopy())))
	framework.WaitFor(t, time.Minute, "shard-1 takes "+moved+" over", func(context.Context) (bool, error) {
		cond := meta.FindStatusCondition(get(moved).Status.Conditions, sharding.ConditionScheduled)
		return cond != nil && cond.Message == "reconciled by shard shard-1", nil
	})
	after := get(moved)
	assert.Equal(t, before.Status.LatestRevision, after.Status.LatestRevision, "no new revision")
	assert.Equal(t, before.Status.Workflow.StartTime, after.Status.Workflow.StartTime, "the workflow did not run again")
	cmAfter := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: moved}, cmAfter))
	assert.Equal(t, cm.UID, cmAfter.UID, "the ConfigMap was neither deleted nor re-created")
	framework.WaitFor(t, time.Minute, "the metrics follow the move", func(context.Context) (bool, error) {
		return procs["shard-0"].runningApps() == "9" && procs["shard-1"].runningApps() == "11", nil
	})

	// Stop shard-1.
	procs["shard-1"].stop(t)
	for name, shard := range shardOf {
		if shard != "shard-1" && name != moved {
			continue
		}
		framework.WaitFor(t, time.Minute, name+" says it waits for shard-1", func(context.Context) (bool, error) {
			cond := meta.FindStatusCondition(get(name).Status.Conditions, sharding.ConditionScheduled)
			return cond != nil && cond.Reason == sharding.ReasonShardNotRunning &&
				strings.Contains(cond.Message, "waiting for shard shard-1"), nil
		})
	}
	assert.Equal(t, "9", procs["shard-0"].runningApps(), "shard-0 still holds only its own")

	// With shard-1 stopped, its Applications change and neither the master
	// nor shard-0 reconciles them.
	running := map[string]*controllerProc{"master": procs["master"], "shard-0": procs["shard-0"]}
	var orphans []string
	for name, shard := range shardOf {
		if shard == "shard-1" || name == moved {
			orphans = append(orphans, name)
		}
	}
	idle := settledReconciles(t, running)
	touch(t, c, orphans, "shard-1-stopped")
	time.Sleep(5 * time.Second)
	now := settledReconciles(t, running)
	t.Logf("reconciles before and after touching the %d Applications of the stopped shard-1: %v -> %v", len(orphans), idle, now)
	assert.Equal(t, idle, now, "nobody reconciles the Applications of the stopped shard-1")
}
