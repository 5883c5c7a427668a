package sharding

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/leanwrite"
)

// DefaultInterval is how often the Supervisor looks at the shards.
const DefaultInterval = 10 * time.Second

// Supervisor is the master shard's loop (leader only, a manager
// Runnable): every Interval it reads which shards run (their Leases),
// labels Applications that have no shard yet (created while the webhook
// was off or before sharding was enabled) with the Scheduler, and writes
// into the status of each Application labelled for a shard that does not
// run the condition Scheduled=False naming that shard: nobody else can,
// since only that shard would reconcile it. The shard, once it runs,
// turns the condition True on its next reconcile.
type Supervisor struct {
	// Client reads and writes the API server directly (not a shard's cache).
	Client    client.Client
	Scheduler *Scheduler
	// LeaseNamespace and LeaseBase locate the shards' Leases (LeaseName).
	LeaseNamespace, LeaseBase string
	Interval                  time.Duration
}

// Start runs Sync every Interval until ctx ends.
func (s *Supervisor) Start(ctx context.Context) error {
	log := ctrllog.FromContext(ctx).WithName("sharding")
	ctx = ctrllog.IntoContext(ctx, log)
	interval := s.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := s.Sync(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "supervising shards")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Running returns the shards whose Lease is held and was renewed within
// its duration, the master always included (it runs this).
func (s *Supervisor) Running(ctx context.Context, now time.Time) (map[string]bool, error) {
	var leases coordinationv1.LeaseList
	if err := s.Client.List(ctx, &leases, client.InNamespace(s.LeaseNamespace)); err != nil {
		return nil, fmt.Errorf("listing the shards' Leases in %s: %w", s.LeaseNamespace, err)
	}
	running := map[string]bool{MasterShardID: true}
	for _, l := range leases.Items {
		shard, ok := shardOfLease(s.LeaseBase, l.Name)
		if ok && held(l, now) {
			running[shard] = true
		}
	}
	return running, nil
}

func shardOfLease(base, name string) (string, bool) {
	if name == base {
		return MasterShardID, true
	}
	if id, ok := strings.CutPrefix(name, base+"-"); ok && id != "" {
		return id, true
	}
	return "", false
}

func held(l coordinationv1.Lease, now time.Time) bool {
	sp := l.Spec
	if sp.HolderIdentity == nil || *sp.HolderIdentity == "" || sp.RenewTime == nil || sp.LeaseDurationSeconds == nil {
		return false
	}
	return now.Before(sp.RenewTime.Add(time.Duration(*sp.LeaseDurationSeconds) * time.Second))
}

// Sync is one pass of the loop.
func (s *Supervisor) Sync(ctx context.Context) error {
	running, err := s.Running(ctx, time.Now())
	if err != nil {
		return err
	}
	if !s.Scheduler.Static() {
		ids := make([]string, 0, len(running))
		for id := range running {
			ids = append(ids, id)
		}
		s.Scheduler.SetRunning(ids)
	}
	apps := &metav1.PartialObjectMetadataList{}
	apps.SetGroupVersionKind(v1beta1.GroupVersion.WithKind("ApplicationList"))
	if err := s.Client.List(ctx, apps); err != nil {
		return fmt.Errorf("listing Applications: %w", err)
	}
	var errs []error
	for i := range apps.Items {
		app := &apps.Items[i]
		app.SetGroupVersionKind(v1beta1.GroupVersion.WithKind("Application"))
		key := types.NamespacedName{Namespace: app.Namespace, Name: app.Name}
		shard, ok := ScheduledShard(app)
		if !ok {
			if app.DeletionTimestamp != nil {
				continue
			}
			if shard, ok = s.Scheduler.Schedule(app); !ok {
				errs = append(errs, s.wait(ctx, key, "NoSchedulableShard",
					"waiting for a shard: --schedulable-shards is empty and no shard's Lease is held; label the Application "+LabelScheduledShardID+"=<shard>"))
				continue
			}
			patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, LabelScheduledShardID, shard)))
			if err := s.Client.Patch(ctx, app, patch); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("scheduling Application %s to shard %s: %w", key, shard, err))
				continue
			}
			ctrllog.FromContext(ctx).Info("scheduled", "application", key.String(), "shard", shard)
		}
		if running[shard] {
			continue
		}
		errs = append(errs, s.wait(ctx, key, ReasonShardNotRunning, fmt.Sprintf(
			"waiting for shard %s: no controller holds the Lease %s/%s (start oamflow-controller with --enable-sharding --shard-id=%s, or re-label the Application %s=<running shard>)",
			shard, s.LeaseNamespace, LeaseName(s.LeaseBase, shard), shard, LabelScheduledShardID)))
	}
	return errors.Join(errs...)
}

// wait sets the condition Scheduled=False with reason and message on the
// Application, unless it says so already.
func (s *Supervisor) wait(ctx context.Context, key types.NamespacedName, reason, msg string) error {
	app := &v1beta1.Application{}
	if err := s.Client.Get(ctx, key, app); err != nil {
		return client.IgnoreNotFound(err)
	}
	if c := meta.FindStatusCondition(app.Status.Conditions, ConditionScheduled); c != nil &&
		c.Status == metav1.ConditionFalse && c.Reason == reason && c.Message == msg {
		return nil
	}
	before := app.Status.DeepCopy()
	meta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{
		Type: ConditionScheduled, Status: metav1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: app.Generation,
	})
	if err := leanwrite.PatchStatus(ctx, s.Client, app, before, &app.Status, true); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil // gone, or its shard wrote it meanwhile: the next pass looks again
		}
		return fmt.Errorf("telling Application %s which shard it waits for: %w", key, err)
	}
	return nil
}

// Running is the condition a shard writes into the Applications it
// reconciles.
func Running(shard string) metav1.Condition {
	return metav1.Condition{Type: ConditionScheduled, Status: metav1.ConditionTrue, Reason: ReasonShardRunning,
		Message: "reconciled by shard " + shard}
}

// Relabel gives every ApplicationRevision and ResourceTracker of app its
// shard label (or removes it), after the Application moved to another
// shard: a metadata patch of each object whose label differs, nothing
// else written. The shard that takes the Application over calls it.
func Relabel(ctx context.Context, c client.Client, app *v1beta1.Application) error {
	revs := &metav1.PartialObjectMetadataList{}
	revs.SetGroupVersionKind(v1beta1.GroupVersion.WithKind("ApplicationRevisionList"))
	if err := c.List(ctx, revs, client.InNamespace(app.Namespace), client.MatchingLabels{v1beta1.LabelAppName: app.Name}); err != nil {
		return fmt.Errorf("listing the ApplicationRevisions of %s/%s: %w", app.Namespace, app.Name, err)
	}
	rts := &metav1.PartialObjectMetadataList{}
	rts.SetGroupVersionKind(v1beta1.GroupVersion.WithKind("ResourceTrackerList"))
	if err := c.List(ctx, rts, client.MatchingLabels{v1beta1.LabelAppName: app.Name, v1beta1.LabelAppNamespace: app.Namespace}); err != nil {
		return fmt.Errorf("listing the ResourceTrackers of %s/%s: %w", app.Namespace, app.Name, err)
	}
	value := "null"
	if id, ok := ScheduledShard(app); ok {
		value = fmt.Sprintf("%q", id)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, LabelScheduledShardID, value)))
	for kind, list := range map[string]*metav1.PartialObjectMetadataList{"ApplicationRevision": revs, "ResourceTracker": rts} {
		for i := range list.Items {
			o := &list.Items[i]
			o.SetGroupVersionKind(v1beta1.GroupVersion.WithKind(kind))
			if !Propagate(app, o.DeepCopy()) {
				continue
			}
			if err := c.Patch(ctx, o, patch); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("moving %s %s to the Application's shard: %w", o.Kind, o.Name, err)
			}
		}
	}
	return nil
}
