package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/manager"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

func TestFlags(t *testing.T) {
	cases := []struct {
		reason string
		args   []string
		check  func(t *testing.T, o manager.Options)
		err    string
	}{
		{"defaults", nil, func(t *testing.T, o manager.Options) {
			assert.Equal(t, 4, o.Concurrency)
			assert.Equal(t, 5*time.Minute, o.ResyncPeriod)
			assert.Equal(t, 10, o.RevisionLimit)
			assert.Equal(t, "oamflow-system", o.SystemNamespace)
			assert.Equal(t, ":8080", o.MetricsAddr)
			assert.Equal(t, ":9440", o.ProbeAddr)
			assert.False(t, o.LeaderElect)
			assert.Equal(t, 10, o.MaxStepRetries)
			assert.Equal(t, 10*time.Minute, o.DefaultStepTimeout)
			assert.Equal(t, appfile.DefaultBudgets(), o.Budgets)
			assert.Equal(t, 5*time.Minute, o.ClusterUnreachableAfter)
		}, ""},
		{"cluster unreachable threshold", []string{"--cluster-unreachable-after=90s"}, func(t *testing.T, o manager.Options) {
			assert.Equal(t, 90*time.Second, o.ClusterUnreachableAfter)
		}, ""},
		{"no cluster unreachable threshold", []string{"--cluster-unreachable-after=0"}, nil, "--cluster-unreachable-after must be positive, got 0s"},
		{"budgets", []string{"--max-components=20", "--max-traits-per-component=3", "--max-application-bytes=4096", "--max-rendered-objects=7"}, func(t *testing.T, o manager.Options) {
			assert.Equal(t, appfile.Budgets{MaxComponents: 20, MaxTraitsPerComponent: 3, MaxApplicationBytes: 4096, MaxRenderedObjects: 7}, o.Budgets)
		}, ""},
		{"outbound allow-list", []string{"--outbound-allow=127.0.0.0/8,registry.local", "--outbound-allow=169.254.169.254", "--outbound-max-response-bytes=4096"}, func(t *testing.T, o manager.Options) {
			assert.Equal(t, []string{"127.0.0.0/8", "registry.local", "169.254.169.254"}, o.Outbound.Allow)
			assert.Equal(t, int64(4096), o.Outbound.MaxResponseBytes)
		}, ""},
		{"bad outbound allow-list", []string{"--outbound-allow=10.0.0.0/40"}, nil, `--outbound-allow: "10.0.0.0/40" is not a CIDR`},
		{"negative budget", []string{"--max-components=-1"}, nil, "--max-components must be at least 1, got -1"},
		{"zero budget is refused, not taken as the default", []string{"--max-traits-per-component=0"}, nil, "--max-traits-per-component must be at least 1, got 0"},
		{"overrides", []string{"--concurrent-reconciles=8", "--default-step-timeout=0", "--leader-elect"}, func(t *testing.T, o manager.Options) {
			assert.Equal(t, 8, o.Concurrency)
			assert.Zero(t, o.DefaultStepTimeout)
			assert.True(t, o.LeaderElect)
		}, ""},
		{"sharding off by default, the master shard", nil, func(t *testing.T, o manager.Options) {
			assert.False(t, o.Sharding.Enabled)
			assert.Equal(t, "master", o.Sharding.ID())
		}, ""},
		{"a shard (KubeVela's flags)", []string{"--enable-sharding", "--shard-id=shard-0", "--leader-elect"}, func(t *testing.T, o manager.Options) {
			assert.True(t, o.Sharding.Enabled)
			assert.Equal(t, "shard-0", o.Sharding.ID())
			assert.False(t, o.Sharding.IsMaster())
		}, ""},
		{"the master with schedulable shards", []string{"--enable-sharding", "--schedulable-shards=shard-0, shard-1", "--schedulable-shards=shard-2", "--leader-elect"}, func(t *testing.T, o manager.Options) {
			assert.True(t, o.Sharding.IsMaster())
			assert.Equal(t, []string{"shard-0", "shard-1", "shard-2"}, o.Sharding.SchedulableShards)
		}, ""},
		{"sharding without leader election", []string{"--enable-sharding", "--shard-id=shard-0"}, nil, "--enable-sharding needs --leader-elect"},
		{"a shard id that is no label value", []string{"--enable-sharding", "--shard-id=shard 0", "--leader-elect"}, nil, `--shard-id "shard 0" is not a label value`},
		{"a schedulable shard listed twice", []string{"--enable-sharding", "--schedulable-shards=a,a", "--leader-elect"}, nil, `--schedulable-shards: "a" is listed twice`},
		{"single-tenant by default, cross-namespace allowed", nil, func(t *testing.T, o manager.Options) {
			assert.False(t, o.Tenancy.Lockdown())
			assert.Nil(t, o.Tenancy.AllowCrossNamespace)
			assert.True(t, o.Tenancy.CrossNamespace())
		}, ""},
		{"lockdown refuses cross-namespace unless asked", []string{"--default-service-account=oamflow-app"}, func(t *testing.T, o manager.Options) {
			assert.True(t, o.Tenancy.Lockdown())
			assert.False(t, o.Tenancy.CrossNamespace())
		}, ""},
		{"lockdown with cross-namespace", []string{"--default-service-account=oamflow-app", "--allow-cross-namespace-resources"}, func(t *testing.T, o manager.Options) {
			assert.True(t, o.Tenancy.CrossNamespace())
		}, ""},
		{"single-tenant without cross-namespace", []string{"--allow-cross-namespace-resources=false"}, func(t *testing.T, o manager.Options) {
			assert.False(t, o.Tenancy.CrossNamespace())
		}, ""},
		{"KubeVela's flag name", []string{"--allow-cross-namespace-resource=false"}, func(t *testing.T, o manager.Options) {
			assert.False(t, o.Tenancy.CrossNamespace())
		}, ""},
		{"bad default ServiceAccount", []string{"--default-service-account=Team:A"}, nil, `--default-service-account "Team:A" is not a ServiceAccount name`},
		{"no workers", []string{"--concurrent-reconciles=0"}, nil, "--concurrent-reconciles must be at least 1"},
		{"no retries", []string{"--max-step-retries=0"}, nil, "--max-step-retries must be at least 1"},
		{"negative timeout", []string{"--default-step-timeout=-1s"}, nil, "--default-step-timeout must not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			o := manager.Options{}
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			bindFlags(fs, &o)
			require.NoError(t, fs.Parse(tc.args))
			err := o.Validate()
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			tc.check(t, o)
		})
	}
}

// TestManagerDeploysAnApplication runs the real manager against a real API
// server and waits for an Application to be running.
func TestManagerDeploysAnApplication(t *testing.T) {
	if os.Getenv(envtest.SkipEnv) == "1" {
		t.Skip()
	}
	scheme, err := manager.Scheme()
	require.NoError(t, err)
	env := envtest.New(t, envtest.WithCRDs("charts/oamflow/crds"), envtest.WithScheme(scheme))
	c := env.Client
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	o := manager.Options{}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	bindFlags(fs, &o)
	// A free port for the webhook: 9443 may be taken by another controller
	// on this machine (or another test package running in parallel).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	require.NoError(t, fs.Parse([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--concurrent-reconciles=2", "--max-components=3",
		fmt.Sprintf("--webhook-port=%d", port)}))
	done := make(chan error, 1)
	go func() { done <- manager.Run(ctx, env.Config, o) }()

	app := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}}
	require.NoError(t, yaml.Unmarshal([]byte(`
components:
- name: settings
  type: k8s-objects
  properties:
    objects:
    - apiVersion: v1
      kind: ConfigMap
      metadata: {name: settings}
      data: {mode: fast}
`), &app.Spec))
	require.NoError(t, c.Create(ctx, app))

	require.Eventually(t, func() bool {
		got := &v1beta1.Application{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(app), got); err != nil {
			return false
		}
		return got.Status.Phase == common.ApplicationRunning
	}, 60*time.Second, 200*time.Millisecond)
	cm := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "settings"}, cm))
	assert.Equal(t, "fast", cm.Data["mode"])
	assert.Equal(t, "cfg", cm.Labels[v1beta1.LabelAppName])

	// The webhook refuses an Application over --max-components with the
	// budget's message.
	tooMany := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: "too-many", Namespace: "default"}}
	for i := 0; i < 4; i++ {
		tooMany.Spec.Components = append(tooMany.Spec.Components, common.ApplicationComponent{Name: fmt.Sprintf("c%d", i), Type: "k8s-objects"})
	}
	err = c.Create(ctx, tooMany)
	require.Error(t, err, "admitted over the component budget")
	assert.Contains(t, err.Error(), "spec.components: 4 components; the limit is 3 (--max-components)")

	require.NoError(t, c.Delete(ctx, app))
	require.Eventually(t, func() bool {
		return c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}) != nil
	}, 30*time.Second, 200*time.Millisecond, "deleting the Application deletes what it deployed")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the manager did not stop")
	}
}
