package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/workflow"
)

// countingRunner counts the workflow passes a Reconciler runs.
type countingRunner struct {
	WorkflowRunner
	passes atomic.Int32
}

func (c *countingRunner) Execute(ctx context.Context, run workflow.Run) (workflow.Result, error) {
	c.passes.Add(1)
	return c.WorkflowRunner.Execute(ctx, run)
}

// TestStaleReadStartsNoRun: the reconcile queued by the finalizer patch
// can read the Application from a cache that has not yet seen the status
// the previous reconcile wrote (the run finished). It must not start the
// workflow again (its steps' side effects, e.g. another Helm upgrade of a
// failed release, would happen before the status patch is refused): it
// writes nothing and asks to be reconciled again.
func TestStaleReadStartsNoRun(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	e := env(t)
	ctx := context.Background()
	app := h.app("stale", `
components:
- name: settings
  type: k8s-objects
  properties:
    objects:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: settings}, data: {a: b}}
`)
	// What the cache holds after prepare's finalizer patch: no status yet.
	withFinalizer := h.get(app)
	controllerutil.AddFinalizer(withFinalizer, Finalizer)
	require.NoError(t, e.Client.Update(ctx, withFinalizer))
	stale := withFinalizer.DeepCopy()

	_, err := h.reconcile(app)
	require.NoError(t, err)
	require.Equal(t, common.ApplicationRunning, h.get(app).Status.Phase, "the first reconcile ran the workflow to its end")

	base, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	require.NoError(t, err)
	cached := interceptor.NewClient(base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if a, ok := obj.(*v1beta1.Application); ok && key == client.ObjectKeyFromObject(stale) {
				stale.DeepCopyInto(a)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	builtins, err := appfile.NewFSSource(definitions.FS, ".")
	require.NoError(t, err)
	steps, err := workflow.BuiltinTemplates(definitions.FS, "workflowsteps")
	require.NoError(t, err)
	eng, err := workflow.NewEngine(base, workflow.Options{DefaultStepTimeout: time.Minute, Builtins: steps})
	require.NoError(t, err)
	runner := &countingRunner{WorkflowRunner: eng}
	r := New(cached, base, record.NewFakeRecorder(100), runner, "oamflow-system", builtins, Options{StepTimeout: time.Minute})

	before := h.get(app)
	res, err := r.Reconcile(ctrl.LoggerInto(ctx, ctrl.Log.WithName("test")), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(app)})
	require.NoError(t, err)
	assert.True(t, res.Requeue, "reconciled again, from a fresh read")
	assert.Zero(t, runner.passes.Load(), "no workflow pass on a stale read")
	after := h.get(app)
	assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "nothing written")
	assert.Equal(t, common.ApplicationRunning, after.Status.Phase)
}
