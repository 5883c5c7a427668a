package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/leanwrite"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
)

// reconcileDelete deletes everything the Application deployed (or, with
// the orphan-resource finalizer, releases it: see resourcekeeper's
// Delete), then its workflow context and revisions, then lets it go.
func (r *Reconciler) reconcileDelete(ctx context.Context, app *v1beta1.Application) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if !controllerutil.ContainsFinalizer(app, Finalizer) && !adopting(app) {
		// Never deployed by this controller (it adds its finalizer
		// first) nor by KubeVela: nothing to orphan, and nobody else would
		// release it.
		if controllerutil.ContainsFinalizer(app, v1beta1.FinalizerOrphanResource) {
			base := app.DeepCopy()
			controllerutil.RemoveFinalizer(app, v1beta1.FinalizerOrphanResource)
			if err := r.client.Patch(ctx, app, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
				return ctrl.Result{}, fmt.Errorf("removing the finalizer %s of %s/%s: %w", v1beta1.FinalizerOrphanResource, app.Namespace, app.Name, err)
			}
		}
		return ctrl.Result{}, nil
	}
	if app.Status.Phase != common.ApplicationDeleting {
		what := "deleting the resources of the Application"
		if controllerutil.ContainsFinalizer(app, v1beta1.FinalizerOrphanResource) {
			what = "releasing the resources of the Application (" + v1beta1.FinalizerOrphanResource + "): they are kept"
		}
		before := app.Status.DeepCopy()
		app.Status.Phase = common.ApplicationDeleting
		setCondition(app, common.ConditionReady, false, common.ReasonDeleting, what)
		r.recorder.Event(app, "Normal", phaseReason(common.ApplicationDeleting), what)
		if err := leanwrite.PatchStatus(ctx, r.client, app, before, &app.Status, false); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("patching status of %s/%s: %w", app.Namespace, app.Name, err)
		}
	}
	pols, err := resourcekeeper.ParsePolicies(app.Spec.Policies)
	if err != nil {
		log.Error(err, "ignoring invalid resource policies while deleting")
		pols = resourcekeeper.Policies{}
	}
	var n int64 = 1
	if lr := app.Status.LatestRevision; lr != nil && lr.Revision > 0 {
		n = lr.Revision
	}
	k, err := r.keepers.Keeper(app, n, pols)
	if err != nil {
		return ctrl.Result{}, err
	}
	done, err := k.Delete(ctx)
	if msg := k.RebuiltTracker(); msg != "" {
		r.recorder.Event(app, "Warning", common.ReasonTrackerRebuilt, msg)
	}
	if err != nil {
		err = fmt.Errorf("deleting the resources of %s/%s: %w", app.Namespace, app.Name, err)
		r.reportDeleteFailure(ctx, app, err)
		return ctrl.Result{}, err
	}
	if !done {
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
	}
	if left := k.LeftOnGoneClusters(); len(left) > 0 {
		r.recorder.Event(app, "Warning", common.ReasonDeleting, fmt.Sprintf(
			"left %d object(s) on clusters that are no longer registered (they could not be cleaned): %s", len(left), strings.Join(left, ", ")))
	}
	if err := r.workflow.Reset(ctx, app); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.revisions.DeleteAll(ctx, app); err != nil {
		return ctrl.Result{}, err
	}
	base := app.DeepCopy()
	controllerutil.RemoveFinalizer(app, Finalizer)
	// KubeVela's orphan finalizer has done its work (the keeper orphaned
	// the resources): nobody else removes it.
	controllerutil.RemoveFinalizer(app, v1beta1.FinalizerOrphanResource)
	// An Application KubeVela deployed and oamflow did not yet adopt: its
	// resources were collected (or released) through KubeVela's trackers
	// above, which is what KubeVela's finalizer waits for.
	controllerutil.RemoveFinalizer(app, v1beta1.FinalizerResourceTracker)
	if err := r.client.Patch(ctx, app, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("removing the finalizer of %s/%s: %w", app.Namespace, app.Name, err)
	}
	log.Info("application deleted", "application", klog.KObj(app))
	return ctrl.Result{}, nil
}

// reportDeleteFailure says in Ready (and once in a Warning Event) why the
// resources of a deleted Application cannot be deleted yet, so that a
// deletion that waits is not silent; it is retried.
func (r *Reconciler) reportDeleteFailure(ctx context.Context, app *v1beta1.Application, err error) {
	msg := "deleting the resources failed (retrying): " + err.Error()
	if c := meta.FindStatusCondition(app.Status.Conditions, common.ConditionReady); c != nil && c.Message == msg {
		return
	}
	before := app.Status.DeepCopy()
	setCondition(app, common.ConditionReady, false, common.ReasonDeleting, msg)
	r.recorder.Event(app, "Warning", common.ReasonDeleting, msg)
	if perr := leanwrite.PatchStatus(ctx, r.client, app, before, &app.Status, false); perr != nil && !apierrors.IsNotFound(perr) {
		ctrl.LoggerFrom(ctx).Error(perr, "patching status after a failed deletion")
	}
}
