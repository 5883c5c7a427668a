package manager_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// TestCreateReads: from create to running, an Application of a webservice
// and a worker that dependsOn it reads (counted at the controller's client
// transport) neither the Application itself (the finalizer patch answered
// it), nor its context ConfigMap more than once, its tracker more than
// twice or its revision more than once (the observed cache serves them);
// nor does a step's health check read again what the step applied.
func TestCreateReads(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	counter := &requestCounter{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = counter.wrap
	stop := startManagerAs(t, cfg, testOptions())
	defer stop()

	// The observed-state cache starts a kind's informer when it is first
	// read and reads through to the API server until it has synced: a
	// fresh controller's first Application (under load, as in CI) makes
	// reads that later ones do not. What is counted is the later ones, so
	// an Application of the same kinds runs first.
	warm := readsApplication(t, "warm")
	fakeRollout(ctx, t, "default", "warm-web")
	fakeRollout(ctx, t, "default", "warm-worker")
	require.NoError(t, env.Client.Create(ctx, warm))
	waitPhase(t, warm, common.ApplicationRunning)
	deleteAndWait(t, warm)

	app := readsApplication(t, "reads")
	fakeRollout(ctx, t, "default", "reads-web")
	fakeRollout(ctx, t, "default", "reads-worker")
	requireAlone(t, app)
	counter.start()
	require.NoError(t, env.Client.Create(ctx, app))
	waitPhase(t, app, common.ApplicationRunning)
	time.Sleep(time.Second) // the last status write and its reconcile

	gets := map[string]int{}
	for _, r := range counter.requests() {
		method, path, _ := strings.Cut(r, " ")
		if method != "GET" {
			continue
		}
		parts := strings.Split(path, "/")
		if len(parts) < 2 {
			continue
		}
		// ".../<resource>/<name>"
		gets[parts[len(parts)-2]+"/"+parts[len(parts)-1]]++
	}
	cases := []struct {
		reason string
		object string
		most   int
	}{
		{"the Application is not read back: the finalizer patch answered it", "applications/reads", 0},
		{"the workflow context is not read: a new run has none, and the passes after remember it absent", "configmaps/workflow-reads-context", 0},
		{"the revision is read from the observed cache, once it has started", "applicationrevisions/reads-v1", 1},
		{"the tracker: its create's miss, then the cache or the Keeper's own copy", "resourcetrackers/reads-v1-default", 2},
	}
	for _, tc := range cases {
		assert.LessOrEqual(t, gets[tc.object], tc.most, "%s: GET %s (all: %v)", tc.reason, tc.object, gets)
	}
	// A reconcile ends with its status patch: between a Deployment's apply
	// and that, its health check does not read it again.
	applied := map[string]bool{}
	for _, r := range counter.requests() {
		method, path, _ := strings.Cut(r, " ")
		switch {
		case strings.HasSuffix(path, "/applications/reads/status"):
			clear(applied)
		case strings.Contains(path, "/deployments/") && method == "PATCH":
			applied[path] = true
		case strings.Contains(path, "/deployments/") && method == "GET":
			assert.False(t, applied[path], "%s is read again in the reconcile that applied it (requests: %v)", path, counter.requests())
		}
	}
	deleteAndWait(t, app)
}

// readsApplication is a webservice and a worker that dependsOn it, named
// <name>-web and <name>-worker.
func readsApplication(t *testing.T, name string) *v1beta1.Application {
	t.Helper()
	return application(t, name, fmt.Sprintf(`
components:
- name: %[1]s-web
  type: webservice
  properties: {image: "registry.invalid/web:1", port: 80}
- name: %[1]s-worker
  type: worker
  dependsOn: [%[1]s-web]
  properties: {image: "registry.invalid/worker:1"}
`, name))
}
