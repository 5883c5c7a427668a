package leanwrite

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

func TestPatchStatus(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec })
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "leanwrite-status-"}}
	require.NoError(t, env.Client.Create(ctx, ns))

	// newApp returns an Application as read from the API server, with a
	// status of one condition and phase running.
	newApp := func(t *testing.T, name string) *v1beta1.Application {
		app := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name},
			Spec: v1beta1.ApplicationSpec{Components: []common.ApplicationComponent{{Name: "web", Type: "webservice"}}}}
		require.NoError(t, env.Client.Create(ctx, app))
		app.Status = common.AppStatus{Phase: common.ApplicationRunning, ObservedGeneration: 1,
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Running", LastTransitionTime: metav1.Now()}}}
		require.NoError(t, env.Client.Status().Update(ctx, app))
		return app
	}

	cases := []struct {
		reason string
		change func(app *v1beta1.Application)
		stale  bool
		lock   bool
		// wantWrite: a request was sent; wantConflict: it was refused.
		wantWrite, wantConflict bool
	}{
		{
			reason: "a changed phase and a removed condition are written, nothing else of the status is",
			change: func(app *v1beta1.Application) {
				app.Status.Phase = common.ApplicationRunningWorkflow
				app.Status.Conditions = nil
			},
			lock:      true,
			wantWrite: true,
		},
		{
			reason: "an unchanged status sends nothing",
			change: func(*v1beta1.Application) {},
			lock:   true,
		},
		{
			reason:       "with lock, a status read before someone else's write is refused",
			change:       func(app *v1beta1.Application) { app.Status.Phase = common.ApplicationRunningWorkflow },
			stale:        true,
			lock:         true,
			wantWrite:    true,
			wantConflict: true,
		},
		{
			reason:    "without lock, it is written over someone else's write",
			change:    func(app *v1beta1.Application) { app.Status.Phase = common.ApplicationRunningWorkflow },
			stale:     true,
			wantWrite: true,
		},
	}
	for i, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			app := newApp(t, "app-"+string(rune('a'+i)))
			if tc.stale {
				other := app.DeepCopy()
				other.Status.ObservedGeneration = 2
				require.NoError(t, env.Client.Status().Update(ctx, other), tc.reason)
			}
			before := app.Status.DeepCopy()
			tc.change(app)
			rv := app.ResourceVersion
			rec.take()
			err := PatchStatus(ctx, c, app, before, &app.Status, tc.lock)
			reqs := rec.take()
			if !tc.wantWrite {
				require.NoError(t, err, tc.reason)
				require.Empty(t, reqs, tc.reason)
				return
			}
			require.Len(t, reqs, 1, tc.reason)
			require.Equal(t, http.MethodPatch, reqs[0].req.Method, tc.reason)
			require.True(t, strings.HasSuffix(reqs[0].req.URL.Path, "/status"), "%s: %s", tc.reason, reqs[0].req.URL.Path)
			require.Contains(t, reqs[0].req.Header.Get("Accept"), "as=PartialObjectMetadata", "%s: the answer is the metadata only", tc.reason)
			if tc.wantConflict {
				require.True(t, apierrors.IsConflict(err), "%s: %v", tc.reason, err)
				require.Equal(t, rv, app.ResourceVersion, tc.reason)
				return
			}
			require.NoError(t, err, tc.reason)

			live := &v1beta1.Application{}
			require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(app), live), tc.reason)
			require.NotEqual(t, rv, app.ResourceVersion, tc.reason)
			require.Equal(t, live.ResourceVersion, app.ResourceVersion, "%s: the object has the answer's resourceVersion", tc.reason)
			want := app.Status.DeepCopy()
			if tc.stale {
				want.ObservedGeneration = 2 // the other writer's field, not in the patch
			}
			require.Equal(t, normalized(t, want), normalized(t, &live.Status), tc.reason)
			require.Equal(t, app.Spec, live.Spec, tc.reason)
		})
	}
}

// normalized drops what a round trip through the API server changes
// (sub-second times).
func normalized(t *testing.T, s *common.AppStatus) *common.AppStatus {
	t.Helper()
	out := s.DeepCopy()
	for i := range out.Conditions {
		out.Conditions[i].LastTransitionTime = metav1.NewTime(out.Conditions[i].LastTransitionTime.Rfc3339Copy().Time)
	}
	return out
}
