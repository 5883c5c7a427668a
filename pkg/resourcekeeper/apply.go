package resourcekeeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/errclass"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/multicluster"
)

// action is what one object needs.
type action int

const (
	actNone      action = iota // in sync, read-only, or kept at live values
	actApply                   // server-side apply (or replace / re-create)
	actJoinShare               // add this Application to the shared-by list
	actRelease                 // hand a virtual HelmRelease to the ReleaseHandler
)

// plan is the decision for one object.
type plan struct {
	desired *unstructured.Unstructured // what to write (labels, annotations, apply-once retention)
	tracked *unstructured.Unstructured // what to record in the tracker (nil: not tracked)
	live    *unstructured.Unstructured // nil when the object does not exist
	action  action
	shared  bool
	// adopt: an object KubeVela applied for this Application (see
	// adoptable); its KubeVela bookkeeping annotation is dropped on write.
	adopt bool
}

// Apply writes objs to cluster ("" or "local" = hub) for the Keeper's
// revision. objs are rendered objects stamped with the app.oam.dev labels
// (Apply adds app.oam.dev/cluster=<cluster> for a member cluster);
// they are not modified. In order:
//
//  1. every object is read from the cluster and checked: read-only objects
//     must exist (*ReadOnlyMissingError); an object labelled for another
//     Application, or existing without having been created by oamflow, is
//     refused (*OwnershipError) unless a take-over rule selects it, or a
//     shared-resource rule selects it and its owner shares it. Any refusal
//     fails the whole call before anything is written;
//  2. every written object (and every shared object joined) is recorded in
//     the revision's ResourceTracker, so a crash never leaves an untracked
//     object;
//  3. objects not in sync (see inSync) are written with server-side apply,
//     field manager "oamflow", forcing field ownership — or replaced,
//     or deleted and re-created, as resource-update rules say. apply-once
//     rules keep the listed paths (or the whole object) at their live values.
//
// Virtual HelmRelease objects take part in steps 1 and 2 (their spec must
// parse; they are tracked under the release's namespace and name) and are
// then handed to the ReleaseHandler instead of being written (see
// ReleaseHandler).
//
// Errors of single objects are joined; the others are still written.
// The clients should read from the API server, not from a cache, so that
// ownership is checked against the latest state.
func (k *Keeper) Apply(ctx context.Context, cluster string, objs []*unstructured.Unstructured) error {
	c, err := k.clients.Client(ctx, cluster)
	if err != nil {
		return err
	}
	plans := make([]*plan, 0, len(objs))
	var refusals []error
	for _, obj := range objs {
		var p *plan
		var err error
		if helmspec.IsHelmRelease(obj) {
			p, err = k.planRelease(ctx, cluster, obj, false)
		} else {
			p, err = k.plan(ctx, c, cluster, obj, false)
		}
		if err != nil {
			refusals = append(refusals, err)
			continue
		}
		plans = append(plans, p)
	}
	if len(refusals) > 0 {
		return errors.Join(refusals...)
	}
	for _, p := range plans {
		k.remember(cluster, p.live, false)
	}
	first, err := k.preflight(ctx, c, cluster, plans)
	if err != nil {
		return err
	}

	var entries []v1beta1.ManagedResource
	for _, p := range append(plans, k.planExpected(ctx, c, cluster, plans)...) {
		if p.tracked == nil {
			continue
		}
		e, err := entryFor(cluster, p.tracked)
		if err != nil {
			return err
		}
		entries = append(entries, e)
	}
	hub, err := k.hub(ctx)
	if err != nil {
		return err
	}
	if err := k.upsertEntries(ctx, hub, v1beta1.ResourceTrackerTypeVersioned, entries, true); err != nil {
		return fmt.Errorf("recording objects before applying them: %w", err)
	}

	if first >= 0 {
		// The one write the preflight did not try goes first: if it
		// fails, the others are not made.
		if err := k.execute(ctx, c, cluster, plans[first]); err != nil {
			return err
		}
	}
	var errs []error
	for i, p := range plans {
		if i == first {
			continue
		}
		if err := k.execute(ctx, c, cluster, p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Expect tells the Keeper that the rest of this workflow run will apply
// objs (rendered as for Apply) to cluster, in later calls: the next Apply
// to that cluster records those it may (planExpected) in the same
// ResourceTracker write as its own objects, so that a run whose components
// are applied one after another (dependsOn) writes its tracker once
// instead of once per step. The later Apply of an object recorded so finds
// its entry unchanged and writes the tracker no more.
//
// Only objects the run is sure to apply may be expected: the tracker is
// what garbage collection, deletion and drift repair go by, and an entry
// for an object never applied would have drift repair create it once the
// workflow succeeded. Expecting an object does not apply it, nor check it
// for its own Apply: that Apply plans it again from a fresh read.
func (k *Keeper) Expect(cluster string, objs []*unstructured.Unstructured) {
	k.expectMu.Lock()
	defer k.expectMu.Unlock()
	if k.expected == nil {
		k.expected = map[string][]*unstructured.Unstructured{}
	}
	cl := normCluster(cluster)
	k.expected[cl] = append(k.expected[cl], objs...)
}

// planExpected takes the objects expected in cluster (Expect), but those
// in applying, and plans those that may be recorded before their own
// Apply: objects that do not exist yet, or exist as this Application's
// own, written by oamflow, unshared and not read-only. The others —
// refused, owned by someone else, to adopt or to share, Helm releases —
// are left to their own Apply, which checks them and records them then:
// recording one early would make it look adoptable (adoptable) before its
// ownership was checked. Expected objects are taken once: a failed read
// leaves the object to its own Apply.
func (k *Keeper) planExpected(ctx context.Context, c client.Client, cluster string, applying []*plan) []*plan {
	k.expectMu.Lock()
	cl := normCluster(cluster)
	objs := k.expected[cl]
	delete(k.expected, cl)
	k.expectMu.Unlock()
	if len(objs) == 0 {
		return nil
	}
	// What this Apply writes is planned already: not read again. An
	// expected object without a namespace is matched in the
	// Application's (where plan puts it when its kind is namespaced) and
	// without one (cluster-scoped).
	here := map[entryKey]bool{}
	for _, p := range applying {
		here[keyOf(v1beta1.ManagedResource{ClusterObjectReference: refOf(cluster, p.desired)})] = true
	}
	applied := func(obj *unstructured.Unstructured) bool {
		key := keyOf(v1beta1.ManagedResource{ClusterObjectReference: refOf(cluster, obj)})
		if here[key] {
			return true
		}
		if obj.GetNamespace() != "" {
			return false
		}
		key.namespace = k.appNamespace
		return here[key]
	}
	log := logf.FromContext(ctx)
	var out []*plan
	for _, obj := range objs {
		if helmspec.IsHelmRelease(obj) || applied(obj) {
			continue
		}
		p, err := k.plan(ctx, c, cluster, obj, false)
		if err != nil {
			log.V(1).Info("not recording an expected object before its own apply", "object", klog.KObj(obj), "cluster", cluster, "reason", err.Error())
			continue
		}
		if p.tracked == nil || p.shared || p.adopt || p.action == actJoinShare ||
			(p.live != nil && !(k.ownedByUs(p.live) && managedByUs(p.live))) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// plan reads the live object and decides what to do with obj. stateKeep
// selects drift repair semantics: objects owned by someone else are left
// alone instead of refused, and apply-once rules with affect onStateKeep
// apply instead of those with onUpdate.
func (k *Keeper) plan(ctx context.Context, c client.Client, cluster string, obj *unstructured.Unstructured, stateKeep bool) (*plan, error) {
	d := cleanDesired(obj)
	labels := d.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1beta1.LabelAppName] = k.appName
	labels[v1beta1.LabelAppNamespace] = k.appNamespace
	if !multicluster.IsLocal(cluster) {
		// Objects in a member say which cluster they were delivered to.
		labels[v1beta1.LabelAppCluster] = cluster
	}
	d.SetLabels(labels)
	namespaced, err := c.IsObjectNamespaced(d)
	if err != nil {
		return nil, fmt.Errorf("%s: unknown kind %s (is its CustomResourceDefinition installed?): %w", refString(refOf(cluster, d)), d.GroupVersionKind(), err)
	}
	if namespaced && d.GetNamespace() == "" {
		d.SetNamespace(k.appNamespace)
	}
	if !namespaced {
		d.SetNamespace("")
	}
	ref := refOf(cluster, d)
	if err := checkScope(ctx, cluster, d); err != nil {
		if stateKeep {
			logf.FromContext(ctx).V(1).Info("leaving an object outside the Application's scope", "object", klog.KObj(d), "cluster", cluster, "reason", err.Error())
			return &plan{desired: d}, nil
		}
		return nil, err
	}

	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(d.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(d), live); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading %s: %w", refString(ref), err)
		}
		live = nil
	}
	p := &plan{desired: d, live: live}
	if k.policies.readOnly(d) {
		if live == nil && !stateKeep {
			return nil, &ReadOnlyMissingError{Object: ref}
		}
		return p, nil
	}

	tracked := d.DeepCopy()
	p.shared = k.policies.shared(d)
	if live != nil && !(k.ownedByUs(live) && managedByUs(live)) {
		ownerName, ownerNs := live.GetLabels()[v1beta1.LabelAppName], live.GetLabels()[v1beta1.LabelAppNamespace]
		otherApp := ownerName != "" && !k.ownedByUs(live)
		switch {
		case otherApp && p.shared && slices.Contains(sharers(live), ownerNs+"/"+ownerName):
			p.tracked = tracked
			if !stateKeep && !slices.Contains(sharers(live), k.ownerKey()) {
				p.action = actJoinShare
			}
			return p, nil
		case k.policies.takeOver(d) && !stateKeep && !otherApp:
			// Taken over (it belongs to no Application): written below
			// like our own object.
		case !otherApp && !stateKeep && k.ownedByUs(live):
			adopt, err := k.adoptable(ctx, ref)
			if err != nil {
				return nil, err
			}
			if !adopt {
				return nil, &OwnershipError{Object: ref, TakeOver: k.policies.takeOver(d)}
			}
			// Applied for this Application by KubeVela (or by an oamflow
			// that never wrote it): taken over in place, written below
			// like our own object.
			p.adopt = true
		default:
			if stateKeep {
				logf.FromContext(ctx).V(1).Info("leaving an object now owned by someone else", "object", klog.KObj(live), "ownerApp", ownerNs+"/"+ownerName)
				return p, nil
			}
			if !otherApp {
				ownerName, ownerNs = "", ""
			}
			return nil, &OwnershipError{Object: ref, OwnerName: ownerName, OwnerNamespace: ownerNs, TakeOver: k.policies.takeOver(d)}
		}
	}
	p.tracked = tracked

	// The hash covers the rendered object, before apply-once retention, so
	// that live values kept on purpose never count as a change.
	withoutAppliedHash(d)
	hash, err := desiredHash(d)
	if err != nil {
		return nil, err
	}

	if s := k.policies.applyOnce(d); live != nil && s.affects(stateKeep) {
		if s.wholeObject() {
			return p, nil
		}
		if err := retainLive(d, live, s.Path); err != nil {
			return nil, fmt.Errorf("%s: apply-once: %w", refString(ref), err)
		}
	}

	annos := d.GetAnnotations()
	if annos == nil {
		annos = map[string]string{}
	}
	if p.adopt || (live != nil && live.GetLabels()[LabelAppliedHash] != "") {
		// Adopted from KubeVela: the hash is kept as a label, so that
		// the object's annotations stay as they are (LabelAppliedHash).
		labels := d.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[LabelAppliedHash] = hash
		d.SetLabels(labels)
	} else {
		annos[AnnoAppliedHash] = hash
	}
	if p.shared {
		list := sharers(live)
		if !slices.Contains(list, k.ownerKey()) {
			list = append(list, k.ownerKey())
		}
		annos[AnnoSharedBy] = strings.Join(list, ",")
	}
	d.SetAnnotations(annos)
	if !inSync(d, live) {
		p.action = actApply
	}
	return p, nil
}

// preflight makes, when more than one object is to be written, every
// write but the first as a server-side dry run: if one of them cannot be
// made (the identity may not, the object does not match its kind's schema
// or is invalid: any error errclass calls terminal), the call fails with
// all of them before anything is tracked or written, so a step is never
// left half-applied. It returns the index in plans of the write it did not
// try (-1: none), which Apply makes first and alone: if that one fails,
// nothing else is written either. Other dry-run errors (a conflict, a
// timeout) are left to the real writes.
func (k *Keeper) preflight(ctx context.Context, c client.Client, cluster string, plans []*plan) (int, error) {
	first := -1
	var rest []*plan
	for i, p := range plans {
		if p.action != actApply {
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		rest = append(rest, p)
	}
	var refusals []error
	for _, p := range rest {
		if err := k.dryRun(ctx, c, p); errclass.IsTerminal(err) {
			refusals = append(refusals, fmt.Errorf("applying %s: %w", refString(refOf(cluster, p.desired)), err))
		}
	}
	if len(refusals) > 0 {
		return first, errors.Join(append(refusals, errors.New("nothing was applied"))...)
	}
	return first, nil
}

// dryRun makes p's write (server-side apply, or replace as resource-update
// rules say) as a server-side dry run. A write that re-creates the object
// (a recreateFields field changed) is not tried: its live object would
// refuse the change that the re-creation makes.
func (k *Keeper) dryRun(ctx context.Context, c client.Client, p *plan) error {
	strategy := k.policies.resourceUpdate(p.desired)
	if p.live != nil && len(strategy.RecreateFields) > 0 {
		if changed, err := changedField(p.desired, p.live, strategy.RecreateFields); err != nil || changed != "" {
			return nil
		}
	}
	obj := p.desired.DeepCopy()
	if p.live != nil && strategy.Op == UpdateOpReplace {
		obj.SetResourceVersion(p.live.GetResourceVersion())
		return c.Update(ctx, obj, client.FieldOwner(FieldManager), client.DryRunAll)
	}
	if p.live != nil && p.shared {
		obj.SetResourceVersion(p.live.GetResourceVersion())
	}
	return c.Patch(ctx, obj, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership, client.DryRunAll)
}

// retainLive copies the values at paths from live into d; a path absent
// live is removed from d.
func retainLive(d, live *unstructured.Unstructured, paths []string) error {
	for _, path := range paths {
		segs, err := parseFieldPath(path)
		if err != nil {
			return err
		}
		if v, ok := getPath(live.Object, segs); ok {
			setPath(d.Object, segs, runtime.DeepCopyJSONValue(v))
		} else {
			deletePath(d.Object, segs)
		}
	}
	return nil
}

// execute performs the planned write.
func (k *Keeper) execute(ctx context.Context, c client.Client, cluster string, p *plan) error {
	ref := refString(refOf(cluster, p.desired))
	log := logf.FromContext(ctx)
	switch p.action {
	case actJoinShare:
		list := append(sharers(p.live), k.ownerKey())
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": p.live.GetResourceVersion(),
			"annotations":     map[string]any{AnnoSharedBy: strings.Join(list, ",")},
		}})
		if err != nil {
			return err
		}
		if err := c.Patch(ctx, p.live, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager)); err != nil {
			return fmt.Errorf("joining the sharers of %s: %w", ref, err)
		}
		k.remember(cluster, p.live, true)
		log.V(1).Info("joined a shared object", "object", klog.KObj(p.live), "cluster", cluster)
		return nil
	case actRelease:
		return k.ensureRelease(ctx, cluster, p)
	case actApply:
	default:
		return nil
	}

	strategy := k.policies.resourceUpdate(p.desired)
	if p.live != nil && p.live.GetDeletionTimestamp() != nil {
		return fmt.Errorf("%s is being deleted; it will be created again once it is gone", ref)
	}
	if p.live != nil && len(strategy.RecreateFields) > 0 {
		changed, err := changedField(p.desired, p.live, strategy.RecreateFields)
		if err != nil {
			return fmt.Errorf("%s: resource-update recreateFields: %w", ref, err)
		}
		if changed != "" {
			log.Info("re-creating an object whose field changed", "object", klog.KObj(p.live), "cluster", cluster, "field", changed)
			k.forgetSeen(cluster, p.live)
			if err := c.Delete(ctx, p.live, client.PropagationPolicy("Background")); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting %s to re-create it (%s changed): %w", ref, changed, err)
			}
			gone := p.live.DeepCopy()
			if err := c.Get(ctx, client.ObjectKeyFromObject(gone), gone); err == nil {
				return fmt.Errorf("%s is being deleted to re-create it (%s changed); it will be created once it is gone", ref, changed)
			} else if !apierrors.IsNotFound(err) {
				return fmt.Errorf("reading %s: %w", ref, err)
			}
			p.live = nil
		}
	}

	obj := p.desired.DeepCopy()
	if p.live != nil && strategy.Op == UpdateOpReplace {
		obj.SetResourceVersion(p.live.GetResourceVersion())
		if err := c.Update(ctx, obj, client.FieldOwner(FieldManager)); err != nil {
			return fmt.Errorf("replacing %s: %w", ref, err)
		}
		k.remember(cluster, obj, true)
		log.V(1).Info("replaced object", "object", klog.KObj(obj), "cluster", cluster)
		return nil
	}
	if p.live != nil && p.shared {
		// Guards the shared-by list against a concurrent sharer.
		obj.SetResourceVersion(p.live.GetResourceVersion())
	}
	if p.adopt && p.live != nil {
		log.Info("adopting an object KubeVela applied for this Application", "object", klog.KObj(p.live), "cluster", cluster)
	}
	if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		if apierrors.IsNotFound(err) {
			// An apply creates what is missing but its namespace: the
			// namespace is gone, whatever was remembered.
			ns := obj.GetNamespace()
			if ns == "" {
				ns = k.appNamespace
			}
			k.namespaces.forget(cluster, ns)
		}
		return fmt.Errorf("applying %s: %w", ref, err)
	}
	k.remember(cluster, obj, true)
	if err := handOver(ctx, c, obj); err != nil {
		return fmt.Errorf("%s: handing KubeVela's fields over: %w", ref, err)
	}
	log.V(1).Info("applied object", "object", klog.KObj(obj), "cluster", cluster)
	return nil
}

// changedField returns the first of paths whose desired value differs from
// the live one, or "".
func changedField(desired, live *unstructured.Unstructured, paths []string) (string, error) {
	for _, path := range paths {
		segs, err := parseFieldPath(path)
		if err != nil {
			return "", err
		}
		dv, dok := getPath(desired.Object, segs)
		lv, lok := getPath(live.Object, segs)
		if !dok {
			continue
		}
		if !lok || !contains(dv, lv) || !contains(lv, dv) {
			return path, nil
		}
	}
	return "", nil
}

// sharers returns the shared-by list of obj (nil obj: none).
func sharers(obj *unstructured.Unstructured) []string {
	if obj == nil {
		return nil
	}
	v := obj.GetAnnotations()[AnnoSharedBy]
	if v == "" {
		return nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
