package manager_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// userAgents keeps the User-Agent of every request sent.
type userAgents struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (u *userAgents) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		u.mu.Lock()
		u.seen[req.Header.Get("User-Agent")] = true
		u.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

func (u *userAgents) all() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for ua := range u.seen {
		out = append(out, ua)
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestClientIdentity: with a kubeconfig that names no User-Agent (as
// in-cluster config and most kubeconfigs), every request the controller
// makes names it as client-go's clients do (binary, version, platform):
// the API server's audit log shows it, and takes its default field
// manager from it (a revision's creator in its managedFields).
func TestClientIdentity(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	agents := &userAgents{seen: map[string]bool{}}
	cfg := rest.CopyConfig(env.Config)
	cfg.UserAgent = ""
	cfg.WrapTransport = agents.wrap
	stop := startManagerAs(t, cfg, testOptions())
	defer stop()

	app := application(t, "identity", `
components:
- name: identity-web
  type: webservice
  properties: {image: "registry.invalid/web:1", port: 80}
`)
	fakeRollout(ctx, t, "default", "identity-web")
	require.NoError(t, env.Client.Create(ctx, app))
	defer deleteAndWait(t, app)
	waitPhase(t, app, common.ApplicationRunning)

	want := rest.DefaultKubernetesUserAgent()
	require.Equal(t, []string{want}, agents.all(), "the User-Agents of the controller's requests")
	rev := &v1beta1.ApplicationRevision{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: "identity-v1"}, rev))
	for _, mf := range rev.ManagedFields {
		require.NotEqual(t, "Go-http-client", mf.Manager, "a field manager of revision %s", rev.Name)
	}
}
