package resourcekeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/observed"
	"github.com/oamflow/oamflow/pkg/tenancy"
)

// settled reports whether the workflow of revision N of app had finished
// when app was read: the reconcile finishing a run records what it
// applied in status.appliedResources, so from then on the status describes
// revision N (the reconcile that finishes it still sees the previous
// revision's record).
func settled(app *v1beta1.Application, revision int64) bool {
	w := app.Status.Workflow
	return w != nil && w.Finished && w.AppRevision == fmt.Sprintf("%s-v%d", app.Name, revision)
}

// lost reports whether t misses the current revision's tracker although
// the Application's status lists objects that revision applied: someone
// deleted the tracker (a revision that applied nothing leaves the status
// empty).
func (k *Keeper) lost(t *trackers) bool {
	return t.current == nil && k.settled && len(k.applied) > 0
}

// rebuildLost re-creates the current revision's ResourceTracker when it
// was lost (see lost), from what is live, so that garbage collection and
// the Application's deletion still find everything it deployed instead of
// leaking it. With sweep (the Application's deletion) it also looks when
// the tracker is there, and adds what no tracker lists: objects recorded
// by a tracker deleted in the middle of a run, by the root tracker, or by
// an older revision's tracker deleted before its garbage was collected.
// It returns the trackers as they are afterwards.
//
// What is looked for is bounded by status.appliedResources (the
// controller's own record of what the revision applied): the objects it
// names that are live and labelled as this Application's
// (app.oam.dev/name and app.oam.dev/namespace) or shared by it; and, in
// each of its clusters, kinds and namespaces, the other objects labelled
// as the Application's that oamflow wrote for it: they carry its applied
// hash, oamflow is among their server-side-apply managers, and they were
// created after the Application was. Labels alone never suffice: anyone
// able to write an object can copy them (and an Application deleted and
// created again under the same name may have left objects behind on
// purpose). Reads go to the API server, as the identity of the
// Application (a tenant finds only what it may read).
//
// The rebuilt entries carry no desired state (another tracker's may be
// another revision's): nothing is re-applied from them, so drift repair
// of those objects resumes with the next revision; they are collected
// like any other entry. A Helm release the status names is
// taken back only when a tracker recorded it or no garbage-collect rule
// could select it (rules select a release by its component, which only a
// tracker records). A lost tracker is written even when nothing was
// found, so the search runs once.
func (k *Keeper) rebuildLost(ctx context.Context, hub client.Client, t *trackers, sweep bool) (*trackers, error) {
	lost := k.lost(t)
	if !lost && (!sweep || len(k.applied) == 0) {
		return t, nil
	}
	ctx = observed.Direct(ctx)
	name := VersionedTrackerName(k.appName, k.appNamespace, k.revision)
	entries, err := k.liveEntries(ctx, t, lost)
	if err != nil && !lost {
		// Nothing is known to be missing: the deletion goes on with what
		// the trackers list.
		logf.FromContext(ctx).Info("could not look for objects no tracker lists", "reason", err.Error())
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("rebuilding the lost ResourceTracker %s of Application %s: %w", name, k.ownerKey(), err)
	}
	switch {
	case len(entries) == 0 && !lost:
		return t, nil
	case len(entries) == 0:
		err = hub.Create(ctx, k.newTracker(v1beta1.ResourceTrackerTypeVersioned), client.FieldOwner(FieldManager))
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	default:
		err = k.upsertEntries(ctx, hub, v1beta1.ResourceTrackerTypeVersioned, entries, false)
	}
	if err != nil {
		return nil, fmt.Errorf("rebuilding the lost ResourceTracker %s of Application %s: %w", name, k.ownerKey(), err)
	}
	if lost {
		k.rebuilt = fmt.Sprintf("ResourceTracker %s was missing (deleted by hand?): rebuilt from %d live object(s) of the Application", name, len(entries))
	} else {
		k.rebuilt = fmt.Sprintf("%d live object(s) of the Application were in no ResourceTracker (one deleted by hand?): added to %s", len(entries), name)
	}
	logf.FromContext(ctx).Info("rebuilt a lost ResourceTracker from the live objects", "tracker", name, "objects", len(entries), "lost", lost)
	return k.listTrackers(ctx, hub)
}

// RebuiltTracker says which lost tracker this Keeper rebuilt (see
// rebuildLost), or "" when it rebuilt none.
func (k *Keeper) RebuiltTracker() string { return k.rebuilt }

// scanKey is one label-selected listing: a kind in a namespace of a cluster.
type scanKey struct {
	cluster, apiVersion, kind, namespace string
}

// liveEntries finds the live objects of the Application within the bounds
// status.appliedResources sets (see rebuildLost). Objects a tracker of t
// lists are left out, except, when the current revision's tracker is
// lost, those the status names: they belong in the rebuilt one (an older
// revision's tracker listing them too would otherwise make garbage
// collection take them for dropped).
func (k *Keeper) liveEntries(ctx context.Context, t *trackers, lost bool) ([]v1beta1.ManagedResource, error) {
	recorded := map[entryKey]v1beta1.ManagedResource{}
	for _, rt := range t.all() {
		for _, e := range rt.Spec.ManagedResources {
			if !e.Deleted {
				recorded[keyOf(e)] = e
			}
		}
	}
	taken := map[entryKey]bool{}
	var out []v1beta1.ManagedResource
	take := func(e v1beta1.ManagedResource) {
		if prev, ok := recorded[keyOf(e)]; ok {
			// What another tracker recorded: the component and trait
			// (garbage-collect rules select by them), never its desired
			// state, which may be another revision's.
			e.Component, e.Trait, e.SkipGC = prev.Component, prev.Trait, prev.SkipGC
		}
		taken[keyOf(e)] = true
		out = append(out, e)
	}
	named := map[entryKey]common.ClusterObjectReference{}
	var scans []scanKey
	for _, ref := range k.applied {
		ref.Cluster = normCluster(ref.Cluster)
		e := v1beta1.ManagedResource{ClusterObjectReference: ref}
		key := keyOf(e)
		s := scanKey{ref.Cluster, ref.APIVersion, ref.Kind, ref.Namespace}
		if !isReleaseEntry(e) && !slices.Contains(scans, s) {
			scans = append(scans, s)
		}
		if _, ok := recorded[key]; ok && !lost {
			continue
		}
		if isReleaseEntry(e) {
			// Not listable: taken back as recorded, or as the status names
			// it when no rule could select it; uninstalling checks that
			// the release is still ours.
			_, ok := recorded[key]
			if ok || k.policies.GarbageCollect == nil || len(k.policies.GarbageCollect.Rules) == 0 {
				take(e)
			}
			continue
		}
		named[key] = ref
	}
	var errs []error
	scans, err := k.withDeployedKinds(ctx, scans)
	if err != nil {
		errs = append(errs, err)
	}
	for _, s := range scans {
		found, err := k.listOurs(ctx, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, obj := range found {
			e := entryOf(s.cluster, obj)
			key := keyOf(e)
			if _, isNamed := named[key]; isNamed {
				continue // read below
			}
			if _, ok := recorded[key]; ok || taken[key] || !k.wroteForUs(obj) {
				continue
			}
			take(e)
		}
	}
	for key, ref := range named {
		obj, err := k.getLive(ctx, ref)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if obj != nil && !taken[key] && (k.ownedByUs(obj) || slices.Contains(sharers(obj), k.ownerKey())) {
			take(entryOf(ref.Cluster, obj))
		}
	}
	return out, errors.Join(errs...)
}

// withDeployedKinds adds to scans, in each cluster and namespace they
// name, the kinds the built-in definitions deploy (observed.DefaultKinds):
// what an older revision or the root tracker held may be of a kind the
// current revision no longer deploys. A kind a cluster does not serve is
// left out.
func (k *Keeper) withDeployedKinds(ctx context.Context, scans []scanKey) ([]scanKey, error) {
	type place struct{ cluster, namespace string }
	var places []place
	for _, s := range scans {
		if p := (place{s.cluster, s.namespace}); s.namespace != "" && !slices.Contains(places, p) {
			places = append(places, p)
		}
	}
	var errs []error
	for _, p := range places {
		c, err := k.clients.Client(ctx, p.cluster)
		if err != nil {
			if !errors.Is(err, multicluster.ErrClusterNotFound) {
				errs = append(errs, err)
			}
			continue
		}
		for _, gk := range observed.DefaultKinds() {
			if gk.Group == v1beta1.GroupVersion.Group {
				continue // oamflow's own records
			}
			m, err := c.RESTMapper().RESTMapping(gk)
			if err != nil {
				continue // not served there
			}
			s := scanKey{p.cluster, m.GroupVersionKind.GroupVersion().String(), gk.Kind, p.namespace}
			if !slices.ContainsFunc(scans, func(o scanKey) bool {
				return o.cluster == s.cluster && o.namespace == s.namespace && o.kind == s.kind && schema.FromAPIVersionAndKind(o.apiVersion, o.kind).Group == gk.Group
			}) {
				scans = append(scans, s)
			}
		}
	}
	return scans, errors.Join(errs...)
}

// wroteForUs reports whether obj, labelled as this Application's, is one
// oamflow wrote for it: it carries the applied hash, oamflow applied it
// (server-side apply), and it was created after the Application was.
func (k *Keeper) wroteForUs(obj *unstructured.Unstructured) bool {
	if created := obj.GetCreationTimestamp(); appliedHash(obj) == "" || created.Before(&k.created) {
		return false
	}
	return slices.ContainsFunc(obj.GetManagedFields(), func(m metav1.ManagedFieldsEntry) bool {
		return m.Manager == FieldManager && m.Operation == metav1.ManagedFieldsOperationApply
	})
}

// listOurs lists the objects of kind s.kind in s.namespace of s.cluster
// labelled as this Application's. A cluster no longer registered or a
// kind no longer served has none that could be collected.
func (k *Keeper) listOurs(ctx context.Context, s scanKey) ([]*unstructured.Unstructured, error) {
	c, err := k.clients.Client(ctx, s.cluster)
	if err != nil {
		if errors.Is(err, multicluster.ErrClusterNotFound) {
			return nil, nil
		}
		return nil, err
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.FromAPIVersionAndKind(s.apiVersion, s.kind+"List"))
	opts := []client.ListOption{client.MatchingLabels{v1beta1.LabelAppName: k.appName, v1beta1.LabelAppNamespace: k.appNamespace}}
	if s.namespace != "" {
		opts = append(opts, client.InNamespace(s.namespace))
	}
	if err := c.List(ctx, list, opts...); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || tenancy.IsRefusal(err) {
			return nil, nil // Forbidden: the objects the status names are read one by one
		}
		return nil, fmt.Errorf("listing %s of Application %s in cluster %s: %w", s.kind, k.ownerKey(), clusterOrLocal(s.cluster), denied(ctx, err))
	}
	out := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// getLive reads the object ref names; nil when it does not exist.
func (k *Keeper) getLive(ctx context.Context, ref common.ClusterObjectReference) (*unstructured.Unstructured, error) {
	c, err := k.clients.Client(ctx, ref.Cluster)
	if err != nil {
		if errors.Is(err, multicluster.ErrClusterNotFound) {
			return nil, nil
		}
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(ref.APIVersion)
	obj.SetKind(ref.Kind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading %s: %w", refString(ref), denied(ctx, err))
	}
	return obj, nil
}
