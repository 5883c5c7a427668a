package resourcekeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// Change is what Apply would do with one object (see Preview).
type Change struct {
	Object common.ClusterObjectReference
	// Refused says why Apply would refuse the object ("": it would not),
	// in the words of its error (*OwnershipError, *ReadOnlyMissingError).
	Refused string
	// Err is the refusal itself (*OwnershipError or *ReadOnlyMissingError),
	// nil when Refused is "".
	Err error
	// Adopt: the object is one KubeVela applied for this Application,
	// which Apply would adopt in place.
	Adopt bool
	// JoinShare: another Application owns the object and shares it; Apply
	// would add this Application to its shared-by list and write nothing
	// else.
	JoinShare bool
	// Live is the object as it is (nil: Apply would create it). After is
	// what a server-side dry run of Apply's write makes of it; nil when
	// Apply would not write it (in sync, read-only, kept whole by
	// apply-once, a Helm release).
	Live, After *unstructured.Unstructured
}

// Preview reports what Apply(ctx, cluster, objs) would do, writing
// nothing: the objects go through Apply's own plan (ownership, adoption,
// shared and read-only objects, apply-once) and each write is made as a
// server-side dry run. Trackers are neither read for writing nor written.
func (k *Keeper) Preview(ctx context.Context, cluster string, objs []*unstructured.Unstructured) ([]Change, error) {
	c, err := k.clients.Client(ctx, cluster)
	if err != nil {
		return nil, err
	}
	out := make([]Change, 0, len(objs))
	for _, obj := range objs {
		ch := Change{Object: refOf(cluster, obj)}
		if helmspec.IsHelmRelease(obj) {
			out = append(out, ch)
			continue
		}
		p, err := k.plan(ctx, c, cluster, obj, false)
		var own *OwnershipError
		var ro *ReadOnlyMissingError
		switch {
		case errors.As(err, &own) || errors.As(err, &ro):
			ch.Refused, ch.Err = err.Error(), err
			out = append(out, ch)
			continue
		case err != nil:
			return nil, err
		}
		ch.Object, ch.Live, ch.Adopt = refOf(cluster, p.desired), p.live, p.adopt
		ch.JoinShare = p.action == actJoinShare
		if p.action == actApply {
			after := p.desired.DeepCopy()
			if err := c.Patch(ctx, after, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership, client.DryRunAll); err != nil {
				return nil, fmt.Errorf("applying %s (server-side dry run): %w", refString(ch.Object), err)
			}
			ch.After = after
		}
		out = append(out, ch)
	}
	return out, nil
}

// GCAction is what garbage collection would do with an object a new
// revision no longer applies (see PreviewGC).
type GCAction string

// GCAction values.
const (
	// GCActionDelete: deleted (a Helm release: uninstalled).
	GCActionDelete GCAction = "delete"
	// GCActionOrphan: left in place without the Application's labels
	// (propagation orphan; a Helm release stays installed).
	GCActionOrphan GCAction = "orphan"
	// GCActionKeep: kept, and tracked until the Application is deleted
	// (strategy never or onAppDelete, keepLegacyResource).
	GCActionKeep GCAction = "keep"
	// GCActionHandOver: shared; handed over to the next sharer (To).
	GCActionHandOver GCAction = "hand-over"
	// GCActionLeaveShare: another Application owns it now; this one only
	// leaves its shared-by list.
	GCActionLeaveShare GCAction = "leave-share"
	// GCActionDeleting: already being deleted; collection waits for it.
	GCActionDeleting GCAction = "deleting"
)

// GCChange is what garbage collection would do with one tracked object.
type GCChange struct {
	Object common.ClusterObjectReference
	// Component that rendered it (from the tracker).
	Component string
	Action    GCAction
	// To is the Application ("namespace/name") a hand-over gives it to.
	To string
	// Live is the object as it is (nil for a Helm release).
	Live *unstructured.Unstructured
	// Err says why the object could not be read (its cluster is
	// unreachable, say); Action is empty then.
	Err error
}

// PreviewGC reports what GarbageCollect would do once a revision that
// applies exactly keep has succeeded, writing nothing: every object
// tracked by a revision's ResourceTracker of the Application that keep
// does not list (compared by cluster, API group, kind, namespace and
// name) is read and judged by the rules GarbageCollect uses. Objects gone
// already, and objects another Application owns now (unless this one
// shares them), are left out. Objects only the root tracker lists are
// kept until the Application is deleted and are not collected. An object
// that cannot be read is reported with Err.
func (k *Keeper) PreviewGC(ctx context.Context, keep []common.ClusterObjectReference) ([]GCChange, error) {
	hub, err := k.hub(ctx)
	if err != nil {
		return nil, err
	}
	t, err := k.listTrackers(ctx, hub)
	if err != nil {
		return nil, err
	}
	kept := map[entryKey]bool{}
	for _, r := range keep {
		kept[keyOf(v1beta1.ManagedResource{ClusterObjectReference: r})] = true
	}
	// Once the new revision succeeded, every revision's tracker is an
	// older one (the current one too, when the new revision is another).
	versioned := t.old
	if t.current != nil {
		versioned = append(slices.Clone(versioned), t.current)
	}
	var out []GCChange
	for _, e := range gcCandidates(versioned, kept) {
		ch := GCChange{Object: e.ClusterObjectReference, Component: e.Component}
		ch.Object.Cluster = normCluster(ch.Object.Cluster)
		if isReleaseEntry(e) {
			ch.Action, _ = gcActionOf(k.judge(e, nil, false))
			out = append(out, ch)
			continue
		}
		c, err := k.clients.Client(ctx, e.Cluster)
		if err != nil {
			ch.Err = err
			out = append(out, ch)
			continue
		}
		live := &unstructured.Unstructured{}
		live.SetAPIVersion(e.APIVersion)
		live.SetKind(e.Kind)
		if err := c.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: e.Name}, live); err != nil {
			if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
				continue
			}
			ch.Err = fmt.Errorf("reading %s: %w", refString(e.ClusterObjectReference), err)
			out = append(out, ch)
			continue
		}
		ch.Live = live
		if ch.Action, ch.To = gcActionOf(k.judge(e, live, false)); ch.Action == "" {
			continue
		}
		out = append(out, ch)
	}
	return out, nil
}

// JudgeGC says what garbage collection would do with live, an object of
// the Application the new revision no longer applies that no tracker
// entry describes (diff --offline has no trackers), by the rules
// GarbageCollect uses; to is the Application a hand-over gives it to.
// action is "" when the object is another Application's now and is left
// alone.
func (k *Keeper) JudgeGC(live *unstructured.Unstructured) (action GCAction, to string) {
	return gcActionOf(k.judge(v1beta1.ManagedResource{}, live, false))
}

// gcActionOf names a verdict of judge ("" for gcNotOurs).
func gcActionOf(v gcVerdict) (action GCAction, to string) {
	switch v.act {
	case gcNotOurs:
		return "", ""
	case gcLeaveShare:
		return GCActionLeaveShare, ""
	case gcKeep:
		return GCActionKeep, ""
	case gcHandOver:
		return GCActionHandOver, v.sharers[0]
	case gcDeleting:
		return GCActionDeleting, ""
	case gcOrphan, gcLeave:
		return GCActionOrphan, ""
	}
	return GCActionDelete, ""
}
