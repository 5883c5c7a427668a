package manager_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// requestCounter counts the requests a client makes, watches left out
// (they stay open), by "METHOD path".
type requestCounter struct {
	mu   sync.Mutex
	on   bool
	seen []string
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFn(func(req *http.Request) (*http.Response, error) {
		if req.URL.Query().Get("watch") != "true" {
			c.mu.Lock()
			if c.on {
				c.seen = append(c.seen, req.Method+" "+req.URL.Path)
			}
			c.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

// start forgets what was counted and counts from now on.
func (c *requestCounter) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on, c.seen = true, nil
}

func (c *requestCounter) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...)
}

type roundTripperFn func(*http.Request) (*http.Response, error)

func (fn roundTripperFn) RoundTrip(req *http.Request) (*http.Response, error) { return fn(req) }

// reconciles is the Application controller's reconcile count.
func reconciles(t *testing.T) float64 {
	t.Helper()
	fams, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	n := 0.0
	for _, f := range fams {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "application" {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// requireAlone fails the test when Applications other than app exist
// (an earlier test left one behind; one being deleted gets 30 s to go):
// the requests of their reconciles would be counted as app's.
func requireAlone(t *testing.T, app *v1beta1.Application) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		list := &v1beta1.ApplicationList{}
		require.NoError(t, env.Client.List(context.Background(), list))
		var others []string
		terminating := false
		for _, a := range list.Items {
			if a.Namespace != app.Namespace || a.Name != app.Name {
				others = append(others, a.Namespace+"/"+a.Name)
				terminating = terminating || a.DeletionTimestamp != nil
			}
		}
		if !terminating || time.Now().After(deadline) {
			require.Empty(t, others, "Applications left by other tests")
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// fakeRollout plays the Deployment controller for namespace/name: the
// status says every replica of the current generation is available.
func fakeRollout(ctx context.Context, t *testing.T, namespace, name string) {
	t.Helper()
	go func() {
		for ctx.Err() == nil {
			d := &appsv1.Deployment{}
			if env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, d) == nil && d.Status.ObservedGeneration != d.Generation {
				n := ptr.Deref(d.Spec.Replicas, 1)
				d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
				_ = env.Client.Status().Update(ctx, d)
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

// TestNoOpResync: the periodic resync of an Application in its steady
// state reads nothing from the API server and writes nothing (counted at
// the controller's client transport), and a drifted Deployment is still
// put back at the next resync.
func TestNoOpResync(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	counter := &requestCounter{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = counter.wrap
	o := testOptions()
	o.ResyncPeriod = time.Second
	startManagerAs(t, cfg, o)

	app := application(t, "steady", `
components:
- name: steady-web
  type: webservice
  properties: {image: "registry.invalid/web:1", port: 80}
  traits:
  - type: scaler
    properties: {replicas: 1}
  - type: labels
    properties: {team: bench}
`)
	fakeRollout(ctx, t, "default", "steady-web")
	requireAlone(t, app)
	require.NoError(t, env.Client.Create(ctx, app))
	waitPhase(t, app, common.ApplicationRunning)
	time.Sleep(2 * time.Second) // the last status write and its reconcile

	counter.start()
	from := reconciles(t)
	require.Eventually(t, func() bool { return reconciles(t) >= from+3 }, 30*time.Second, 100*time.Millisecond,
		"the Application is resynced")
	assert.Empty(t, counter.requests(), "a no-op resync makes no API request, read or write")

	// Someone scales the Deployment by hand: the next resync reads it
	// again from the API server and puts the replicas back.
	d := &appsv1.Deployment{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "steady-web"}, d))
	d.Spec.Replicas = ptr.To[int32](3)
	require.NoError(t, env.Client.Update(ctx, d))
	require.Eventually(t, func() bool {
		got := &appsv1.Deployment{}
		return env.Client.Get(ctx, client.ObjectKeyFromObject(d), got) == nil && ptr.Deref(got.Spec.Replicas, 0) == 1
	}, 30*time.Second, 100*time.Millisecond, "the drift is repaired at resync")
	var patched bool
	for _, r := range counter.requests() {
		if strings.HasPrefix(r, "PATCH ") && strings.HasSuffix(r, "/deployments/steady-web") {
			patched = true
		}
	}
	assert.True(t, patched, "the controller applied the Deployment again: %v", counter.requests())
	deleteAndWait(t, app)
}
