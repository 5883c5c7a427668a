// Package resourcekeeper writes an Application's rendered objects to their
// clusters and keeps account of them: it refuses objects owned by someone
// else, records every object in a ResourceTracker before writing it,
// repairs drift, and deletes exactly what a new revision dropped (or
// everything, when the Application is deleted). Resource policies
// (take-over, shared-resource, read-only, apply-once, resource-update,
// garbage-collect) adjust each of these steps; see Policies.
//
// A Keeper is built per Application and revision, used for one reconcile,
// and thrown away; it holds no cache and is safe for concurrent use (steps
// of a DAG workflow may Apply at the same time: tracker updates retry on
// conflicts).
//
// Objects handed to Apply must carry the labels rendering stamps
// (app.oam.dev/name, namespace, component, appRevision, resourceType,
// trait.oam.dev/type); the target cluster is passed separately. Every
// ResourceTracker lives in the hub: "<app>-v<N>-<namespace>" per revision
// (what revision N applied) and "<app>-<namespace>" (objects kept until the
// Application is deleted). A workflow run that applies its components one
// after another (dependsOn) can tell the Keeper up front what it will
// apply (Expect): the first Apply then records all of it in one tracker
// write instead of one per step.
//
// Virtual HelmRelease objects (helm.IsHelmRelease) are not applied: they
// are tracked like other objects (under the release's namespace and name,
// before anything is installed) and handed to a ReleaseHandler
// (Options.Releases, e.g. NewHelmReleases over a *helm.Client), which
// installs or upgrades the release; garbage collection and Application
// deletion uninstall it, subject to the garbage-collect rules.
package resourcekeeper

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/sharding"
	"github.com/oamflow/oamflow/pkg/tenancy"
)

// Options configure a Keeper.
type Options struct {
	// Clients gives the client of each target cluster, acting for the
	// Application (package tenancy's Clients: its identity and scope).
	// Required.
	Clients multicluster.ClusterClients
	// Trackers is the hub client storing the ResourceTrackers: the
	// controller's own, not the Application's identity (which need not be
	// allowed to touch them). Nil: Clients' hub client.
	Trackers client.Client
	// Policies are the Application's resource policies (see ParsePolicies).
	Policies Policies
	// Dependencies maps a component to the components it depends on, for
	// garbage collection in dependency order. Components of the Application
	// spec (dependsOn) are added automatically; pass the dependencies of
	// components that older revisions had and the current one dropped.
	Dependencies map[string][]string
	// Releases installs, upgrades and uninstalls the Helm releases of
	// virtual HelmRelease objects (see NewHelmReleases). Nil: such objects
	// fail with ErrNoReleaseHandler.
	Releases ReleaseHandler
	// Namespaces remembers the target namespaces found to exist, shared by
	// the Keepers of one controller (NewKnownNamespaces). Nil: every
	// apply reads its namespaces.
	Namespaces *KnownNamespaces
}

// Keeper applies and tracks the objects of one Application revision.
type Keeper struct {
	appName      string
	appNamespace string
	// shard is the Application's as a one-label object: trackers get its
	// label (sharding.Propagate).
	shard      metav1.Object
	generation int64
	revision   int64
	clients    multicluster.ClusterClients
	trackers   client.Client
	policies   Policies
	deps       map[string][]string
	releases   ReleaseHandler
	namespaces *KnownNamespaces
	// orphan: the Application carries FinalizerOrphanResource; whatever
	// is collected is orphaned instead of deleted.
	orphan bool
	// leftOnGone are the objects Delete left on clusters no longer
	// registered (LeftOnGoneClusters).
	leftOnGone []string
	// applied is the Application's status.appliedResources: what the
	// current revision applied, as the controller last recorded it; it
	// bounds the search for the objects of a lost tracker (rebuildLost).
	applied []common.ClusterObjectReference
	// settled: the current revision's workflow had finished when the
	// Application was read, so applied describes the current revision.
	settled bool
	// created is the Application's creationTimestamp: nothing created
	// before it was written for it (rebuildLost).
	created metav1.Time
	// rebuilt says which lost tracker was rebuilt (RebuiltTracker).
	rebuilt string

	// trackerMu serialises this Keeper's ResourceTracker writes: a deploy
	// step applies to several clusters at once through one Keeper, and
	// concurrent read-modify-write updates of one tracker would conflict.
	trackerMu sync.Mutex
	// seen are the objects this Keeper read or wrote, as the API server
	// answered (remember, Reader); guarded by seenMu.
	seenMu sync.Mutex
	seen   map[seenKey]seenObject

	// written are the trackers this Keeper last wrote, by name, as the
	// API server answered (upsertEntries); guarded by trackerMu.
	written map[string]*v1beta1.ResourceTracker

	// expected are objects the rest of the workflow run will apply, by
	// cluster (Expect): the first Apply to that cluster records them along
	// with its own objects. expectMu guards it.
	expectMu sync.Mutex
	expected map[string][]*unstructured.Unstructured
}

// New returns a Keeper for app at revision N (N >= 1; the revision named
// "<app>-v<N>"). The Application must have a name and namespace.
func New(app *v1beta1.Application, revision int64, opts Options) (*Keeper, error) {
	if app == nil || app.Name == "" || app.Namespace == "" {
		return nil, errors.New("resourcekeeper: the Application must have a name and a namespace")
	}
	if revision < 1 {
		return nil, fmt.Errorf("resourcekeeper: revision must be >= 1, got %d", revision)
	}
	if opts.Clients == nil {
		return nil, errors.New("resourcekeeper: Options.Clients is required")
	}
	deps := map[string][]string{}
	maps.Copy(deps, opts.Dependencies)
	for _, c := range app.Spec.Components {
		for _, d := range c.DependsOn {
			if !slices.Contains(deps[c.Name], d) {
				deps[c.Name] = append(deps[c.Name], d)
			}
		}
	}
	return &Keeper{
		appName:      app.Name,
		appNamespace: app.Namespace,
		shard:        &metav1.ObjectMeta{Labels: shardLabels(app)},
		generation:   app.Generation,
		revision:     revision,
		clients:      opts.Clients,
		trackers:     opts.Trackers,
		policies:     opts.Policies,
		deps:         deps,
		releases:     opts.Releases,
		namespaces:   opts.Namespaces,
		orphan:       slices.Contains(app.Finalizers, v1beta1.FinalizerOrphanResource),
		applied:      slices.Clone(app.Status.AppliedResources),
		settled:      settled(app, revision),
		created:      app.CreationTimestamp,
	}, nil
}

// OwnershipError says an object belongs to someone else and was not written.
type OwnershipError struct {
	// Object is the refused object.
	Object common.ClusterObjectReference
	// OwnerName and OwnerNamespace name the owning Application; both empty
	// when the object exists but no Application manages it.
	OwnerName, OwnerNamespace string
	// TakeOver is set when a take-over rule selected the object: it adopts
	// only what no Application owns.
	TakeOver bool
}

func (e *OwnershipError) Error() string {
	if e.OwnerName == "" {
		return fmt.Sprintf("%s already exists and is not managed by any Application; add a take-over policy selecting it to adopt it", refString(e.Object))
	}
	if e.TakeOver {
		return fmt.Sprintf("%s is owned by Application %s/%s; take-over adopts only objects that belong to no Application: its owner must share it (a shared-resource policy selecting it in both Applications) or give it up",
			refString(e.Object), e.OwnerNamespace, e.OwnerName)
	}
	return fmt.Sprintf("%s is owned by Application %s/%s; a shared-resource policy selecting it in both Applications shares it",
		refString(e.Object), e.OwnerNamespace, e.OwnerName)
}

// checkScope refuses obj (its namespace already defaulted, "" when
// cluster-scoped) when it is outside the scope of the Application acting
// in ctx (package tenancy); without a Tenant in ctx there is no scope.
func checkScope(ctx context.Context, cluster string, obj *unstructured.Unstructured) error {
	t, ok := tenancy.From(ctx)
	if !ok {
		return nil
	}
	return t.Check(tenancy.Object{Cluster: cluster, Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()})
}

// denied returns err as the identity's refusal (tenancy.Denied) when it is
// a Forbidden answer to a request made for the Application of ctx.
func denied(ctx context.Context, err error) error {
	t, ok := tenancy.From(ctx)
	if !ok {
		return err
	}
	return tenancy.Denied(t.Identity, err)
}

// ReadOnlyMissingError says a read-only object does not exist.
type ReadOnlyMissingError struct {
	Object common.ClusterObjectReference
}

func (e *ReadOnlyMissingError) Error() string {
	return fmt.Sprintf("%s is selected by a read-only policy but does not exist; create it, or remove it from the read-only policy", refString(e.Object))
}

// refString formats a reference as "Kind namespace/name (cluster c)".
func refString(r common.ClusterObjectReference) string {
	s := r.Kind + " "
	if r.Namespace != "" {
		s += r.Namespace + "/"
	}
	s += r.Name
	if !multicluster.IsLocal(r.Cluster) {
		s += " in cluster " + r.Cluster
	}
	return s
}

// refOf returns the reference of obj in cluster.
func refOf(cluster string, obj *unstructured.Unstructured) common.ClusterObjectReference {
	return common.ClusterObjectReference{
		Cluster:    normCluster(cluster),
		APIVersion: obj.GetAPIVersion(),
		Kind:       obj.GetKind(),
		Namespace:  obj.GetNamespace(),
		Name:       obj.GetName(),
	}
}

// normCluster maps both hub names to "".
func normCluster(c string) string {
	if multicluster.IsLocal(c) {
		return ""
	}
	return c
}

// ownerKey is "namespace/name" of this Keeper's Application.
func (k *Keeper) ownerKey() string { return k.appNamespace + "/" + k.appName }

// ownedByUs reports whether obj's labels name this Application.
func (k *Keeper) ownedByUs(obj *unstructured.Unstructured) bool {
	l := obj.GetLabels()
	return l[v1beta1.LabelAppName] == k.appName && l[v1beta1.LabelAppNamespace] == k.appNamespace
}

// hub returns the hub client keeping the ResourceTrackers.
func (k *Keeper) hub(ctx context.Context) (client.Client, error) {
	if k.trackers != nil {
		return k.trackers, nil
	}
	c, err := k.clients.Client(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("getting the hub client: %w", err)
	}
	return c, nil
}

// shardLabels is the Application's shard label alone (or none).
func shardLabels(app *v1beta1.Application) map[string]string {
	if id, ok := sharding.ScheduledShard(app); ok {
		return map[string]string{sharding.LabelScheduledShardID: id}
	}
	return nil
}
