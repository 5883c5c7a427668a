package helm

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/oamflow/oamflow/pkg/errclass"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// clientProviderFn adapts a function to engine.ClientProvider (the
// cluster behind a template's `lookup`).
type clientProviderFn func(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error)

func (fn clientProviderFn) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	return fn(apiVersion, kind)
}

// renderWith renders a one-template chart with Helm's engine (as the
// install and upgrade actions do) and returns Helm's error.
func renderWith(t *testing.T, tpl string, values map[string]any, cluster engine.ClientProvider) error {
	t.Helper()
	ch := &chart.Chart{
		Metadata:  &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "t", Version: "0.1.0"},
		Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte(tpl)}},
	}
	top, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "r", Namespace: "ns", IsInstall: true}, chartutil.DefaultCapabilities)
	require.NoError(t, err)
	if cluster != nil {
		_, err = engine.RenderWithClientProvider(ch, top, cluster)
	} else {
		_, err = engine.Render(ch, top)
	}
	require.Error(t, err, "the case must make Helm fail")
	return err
}

// TestRenderFailure classifies errors worded by this Helm version itself
// (its engine and schema validation), so a change of Helm's wording fails
// here rather than silently turning render failures back into retries.
func TestRenderFailure(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	lookupFails := func(err error) engine.ClientProvider {
		return clientProviderFn(func(string, string) (dynamic.NamespaceableResourceInterface, bool, error) { return nil, false, err })
	}
	schemaErr := func() error {
		ch := &chart.Chart{Metadata: &chart.Metadata{Name: "t", Version: "0.1.0"},
			Schema: []byte(`{"type": "object", "properties": {"replicas": {"type": "integer"}}}`)}
		_, err := chartutil.ToRenderValuesWithSchemaValidation(ch, map[string]any{"replicas": "two"}, chartutil.ReleaseOptions{Name: "r"}, nil, false)
		return err
	}
	cases := []struct {
		reason string
		err    func(t *testing.T) error
		want   bool
		// wantMessage is contained in Helm's message.
		wantMessage string
	}{
		{reason: "a required value is missing",
			err: func(t *testing.T) error {
				return renderWith(t, `host: {{ required "db.host is required" .Values.db.host }}`, map[string]any{"db": map[string]any{}}, nil)
			},
			want: true, wantMessage: "execution error at (t/templates/cm.yaml:1:9): db.host is required"},
		{reason: "the chart calls fail",
			err:  func(t *testing.T) error { return renderWith(t, `{{ fail "set mode to a or b" }}`, nil, nil) },
			want: true, wantMessage: "set mode to a or b"},
		{reason: "a template does not parse",
			err:  func(t *testing.T) error { return renderWith(t, `a: {{ .Values.x `, nil, nil) },
			want: true, wantMessage: "parse error at (t/templates/cm.yaml:1)"},
		{reason: "a template dereferences a value that is not set",
			err:  func(t *testing.T) error { return renderWith(t, `tag: {{ .Values.image.tag }}`, nil, nil) },
			want: true, wantMessage: "nil pointer evaluating interface {}.tag"},
		{reason: "the values break values.schema.json",
			err:  func(*testing.T) error { return schemaErr() },
			want: true, wantMessage: "values don't meet the specifications of the schema(s)"},
		{reason: "a lookup the API server could not answer may work next time",
			err: func(t *testing.T) error {
				return renderWith(t, `{{ lookup "v1" "ConfigMap" "ns" "x" }}`, nil, lookupFails(apierrors.NewServiceUnavailable("starting")))
			}},
		{reason: "a lookup that could not connect may work next time",
			err: func(t *testing.T) error {
				return renderWith(t, `{{ lookup "v1" "ConfigMap" "ns" "x" }}`, nil, lookupFails(refused))
			}},
		{reason: "an API server error of the action is retried",
			err: func(*testing.T) error {
				return apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
			}},
		{reason: "an unreachable cluster is retried",
			err: func(*testing.T) error { return refused }},
		{reason: "a kubeVersion constraint depends on the cluster, not on the spec",
			err: func(*testing.T) error {
				return errors.New("chart requires kubeVersion: >=1.40.0 which is incompatible with Kubernetes v1.34.2")
			}},
		{reason: "an object Helm cannot build is not a render failure",
			err: func(*testing.T) error {
				return errors.New("unable to build kubernetes objects from release manifest: resource mapping not found")
			}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			err := tc.err(t)
			assert.Contains(t, err.Error(), tc.wantMessage)
			assert.Equal(t, tc.want, renderFailure(err), "%v", err)
			assert.Equal(t, tc.want, renderFailure(errors.Join(err)), "wrapped: %v", err)
		})
	}
}

// TestRenderFailureIsTerminal installs the `required` test chart without
// its required value: the error is terminal (IsTerminal, *RenderError)
// and carries Helm's message, nothing is stored or applied, and the same
// spec with the value installs. An upgrade that drops the value fails the
// same way and leaves the deployed revision alone. A repository that does
// not answer and an API server that cannot be reached stay retryable.
func TestRenderFailureIsTerminal(t *testing.T) {
	e := testEnv(t)
	ns := newNamespace(t, e, "helm-render")
	root := filepath.Join(moduleRoot(t), "charts", "testdata")
	c := NewClient(NewFactory(SingleCluster(e.Config)), NewFetcher(e.Client, WithChartRoot(root)), e.Client)
	ctx := context.Background()
	mk := func(values map[string]any) helmspec.Request {
		return helmspec.Request{Namespace: ns, Spec: spec(t, map[string]any{"chart": map[string]any{"source": "required"}, "values": values}, "db", ns)}
	}
	withHost := map[string]any{"db": map[string]any{"host": "db.example"}}
	stored := func() int {
		cfg, err := c.factory.For(ctx, "", ns)
		require.NoError(t, err)
		rels, err := cfg.Releases.History("db")
		if err != nil {
			return 0
		}
		return len(rels)
	}
	assertRenderError := func(t *testing.T, op string, err error) {
		t.Helper()
		require.Error(t, err)
		assert.True(t, errclass.IsTerminal(err), "a render failure is terminal: %v", err)
		var re *helmspec.RenderError
		require.ErrorAs(t, err, &re)
		assert.Contains(t, re.Error(), "execution error at (required/templates/configmap.yaml:6:", "Helm's own message")
		assert.Contains(t, err.Error(), "db.host is required: set values.db.host")
		assert.Contains(t, err.Error(), op+" release "+ns+"/db: chart ")
		assert.Contains(t, err.Error(), "required", "names the chart")
	}

	res, err := c.Ensure(ctx, mk(nil))
	assertRenderError(t, "install", err)
	assert.Equal(t, helmspec.Result{}, res, "no release is reported: Helm stored none")
	assert.Equal(t, 0, stored(), "nothing is stored")
	var cm corev1.ConfigMap
	assert.True(t, apierrors.IsNotFound(get(t, e.Client, ns, "db-db", &cm)), "nothing is applied")

	res, err = c.Ensure(ctx, mk(withHost))
	require.NoError(t, err)
	assert.Equal(t, helmspec.ActionInstalled, res.Action)
	require.NoError(t, get(t, e.Client, ns, "db-db", &cm))
	assert.Equal(t, "db.example", cm.Data["host"])

	_, err = c.Ensure(ctx, mk(map[string]any{"db": map[string]any{"host": ""}}))
	assertRenderError(t, "upgrade", err)
	assert.Equal(t, 1, stored(), "the failed upgrade stored no revision")
	h, err := c.Status(ctx, mk(withHost))
	require.NoError(t, err)
	assert.Equal(t, 1, h.Release.Revision)
	assert.Equal(t, "deployed", h.Release.Status)

	t.Run("a repository that does not answer is retried", func(t *testing.T) {
		srv := httptest.NewServer(nil)
		url := srv.URL
		srv.Close()
		req := helmspec.Request{Namespace: ns, Spec: spec(t, map[string]any{"chart": map[string]any{"source": "simple", "repoURL": url, "version": "0.1.0"}}, "gone", ns)}
		_, err := c.Ensure(ctx, req)
		require.Error(t, err)
		var ce *helmspec.ChartError
		assert.ErrorAs(t, err, &ce)
		assert.False(t, errclass.IsTerminal(err), "%v", err)
	})
	t.Run("an API server that cannot be reached is retried", func(t *testing.T) {
		cfg := rest.CopyConfig(e.Config)
		srv := httptest.NewServer(nil)
		cfg.Host = srv.URL
		srv.Close()
		down := NewClient(NewFactory(SingleCluster(cfg)), NewFetcher(e.Client, WithChartRoot(root)), e.Client)
		_, err := down.Ensure(ctx, mk(nil))
		require.Error(t, err)
		assert.False(t, errclass.IsTerminal(err), "%v", err)
	})
}
