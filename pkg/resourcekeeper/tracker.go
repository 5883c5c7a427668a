package resourcekeeper

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/observed"
	"github.com/oamflow/oamflow/pkg/sharding"
)

// VersionedTrackerName is the name of the ResourceTracker of revision N of
// Application namespace/app: "<app>-v<N>-<namespace>".
func VersionedTrackerName(app, namespace string, revision int64) string {
	return fmt.Sprintf("%s-v%d-%s", app, revision, namespace)
}

// RootTrackerName is the name of the root ResourceTracker of Application
// namespace/app: "<app>-<namespace>". It holds objects kept until the
// Application is deleted (garbage-collect strategy onAppDelete or never,
// keepLegacyResource).
func RootTrackerName(app, namespace string) string {
	return fmt.Sprintf("%s-%s", app, namespace)
}

// entryKey identifies a tracked object independently of its API version.
type entryKey struct {
	cluster, group, kind, namespace, name string
}

func keyOf(r v1beta1.ManagedResource) entryKey {
	gv, _ := schema.ParseGroupVersion(r.APIVersion)
	return entryKey{cluster: normCluster(r.Cluster), group: gv.Group, kind: r.Kind, namespace: r.Namespace, name: r.Name}
}

// trackers are the ResourceTrackers of one Application.
type trackers struct {
	root    *v1beta1.ResourceTracker
	current *v1beta1.ResourceTracker
	old     []*v1beta1.ResourceTracker // versioned, other revisions
}

// all returns the trackers: the other revisions' first, then the current
// and the root one.
func (t *trackers) all() []*v1beta1.ResourceTracker {
	all := slices.Clone(t.old)
	for _, rt := range []*v1beta1.ResourceTracker{t.current, t.root} {
		if rt != nil {
			all = append(all, rt)
		}
	}
	return all
}

// tracks reports whether one of the Application's trackers has an entry
// for which match is true.
func (k *Keeper) tracks(ctx context.Context, match func(v1beta1.ManagedResource) bool) (bool, error) {
	hub, err := k.hub(ctx)
	if err != nil {
		return false, err
	}
	t, err := k.listTrackers(ctx, hub)
	if err != nil {
		return false, err
	}
	for _, rt := range t.all() {
		if slices.ContainsFunc(rt.Spec.ManagedResources, match) {
			return true, nil
		}
	}
	return false, nil
}

// listTrackers reads every ResourceTracker of the Application from the hub.
func (k *Keeper) listTrackers(ctx context.Context, hub client.Client) (*trackers, error) {
	var list v1beta1.ResourceTrackerList
	if err := hub.List(ctx, &list, client.MatchingLabels{
		v1beta1.LabelAppName:      k.appName,
		v1beta1.LabelAppNamespace: k.appNamespace,
	}); err != nil {
		return nil, fmt.Errorf("listing ResourceTrackers of Application %s: %w", k.ownerKey(), err)
	}
	t := &trackers{}
	for i := range list.Items {
		rt := &list.Items[i]
		if err := v1beta1.DecodeTracker(rt); err != nil {
			return nil, err
		}
		switch {
		case rt.Spec.Type == v1beta1.ResourceTrackerTypeComponentRevision:
			// KubeVela's record of component ControllerRevisions: kept,
			// never collected through (see docs/migrate-from-kubevela.md).
			continue
		case rt.Spec.Type == v1beta1.ResourceTrackerTypeRoot:
			t.root = rt
		case rt.Name == VersionedTrackerName(k.appName, k.appNamespace, k.revision):
			t.current = rt
		default:
			t.old = append(t.old, rt)
		}
	}
	return t, nil
}

// CheckTrackers reads the Application's ResourceTrackers and fails when
// one cannot be decoded (a corrupt or unknown record: applying or
// collecting without it could steal or delete). Through an
// observed-state cache client it reads the cache (observed.MayLag): no
// API request, however many trackers the hub holds.
func (k *Keeper) CheckTrackers(ctx context.Context) error {
	hub, err := k.hub(ctx)
	if err != nil {
		return err
	}
	_, err = k.listTrackers(observed.MayLag(ctx), hub)
	return err
}

// HasGarbage reports whether a ResourceTracker of another revision than
// the Keeper's remains: what it recorded and this revision dropped is
// still to be collected (GarbageCollect deletes such trackers once done);
// or whether the current revision's tracker was lost (GarbageCollect
// rebuilds it: see rebuildLost).
//
// It asks the observed-state cache first (observed.MayLag; through a
// plain client this is the API server). A cache listing this revision's
// tracker has seen every tracker made before it (one watch delivers a
// kind's events in order), so when it lists no other revision's there is
// none; when it lists one, GarbageCollect reads them all again from the
// API server (finding nothing to do if that one is gone meanwhile). Only
// when the cache has not seen this revision's tracker yet does the API
// server answer here (a lost tracker is judged from that answer). (With
// sharding, a tracker relabelled into the shard just after the current
// one may be missed for a moment: a later reconcile finds it.) A lagging
// cache never makes anything be deleted: only GarbageCollect deletes,
// from its own reads.
func (k *Keeper) HasGarbage(ctx context.Context) (bool, error) {
	hub, err := k.hub(ctx)
	if err != nil {
		return false, err
	}
	t, err := k.listTrackers(observed.MayLag(ctx), hub)
	if err != nil {
		return false, err
	}
	if len(t.old) > 0 || t.current != nil {
		return len(t.old) > 0, nil
	}
	t, err = k.listTrackers(observed.Direct(ctx), hub)
	if err != nil {
		return false, err
	}
	return len(t.old) > 0 || k.lost(t), nil
}

// AnnoKubeVelaLastApplied is the annotation KubeVela keeps its three-way
// merge base in. oamflow (server-side apply) does not read it and leaves
// it on adopted objects: removing it would move a Deployment's
// metadata.generation (see LabelAppliedHash).
const AnnoKubeVelaLastApplied = "app.oam.dev/last-applied-configuration"

// adoptable reports whether the object ref, whose ownership labels name
// this Application but which oamflow never wrote, is this Application's
// to take over in place: one of the Application's ResourceTrackers (on the
// hub, written only by controllers — KubeVela's, kept through a switch)
// lists it. Labels alone never suffice: anyone able to write the object
// could set them.
func (k *Keeper) adoptable(ctx context.Context, ref common.ClusterObjectReference) (bool, error) {
	want := keyOf(v1beta1.ManagedResource{ClusterObjectReference: ref})
	return k.tracks(ctx, func(e v1beta1.ManagedResource) bool { return !e.Deleted && keyOf(e) == want })
}

// getTracker reads the tracker named name from the hub, decoded
// (v1beta1.DecodeTracker); nil without error when there is none.
func getTracker(ctx context.Context, hub client.Client, name string) (*v1beta1.ResourceTracker, error) {
	rt := &v1beta1.ResourceTracker{}
	if err := hub.Get(ctx, client.ObjectKey{Name: name}, rt); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading ResourceTracker %s: %w", name, err)
	}
	if err := v1beta1.DecodeTracker(rt); err != nil {
		return nil, err
	}
	return rt, nil
}

// kubeVelaTrackerFinalizer is the finalizer KubeVela's controller puts on
// its ResourceTrackers; with vela-core stopped nobody else removes it.
const kubeVelaTrackerFinalizer = "resourcetracker.core.oam.dev/finalizer"

// deleteTracker deletes rt from the hub, first dropping KubeVela's
// finalizer from a tracker KubeVela made (oamflow's have none).
func deleteTracker(ctx context.Context, hub client.Client, rt *v1beta1.ResourceTracker) error {
	if controllerutil.RemoveFinalizer(rt, kubeVelaTrackerFinalizer) {
		if err := hub.Update(ctx, rt, client.FieldOwner(FieldManager)); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("removing KubeVela's finalizer from ResourceTracker %s: %w", rt.Name, err)
		}
	}
	if err := hub.Delete(ctx, rt); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting ResourceTracker %s: %w", rt.Name, err)
	}
	return nil
}

// newTracker returns an unsaved tracker of this Application.
func (k *Keeper) newTracker(typ v1beta1.ResourceTrackerType) *v1beta1.ResourceTracker {
	rt := &v1beta1.ResourceTracker{
		ObjectMeta: metav1.ObjectMeta{
			Labels: map[string]string{
				v1beta1.LabelAppName:      k.appName,
				v1beta1.LabelAppNamespace: k.appNamespace,
			},
		},
		Spec: v1beta1.ResourceTrackerSpec{Type: typ, ApplicationGeneration: k.generation},
	}
	if typ == v1beta1.ResourceTrackerTypeRoot {
		rt.Name = RootTrackerName(k.appName, k.appNamespace)
	} else {
		rt.Name = VersionedTrackerName(k.appName, k.appNamespace, k.revision)
		rt.Labels[v1beta1.LabelAppRevision] = fmt.Sprintf("%s-v%d", k.appName, k.revision)
	}
	sharding.Propagate(k.shard, rt)
	return rt
}

// upsertEntries adds or refreshes entries in the tracker named by typ (the
// current revision's, or the root), creating it when missing. It writes
// only when an entry is new or changed, and retries on conflicts. With
// cached (Apply's records), its first read may be answered by what this
// Keeper wrote or the observed-state cache (readTracker); else it reads
// as ctx says (a rebuild, collection: from the API server).
func (k *Keeper) upsertEntries(ctx context.Context, hub client.Client, typ v1beta1.ResourceTrackerType, entries []v1beta1.ManagedResource, cached bool) error {
	if len(entries) == 0 {
		return nil
	}
	want := k.newTracker(typ)
	k.trackerMu.Lock()
	defer k.trackerMu.Unlock()
	// Conflicts left are with other processes (a previous controller, a
	// user edit): back off longer than DefaultRetry's 10 ms steps.
	attempt := 0
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		attempt++
		rt, err := k.readTracker(ctx, hub, want.Name, cached && attempt == 1)
		create := apierrors.IsNotFound(err)
		switch {
		case create:
			rt = want.DeepCopy()
		case err != nil:
			return err // getTracker names the tracker
		}
		switch {
		case create:
		case rt.Labels[v1beta1.LabelAppName] != k.appName || rt.Labels[v1beta1.LabelAppNamespace] != k.appNamespace:
			return fmt.Errorf("ResourceTracker %s belongs to Application %s/%s, not %s: rename one of the Applications",
				rt.Name, rt.Labels[v1beta1.LabelAppNamespace], rt.Labels[v1beta1.LabelAppName], k.ownerKey())
		}
		changed := mergeEntries(rt, entries)
		changed = sharding.Propagate(k.shard, rt) || changed
		if !changed && !create {
			return nil
		}
		if create {
			if err := hub.Create(ctx, rt, client.FieldOwner(FieldManager)); err != nil {
				if apierrors.IsAlreadyExists(err) {
					return apierrors.NewConflict(trackerResource, rt.Name, err)
				}
				return fmt.Errorf("creating ResourceTracker %s: %w", rt.Name, err)
			}
			return k.wroteTracker(rt)
		}
		if err := hub.Update(ctx, rt, client.FieldOwner(FieldManager)); err != nil {
			if apierrors.IsConflict(err) {
				return err
			}
			if apierrors.IsNotFound(err) {
				// Deleted since the copy read: read again, and create it.
				return apierrors.NewConflict(trackerResource, rt.Name, err)
			}
			return fmt.Errorf("updating ResourceTracker %s: %w", rt.Name, err)
		}
		return k.wroteTracker(rt)
	})
}

// readTracker reads the tracker named name for upsertEntries (trackerMu
// held), decoded; NotFound when there is none. When cached, what this
// Keeper wrote last is taken as it is, else the observed-state cache
// answers when it holds the tracker (observed.MayLag), the API server when
// it does not. A lagging copy costs at most a conflict and a direct retry
// when it decides a write (an optimistic Update); when it decides none,
// the copy lists every entry, and entries are only ever added to a
// revision's tracker while its run applies. A tracker lost meanwhile
// (deleted by hand) is found and rebuilt from the API server's answer
// (rebuildLost), which never reads cached. Otherwise it reads from the API
// server.
func (k *Keeper) readTracker(ctx context.Context, hub client.Client, name string, cached bool) (*v1beta1.ResourceTracker, error) {
	switch rt := k.written[name]; {
	case !cached:
		delete(k.written, name)
		ctx = observed.Direct(ctx)
	case rt != nil:
		return rt.DeepCopy(), nil
	default:
		ctx = observed.MayLag(ctx)
	}
	rt, err := getTracker(ctx, hub, name)
	if err != nil {
		return nil, err
	}
	if rt == nil {
		return nil, apierrors.NewNotFound(trackerResource, name)
	}
	// A cached copy keeps its managedFields without their fields
	// (observed.Slim): sent back in an Update they would replace the
	// server's; left out, the server keeps its own.
	rt.ManagedFields = nil
	return rt, nil
}

// trackerResource names ResourceTrackers in API errors.
var trackerResource = schema.GroupResource{Group: v1beta1.GroupVersion.Group, Resource: "resourcetrackers"}

// wroteTracker remembers rt, just written, for this Keeper's next
// readTracker.
func (k *Keeper) wroteTracker(rt *v1beta1.ResourceTracker) error {
	if err := v1beta1.DecodeTracker(rt); err != nil {
		return err
	}
	if k.written == nil {
		k.written = map[string]*v1beta1.ResourceTracker{}
	}
	rt.ManagedFields = nil
	k.written[rt.Name] = rt.DeepCopy()
	return nil
}

// mergeEntries adds or refreshes entries in rt and reports whether rt changed.
func mergeEntries(rt *v1beta1.ResourceTracker, entries []v1beta1.ManagedResource) bool {
	changed := false
	index := map[entryKey]int{}
	for i, e := range rt.Spec.ManagedResources {
		index[keyOf(e)] = i
	}
	for _, e := range entries {
		i, ok := index[keyOf(e)]
		if !ok {
			rt.Spec.ManagedResources = append(rt.Spec.ManagedResources, e)
			index[keyOf(e)] = len(rt.Spec.ManagedResources) - 1
			changed = true
			continue
		}
		cur := rt.Spec.ManagedResources[i]
		if cur.APIVersion != e.APIVersion || cur.Component != e.Component || cur.Trait != e.Trait || cur.Deleted ||
			!sameData(cur.Data, e.Data) {
			if e.Data == nil {
				e.Data = cur.Data
			}
			rt.Spec.ManagedResources[i] = e
			changed = true
		}
	}
	return changed
}

// sameData compares two stored objects by their desired hash; nil new data
// never counts as a change.
func sameData(cur, next *runtime.RawExtension) bool {
	if next == nil {
		return true
	}
	if cur == nil {
		return false
	}
	a, errA := decodeData(cur)
	b, errB := decodeData(next)
	if errA != nil || errB != nil {
		return false
	}
	ha, errA := desiredHash(a)
	hb, errB := desiredHash(b)
	return errA == nil && errB == nil && ha == hb
}

// encodeData stores obj in a tracker entry.
func encodeData(obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	b, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s for its ResourceTracker: %w", obj.GetKind(), obj.GetName(), err)
	}
	return &runtime.RawExtension{Raw: b}, nil
}

// decodeData reads the object stored in a tracker entry.
func decodeData(raw *runtime.RawExtension) (*unstructured.Unstructured, error) {
	if raw == nil || len(raw.Raw) == 0 {
		return nil, fmt.Errorf("no data")
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(raw.Raw); err != nil {
		return nil, fmt.Errorf("decoding tracked object: %w", err)
	}
	return obj, nil
}

// entryFor builds the tracker entry of a desired object.
func entryFor(cluster string, obj *unstructured.Unstructured) (v1beta1.ManagedResource, error) {
	data, err := encodeData(obj)
	if err != nil {
		return v1beta1.ManagedResource{}, err
	}
	e := entryOf(cluster, obj)
	e.Data = data
	return e, nil
}

// entryOf is the tracker entry of obj in cluster without its desired
// state: its identity, and the component and trait its labels name.
func entryOf(cluster string, obj *unstructured.Unstructured) v1beta1.ManagedResource {
	l := obj.GetLabels()
	trait := ""
	if l[v1beta1.LabelResourceType] == v1beta1.ResourceTypeTrait {
		trait = l[v1beta1.LabelTraitType]
	}
	return v1beta1.ManagedResource{
		ClusterObjectReference: refOf(cluster, obj),
		Component:              l[v1beta1.LabelAppComponent],
		Trait:                  trait,
	}
}
