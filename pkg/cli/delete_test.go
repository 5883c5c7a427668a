package cli

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

func testDelete(t *testing.T, e *cliEnv) {
	ctx := context.Background()
	const finalizer = "test.oamflow.dev/resources"
	create := func(name string, finalizers ...string) {
		require.NoError(t, e.c.Create(ctx, &v1beta1.Application{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Finalizers: finalizers},
			Spec:       v1beta1.ApplicationSpec{Components: []common.ApplicationComponent{{Name: "web", Type: "webservice"}}},
		}))
	}
	gone := func(name string) bool {
		return apierrors.IsNotFound(e.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &v1beta1.Application{}))
	}

	t.Run("without --wait", func(t *testing.T) {
		create("del-now")
		r := e.run("", "delete", "del-now")
		require.Equal(t, ExitOK, r.code, r.err)
		assert.Equal(t, "Application default/del-now deleted; the controller removes its resources\n", r.out)
		assert.True(t, gone("del-now"))
	})

	t.Run("--wait returns once the finalizer is gone", func(t *testing.T) {
		create("del-wait", finalizer)
		ch := e.start("delete", "del-wait", "--wait", "--timeout", "30s", "--poll-interval", "20ms")
		require.Eventually(t, func() bool {
			app := &v1beta1.Application{}
			return e.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "del-wait"}, app) == nil && app.DeletionTimestamp != nil
		}, 10*time.Second, 20*time.Millisecond)
		select {
		case r := <-ch.done:
			t.Fatalf("returned while the Application still exists: %v\n%s", r.err, r.out)
		case <-time.After(200 * time.Millisecond):
		}
		e.patchAppStatus(t, "default", "del-wait", func(a *v1beta1.Application) { a.Status.Phase = common.ApplicationDeleting })
		ch.waitOutput(t, "phase deleting")
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			app := &v1beta1.Application{}
			if err := e.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "del-wait"}, app); err != nil {
				return err
			}
			app.Finalizers = nil
			return e.c.Update(ctx, app)
		}))
		r := <-ch.done
		require.Equal(t, ExitOK, r.code, r.err)
		assert.Contains(t, r.out, "phase deleting")
		assert.Contains(t, r.out, "Application default/del-wait and its resources deleted after")
	})

	t.Run("--wait times out while a finalizer stays", func(t *testing.T) {
		create("del-stuck", finalizer)
		r := e.run("", "delete", "del-stuck", "--wait", "--timeout", "200ms", "--poll-interval", "20ms")
		assert.Equal(t, ExitRuntimeErr, r.code)
		require.Error(t, r.err)
		assert.Contains(t, r.err.Error(), "still has finalizers [test.oamflow.dev/resources]")
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			app := &v1beta1.Application{}
			if err := e.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "del-stuck"}, app); err != nil {
				return err
			}
			app.Finalizers = nil
			return e.c.Update(ctx, app)
		}))
	})

	t.Run("--orphan sets KubeVela's orphan-resource finalizer, then deletes", func(t *testing.T) {
		create("del-orphan", finalizer)
		r := e.run("", "delete", "del-orphan", "--orphan")
		require.Equal(t, ExitOK, r.code, r.err)
		assert.Equal(t, "Application default/del-orphan deleted; the controller releases its resources, which are kept\n", r.out)
		app := &v1beta1.Application{}
		require.NoError(t, e.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "del-orphan"}, app))
		assert.NotNil(t, app.DeletionTimestamp)
		assert.ElementsMatch(t, []string{finalizer, v1beta1.FinalizerOrphanResource}, app.Finalizers)
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := e.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "del-orphan"}, app); err != nil {
				return err
			}
			app.Finalizers = nil
			return e.c.Update(ctx, app)
		}))
		r = e.run("", "delete", "never-was", "--orphan")
		assert.Equal(t, ExitUserError, r.code)
		require.Error(t, r.err)
		assert.Contains(t, r.err.Error(), "default/never-was not found")
	})

	t.Run("a missing Application is the user's error", func(t *testing.T) {
		r := e.run("", "delete", "never-was")
		assert.Equal(t, ExitUserError, r.code)
		require.Error(t, r.err)
		assert.Contains(t, r.err.Error(), "default/never-was not found (set the namespace with -n)")
		r = e.run("", "delete", "never-was", "-n", "other")
		assert.Equal(t, ExitUserError, r.code)
		require.Error(t, r.err)
		assert.Equal(t, "Application other/never-was not found", r.err.Error(), "-n was given: no hint to set it")
	})
}
