package workflow

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/egress"
)

// allowLoopback is the outbound policy of tests whose steps call httptest
// servers, which listen on 127.0.0.1.
func allowLoopback(t testing.TB) *egress.Policy {
	t.Helper()
	p, err := egress.New(egress.Config{Allow: []string{"127.0.0.0/8"}})
	require.NoError(t, err)
	return p
}

// TestOutboundPolicy: request steps (oamflow's and KubeVela's definitions)
// to refused targets fail for good with a message naming the address and
// the flag; allow-listed targets are called; the controller's own
// listeners stay refused even then.
func TestOutboundPolicy(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		switch r.URL.Path {
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
			return
		case "/big":
			_, _ = w.Write([]byte(`{"data":"` + strings.Repeat("x", 4096) + `"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(srv.Close)
	// The "metrics" listener of the controller: a port of this process.
	metrics, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = metrics.Close() })
	_, metricsPort, _ := net.SplitHostPort(metrics.Addr().String())

	policy := func(c egress.Config) *egress.Policy {
		p, err := egress.New(c)
		require.NoError(t, err)
		return p
	}
	listeners := []string{":" + metricsPort}
	cases := []struct {
		reason  string
		typ     string
		url     string
		policy  *egress.Policy
		wantMsg string // "" for success
	}{
		{reason: "cloud metadata endpoint", typ: "request", url: "http://169.254.169.254/latest/meta-data/", policy: policy(egress.Config{Listeners: listeners}),
			wantMsg: `POST http://169.254.169.254/…: dial tcp 169.254.169.254:80: 169.254.169.254:80 is a link-local address; oamflow does not connect to it unless an admin allow-lists it (--outbound-allow)`},
		{reason: "cloud metadata endpoint, KubeVela's request definition", typ: "kubevela-request", url: "http://169.254.169.254/", policy: policy(egress.Config{Listeners: listeners}),
			wantMsg: `169.254.169.254:80 is a link-local address; oamflow does not connect to it unless an admin allow-lists it (--outbound-allow)`},
		{reason: "the controller's metrics port", typ: "request", url: "http://127.0.0.1:" + metricsPort + "/metrics", policy: policy(egress.Config{Listeners: listeners}),
			wantMsg: `127.0.0.1:` + metricsPort + ` is one of the controller's own listeners; oamflow does not connect to it`},
		{reason: "the controller's metrics port stays refused when loopback is allow-listed", typ: "request", url: "http://localhost:" + metricsPort + "/metrics",
			policy: policy(egress.Config{Allow: []string{"127.0.0.0/8", "localhost"}, Listeners: listeners}), wantMsg: `is one of the controller's own listeners`},
		{reason: "loopback by default", typ: "request", url: srv.URL + "/api", policy: policy(egress.Config{Listeners: listeners}),
			wantMsg: `is a loopback address; oamflow does not connect to it unless an admin allow-lists it (--outbound-allow)`},
		{reason: "loopback allow-listed", typ: "request", url: srv.URL + "/api", policy: policy(egress.Config{Allow: []string{"127.0.0.1"}, Listeners: listeners})},
		{reason: "a redirect from an allowed server to a refused one", typ: "kubevela-request", url: srv.URL + "/to-metadata", policy: policy(egress.Config{Allow: []string{"127.0.0.1"}}),
			wantMsg: `169.254.169.254:80 is a link-local address`},
		{reason: "a response over the limit", typ: "kubevela-request", url: srv.URL + "/big", policy: policy(egress.Config{Allow: []string{"127.0.0.1"}, MaxResponseBytes: 1024}),
			wantMsg: `the response body is larger than 1024 bytes, the limit (--outbound-max-response-bytes)`},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			props := map[string]any{"url": tc.url, "method": "POST"}
			if tc.typ == "kubevela-request" {
				props["method"] = "GET"
			}
			wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{{Name: "call", Type: tc.typ, Properties: props}}}
			h := newHarness(t, wf, Options{HTTP: tc.policy, MaxStepRetries: 1})
			withTemplates(h, map[string]string{"kubevela-request": kubevelaStep(t, "request")})
			res := h.until(20*time.Second, finished)
			if tc.wantMsg == "" {
				require.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, "%+v", res.Status)
				return
			}
			require.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status, "%+v", res.Status)
			require.NotEmpty(t, res.Status.Steps)
			assert.Equal(t, failed, res.Status.Steps[0].Phase)
			assert.Contains(t, res.Status.Steps[0].Message, tc.wantMsg)
		})
	}
}

// TestRequestTLSConfigSecretNamespace: a tls_config Secret is read only in
// the Application's namespace.
func TestRequestTLSConfigSecretNamespace(t *testing.T) {
	c := env(t).Client
	ctx := context.Background()
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: "kube-system"}, Data: map[string][]byte{"ca.crt": []byte("x")}}
	require.NoError(t, c.Create(ctx, other))
	t.Cleanup(func() { _ = c.Delete(context.Background(), other) })
	const tmpl = `import "vela/http"

req: http.#HTTPDo & {$params: {method: "GET", url: parameter.url, tls_config: {secret: parameter.secret, if parameter.ns != "" {namespace: parameter.ns}}}}
parameter: {url: string, secret: string, ns: *"" | string}
`
	cases := []struct {
		reason  string
		secret  string
		ns      string
		wantMsg string
	}{
		{reason: "namespace field", secret: "ca", ns: "kube-system", wantMsg: `tls_config: Secret kube-system/ca refused: only Secrets of the Application's namespace "default" may be used`},
		{reason: "namespace/name form", secret: "kube-system/ca", wantMsg: `tls_config: Secret kube-system/ca refused: only Secrets of the Application's namespace "default" may be used`},
		{reason: "missing in the Application's namespace", secret: "ca", wantMsg: `tls_config: Secret default/ca not found`},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{{Name: "call", Type: "tls-call",
				Properties: map[string]any{"url": "https://127.0.0.1:1/", "secret": tc.secret, "ns": tc.ns}}}}
			h := newHarness(t, wf, Options{MaxStepRetries: 1})
			withTemplates(h, map[string]string{"tls-call": tmpl})
			res := h.until(20*time.Second, finished)
			require.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status, "%+v", res.Status)
			assert.Contains(t, res.Status.Steps[0].Message, tc.wantMsg)
		})
	}
}
