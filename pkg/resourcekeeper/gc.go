package resourcekeeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/observed"
)

// outcome of collecting one tracked object.
type outcome int

const (
	outGone    outcome = iota // nothing of ours left: deleted, orphaned, handed over, or owned by another app
	outPending                // deletion requested, object still exists
	outKeep                   // kept until the Application is deleted (moved to the root tracker)
)

// ownershipLabels are removed from orphaned objects.
var ownershipLabels = []string{
	v1beta1.LabelAppName, v1beta1.LabelAppNamespace, v1beta1.LabelAppComponent, v1beta1.LabelAppRevision,
	v1beta1.LabelResourceType, v1beta1.LabelAppCluster, v1beta1.LabelWorkloadType, v1beta1.LabelTraitType,
	v1beta1.LabelTraitResource, LabelAppliedHash,
}

// GarbageCollect deletes what older revisions applied and the current one
// did not; call it after the current revision's workflow succeeded. An
// object is collected only when it is tracked by an older revision, is not
// tracked by the current revision (compared by cluster, API group, kind,
// namespace and name), and its live labels still name this Application —
// an object another Application owns now is dropped from our books
// untouched. garbage-collect rules apply: strategy never/onAppDelete and
// keepLegacyResource move the object to the root tracker (kept until the
// Application is deleted); propagation orphan removes our labels and keeps
// the object (so does the orphan-resource finalizer for every object, as
// in KubeVela); cascading deletes in the foreground, otherwise in the
// background. A tracked Helm release is uninstalled through the
// ReleaseHandler instead of deleted (orphan leaves it installed). With order dependency, the objects of a component are deleted
// only after those of every component depending on it are gone. A shared
// object is handed over to the next sharer instead of deleted. Old trackers
// whose objects are all collected are deleted. A current revision's
// tracker deleted by hand is rebuilt from the live objects first (see
// rebuildLost).
//
// The current revision's objects are those its tracker lists: call
// GarbageCollect only after the current revision's workflow succeeded, so
// that every object it keeps was applied (and thus tracked) by it.
//
// done is false while deletions are still in progress (call again later).
// With continueOnFailure, a failing object does not stop the others; the
// errors are joined either way.
//
// Every read of a collection goes to the API server, even under
// observed.WithCachedReads: what is deleted is decided from the trackers
// and objects as they are, never from a cache that may not have seen the
// current revision's tracker yet (which would make everything older
// revisions also tracked look dropped).
func (k *Keeper) GarbageCollect(ctx context.Context) (done bool, err error) {
	ctx = observed.Direct(ctx)
	hub, err := k.hub(ctx)
	if err != nil {
		return false, err
	}
	t, err := k.listTrackers(ctx, hub)
	if err != nil {
		return false, err
	}
	if t, err = k.rebuildLost(ctx, hub, t, false); err != nil {
		return false, err
	}
	if len(t.old) == 0 {
		return true, nil
	}
	current := map[entryKey]bool{}
	if t.current != nil {
		for _, e := range t.current.Spec.ManagedResources {
			if !e.Deleted {
				current[keyOf(e)] = true
			}
		}
	}
	cands := gcCandidates(t.old, current)

	results, collectErr := k.collect(ctx, cands, false)

	var keep []v1beta1.ManagedResource
	for _, e := range cands {
		if results[keyOf(e)] == outKeep {
			keep = append(keep, e)
		}
	}
	if err := k.upsertEntries(ctx, hub, v1beta1.ResourceTrackerTypeRoot, keep, false); err != nil {
		return false, errors.Join(collectErr, fmt.Errorf("recording kept objects in the root ResourceTracker: %w", err))
	}

	done = collectErr == nil
	var errs []error
	for _, rt := range t.old {
		finished := true
		changed := false
		for i, e := range rt.Spec.ManagedResources {
			key := keyOf(e)
			if e.Deleted || current[key] {
				continue
			}
			res, ok := results[key]
			if !ok || res == outPending {
				finished = false
				continue
			}
			rt.Spec.ManagedResources[i].Deleted = true
			changed = true
		}
		switch {
		case finished:
			if err := deleteTracker(ctx, hub, rt); err != nil {
				errs = append(errs, err)
			}
		case changed:
			done = false
			if err := hub.Update(ctx, rt, client.FieldOwner(FieldManager)); err != nil {
				errs = append(errs, fmt.Errorf("updating ResourceTracker %s: %w", rt.Name, err))
			}
		default:
			done = false
		}
	}
	if len(errs) > 0 {
		done = false
	}
	return done, errors.Join(append([]error{collectErr}, errs...)...)
}

// Delete removes everything the Application tracks, for its deletion
// (call it from the finalizer): every object tracked by any of its
// ResourceTrackers (root and all revisions) is deleted — or orphaned, handed
// over to the next sharer, or left alone (strategy never, or owned by
// another Application now) — in dependency order when the policy asks for
// it; then the trackers are deleted. With the orphan-resource finalizer on
// the Application (v1beta1.FinalizerOrphanResource) every tracked object
// is orphaned instead — kept, without the Application's ownership labels —
// strategy never included, and Helm releases stay installed. What a
// tracker deleted by hand listed is found again from the live objects
// first (see rebuildLost). done is true once nothing is left and the finalizer
// may be removed.
func (k *Keeper) Delete(ctx context.Context) (done bool, err error) {
	hub, err := k.hub(ctx)
	if err != nil {
		return false, err
	}
	t, err := k.listTrackers(ctx, hub)
	if err != nil {
		return false, err
	}
	if t, err = k.rebuildLost(ctx, hub, t, true); err != nil {
		return false, err
	}
	all := t.all()
	var cands []v1beta1.ManagedResource
	seen := map[entryKey]bool{}
	for _, rt := range all {
		for _, e := range rt.Spec.ManagedResources {
			key := keyOf(e)
			if e.Deleted || seen[key] {
				continue
			}
			seen[key] = true
			cands = append(cands, e)
		}
	}
	results, err := k.collect(ctx, cands, true)
	if err != nil {
		return false, err
	}
	for _, e := range cands {
		if results[keyOf(e)] != outGone {
			return false, nil
		}
	}
	var errs []error
	for _, rt := range all {
		if err := deleteTracker(ctx, hub, rt); err != nil {
			errs = append(errs, err)
		}
	}
	return len(errs) == 0, errors.Join(errs...)
}

// collect processes candidates (in dependency layers when asked) and
// returns the outcome of every processed one; unprocessed candidates are
// absent from the map.
func (k *Keeper) collect(ctx context.Context, cands []v1beta1.ManagedResource, appDelete bool) (map[entryKey]outcome, error) {
	results := map[entryKey]outcome{}
	continueOnFailure := k.policies.GarbageCollect != nil && k.policies.GarbageCollect.ContinueOnFailure
	ordered := k.policies.GarbageCollect != nil && k.policies.GarbageCollect.Order == GCOrderDependency
	remaining := slices.Clone(cands)
	var errs []error
	for len(remaining) > 0 {
		layer := remaining
		if ordered {
			layer = k.nextLayer(remaining)
		}
		blocked := false
		for _, e := range layer {
			res, err := k.collectOne(ctx, e, appDelete)
			if err != nil {
				errs = append(errs, err)
				blocked = true
				if !continueOnFailure {
					return results, errors.Join(errs...)
				}
				continue
			}
			results[keyOf(e)] = res
			if res == outPending {
				blocked = true
			}
		}
		if !ordered || blocked {
			break
		}
		remaining = slices.DeleteFunc(remaining, func(e v1beta1.ManagedResource) bool {
			_, ok := results[keyOf(e)]
			return ok
		})
	}
	return results, errors.Join(errs...)
}

// nextLayer returns the candidates whose component no other remaining
// candidate's component depends on (directly or transitively). A
// dependency cycle yields all of them.
func (k *Keeper) nextLayer(remaining []v1beta1.ManagedResource) []v1beta1.ManagedResource {
	comps := map[string]bool{}
	for _, e := range remaining {
		comps[e.Component] = true
	}
	var layer []v1beta1.ManagedResource
	for _, e := range remaining {
		blocked := false
		for other := range comps {
			if other != e.Component && k.dependsOn(other, e.Component) {
				blocked = true
				break
			}
		}
		if !blocked {
			layer = append(layer, e)
		}
	}
	if len(layer) == 0 {
		return remaining
	}
	return layer
}

// dependsOn reports whether component a depends on b, transitively.
func (k *Keeper) dependsOn(a, b string) bool {
	seen := map[string]bool{}
	stack := []string{a}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, d := range k.deps[c] {
			if d == b {
				return true
			}
			if !seen[d] {
				seen[d] = true
				stack = append(stack, d)
			}
		}
	}
	return false
}

// gcCandidates are the entries garbage collection considers once a
// revision that applies exactly keep has succeeded: every entry of the
// trackers (older revisions' first) that keep does not list, once, except
// entries already collected (Deleted) and skipGC entries (KubeVela's
// strategy never, a namespace oamflow created), which a new revision's
// collection never touches. GarbageCollect and PreviewGC both pick here.
func gcCandidates(trackers []*v1beta1.ResourceTracker, keep map[entryKey]bool) []v1beta1.ManagedResource {
	var cands []v1beta1.ManagedResource
	seen := map[entryKey]bool{}
	for _, rt := range trackers {
		for _, e := range rt.Spec.ManagedResources {
			key := keyOf(e)
			if e.Deleted || e.SkipGC || keep[key] || seen[key] {
				continue
			}
			seen[key] = true
			cands = append(cands, e)
		}
	}
	return cands
}

// gcRule is the garbage-collect rule of obj; with the orphan-resource
// finalizer on the Application, its propagation is orphan.
func (k *Keeper) gcRule(obj *unstructured.Unstructured) GarbageCollectRule {
	r := k.policies.gcRule(obj)
	if k.orphan {
		r.Propagation = GCPropagationOrphan
	}
	return r
}

// collectOne collects one tracked object (a Helm release: see collectRelease).
func (k *Keeper) collectOne(ctx context.Context, e v1beta1.ManagedResource, appDelete bool) (outcome, error) {
	if isReleaseEntry(e) {
		return k.collectRelease(ctx, e, appDelete)
	}
	ref := refString(e.ClusterObjectReference)
	log := logf.FromContext(ctx)
	c, err := k.clients.Client(ctx, e.Cluster)
	if err != nil {
		if k.leftOnGoneCluster(ctx, e, appDelete, err) {
			return outGone, nil
		}
		return outPending, err
	}
	live := &unstructured.Unstructured{}
	live.SetAPIVersion(e.APIVersion)
	live.SetKind(e.Kind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: e.Name}, live); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return outGone, nil
		}
		return outPending, fmt.Errorf("reading %s: %w", ref, err)
	}
	v := k.judge(e, live, appDelete)
	switch v.act {
	case gcNotOurs:
		return outGone, nil
	case gcLeaveShare:
		if err := mergePatch(ctx, c, live, nil, map[string]any{AnnoSharedBy: joinOrNull(v.sharers)}); err != nil {
			return outPending, fmt.Errorf("leaving the sharers of %s: %w", ref, err)
		}
		log.Info("left a shared object", "object", klog.KObj(live), "cluster", e.Cluster)
		return outGone, nil
	case gcKeep:
		return outKeep, nil
	case gcLeave:
		return outGone, nil
	case gcHandOver:
		ns, name, _ := strings.Cut(v.sharers[0], "/")
		labels := map[string]any{v1beta1.LabelAppName: name, v1beta1.LabelAppNamespace: ns}
		if err := mergePatch(ctx, c, live, labels, map[string]any{AnnoSharedBy: strings.Join(v.sharers, ",")}); err != nil {
			return outPending, fmt.Errorf("handing %s over to Application %s: %w", ref, v.sharers[0], err)
		}
		log.Info("handed a shared object over", "object", klog.KObj(live), "cluster", e.Cluster, "newOwner", v.sharers[0])
		return outGone, nil
	case gcDeleting:
		return outPending, nil
	case gcOrphan:
		labels := map[string]any{}
		for _, l := range ownershipLabels {
			if _, ok := live.GetLabels()[l]; ok {
				labels[l] = nil
			}
		}
		if err := mergePatch(ctx, c, live, labels, map[string]any{AnnoAppliedHash: nil, AnnoSharedBy: nil}); err != nil {
			return outPending, fmt.Errorf("orphaning %s: %w", ref, err)
		}
		log.Info("orphaned object", "object", klog.KObj(live), "cluster", e.Cluster)
		return outGone, nil
	}
	rule := v.rule
	policy := client.PropagationPolicy("Background")
	if rule.Propagation == GCPropagationCascading {
		policy = client.PropagationPolicy("Foreground")
	}
	// Preconditions guard against deleting an object re-created meanwhile.
	uid := live.GetUID()
	if err := c.Delete(ctx, live, policy, client.Preconditions{UID: &uid}); err != nil {
		if apierrors.IsNotFound(err) {
			return outGone, nil
		}
		return outPending, fmt.Errorf("deleting %s: %w", ref, err)
	}
	log.Info("deleted object", "object", klog.KObj(live), "cluster", e.Cluster)
	if err := c.Get(ctx, client.ObjectKeyFromObject(live), live); err != nil {
		if apierrors.IsNotFound(err) {
			return outGone, nil
		}
		return outPending, fmt.Errorf("reading %s: %w", ref, err)
	}
	if live.GetUID() != uid {
		return outGone, nil
	}
	return outPending, nil
}

// gcAct is what collecting one tracked object does with it.
type gcAct int

const (
	// gcNotOurs: its labels name another Application (or none) now; it is
	// dropped from our books untouched.
	gcNotOurs gcAct = iota
	// gcLeaveShare: another Application owns it and we are among its
	// sharers; we leave the shared-by list (sharers: who remains).
	gcLeaveShare
	// gcKeep: kept until the Application is deleted (strategy never or
	// onAppDelete, keepLegacyResource).
	gcKeep
	// gcLeave: the Application is deleted and the strategy is never: left
	// as it is, labels included.
	gcLeave
	// gcHandOver: shared; handed to the next sharer (sharers[0]) instead of
	// deleted.
	gcHandOver
	// gcDeleting: already being deleted.
	gcDeleting
	// gcOrphan: kept without our labels (propagation orphan, or the
	// orphan-resource finalizer).
	gcOrphan
	// gcDelete: deleted (rule.Propagation says how).
	gcDelete
)

// gcVerdict is what garbage collection (or, with appDelete, the
// Application's deletion) does with one live tracked object.
type gcVerdict struct {
	act gcAct
	// sharers are the other sharers (gcLeaveShare, gcHandOver).
	sharers []string
	rule    GarbageCollectRule
}

// judge decides what collecting the tracked entry e does: a Helm release
// by the HelmRelease last ensured (releaseVerdictOf), any other object by
// live, the object as it is (gcVerdictOf); a skipGC entry is never
// deleted, not even with the Application: it is orphaned, as KubeVela
// does. Collection (collectOne, collectRelease) and its preview (PreviewGC,
// JudgeGC) all decide here.
func (k *Keeper) judge(e v1beta1.ManagedResource, live *unstructured.Unstructured, appDelete bool) gcVerdict {
	var v gcVerdict
	if isReleaseEntry(e) {
		v = gcVerdict{act: k.releaseVerdictOf(trackedObject(e), appDelete)}
	} else {
		v = k.gcVerdictOf(live, appDelete)
	}
	if e.SkipGC && v.act == gcDelete {
		v.act = gcOrphan
	}
	return v
}

// gcVerdictOf decides what collecting live does, from its labels and
// shared-by list and the garbage-collect rules (see judge).
func (k *Keeper) gcVerdictOf(live *unstructured.Unstructured, appDelete bool) gcVerdict {
	others := slices.DeleteFunc(sharers(live), func(s string) bool { return s == k.ownerKey() })
	if !k.ownedByUs(live) {
		if slices.Contains(sharers(live), k.ownerKey()) {
			return gcVerdict{act: gcLeaveShare, sharers: others}
		}
		return gcVerdict{act: gcNotOurs}
	}
	rule := k.gcRule(live)
	v := gcVerdict{rule: rule}
	switch {
	case !appDelete && (rule.Strategy == GCNever || rule.Strategy == GCOnAppDelete ||
		(k.policies.GarbageCollect != nil && k.policies.GarbageCollect.KeepLegacyResource)):
		v.act = gcKeep
	case appDelete && rule.Strategy == GCNever && !k.orphan:
		v.act = gcLeave
	case len(others) > 0:
		v.act, v.sharers = gcHandOver, others
	case live.GetDeletionTimestamp() != nil:
		v.act = gcDeleting
	case rule.Propagation == GCPropagationOrphan:
		v.act = gcOrphan
	default:
		v.act = gcDelete
	}
	return v
}

// mergePatch patches labels and annotations of live (nil values delete),
// guarded by its resourceVersion.
func mergePatch(ctx context.Context, c client.Client, live *unstructured.Unstructured, labels, annotations map[string]any) error {
	md := map[string]any{"resourceVersion": live.GetResourceVersion()}
	if len(labels) > 0 {
		md["labels"] = labels
	}
	if len(annotations) > 0 {
		md["annotations"] = annotations
	}
	patch, err := json.Marshal(map[string]any{"metadata": md})
	if err != nil {
		return err
	}
	return c.Patch(ctx, live, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager))
}

func joinOrNull(list []string) any {
	if len(list) == 0 {
		return nil
	}
	return strings.Join(list, ",")
}

// leftOnGoneCluster reports whether the tracked entry e of a deleted
// Application is on a cluster that is no longer registered (detached, or
// gone for good; err says so): nothing there can be cleaned, and waiting
// would hold the Application's deletion for ever, so the entry counts as
// gone and is remembered (LeftOnGoneClusters) for the controller to say
// what it left. A revision's garbage collection keeps waiting: its
// Application lives on, and the cluster may be joined again.
func (k *Keeper) leftOnGoneCluster(ctx context.Context, e v1beta1.ManagedResource, appDelete bool, err error) bool {
	if !appDelete || !errors.Is(err, multicluster.ErrClusterNotFound) {
		return false
	}
	logf.FromContext(ctx).Info("left an object on a cluster that is no longer registered", "object", refString(e.ClusterObjectReference), "cluster", e.Cluster)
	k.leftOnGone = append(k.leftOnGone, refString(e.ClusterObjectReference))
	return true
}

// LeftOnGoneClusters names what Delete left on clusters that are no
// longer registered (see leftOnGoneCluster), in the order it met them.
func (k *Keeper) LeftOnGoneClusters() []string { return slices.Clone(k.leftOnGone) }
