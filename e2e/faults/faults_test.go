//go:build faults || e2e

// Package faults is oamflow's fault suite (issue 20). On a hub and two
// member clusters, Applications of every kind (hub, multi-cluster with a
// topology narrowed and widened, garbage-collect rules, shared-resource,
// a Helm chart, apply-once) are created, changed and deleted while faults
// are injected at random moments: the controller killed with SIGKILL,
// the hub's kube-apiserver and etcd killed and started again, a member's
// kube-apiserver stopped for a while, every ResourceTracker of a steady
// Application deleted by hand (the controller must rebuild them from the
// live objects; the Application is left unchanged until it did), and API
// errors (500, 429, 409 on writes; delayed watches) injected at the
// controller's client transport (e2e/faults/inject, linked into a
// controller built with -tags faults).
// Invariants are checked while it runs (no object recreated while its
// Application lived, no shared object taken from a sharer that lived)
// and after the faults stop and the controller converged (every object
// as the Application's current spec says, on the clusters its placement
// says, trackers matching the live objects, Helm
// histories clean, bystanders untouched, nothing left of deleted
// Applications but what a rule keeps, and every webhook step, an external
// side effect counted by the suite's HTTP server, performed exactly once
// for each spec its workflow ran for).
//
// The moments come from a seeded RNG; the seed is printed and FAULTS_SEED
// replays a run (the controller's concurrency makes a replay similar, not
// identical). Two profiles: the short one (10 Applications, 5 kills, one
// hub kube-apiserver restart, a 30 s member outage) runs with the e2e
// tests (`make e2e`, part of `make test`); the long one (`make faults`,
// build tag faults) has 50 Applications, 20 kills, two hub kube-apiserver
// restarts, one etcd restart and two member outages of 30-120 s. FAULTS_APPS overrides the number of
// Applications.
package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/e2e/faults/inject"
	"github.com/oamflow/oamflow/e2e/framework"
	"github.com/oamflow/oamflow/pkg/localcluster"
	"github.com/oamflow/oamflow/pkg/manager"
	"github.com/oamflow/oamflow/pkg/multicluster"
)

// profile sizes a run.
type profile struct {
	apps, kills, apiserverRestarts, etcdRestarts, memberOutages int
	// trackerLosses: how many times every tracker of an Application is
	// deleted by hand.
	trackerLosses        int
	outageMin, outageMax time.Duration
	// gapMin and gapMax bound the time between two faults.
	gapMin, gapMax time.Duration
	// writeFaults is the fraction of the controller's writes failed;
	// watchDelays the fraction of its watches delayed (by up to 5 s).
	writeFaults, watchDelays float64
	converge                 time.Duration
}

// fault kinds in the schedule.
const (
	faultKill      = "kill"
	faultAPIServer = "hub-apiserver"
	faultEtcd      = "hub-etcd"
	faultMember    = "member-outage"
	faultTracker   = "trackers-deleted"
)

// rebuildWithin bounds how long the controller may take to rebuild the
// trackers of an Application deleted by hand: its next resync (1 min)
// plus the backoff of reconciles failing meanwhile.
const rebuildWithin = 3 * time.Minute

func TestFaults(t *testing.T) {
	p := runProfile()
	if s := os.Getenv("FAULTS_APPS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "FAULTS_APPS")
		p.apps = n
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FAULTS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "FAULTS_SEED")
		seed = v
	}
	t.Logf("FAULTS_SEED=%d (%d apps, %d kills, %d hub kube-apiserver and %d etcd restarts, %d member outages, %d tracker losses)",
		seed, p.apps, p.kills, p.apiserverRestarts, p.etcdRestarts, p.memberOutages, p.trackerLosses)
	rng := rand.New(rand.NewPCG(seed, 0))
	began := time.Now()
	ctrl.SetLogger(logr.Discard()) // the clients' logs; the controller's go to its file

	env := framework.Start(t, 3)
	hub := env.Cluster(t, v1beta1.ClusterLocal)
	_, err := framework.Oamflow(t, hub.Kubeconfig, "install")
	require.NoError(t, err)
	for _, m := range []string{member1, member2} {
		_, err := framework.Oamflow(t, hub.Kubeconfig, "cluster", "join", env.Cluster(t, m).Kubeconfig, "--name", m)
		require.NoError(t, err)
	}
	scheme, err := manager.Scheme()
	require.NoError(t, err)
	cs := clusters{}
	for _, c := range env.Clusters {
		cl, err := client.New(c.Config, client.Options{Scheme: scheme})
		require.NoError(t, err)
		cs[c.Name] = cl
	}
	hubClient := cs[v1beta1.ClusterLocal]
	ctx := context.Background()

	hooks := startHookServer(t)
	bystanders, err := createBystanders(ctx, cs, p.apps)
	require.NoError(t, err)
	stopFile := filepath.Join(t.TempDir(), "faults-off")
	ctl := newController(t, hub.Kubeconfig, fmt.Sprintf("seed=%d,write=%g,watch=%g,watch-delay=5s,stop=%s", seed, p.writeFaults, p.watchDelays, stopFile))
	ctl.start(t)

	want := make([]desired, p.apps)
	for i := range want {
		want[i] = fresh(1, hooks.url())
		require.NoError(t, withRetry(func() error { return client.IgnoreAlreadyExists(hubClient.Create(ctx, application(i, want[i]))) }))
	}
	var v violations
	uids := &uidWatch{}
	watchCtx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		_ = wait.PollUntilContextCancel(watchCtx, 3*time.Second, false, func(ctx context.Context) (bool, error) {
			for i := range p.apps {
				uids.check(ctx, cs, i, &v)
				uids.checkShared(ctx, cs, i, p.apps, &v)
			}
			return false, nil
		})
	}()

	// The fault schedule, shuffled; one fault every gapMin-gapMax, the churn
	// (one change every 0.3-1.5 s) going on in between. A member outage
	// runs alongside the churn; hub restarts stop the churn while the hub
	// is away.
	var schedule []string
	for range p.kills {
		schedule = append(schedule, faultKill)
	}
	for range p.apiserverRestarts {
		schedule = append(schedule, faultAPIServer)
	}
	for range p.etcdRestarts {
		schedule = append(schedule, faultEtcd)
	}
	for range p.memberOutages {
		schedule = append(schedule, faultMember)
	}
	for range p.trackerLosses {
		schedule = append(schedule, faultTracker)
	}
	rng.Shuffle(len(schedule), func(a, b int) { schedule[a], schedule[b] = schedule[b], schedule[a] })
	report := map[string]int{}
	var outages []string
	outageDone := make(chan error, 1)
	outageRunning := false
	changes := 0
	// frozen: Applications whose trackers were deleted, left unchanged
	// until the controller rebuilt them (since when, and what their status
	// said they applied).
	frozen := map[int]lostTrackers{}
	nextFault := time.Now().Add(randDuration(rng, p.gapMin, p.gapMax))
	for len(schedule) > 0 || outageRunning || len(frozen) > 0 {
		time.Sleep(randDuration(rng, 300*time.Millisecond, 1500*time.Millisecond))
		select {
		case err := <-outageDone:
			require.NoError(t, err, "member outage")
			outageRunning = false
		default:
		}
		if ctl.exited() {
			report["unexpected controller exits"]++
			t.Logf("the controller exited by itself; starting it again")
			ctl.start(t)
		}
		checkRebuilt(ctx, t, hubClient, frozen, &v)
		if i := rng.IntN(p.apps); frozen[i].since.IsZero() {
			change(t, ctx, cs, rng, i, want)
			changes++
		}
		if len(schedule) == 0 || time.Now().Before(nextFault) {
			continue
		}
		f := schedule[0]
		if f == faultMember && outageRunning {
			continue // one member outage at a time
		}
		if f == faultTracker {
			i, lost, ok := loseTrackers(ctx, t, hubClient, rng, want)
			if !ok {
				continue // no Application is steady now: later
			}
			frozen[i] = lost
		}
		schedule = schedule[1:]
		nextFault = time.Now().Add(randDuration(rng, p.gapMin, p.gapMax))
		report[f]++
		switch f {
		case faultKill:
			ctl.kill(t)
			ctl.start(t)
		case faultAPIServer, faultEtcd:
			comp := localcluster.CompKubeAPIServer
			if f == faultEtcd {
				comp = localcluster.CompEtcd
			}
			down := randDuration(rng, 2*time.Second, 8*time.Second)
			o, err := env.Stop(ctx, v1beta1.ClusterLocal, comp)
			require.NoError(t, err)
			t.Logf("fault: %s stopped for %s", o.Name(), down.Round(time.Millisecond))
			time.Sleep(down)
			require.NoError(t, o.Restart(hub, t.Logf))
		case faultMember:
			m := []string{member1, member2}[rng.IntN(2)]
			down := randDuration(rng, p.outageMin, p.outageMax)
			o, err := env.Stop(ctx, m, localcluster.CompKubeAPIServer)
			require.NoError(t, err)
			t.Logf("fault: %s stopped for %s", o.Name(), down.Round(time.Second))
			outages = append(outages, fmt.Sprintf("%s %s", m, down.Round(time.Second)))
			outageRunning = true
			go func() {
				time.Sleep(down)
				outageDone <- o.Restart(env.Cluster(t, m), t.Logf)
			}()
		}
	}
	lastFault := time.Now()
	require.NoError(t, os.WriteFile(stopFile, nil, 0o644), "turning the injected API errors off")
	if ctl.exited() {
		report["unexpected controller exits"]++
		ctl.start(t)
	}
	t.Logf("faults done after %s (%d changes); waiting for convergence", lastFault.Sub(began).Round(time.Second), changes)

	var last error
	convergeErr := wait.PollUntilContextTimeout(ctx, time.Second, p.converge, true, func(ctx context.Context) (bool, error) {
		for i := range want {
			if last = converged(ctx, cs, uids, i, want); last != nil {
				return false, nil
			}
		}
		return true, nil
	})
	convergedAfter := time.Since(lastFault)
	stopWatch()
	<-watchDone
	if convergeErr != nil {
		v.add("not converged %s after the last fault: %v", p.converge, last)
		// Say what every Application lacks, not only the first.
		for i := range want {
			if err := converged(ctx, cs, uids, i, want); err != nil {
				v.add("app-%d (%s): %v", i, kindOf(i), err)
			}
		}
	}
	v.checked(len(want))
	for i := range p.apps {
		uids.check(ctx, cs, i, &v)
		uids.checkShared(ctx, cs, i, p.apps, &v)
	}
	checkBystanders(ctx, cs, bystanders, &v)
	hookRequests, hookRepeats := hooks.check(want, &v)

	injected := ctl.injected(t)
	found, checks := v.snapshot()
	t.Logf("REPORT seed=%d apps=%d changes=%d duration=%s converged-after=%s faults=%v member-outages=%v injected-api-faults=%d webhook-requests=%d (repeated-under-their-key=%d) invariant-checks=%d violations=%d",
		seed, p.apps, changes, time.Since(began).Round(time.Second), convergedAfter.Round(time.Second), report, outages, injected, hookRequests, hookRepeats, checks, len(found))
	for _, f := range found {
		t.Errorf("violation: %s", f)
	}
	assert.Equal(t, p.kills, ctl.kills, "every kill happened")
}

// lostTrackers is what the suite knows of an Application whose trackers it
// deleted: since when, and what its status said it applied.
type lostTrackers struct {
	since   time.Time
	applied []common.ClusterObjectReference
}

// loseTrackers deletes, as a user would by hand, every ResourceTracker of
// an Application whose current spec has been deployed (running, workflow
// finished for its generation), and returns which; false when none is.
func loseTrackers(ctx context.Context, t *testing.T, hub client.Client, rng *rand.Rand, want []desired) (int, lostTrackers, bool) {
	t.Helper()
	for _, i := range rng.Perm(len(want)) {
		if !want[i].exists {
			continue
		}
		app := &v1beta1.Application{}
		if err := hub.Get(ctx, client.ObjectKey{Namespace: namespace, Name: appName(i)}, app); err != nil {
			continue
		}
		st := app.Status
		if app.DeletionTimestamp != nil || st.Phase != common.ApplicationRunning || st.ObservedGeneration != app.Generation ||
			st.Workflow == nil || !st.Workflow.Finished || len(st.AppliedResources) == 0 {
			continue
		}
		err := withRetry(func() error {
			return hub.DeleteAllOf(ctx, &v1beta1.ResourceTracker{}, client.MatchingLabels{v1beta1.LabelAppName: appName(i), v1beta1.LabelAppNamespace: namespace})
		})
		require.NoError(t, err)
		t.Logf("fault: every ResourceTracker of app-%d (%s) deleted by hand", i, kindOf(i))
		return i, lostTrackers{since: time.Now(), applied: st.AppliedResources}, true
	}
	return 0, lostTrackers{}, false
}

// checkRebuilt unfreezes the Applications whose trackers the controller
// rebuilt, and records a violation for one it did not rebuild in time or
// rebuilt without an object its status named.
func checkRebuilt(ctx context.Context, t *testing.T, hub client.Client, frozen map[int]lostTrackers, v *violations) {
	t.Helper()
	for i, lost := range frozen {
		since := lost.since
		rts := &v1beta1.ResourceTrackerList{}
		if err := hub.List(ctx, rts, client.MatchingLabels{v1beta1.LabelAppName: appName(i), v1beta1.LabelAppNamespace: namespace}); err != nil {
			continue // the hub may be restarting
		}
		for _, rt := range rts.Items {
			if rt.Spec.Type != v1beta1.ResourceTrackerTypeVersioned {
				continue
			}
			t.Logf("app-%d: tracker %s rebuilt %s after its trackers were deleted (%d entries)", i, rt.Name, time.Since(since).Round(time.Second), len(rt.Spec.ManagedResources))
			for _, ref := range lost.applied {
				if !slices.ContainsFunc(rt.Spec.ManagedResources, func(m v1beta1.ManagedResource) bool {
					return !m.Deleted && m.Kind == ref.Kind && m.Namespace == ref.Namespace && m.Name == ref.Name && (m.Cluster == ref.Cluster || multicluster.IsLocal(m.Cluster) && multicluster.IsLocal(ref.Cluster))
				}) {
					v.add("app-%d (%s): rebuilt tracker %s lacks %s %s/%s (cluster %q) its status named", i, kindOf(i), rt.Name, ref.Kind, ref.Namespace, ref.Name, ref.Cluster)
				}
			}
			delete(frozen, i)
			break
		}
		if _, still := frozen[i]; still && time.Since(since) > rebuildWithin {
			v.add("app-%d (%s): no ResourceTracker rebuilt %s after its trackers were deleted", i, kindOf(i), rebuildWithin)
			delete(frozen, i)
		}
	}
}

// change makes one random change to Application i and records it in
// want[i] (want holds all Applications: a shared ConfigMap depends on
// the pair).
func change(t *testing.T, ctx context.Context, cs clusters, rng *rand.Rand, i int, want []desired) {
	t.Helper()
	hub := cs[v1beta1.ClusterLocal]
	w := &want[i]
	key := client.ObjectKey{Namespace: namespace, Name: appName(i)}
	if !w.exists {
		next := fresh(w.created+1, w.hook)
		err := withRetry(func() error { return hub.Create(ctx, application(i, next)) })
		if apierrors.IsAlreadyExists(err) {
			return // still being deleted: create it another time
		}
		require.NoError(t, err)
		*w = next
		t.Logf("create app-%d (%s)", i, kindOf(i))
		return
	}
	if rng.IntN(12) == 0 {
		app := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: appName(i)}}
		require.NoError(t, withRetry(func() error { return client.IgnoreNotFound(hub.Delete(ctx, app)) }))
		w.exists = false
		t.Logf("delete app-%d (%s)", i, kindOf(i))
		return
	}
	next := *w
	what, byHand := mutate(rng, kindOf(i), &next)
	if !byHand {
		next.version++
	}
	if byHand {
		// The Deployment may not exist yet: then nothing was scaled.
		d := types.NamespacedName{Namespace: namespace, Name: appName(i) + "-web"}
		patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, next.byHand))
		dep := &metav1.PartialObjectMetadata{}
		dep.SetGroupVersionKind(appsGVK)
		dep.Namespace, dep.Name = d.Namespace, d.Name
		err := withRetry(func() error { return hub.Patch(ctx, dep, patch) })
		if apierrors.IsNotFound(err) {
			return
		}
		require.NoError(t, err)
		*w = next
		t.Logf("app-%d (%s): %s", i, kindOf(i), what)
		return
	}
	err := withRetry(func() error {
		app := &v1beta1.Application{}
		if err := hub.Get(ctx, key, app); err != nil {
			return err
		}
		app.Spec = application(i, next).Spec
		return hub.Update(ctx, app)
	})
	if apierrors.IsNotFound(err) {
		// Deleted a moment ago and still finalizing: ask again later.
		w.exists = false
		return
	}
	require.NoError(t, err)
	*w = next
	t.Logf("app-%d (%s): %s", i, kindOf(i), what)
}

// withRetry retries fn on conflicts and on errors of an API server on
// its way back (after a hub restart), for up to a minute.
func withRetry(fn func() error) error {
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		err = fn()
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) || apierrors.IsInvalid(err) {
			return err
		}
	}
	return err
}

var appsGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

func randDuration(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// controller runs the oamflow-controller binary built with the faults
// tag (its transport injects API errors as $OAMFLOW_FAULTS_INJECT says)
// and kills it.
type controller struct {
	bin, kubeconfig, inject string
	cmd                     *exec.Cmd
	done                    chan struct{}
	kills, starts           int
	log                     *os.File
}

func newController(t *testing.T, kubeconfig, injectCfg string) *controller {
	t.Helper()
	bin := framework.BuildController(t, "faults")
	log, err := os.CreateTemp("", "oamflow-faults-controller-*.log")
	require.NoError(t, err)
	t.Logf("controller log: %s", log.Name())
	ctl := &controller{bin: bin, kubeconfig: kubeconfig, inject: injectCfg, log: log}
	t.Cleanup(func() {
		if ctl.cmd != nil && !ctl.exited() {
			_ = ctl.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-ctl.done:
			case <-time.After(20 * time.Second):
				_ = ctl.cmd.Process.Kill()
				<-ctl.done
			}
		}
		_ = log.Close()
	})
	return ctl
}

func (ctl *controller) start(t *testing.T) {
	t.Helper()
	args := []string{"--kubeconfig=" + ctl.kubeconfig, "--webhook=false", "--leader-elect=false",
		"--metrics-bind-address=127.0.0.1:" + freePort(t), "--health-probe-bind-address=127.0.0.1:" + freePort(t),
		// An Application whose reconciles kept failing during the faults
		// waits out controller-runtime's per-item backoff (up to 1000 s);
		// the resync is what bounds how long it stays untouched after
		// the faults stop, as it does for users.
		"--resync-period=1m",
		"--unhealthy-requeue-period=2s", "--outbound-allow=127.0.0.0/8", "--chart-root=" + filepath.Join(repoRoot(t), "charts", "testdata")}
	ctl.cmd = exec.Command(ctl.bin, args...)
	ctl.cmd.Env = append(os.Environ(), inject.EnvVar+"="+ctl.inject)
	ctl.cmd.Stdout, ctl.cmd.Stderr = ctl.log, ctl.log
	require.NoError(t, ctl.cmd.Start())
	done := make(chan struct{})
	ctl.done = done
	cmd := ctl.cmd
	go func() { _ = cmd.Wait(); close(done) }()
	ctl.starts++
	fmt.Fprintf(ctl.log, "=== started pid %d\n", ctl.cmd.Process.Pid)
}

// exited reports whether the running controller has exited.
func (ctl *controller) exited() bool {
	select {
	case <-ctl.done:
		return true
	default:
		return false
	}
}

func (ctl *controller) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, ctl.cmd.Process.Signal(syscall.SIGKILL))
	<-ctl.done
	ctl.kills++
	fmt.Fprintf(ctl.log, "=== killed pid %d (kill %d)\n", ctl.cmd.Process.Pid, ctl.kills)
	t.Logf("fault: kill %d of the controller (pid %d)", ctl.kills, ctl.cmd.Process.Pid)
}

// injected counts the API faults the controllers' transports injected.
func (ctl *controller) injected(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(ctl.log.Name())
	require.NoError(t, err)
	return strings.Count(string(b), inject.Logged)
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	root, err := localcluster.FindModuleRoot(wd)
	require.NoError(t, err)
	return root
}
