package resourcekeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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

// lost reports whether t misses the current revision's tracker although
// the Application's status lists objects it applied: someone deleted the
// tracker (a revision that applied nothing leaves the status empty).
func (k *Keeper) lost(t *trackers) bool {
	return t.current == nil && len(k.applied) > 0
}

// rebuildLost re-creates the current revision's ResourceTracker when it
// was lost (see lost), from what is live, so that garbage collection and
// the Application's deletion still find everything it deployed instead of
// leaking it. With sweep (the Application's deletion) it also looks when
// the tracker is there, and adds what no tracker lists: a tracker deleted
// in the middle of a run, or an older revision's deleted before its
// garbage was collected. It returns the trackers as they are afterwards.
//
// What is looked for is bounded by status.appliedResources (the
// controller's own record of what the revision applied): in each of its
// clusters, kinds and namespaces, the objects labelled as this
// Application's (app.oam.dev/name and app.oam.dev/namespace) that oamflow
// wrote (they carry its applied hash) or that the status names; and the
// objects the status names that another Application owns and this one
// shares. Labels alone never suffice: anyone able to write an object can
// copy them. Objects another tracker of the Application still lists are
// left there. Reads go to the API server, as the identity of the
// Application (a tenant finds only what it may read).
//
// The rebuilt entries carry no desired state: nothing is re-applied from
// them, so drift repair of those objects resumes with the next revision;
// they are collected and deleted like any other entry. A lost tracker is
// written even when nothing was found, so the search runs once.
func (k *Keeper) rebuildLost(ctx context.Context, hub client.Client, t *trackers, sweep bool) (*trackers, error) {
	lost := k.lost(t)
	if !lost && (!sweep || len(k.applied) == 0) {
		return t, nil
	}
	ctx = observed.Direct(ctx)
	name := VersionedTrackerName(k.appName, k.appNamespace, k.revision)
	tracked := map[entryKey]bool{}
	for _, rt := range t.all() {
		for _, e := range rt.Spec.ManagedResources {
			if !e.Deleted {
				tracked[keyOf(e)] = true
			}
		}
	}
	entries, err := k.liveEntries(ctx, tracked)
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
		err = k.upsertEntries(ctx, hub, v1beta1.ResourceTrackerTypeVersioned, entries)
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
// status.appliedResources sets (see rebuildLost), minus those tracked.
func (k *Keeper) liveEntries(ctx context.Context, tracked map[entryKey]bool) ([]v1beta1.ManagedResource, error) {
	named := map[entryKey]common.ClusterObjectReference{}
	var scans []scanKey
	var out []v1beta1.ManagedResource
	for _, ref := range k.applied {
		ref.Cluster = normCluster(ref.Cluster)
		e := v1beta1.ManagedResource{ClusterObjectReference: ref}
		if tracked[keyOf(e)] {
			continue
		}
		if isReleaseEntry(e) {
			// Not listable: the release is recorded as the status names
			// it; uninstalling checks that it is still ours.
			tracked[keyOf(e)] = true
			out = append(out, e)
			continue
		}
		named[keyOf(e)] = ref
		s := scanKey{ref.Cluster, ref.APIVersion, ref.Kind, ref.Namespace}
		if !slices.Contains(scans, s) {
			scans = append(scans, s)
		}
	}
	var errs []error
	for _, s := range scans {
		found, err := k.listOurs(ctx, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, obj := range found {
			e := entryOf(s.cluster, obj)
			key := keyOf(e)
			_, isNamed := named[key]
			if tracked[key] || (appliedHash(obj) == "" && !isNamed) {
				continue
			}
			tracked[key] = true
			out = append(out, e)
		}
	}
	// What the status names and no listing found: shared objects another
	// Application owns now, which this one must leave, and what could not
	// be listed (an identity allowed to read but not to list).
	for key, ref := range named {
		if tracked[key] {
			continue
		}
		obj, err := k.getLive(ctx, ref)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if obj != nil && (k.ownedByUs(obj) || slices.Contains(sharers(obj), k.ownerKey())) {
			tracked[key] = true
			out = append(out, entryOf(ref.Cluster, obj))
		}
	}
	return out, errors.Join(errs...)
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
