//go:build faults

// Package faults is oamflow's fault suite (issue 20), first part: the
// controller is killed with SIGKILL at random moments while Applications
// are created, changed and deleted, and afterwards nothing may be lost,
// left behind or wrongly deleted. The moments come from a seeded RNG; the
// seed is printed and FAULTS_SEED replays a run.
//
//	make faults                       # or: go test -tags faults ./e2e/faults/ -v
//	FAULTS_SEED=42 make faults
//
// It is not part of `make test` (minutes of wall time on a local cluster).
package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/e2e/framework"
	"github.com/oamflow/oamflow/pkg/manager"
)

const (
	namespace = "default"
	apps      = 10
	kills     = 12
)

// desired is what the driver last asked of one Application.
type desired struct {
	exists  bool
	image   string
	side    bool // a second component, <app>-side
	created int  // how many times the Application was created
}

// TestKillController: SIGKILL the controller 12 times while 10
// Applications churn (image and replica changes, a component added and
// removed, deletes and re-creates), then check the invariants once the
// controller has converged.
func TestKillController(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FAULTS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "FAULTS_SEED")
		seed = v
	}
	t.Logf("FAULTS_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	env := framework.Start(t, 1)
	hub := env.Clusters[0]
	_, err := framework.Oamflow(t, hub.Kubeconfig, "install")
	require.NoError(t, err)
	scheme, err := manager.Scheme()
	require.NoError(t, err)
	c, err := client.New(hub.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	ctx := context.Background()

	bystanders := createBystanders(t, ctx, c)
	ctl := newController(t, hub.Kubeconfig)
	ctl.start(t)

	want := make([]desired, apps)
	for i := range want {
		want[i] = desired{exists: true, image: "nginx:1"}
		require.NoError(t, c.Create(ctx, application(i, want[i])))
		want[i].created = 1
	}

	// Churn and kill: one change every 0.5-2 s; the controller is killed
	// after 2-10 s of life each time and started again at once.
	nextKill := time.Now().Add(randDuration(rng, 2*time.Second, 10*time.Second))
	for k := 0; k < kills; {
		time.Sleep(randDuration(rng, 500*time.Millisecond, 2*time.Second))
		i := rng.IntN(apps)
		change(t, ctx, c, rng, i, &want[i])
		if time.Now().After(nextKill) {
			ctl.kill(t)
			ctl.start(t)
			k++
			nextKill = time.Now().Add(randDuration(rng, 2*time.Second, 10*time.Second))
		}
	}
	t.Logf("faults done (%d kills); waiting for convergence", kills)

	// Converged: every existing Application running at its generation with
	// its objects as asked; every deleted one gone with its objects.
	framework.WaitFor(t, 4*time.Minute, "every Application converges after the faults", func(ctx context.Context) (bool, error) {
		for i := range want {
			if ok, err := converged(ctx, c, i, want[i]); !ok {
				return false, err
			}
		}
		return true, nil
	})

	// Nothing oamflow did not create was touched.
	for _, b := range bystanders {
		cm := &corev1.ConfigMap{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(b), cm), "bystander %s still exists", b.Name)
		assert.Equal(t, b.UID, cm.UID, "bystander %s not recreated", b.Name)
		assert.Equal(t, b.ResourceVersion, cm.ResourceVersion, "bystander %s not modified", b.Name)
	}
	// Every live Deployment is tracked by its Application.
	for i := range want {
		if !want[i].exists {
			continue
		}
		assert.NoError(t, tracked(ctx, c, i, want[i]), "app-%d", i)
	}
	assert.Equal(t, kills, ctl.kills, "every kill happened")
}

// change makes one random change to Application i and records it in w.
func change(t *testing.T, ctx context.Context, c client.Client, rng *rand.Rand, i int, w *desired) {
	t.Helper()
	key := client.ObjectKey{Namespace: namespace, Name: appName(i)}
	if !w.exists {
		next := desired{exists: true, image: "nginx:1", created: w.created + 1}
		err := c.Create(ctx, application(i, next))
		if apierrors.IsAlreadyExists(err) {
			return // still being deleted: create it another time
		}
		require.NoError(t, err)
		*w = next
		t.Logf("create app-%d", i)
		return
	}
	switch n := rng.IntN(10); {
	case n == 0:
		app := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: appName(i)}}
		require.NoError(t, client.IgnoreNotFound(c.Delete(ctx, app)))
		w.exists = false
		t.Logf("delete app-%d", i)
		return
	case n < 4:
		w.side = !w.side
	default:
		w.image = fmt.Sprintf("nginx:%d", rng.IntN(50)+2)
	}
	err := retryConflict(func() error {
		app := &v1beta1.Application{}
		if err := c.Get(ctx, key, app); err != nil {
			return err
		}
		app.Spec = application(i, *w).Spec
		return c.Update(ctx, app)
	})
	if apierrors.IsNotFound(err) {
		// Deleted a moment ago and still finalizing: ask again later.
		w.exists = false
		return
	}
	require.NoError(t, err)
	t.Logf("update app-%d: image %s, side %v", i, w.image, w.side)
}

// converged reports whether Application i and its Deployments are as w says.
func converged(ctx context.Context, c client.Client, i int, w desired) (bool, error) {
	app := &v1beta1.Application{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: appName(i)}, app)
	deps := &appsv1.DeploymentList{}
	if lerr := c.List(ctx, deps, client.InNamespace(namespace), client.MatchingLabels{v1beta1.LabelAppName: appName(i)}); lerr != nil {
		return false, lerr
	}
	if !w.exists {
		if err == nil {
			return false, fmt.Errorf("app-%d still exists (deleting since %v)", i, app.DeletionTimestamp)
		}
		if !apierrors.IsNotFound(err) {
			return false, err
		}
		if len(deps.Items) > 0 {
			return false, fmt.Errorf("app-%d deleted but %d of its Deployments remain", i, len(deps.Items))
		}
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("app-%d: %w", i, err)
	}
	if app.Status.Phase != common.ApplicationRunning || app.Status.ObservedGeneration != app.Generation {
		return false, fmt.Errorf("app-%d: phase %q at generation %d of %d", i, app.Status.Phase, app.Status.ObservedGeneration, app.Generation)
	}
	names := map[string]string{}
	for _, d := range deps.Items {
		names[d.Name] = d.Spec.Template.Spec.Containers[0].Image
	}
	wantNames := map[string]string{appName(i) + "-web": w.image}
	if w.side {
		wantNames[appName(i)+"-side"] = "nginx:1"
	}
	for n, img := range wantNames {
		if names[n] != img {
			return false, fmt.Errorf("app-%d: Deployment %s has image %q, want %q", i, n, names[n], img)
		}
	}
	if len(names) != len(wantNames) {
		return false, fmt.Errorf("app-%d: Deployments %v, want %v", i, names, wantNames)
	}
	return true, nil
}

// tracked checks that the current revision's ResourceTracker of
// Application i lists each of its Deployments.
func tracked(ctx context.Context, c client.Client, i int, w desired) error {
	app := &v1beta1.Application{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: appName(i)}, app); err != nil {
		return err
	}
	rts := &v1beta1.ResourceTrackerList{}
	if err := c.List(ctx, rts, client.MatchingLabels{v1beta1.LabelAppName: appName(i), v1beta1.LabelAppNamespace: namespace}); err != nil {
		return err
	}
	listed := map[string]bool{}
	for _, rt := range rts.Items {
		for _, m := range rt.Spec.ManagedResources {
			if m.Kind == "Deployment" && !m.Deleted {
				listed[m.Name] = true
			}
		}
	}
	want := []string{appName(i) + "-web"}
	if w.side {
		want = append(want, appName(i)+"-side")
	}
	for _, n := range want {
		if !listed[n] {
			return fmt.Errorf("Deployment %s is not in any ResourceTracker of app-%d (listed: %v)", n, i, listed)
		}
	}
	return nil
}

// createBystanders creates ConfigMaps that look like an Application's
// objects (its labels) without being in any of its trackers.
func createBystanders(t *testing.T, ctx context.Context, c client.Client) []*corev1.ConfigMap {
	t.Helper()
	var out []*corev1.ConfigMap
	for i := range apps {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("bystander-%d", i),
			Labels: map[string]string{v1beta1.LabelAppName: appName(i), v1beta1.LabelAppNamespace: namespace, v1beta1.LabelAppComponent: appName(i) + "-web"}},
			Data: map[string]string{"owner": "someone else"}}
		require.NoError(t, c.Create(ctx, cm))
		out = append(out, cm)
	}
	return out
}

// application is Application i as w describes it.
func application(i int, w desired) *v1beta1.Application {
	comp := func(name, image string) common.ApplicationComponent {
		return common.ApplicationComponent{Name: name, Type: "webservice",
			Properties: &runtime.RawExtension{Raw: fmt.Appendf(nil, `{"image":%q}`, image)}}
	}
	spec := v1beta1.ApplicationSpec{Components: []common.ApplicationComponent{comp(appName(i)+"-web", w.image)}}
	if w.side {
		spec.Components = append(spec.Components, comp(appName(i)+"-side", "nginx:1"))
	}
	return &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: appName(i)}, Spec: spec}
}

func appName(i int) string { return fmt.Sprintf("app-%d", i) }

func randDuration(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

func retryConflict(fn func() error) error {
	var err error
	for range 10 {
		if err = fn(); !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

// controller runs the oamflow-controller binary (built once) and kills it.
type controller struct {
	bin, kubeconfig string
	cmd             *exec.Cmd
	kills           int
	log             *os.File
}

func newController(t *testing.T, kubeconfig string) *controller {
	t.Helper()
	bin := framework.BuildController(t)
	log, err := os.CreateTemp("", "oamflow-faults-controller-*.log")
	require.NoError(t, err)
	t.Logf("controller log: %s", log.Name())
	ctl := &controller{bin: bin, kubeconfig: kubeconfig, log: log}
	t.Cleanup(func() {
		if ctl.cmd != nil {
			_ = ctl.cmd.Process.Signal(syscall.SIGTERM)
			_ = ctl.cmd.Wait()
		}
		_ = log.Close()
	})
	return ctl
}

func (ctl *controller) start(t *testing.T) {
	t.Helper()
	args := []string{"--kubeconfig=" + ctl.kubeconfig, "--webhook=false", "--leader-elect=false",
		"--metrics-bind-address=127.0.0.1:" + freePort(t), "--health-probe-bind-address=127.0.0.1:" + freePort(t),
		"--unhealthy-requeue-period=2s"}
	ctl.cmd = exec.Command(ctl.bin, args...)
	ctl.cmd.Stdout, ctl.cmd.Stderr = ctl.log, ctl.log
	require.NoError(t, ctl.cmd.Start())
	fmt.Fprintf(ctl.log, "=== started pid %d\n", ctl.cmd.Process.Pid)
}

func (ctl *controller) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, ctl.cmd.Process.Signal(syscall.SIGKILL))
	_ = ctl.cmd.Wait()
	ctl.kills++
	fmt.Fprintf(ctl.log, "=== killed pid %d (kill %d)\n", ctl.cmd.Process.Pid, ctl.kills)
	t.Logf("kill %d: controller pid %d", ctl.kills, ctl.cmd.Process.Pid)
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
