package manager_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// failOnce answers the first request whose "METHOD path" has the prefix
// with a 500, without sending it.
type failOnce struct {
	prefix string
	mu     sync.Mutex
	failed bool
}

func (f *failOnce) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFn(func(req *http.Request) (*http.Response, error) {
		f.mu.Lock()
		hit := !f.failed && strings.HasPrefix(req.Method+" "+req.URL.Path, f.prefix)
		f.failed = f.failed || hit
		f.mu.Unlock()
		if !hit {
			return rt.RoundTrip(req)
		}
		body := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected","reason":"InternalError","code":500}`
		return &http.Response{StatusCode: http.StatusInternalServerError, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
	})
}

// TestGarbageCollectedAfterAFailedFinish: the reconcile that finishes a
// revision's workflow fails before collecting garbage (here marking the
// revision succeeded is refused once), after its status write said the
// run finished. The next reconciles must still collect what the older
// revision applied and the new one dropped, and mark the revision.
// Found by the fault suite (issue 20): the dropped component's object
// stayed forever, since only the reconcile that finished a run collected.
func TestGarbageCollectedAfterAFailedFinish(t *testing.T) {
	ctx := context.Background()
	fault := &failOnce{prefix: "PATCH /apis/core.oam.dev/v1beta1/namespaces/default/applicationrevisions/gcretry-v2/status"}
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = fault.wrap
	startManagerAs(t, cfg, testOptions())

	app := application(t, "gcretry", `
components:
- name: gcretry-a
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: gcretry-a}, data: {k: v}}]
- name: gcretry-b
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: gcretry-b}, data: {k: v}}]
`)
	require.NoError(t, env.Client.Create(ctx, app))
	waitRevision(t, app, "gcretry-v1")
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "gcretry-b"}, &corev1.ConfigMap{}))

	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live := &v1beta1.Application{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(app), live); err != nil {
			return err
		}
		live.Spec.Components = live.Spec.Components[:1]
		return env.Client.Update(ctx, live)
	}))
	waitRevision(t, app, "gcretry-v2")

	require.Eventually(t, func() bool {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "gcretry-b"}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err)
	}, 30*time.Second, 200*time.Millisecond, "the dropped component's ConfigMap is collected")
	fault.mu.Lock()
	assert.True(t, fault.failed, "the fault was injected")
	fault.mu.Unlock()
	require.Eventually(t, func() bool {
		rev := &v1beta1.ApplicationRevision{}
		return env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "gcretry-v2"}, rev) == nil && rev.Status.Succeeded
	}, 30*time.Second, 200*time.Millisecond, "gcretry-v2 is marked succeeded")
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "gcretry-a"}, &corev1.ConfigMap{}), "the kept component stays")
	deleteAndWait(t, app)
}
