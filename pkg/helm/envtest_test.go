package helm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

// One kube-apiserver + etcd for the package, started by the first test
// that needs it (the unit tests run without binaries) and stopped in TestMain.
var (
	envOnce sync.Once
	env     *envtest.Environment
	envErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if env != nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// testEnv returns the shared environment; it fails the test when the
// binaries are missing (skips with OAMFLOW_SKIP_ENVTEST=1).
func testEnv(t *testing.T) *envtest.Environment {
	t.Helper()
	if os.Getenv(envtest.SkipEnv) == "1" {
		t.Skipf("%s=1: skipping a test that needs kube-apiserver and etcd", envtest.SkipEnv)
	}
	envOnce.Do(func() { env, envErr = envtest.Start() })
	require.NoError(t, envErr, "build the binaries with `make k8s-binaries`")
	return env
}

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T, e *envtest.Environment, name string) string {
	t.Helper()
	require.NoError(t, e.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	return name
}

// logCapture returns a context whose logger writes everything (all
// verbosities) to the returned buffer.
func logCapture() (context.Context, *syncBuffer) {
	buf := &syncBuffer{}
	log := funcr.New(func(prefix, args string) { buf.WriteString(prefix + " " + args + "\n") }, funcr.Options{Verbosity: 10})
	return logr.NewContext(context.Background(), log), buf
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) WriteString(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.WriteString(v)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func get(t *testing.T, c client.Client, ns, name string, obj client.Object) error {
	t.Helper()
	return c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
}

func TestEnsureLifecycle(t *testing.T) {
	e := testEnv(t)
	ns := newNamespace(t, e, "helm-lifecycle")
	repo := newRepoServer(t)
	repo.add(t, packageChart(t, "simple", "0.1.0"))
	c := NewClient(NewFactory(SingleCluster(e.Config)), NewFetcher(e.Client), e.Client)
	ctx, logs := logCapture()

	props := func(values map[string]any, extra map[string]any) *helmspec.Spec {
		p := map[string]any{"chart": map[string]any{"source": "simple", "repoURL": repo.URL, "version": "0.1.0"}, "values": values,
			"options": map[string]any{"maxHistory": 3}}
		for k, v := range extra {
			p[k] = v
		}
		return spec(t, p, "web", ns)
	}
	ensure := func(s *helmspec.Spec) helmspec.Result {
		t.Helper()
		res, err := c.Ensure(ctx, helmspec.Request{Namespace: ns, Spec: s})
		require.NoError(t, err)
		return res
	}
	message := func() string {
		var cm corev1.ConfigMap
		require.NoError(t, get(t, e.Client, ns, "web-config", &cm))
		return cm.Data["message"]
	}

	res := ensure(props(nil, nil))
	assert.Equal(t, helmspec.ActionInstalled, res.Action)
	assert.Equal(t, 1, res.Release.Revision)
	assert.Equal(t, "deployed", res.Release.Status)
	assert.Equal(t, "hello", message())
	var relSecret corev1.Secret
	require.NoError(t, get(t, e.Client, ns, "sh.helm.release.v1.web.v1", &relSecret), "Helm's Secret driver stores the release")
	assert.Equal(t, res.Release.Digest, relSecret.Labels[helmspec.LabelDigest])
	assert.Len(t, res.Release.Digest, 40)

	res = ensure(props(nil, nil))
	assert.Equal(t, helmspec.ActionUnchanged, res.Action, "same chart, values and name: no new revision")
	assert.Equal(t, 1, res.Release.Revision)

	res = ensure(props(map[string]any{"message": "changed"}, nil))
	assert.Equal(t, helmspec.ActionUpgraded, res.Action)
	assert.Equal(t, 2, res.Release.Revision)
	assert.Equal(t, "changed", message())
	assert.Equal(t, helmspec.ActionUnchanged, ensure(props(map[string]any{"message": "changed"}, nil)).Action)

	// valuesFrom: a ConfigMap below inline values; editing it upgrades.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-values", Namespace: ns},
		Data: map[string]string{"values.yaml": "message: from-configmap\nreplicaCount: 2\n"}}
	require.NoError(t, e.Client.Create(context.Background(), cm))
	withCM := props(nil, map[string]any{"valuesFrom": []any{
		map[string]any{"kind": "ConfigMap", "name": "web-values"},
		map[string]any{"kind": "Secret", "name": "absent", "optional": true},
	}})
	res = ensure(withCM)
	assert.Equal(t, helmspec.ActionUpgraded, res.Action)
	assert.Equal(t, "from-configmap", message())
	assert.Equal(t, helmspec.ActionUnchanged, ensure(withCM).Action)
	cm.Data["values.yaml"] = "message: edited\n"
	require.NoError(t, e.Client.Update(context.Background(), cm))
	res = ensure(withCM)
	assert.Equal(t, helmspec.ActionUpgraded, res.Action, "a changed ConfigMap changes the digest")
	assert.Equal(t, 4, res.Release.Revision)
	assert.Equal(t, "edited", message())

	// History stays within maxHistory.
	cfg, err := c.factory.For(ctx, "", ns)
	require.NoError(t, err)
	hist, err := cfg.Releases.History("web")
	require.NoError(t, err)
	assert.LessOrEqual(t, len(hist), 3)

	// Health: Deployments never become available without kubelets.
	h, err := c.Status(ctx, helmspec.Request{Namespace: ns, Spec: withCM})
	require.NoError(t, err)
	assert.False(t, h.Healthy)
	assert.Equal(t, helmspec.ReasonResourcesNotReady, h.Reason)
	assert.Equal(t, "release web revision 4, chart simple-0.1.0: 2/3 resources ready", h.Message)
	assert.Contains(t, h.Details()["Deployment"], "not ready: web-web")

	// A deleted resource is reported MISSING under its kind.
	require.NoError(t, e.Client.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-config", Namespace: ns}}))
	h, err = c.Status(ctx, helmspec.Request{Namespace: ns, Spec: withCM})
	require.NoError(t, err)
	assert.Equal(t, "MISSING: web-config", h.Details()["ConfigMap"])
	assert.Equal(t, 1, h.Ready)

	// Changed values not yet applied: out of sync, not healthy.
	h, err = c.Status(ctx, helmspec.Request{Namespace: ns, Spec: props(map[string]any{"message": "next"}, nil)})
	require.NoError(t, err)
	assert.Equal(t, helmspec.ReasonOutOfSync, h.Reason)

	// healthStatus criteria replace kstatus: mark the Deployment Available.
	var dep appsv1.Deployment
	require.NoError(t, get(t, e.Client, ns, "web-web", &dep))
	dep.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "Test", LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	require.NoError(t, e.Client.Status().Update(context.Background(), &dep))
	withCriteria := props(nil, map[string]any{
		"valuesFrom":   []any{map[string]any{"kind": "ConfigMap", "name": "web-values"}},
		"healthStatus": []any{map[string]any{"resource": map[string]any{"kind": "Deployment"}, "condition": map[string]any{"type": "Available"}}},
	})
	h, err = c.Status(ctx, helmspec.Request{Namespace: ns, Spec: withCriteria})
	require.NoError(t, err)
	assert.True(t, h.Healthy, h.Message)

	// Uninstall removes the release and its resources.
	res, err = c.Uninstall(ctx, "", ns, "web", helmspec.Options{})
	require.NoError(t, err)
	assert.Equal(t, helmspec.ActionUninstalled, res.Action)
	assert.True(t, apierrors.IsNotFound(get(t, e.Client, ns, "web-web", &appsv1.Deployment{})))
	assert.True(t, apierrors.IsNotFound(get(t, e.Client, ns, "sh.helm.release.v1.web.v4", &corev1.Secret{})))
	res, err = c.Uninstall(ctx, "", ns, "web", helmspec.Options{})
	require.NoError(t, err)
	assert.Equal(t, helmspec.ActionNotFound, res.Action)
	h, err = c.StatusRelease(ctx, "", ns, "web", nil)
	require.NoError(t, err)
	assert.Equal(t, helmspec.ReasonReleaseNotFound, h.Reason)
	assert.NotEmpty(t, logs.String(), "Helm's debug output goes to the context logger")
}

// TestEnsureAfterFailedInstall: a first install that fails (a value the
// chart requires is missing, or the API server rejects an object) is
// followed by a successful Ensure once the values are fixed.
func TestEnsureAfterFailedInstall(t *testing.T) {
	e := testEnv(t)
	ns := newNamespace(t, e, "helm-failed")
	c := NewClient(NewFactory(SingleCluster(e.Config)), NewFetcher(e.Client, WithChartRoot(filepath.Join(moduleRoot(t), "charts", "testdata"))), e.Client)
	cases := []struct {
		reason              string
		name, chart         string
		bad, good           map[string]any
		wantErr             string
		wantStored          release.Status // status stored after the failure; "" = nothing stored
		wantAction          helmspec.Action
		wantRevisionOnFixed int
		wantRecovery        string // Result.Recovery of the fix ("" = none)
	}{
		{reason: "a required value is missing: rendering fails, nothing is stored, the fix installs",
			name: "req", chart: "required", good: map[string]any{"db": map[string]any{"host": "db"}},
			wantErr: "db.host is required", wantAction: helmspec.ActionInstalled, wantRevisionOnFixed: 1},
		{reason: "the API server rejects an object: the release is stored failed, the fix upgrades it",
			name: "bad-port", chart: "simple", bad: map[string]any{"service": map[string]any{"port": 0}}, good: map[string]any{},
			wantErr: "port", wantStored: release.StatusFailed, wantAction: helmspec.ActionUpgraded, wantRevisionOnFixed: 2,
			wantRecovery: "release " + ns + "/bad-port revision 1 had failed: upgraded to revision 2"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			mk := func(values map[string]any) *helmspec.Spec {
				return spec(t, map[string]any{"chart": map[string]any{"source": tc.chart}, "values": values, "options": map[string]any{"timeout": "30s"}}, tc.name, ns)
			}
			_, err := c.Ensure(context.Background(), helmspec.Request{Namespace: ns, Spec: mk(tc.bad)})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			cfg, err := c.factory.For(context.Background(), "", ns)
			require.NoError(t, err)
			cur, err := last(cfg, tc.name)
			require.NoError(t, err)
			if tc.wantStored == "" {
				assert.Nil(t, cur)
			} else {
				require.NotNil(t, cur)
				assert.Equal(t, tc.wantStored, cur.Info.Status)
				h, err := c.StatusRelease(context.Background(), "", ns, tc.name, nil)
				require.NoError(t, err)
				assert.Equal(t, helmspec.ReasonReleaseNotDeployed, h.Reason)
				assert.Contains(t, h.Message, "failed")
			}
			res, err := c.Ensure(context.Background(), helmspec.Request{Namespace: ns, Spec: mk(tc.good)})
			require.NoError(t, err)
			assert.Equal(t, tc.wantAction, res.Action)
			assert.Equal(t, tc.wantRevisionOnFixed, res.Release.Revision)
			assert.Equal(t, "deployed", res.Release.Status)
			assert.Equal(t, tc.wantRecovery, res.Recovery, "a repaired failed release is reported (worth an Event)")
		})
	}
}

// TestEnsureRecoversStuckRelease crafts releases left pending by a
// controller that died mid-operation (the memory storage seam).
func TestEnsureRecoversStuckRelease(t *testing.T) {
	e := testEnv(t)
	ns := newNamespace(t, e, "helm-stuck")
	factory := NewFactory(SingleCluster(e.Config), WithStorage(MemoryStorage()))
	now := time.Now()
	c := NewClient(factory, NewFetcher(e.Client, WithChartRoot(filepath.Join(moduleRoot(t), "charts", "testdata"))), e.Client,
		WithPendingGracePeriod(10*time.Minute), WithClock(func() time.Time { return now }))
	mk := func(name string) *helmspec.Spec {
		return spec(t, map[string]any{"chart": map[string]any{"source": "simple"}, "options": map[string]any{"timeout": "1m"}}, name, ns)
	}
	ctx := context.Background()
	cfg, err := factory.For(ctx, "", ns)
	require.NoError(t, err)
	// stick stores a copy of the newest revision of name as the next
	// revision in status, last touched age ago.
	stick := func(name string, status release.Status, age time.Duration) {
		cur, err := last(cfg, name)
		require.NoError(t, err)
		next := *cur
		info := *cur.Info
		next.Info = &info
		next.Version = cur.Version + 1
		next.Info.Status = status
		next.Info.LastDeployed = info.LastDeployed
		next.Info.LastDeployed.Time = now.Add(-age)
		if status == release.StatusPendingInstall {
			next.Version = cur.Version
			require.NoError(t, cfg.Releases.Update(&next))
			return
		}
		require.NoError(t, cfg.Releases.Create(&next))
	}

	cases := []struct {
		reason       string
		name         string
		status       release.Status
		age          time.Duration
		wantAction   helmspec.Action
		wantErr      error
		wantRecovery string
	}{
		{reason: "pending-upgrade within the grace period is left alone", name: "young", status: release.StatusPendingUpgrade, age: time.Minute,
			wantAction: helmspec.ActionPending, wantErr: helmspec.ErrOperationInProgress},
		{reason: "pending-upgrade past the grace period is rolled back", name: "upg", status: release.StatusPendingUpgrade, age: time.Hour,
			wantAction: helmspec.ActionUnchanged, wantRecovery: "stuck in pending-upgrade for 1h0m0s: marked it failed and rolled back to revision 1"},
		{reason: "pending-rollback past the grace period is rolled back", name: "rb", status: release.StatusPendingRollback, age: time.Hour,
			wantAction: helmspec.ActionUnchanged, wantRecovery: "stuck in pending-rollback"},
		{reason: "pending-install past the grace period is reinstalled", name: "inst", status: release.StatusPendingInstall, age: time.Hour,
			wantAction: helmspec.ActionUpgraded, wantRecovery: "stuck in pending-install for 1h0m0s: marked it failed and reinstalling it"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			res, err := c.Ensure(ctx, helmspec.Request{Namespace: ns, Spec: mk(tc.name)})
			require.NoError(t, err)
			require.Equal(t, helmspec.ActionInstalled, res.Action)
			stick(tc.name, tc.status, tc.age)

			res, err = c.Ensure(ctx, helmspec.Request{Namespace: ns, Spec: mk(tc.name)})
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				assert.Equal(t, tc.wantAction, res.Action)
				assert.Equal(t, 9*time.Minute, res.RetryAfter)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantAction, res.Action)
			assert.Contains(t, res.Recovery, tc.wantRecovery)
			assert.Equal(t, "deployed", res.Release.Status)
			cur, err := last(cfg, tc.name)
			require.NoError(t, err)
			assert.Equal(t, release.StatusDeployed, cur.Info.Status)
		})
	}
}

// losingDeployed is a release driver refusing, once, the write that
// records a new revision as deployed after its upgrade (a throttled
// request), leaving it pending-upgrade as Helm stored it first. Helm's
// memory driver hands out its stored *Release, whose status Helm has set
// already: the stored revision is put back to pending-upgrade.
type losingDeployed struct {
	driver.Driver
	lost bool
}

func (d *losingDeployed) Update(key string, r *release.Release) error {
	if !d.lost && r.Version > 1 && r.Info.Status == release.StatusDeployed {
		d.lost = true
		kept, info := *r, *r.Info
		info.Status = release.StatusPendingUpgrade
		kept.Info = &info
		if err := d.Driver.Update(key, &kept); err != nil {
			return err
		}
		return apierrors.NewTooManyRequests("injected", 1)
	}
	return d.Driver.Update(key, r)
}

// TestEnsureRecoversOwnEndedOperation: an upgrade that returned an error
// with its release left pending-upgrade (seen in the fault suite, seed
// 1796288601652238352: 5 minutes to converge) is recovered by the next
// Ensure of the same Client at once, not after the grace period: its
// operation has ended. Another Client (another process) still waits.
func TestEnsureRecoversOwnEndedOperation(t *testing.T) {
	e := testEnv(t)
	ns := newNamespace(t, e, "helm-ended")
	mem := MemoryStorage()
	lose := &losingDeployed{}
	factory := NewFactory(SingleCluster(e.Config), WithStorage(func(cluster, namespace string) driver.Driver {
		lose.Driver = mem(cluster, namespace)
		return lose
	}))
	fetcher := NewFetcher(e.Client, WithChartRoot(filepath.Join(moduleRoot(t), "charts", "testdata")))
	c := NewClient(factory, fetcher, e.Client)
	other := NewClient(factory, fetcher, e.Client)
	mk := func(replicas int) helmspec.Request {
		return helmspec.Request{Namespace: ns, Spec: spec(t, map[string]any{
			"chart": map[string]any{"source": "simple"}, "values": map[string]any{"replicaCount": replicas},
		}, "ended", ns)}
	}
	ctx := context.Background()
	_, err := c.Ensure(ctx, mk(1))
	require.NoError(t, err)
	_, err = c.Ensure(ctx, mk(2))
	require.Error(t, err, "the upgrade's last write is lost")
	require.True(t, lose.lost)

	res, err := other.Ensure(ctx, mk(2))
	require.ErrorIs(t, err, helmspec.ErrOperationInProgress, "another process cannot know the operation ended")
	assert.Equal(t, helmspec.ActionPending, res.Action)

	res, err = c.Ensure(ctx, mk(2))
	require.NoError(t, err, "the Client whose upgrade ended recovers the release at once")
	assert.Contains(t, res.Recovery, "stuck in pending-upgrade")
	assert.Equal(t, "deployed", res.Release.Status)
}

// droppingSupersede is a release driver losing the first write that
// marks a revision superseded, as a throttled or conflicting request
// does (Helm logs that failure and goes on). Helm's memory driver hands
// out its stored *Release, and Helm sets the status on that very object
// before writing it, so the stored revision is put back to deployed, as
// a lost write to a Secret leaves it.
type droppingSupersede struct {
	driver.Driver
	dropped bool
}

func (d *droppingSupersede) Update(key string, r *release.Release) error {
	if !d.dropped && r.Info.Status == release.StatusSuperseded {
		d.dropped = true
		kept, info := *r, *r.Info
		info.Status = release.StatusDeployed
		kept.Info = &info
		if err := d.Driver.Update(key, &kept); err != nil {
			return err
		}
		return apierrors.NewTooManyRequests("injected", 1)
	}
	return d.Driver.Update(key, r)
}

// TestEnsureLeavesOneDeployedRevision: an upgrade whose "previous revision
// superseded" write was lost left two revisions deployed (seen in the
// fault suite, seed 1796187456105737521); Ensure repairs the history.
func TestEnsureLeavesOneDeployedRevision(t *testing.T) {
	e := testEnv(t)
	ns := newNamespace(t, e, "helm-deployed")
	mem := MemoryStorage()
	drop := &droppingSupersede{}
	factory := NewFactory(SingleCluster(e.Config), WithStorage(func(cluster, namespace string) driver.Driver {
		drop.Driver = mem(cluster, namespace)
		return drop
	}))
	c := NewClient(factory, NewFetcher(e.Client, WithChartRoot(filepath.Join(moduleRoot(t), "charts", "testdata"))), e.Client)
	mk := func(replicas int) helmspec.Request {
		return helmspec.Request{Namespace: ns, Spec: spec(t, map[string]any{
			"chart": map[string]any{"source": "simple"}, "values": map[string]any{"replicaCount": replicas},
		}, "twice", ns)}
	}
	ctx := context.Background()
	cfg, err := factory.For(ctx, "", ns)
	require.NoError(t, err)
	deployed := func() []int {
		hist, err := cfg.Releases.History("twice")
		require.NoError(t, err)
		var v []int
		for _, r := range hist {
			if r.Info.Status == release.StatusDeployed {
				v = append(v, r.Version)
			}
		}
		return v
	}

	res, err := c.Ensure(ctx, mk(1))
	require.NoError(t, err)
	require.Equal(t, helmspec.ActionInstalled, res.Action)
	res, err = c.Ensure(ctx, mk(2))
	require.NoError(t, err, "Helm's own supersede write was dropped; the repair's was not")
	assert.Equal(t, helmspec.ActionUpgraded, res.Action)
	assert.True(t, drop.dropped, "the injected failure happened")
	assert.Equal(t, []int{2}, deployed(), "revision 1 superseded, revision 2 the only deployed one")

	// Level-triggered: a history already holding two deployed revisions
	// (left by an older controller) is repaired by the next pass.
	hist, err := cfg.Releases.History("twice")
	require.NoError(t, err)
	for _, r := range hist {
		if r.Version == 1 {
			r.Info.Status = release.StatusDeployed
			require.NoError(t, cfg.Releases.Update(r))
		}
	}
	require.Equal(t, []int{1, 2}, sorted(deployed()))
	res, err = c.Ensure(ctx, mk(2))
	require.NoError(t, err)
	assert.Equal(t, helmspec.ActionUnchanged, res.Action)
	assert.Equal(t, []int{2}, deployed())
}

func sorted(v []int) []int { slices.Sort(v); return v }

func TestChartAuth(t *testing.T) {
	e := testEnv(t)
	ns := newNamespace(t, e, "helm-auth")
	other := newNamespace(t, e, "helm-auth-other")
	ca := newTestCA(t)
	certPEM, keyPEM := ca.clientPair(t)
	const password = "s3cr3t-pa55word"
	const token = "t0ken-v4lue-xyz"

	basic := newRepoServer(t, withBasicAuth("alice", password))
	basic.add(t, packageChart(t, "simple", ""))
	bearer := newRepoServer(t, withBearer(token))
	bearer.add(t, packageChart(t, "simple", ""))
	mtls := newRepoServer(t, withClientCA(ca.cert))
	mtls.add(t, packageChart(t, "simple", ""))
	oci := newOCIRegistry(t, "bob", password)
	ociSrc := oci.push(t, packageChart(t, "simple", "0.1.0"), &credentials{username: "bob", password: password})

	secret := func(namespace, name string, data map[string][]byte) {
		require.NoError(t, e.Client.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Data: data}))
	}
	secret(ns, "basic", map[string][]byte{"username": []byte("alice"), "password": []byte(password)})
	secret(ns, "wrong", map[string][]byte{"username": []byte("alice"), "password": []byte(password + "-wrong")})
	secret(ns, "bearer", map[string][]byte{"token": []byte(token)})
	secret(ns, "mtls", map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": mtls.caPEM()})
	secret(ns, "ca-only", map[string][]byte{"ca.crt": mtls.caPEM()})
	secret(ns, "oci", map[string][]byte{"username": []byte("bob"), "password": []byte(password)})
	secret(ns, "half", map[string][]byte{"username": []byte("alice")})
	secret(other, "basic", map[string][]byte{"username": []byte("alice"), "password": []byte(password)})

	cases := []struct {
		reason    string
		chart     helmspec.ChartSpec
		plainHTTP bool
		wantErr   string
	}{
		{reason: "basic auth", chart: helmspec.ChartSpec{Source: "simple", RepoURL: basic.URL, Auth: auth("basic", "")}},
		{reason: "no credentials: 401", chart: helmspec.ChartSpec{Source: "simple", RepoURL: basic.URL}, wantErr: "HTTP 401: check chart.auth.secretRef"},
		{reason: "wrong password: 401, and the password is nowhere", chart: helmspec.ChartSpec{Source: "simple", RepoURL: basic.URL, Auth: auth("wrong", "")}, wantErr: "HTTP 401"},
		{reason: "bearer token", chart: helmspec.ChartSpec{Source: "simple", RepoURL: bearer.URL, Auth: auth("bearer", "")}},
		{reason: "TLS client certificate and CA bundle", chart: helmspec.ChartSpec{Source: "simple", RepoURL: mtls.URL, Auth: auth("mtls", "")}},
		{reason: "CA bundle without a client certificate is refused by the server", chart: helmspec.ChartSpec{Source: "simple", RepoURL: mtls.URL, Auth: auth("ca-only", "")}, wantErr: "certificate"},
		{reason: "an unknown CA fails", chart: helmspec.ChartSpec{Source: "simple", RepoURL: mtls.URL}, wantErr: "certificate"},
		{reason: "OCI with basic auth", chart: helmspec.ChartSpec{Source: ociSrc, Version: "0.1.0", Auth: auth("oci", "")}, plainHTTP: true},
		{reason: "OCI without credentials fails", chart: helmspec.ChartSpec{Source: ociSrc, Version: "0.1.0"}, plainHTTP: true, wantErr: "oci://"},
		{reason: "a missing Secret", chart: helmspec.ChartSpec{Source: "simple", RepoURL: basic.URL, Auth: auth("absent", "")}, wantErr: "Secret helm-auth/absent not found"},
		{reason: "half a basic pair", chart: helmspec.ChartSpec{Source: "simple", RepoURL: basic.URL, Auth: auth("half", "")}, wantErr: `must have both "username" and "password"`},
		{reason: "another namespace's Secret is refused", chart: helmspec.ChartSpec{Source: "simple", RepoURL: basic.URL, Auth: auth("basic", other)}, wantErr: "cross-namespace reference"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			var opts []FetcherOption
			if tc.plainHTTP {
				opts = append(opts, WithPlainHTTPRegistries())
			}
			f := NewFetcher(e.Client, opts...)
			c := NewClient(NewFactory(SingleCluster(e.Config)), f, e.Client)
			ctx, logs := logCapture()
			s := &helmspec.Spec{Chart: tc.chart, Release: helmspec.ReleaseSpec{Name: "auth", Namespace: ns}}
			_, err := c.Template(ctx, helmspec.Request{Namespace: ns, Spec: s})
			h, herr := c.Status(ctx, helmspec.Request{Namespace: ns, Spec: s})
			require.NoError(t, herr)
			for _, text := range []string{fmt.Sprint(err), logs.String(), h.Message, fmt.Sprint(h.Details())} {
				assert.NotContains(t, text, password)
				assert.NotContains(t, text, token)
				assert.NotContains(t, text, string(keyPEM))
			}
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.False(t, h.Healthy)
				assert.Equal(t, helmspec.ReasonChartUnavailable, h.Reason)
				return
			}
			require.NoError(t, err)
		})
	}
}

func auth(name, namespace string) *helmspec.ChartAuth {
	return &helmspec.ChartAuth{SecretRef: &helmspec.SecretRef{Name: name, Namespace: namespace}}
}

// TestChartNotFoundIsNeverHealthy: a typo'd chart makes the release
// unhealthy, even when an earlier revision is deployed and ready.
func TestChartNotFoundIsNeverHealthy(t *testing.T) {
	e := testEnv(t)
	ns := newNamespace(t, e, "helm-typo")
	repo := newRepoServer(t)
	repo.add(t, packageChart(t, "required", ""))
	c := NewClient(NewFactory(SingleCluster(e.Config)), NewFetcher(e.Client), e.Client)
	good := spec(t, map[string]any{"chart": map[string]any{"source": "required", "repoURL": repo.URL}, "values": map[string]any{"db": map[string]any{"host": "h"}}}, "db", ns)
	res, err := c.Ensure(context.Background(), helmspec.Request{Namespace: ns, Spec: good})
	require.NoError(t, err)
	require.Equal(t, helmspec.ActionInstalled, res.Action)
	h, err := c.Status(context.Background(), helmspec.Request{Namespace: ns, Spec: good})
	require.NoError(t, err)
	require.True(t, h.Healthy, h.Message)
	assert.Equal(t, "release db revision 1, chart required-0.1.0: 1/1 resources ready", h.Message)

	typo := spec(t, map[string]any{"chart": map[string]any{"source": "requird", "repoURL": repo.URL}, "values": map[string]any{"db": map[string]any{"host": "h"}}}, "db", ns)
	_, err = c.Ensure(context.Background(), helmspec.Request{Namespace: ns, Spec: typo})
	require.ErrorIs(t, err, helmspec.ErrChartNotFound)
	h, err = c.Status(context.Background(), helmspec.Request{Namespace: ns, Spec: typo})
	require.NoError(t, err)
	assert.False(t, h.Healthy)
	assert.Equal(t, helmspec.ReasonChartUnavailable, h.Reason)
	assert.Contains(t, h.Message, `chart "requird"`)
	assert.Contains(t, h.Message, "chart not found")
}

// thirdPartyChartRoot returns the charts folder of kubevela/workflow
// v0.7.2 in the Go module cache (downloaded through the module proxy).
func thirdPartyChartRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/kubevela/workflow@v0.7.2").Output()
	require.NoError(t, err, "go mod download github.com/kubevela/workflow@v0.7.2")
	var mod struct{ Dir string }
	require.NoError(t, json.Unmarshal(out, &mod))
	return filepath.Join(mod.Dir, "charts")
}

func TestThirdPartyChart(t *testing.T) {
	root := thirdPartyChartRoot(t)
	c := NewClient(nil, NewFetcher(nil, WithChartRoot(root)), nil)
	s := spec(t, map[string]any{"chart": map[string]any{"source": "vela-workflow"}}, "wf", "vela-system")
	objs, err := c.Template(context.Background(), helmspec.Request{Namespace: "vela-system", Spec: s})
	require.NoError(t, err)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	assert.Equal(t, 1, kinds["Deployment"], "%v", kinds)
	assert.Equal(t, 4, kinds["CustomResourceDefinition"], "CRDs from crds/ are included: %v", kinds)
	assert.Positive(t, kinds["WorkflowStepDefinition"], "%v", kinds)

	t.Run("installs into a real API server", func(t *testing.T) {
		e := testEnv(t)
		ns := newNamespace(t, e, "vela-wf")
		c := NewClient(NewFactory(SingleCluster(e.Config)), NewFetcher(e.Client, WithChartRoot(root)), e.Client)
		s := spec(t, map[string]any{
			"chart":   map[string]any{"source": "vela-workflow"},
			"values":  map[string]any{"admissionWebhooks": map[string]any{"enabled": false}},
			"options": map[string]any{"wait": false, "timeout": "2m"},
		}, "wf", ns)
		res, err := c.Ensure(context.Background(), helmspec.Request{Namespace: ns, Spec: s})
		require.NoError(t, err)
		assert.Equal(t, helmspec.ActionInstalled, res.Action)
		assert.Equal(t, "vela-workflow", res.Release.Chart)
		h, err := c.Status(context.Background(), helmspec.Request{Namespace: ns, Spec: s})
		require.NoError(t, err)
		assert.False(t, h.Healthy, "its Deployment cannot become available without kubelets")
		assert.Equal(t, h.Total-1, h.Ready, "everything but the Deployment is ready: %v", h.Details())
		assert.True(t, strings.HasPrefix(h.Details()["Deployment"], "not ready: "), h.Details())
		res, err = c.Ensure(context.Background(), helmspec.Request{Namespace: ns, Spec: s})
		require.NoError(t, err)
		assert.Equal(t, helmspec.ActionUnchanged, res.Action)
	})
}
