package resourcekeeper

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

// env is one kube-apiserver + etcd shared by the package's tests; each test
// works in namespaces of its own.
var env *envtest.Environment

func TestMain(m *testing.M) {
	os.Exit(envtest.Main(m, &env, envtest.WithCRDs("charts/oamflow/crds")))
}

// requestCounter counts the requests a client sends, by kind.
type requestCounter struct {
	reads, writes atomic.Int64
}

func (c *requestCounter) reset() { c.reads.Store(0); c.writes.Store(0) }

type countingTransport struct {
	next    http.RoundTripper
	counter *requestCounter
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		t.counter.writes.Add(1)
	default:
		t.counter.reads.Add(1)
	}
	return t.next.RoundTrip(r)
}

// countingConfig returns a REST config whose every HTTP request is
// counted by counter.
func countingConfig(counter *requestCounter) *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, counter: counter} })
	return cfg
}

// countingClient returns a client whose every HTTP request is counted.
func countingClient(t testing.TB) (client.Client, *requestCounter) {
	t.Helper()
	counter := &requestCounter{}
	c, err := client.New(countingConfig(counter), client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	return c, counter
}

// fixture is one test's namespace and a client counting requests.
type fixture struct {
	t       testing.TB
	ns      string
	c       client.Client
	counter *requestCounter
}

var nsSeq atomic.Int64

func newFixture(t testing.TB) *fixture {
	t.Helper()
	c, counter := countingClient(t)
	ns := fmt.Sprintf("rk-%d", nsSeq.Add(1))
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	return &fixture{t: t, ns: ns, c: c, counter: counter}
}

// app returns an Application (not stored: the keeper only needs its
// identity and components).
func (f *fixture) app(name string, mods ...func(*v1beta1.Application)) *v1beta1.Application {
	a := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Generation: 1}}
	for _, m := range mods {
		m(a)
	}
	return a
}

// keeper builds a Keeper for app at revision rev with the given policies.
func (f *fixture) keeper(app *v1beta1.Application, rev int64, policies ...Policies) *Keeper {
	f.t.Helper()
	var p Policies
	if len(policies) > 0 {
		p = policies[0]
	}
	k, err := New(app, rev, Options{Clients: multicluster.HubOnly{Hub: f.c}, Policies: p})
	require.NoError(f.t, err)
	return k
}

// get reads an object with the uncounted admin client; nil when missing.
func (f *fixture) get(apiVersion, kind, name string) *unstructured.Unstructured {
	f.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	err := env.Client.Get(f.t.Context(), client.ObjectKey{Namespace: f.ns, Name: name}, u)
	if err != nil {
		require.True(f.t, client.IgnoreNotFound(err) == nil, "reading %s %s: %v", kind, name, err)
		return nil
	}
	return u
}

// tracker reads a ResourceTracker; nil when missing.
// giveTo makes app the owner of a live object (its app.oam.dev labels), as
// a shared-resource hand-over does.
func (f *fixture) giveTo(apiVersion, kind, name string, app *v1beta1.Application) {
	f.t.Helper()
	live := f.get(apiVersion, kind, name)
	require.NotNil(f.t, live)
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q,%q:%q}}}`, v1beta1.LabelAppName, app.Name, v1beta1.LabelAppNamespace, app.Namespace)
	require.NoError(f.t, env.Client.Patch(f.t.Context(), live, client.RawPatch(types.MergePatchType, []byte(patch))))
}

func (f *fixture) tracker(name string) *v1beta1.ResourceTracker {
	f.t.Helper()
	rt := &v1beta1.ResourceTracker{}
	if err := env.Client.Get(f.t.Context(), client.ObjectKey{Name: name}, rt); err != nil {
		require.True(f.t, client.IgnoreNotFound(err) == nil, "reading tracker %s: %v", name, err)
		return nil
	}
	return rt
}

// objMod modifies a fixture object.
type objMod func(*unstructured.Unstructured)

func withLabel(k, v string) objMod {
	return func(u *unstructured.Unstructured) {
		l := u.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l[k] = v
		u.SetLabels(l)
	}
}

func asTrait(traitType string) objMod {
	return func(u *unstructured.Unstructured) {
		withLabel(v1beta1.LabelResourceType, v1beta1.ResourceTypeTrait)(u)
		withLabel(v1beta1.LabelTraitType, traitType)(u)
	}
}

func withField(value any, path ...string) objMod {
	return func(u *unstructured.Unstructured) {
		if err := unstructured.SetNestedField(u.Object, runtime.DeepCopyJSONValue(value), path...); err != nil {
			panic(err)
		}
	}
}

// stamp adds the labels rendering stamps on every object.
func stamp(u *unstructured.Unstructured, app *v1beta1.Application, rev int64, component string, mods []objMod) *unstructured.Unstructured {
	u.SetLabels(map[string]string{
		v1beta1.LabelAppName:      app.Name,
		v1beta1.LabelAppNamespace: app.Namespace,
		v1beta1.LabelAppComponent: component,
		v1beta1.LabelAppRevision:  fmt.Sprintf("%s-v%d", app.Name, rev),
		v1beta1.LabelResourceType: v1beta1.ResourceTypeWorkload,
		v1beta1.LabelWorkloadType: "webservice",
	})
	for _, m := range mods {
		m(u)
	}
	return u
}

// deployment is a realistic rendered webservice Deployment: quantities in
// a form the API server normalises ("0.5" → "500m"), ports without the
// defaulted protocol, an env list.
func deployment(app *v1beta1.Application, rev int64, component, name string, mods ...objMod) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": name, "namespace": app.Namespace},
		"spec": map[string]any{
			"replicas": int64(2),
			"selector": map[string]any{"matchLabels": map[string]any{"app.oam.dev/component": component}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app.oam.dev/component": component}},
				"spec": map[string]any{
					"containers": []any{map[string]any{
						"name":  component,
						"image": "nginx:1.27",
						"ports": []any{map[string]any{"containerPort": int64(80)}},
						"env":   []any{map[string]any{"name": "MODE", "value": "prod"}},
						"resources": map[string]any{
							"requests": map[string]any{"cpu": "0.5", "memory": "256Mi"},
							"limits":   map[string]any{"cpu": "1000m", "memory": "0.5Gi"},
						},
					}},
				},
			},
		},
	}}
	return stamp(u, app, rev, component, mods)
}

func configMap(app *v1beta1.Application, rev int64, component, name string, mods ...objMod) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": name, "namespace": app.Namespace},
		"data":       map[string]any{"key": "value"},
	}}
	return stamp(u, app, rev, component, mods)
}

func service(app *v1beta1.Application, rev int64, component, name string, mods ...objMod) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Service",
		"metadata":   map[string]any{"name": name, "namespace": app.Namespace},
		"spec": map[string]any{
			"selector": map[string]any{"app.oam.dev/component": component},
			"ports":    []any{map[string]any{"port": int64(80), "targetPort": int64(8080)}},
		},
	}}
	return stamp(u, app, rev, component, append([]objMod{asTrait("expose")}, mods...))
}

func objs(o ...*unstructured.Unstructured) []*unstructured.Unstructured { return o }
