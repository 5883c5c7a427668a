package resourcekeeper

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/tenancy"
)

// Labels of the namespaces oamflow creates for an Application. They are
// not the app.oam.dev ownership labels: a created namespace is not the
// Application's object (it is never deleted with it), only made for it.
const (
	// LabelCreatedBy is "oamflow" on a namespace oamflow created.
	LabelCreatedBy = "oamflow.dev/created-by"
	// LabelCreatedForApp is the name of the Application it was created for.
	LabelCreatedForApp = "oamflow.dev/created-for-app"
	// LabelCreatedForNamespace is that Application's namespace.
	LabelCreatedForNamespace = "oamflow.dev/created-for-namespace"
	// AnnoCreatedFor is "namespace/name" of that Application (an
	// Application name may be too long for a label value).
	AnnoCreatedFor = "oamflow.dev/created-for"
)

// NamespaceMissingError says a target namespace does not exist and may
// not be created (the topology's createNamespace is false). It is
// retryable: once someone creates the namespace the step goes on.
type NamespaceMissingError struct {
	Cluster, Namespace string
}

// Waiting is true: the step waits for the namespace (errclass.IsWaiting).
func (e *NamespaceMissingError) Waiting() bool { return true }

func (e *NamespaceMissingError) Error() string {
	return fmt.Sprintf("namespace %q does not exist in cluster %s and the topology sets createNamespace: false: waiting for it to be created",
		e.Namespace, clusterOrLocal(e.Cluster))
}

// NamespaceTerminatingError says a target namespace is being deleted; the
// objects are written (and the namespace created again, when allowed)
// once it is gone. Retryable.
type NamespaceTerminatingError struct {
	Cluster, Namespace string
}

// Waiting is true: the step waits for the deletion to end (errclass.IsWaiting).
func (e *NamespaceTerminatingError) Waiting() bool { return true }

func (e *NamespaceTerminatingError) Error() string {
	return fmt.Sprintf("namespace %q in cluster %s is being deleted: waiting for it to be gone", e.Namespace, clusterOrLocal(e.Cluster))
}

func clusterOrLocal(c string) string {
	if c == "" {
		return v1beta1.ClusterLocal
	}
	return c
}

// EnsureNamespaces makes sure the namespaces objs are to be written to in
// cluster exist, before Apply writes them: a namespaced object's own
// namespace, or the Application's when it names none; a Helm release's
// namespace likewise. Kinds the cluster does not serve (yet) and
// namespaces objs create themselves are left to Apply.
//
// A missing namespace is created when create is true, labelled as
// created by oamflow for this Application, and recorded in the root
// ResourceTracker as skipGC before it is created: neither garbage
// collection nor the Application's deletion ever deletes it (deleting a
// namespace deletes everything in it, the work of others included).
// created lists the namespaces created, for the caller to report. When
// create is false a missing namespace is a *NamespaceMissingError; a
// namespace being deleted is a *NamespaceTerminatingError.
func (k *Keeper) EnsureNamespaces(ctx context.Context, cluster string, objs []*unstructured.Unstructured, create bool) (created []string, err error) {
	c, err := k.clients.Client(ctx, cluster)
	if err != nil {
		return nil, err
	}
	var wanted, own []string
	for _, obj := range objs {
		if obj.GetAPIVersion() == "v1" && obj.GetKind() == "Namespace" {
			own = append(own, obj.GetName())
			continue
		}
		if !helmspec.IsHelmRelease(obj) {
			namespaced, err := c.IsObjectNamespaced(obj)
			if err != nil || !namespaced {
				continue
			}
		}
		ns := obj.GetNamespace()
		if ns == "" {
			ns = k.appNamespace
		}
		if !slices.Contains(wanted, ns) {
			wanted = append(wanted, ns)
		}
	}
	slices.Sort(wanted)
	for _, ns := range wanted {
		if slices.Contains(own, ns) {
			continue
		}
		made, err := k.ensureNamespace(ctx, c, cluster, ns, create)
		if err != nil {
			return created, err
		}
		if made {
			created = append(created, ns)
		}
	}
	return created, nil
}

func (k *Keeper) ensureNamespace(ctx context.Context, c client.Client, cluster, name string, create bool) (bool, error) {
	if k.namespaces.exists(cluster, name) {
		return false, nil
	}
	live := &corev1.Namespace{}
	err := c.Get(ctx, client.ObjectKey{Name: name}, live)
	switch {
	case err == nil && live.DeletionTimestamp != nil:
		return false, &NamespaceTerminatingError{Cluster: normCluster(cluster), Namespace: name}
	case err == nil:
		k.namespaces.saw(cluster, name)
		return false, nil
	case apierrors.IsForbidden(err) || tenancy.IsRefusal(err):
		// The Application may not read namespaces: its identity is bound
		// to Roles in its namespaces only (Forbidden), or, in lockdown,
		// cluster-scoped objects are outside its scope. Leave the
		// namespace to Apply, whose own error names the object it could
		// not write; nothing is created with more rights than the
		// Application's.
		logf.FromContext(ctx).V(1).Info("may not read the target namespace: left to apply", "namespace", name, "cluster", clusterOrLocal(normCluster(cluster)))
		return false, nil
	case !apierrors.IsNotFound(err):
		return false, fmt.Errorf("reading namespace %q in cluster %s: %w", name, clusterOrLocal(normCluster(cluster)), err)
	case !create:
		return false, &NamespaceMissingError{Cluster: normCluster(cluster), Namespace: name}
	}
	hub, err := k.hub(ctx)
	if err != nil {
		return false, err
	}
	entry := v1beta1.ManagedResource{
		ClusterObjectReference: common.ClusterObjectReference{Cluster: normCluster(cluster), APIVersion: "v1", Kind: "Namespace", Name: name},
		SkipGC:                 true,
	}
	if err := k.upsertEntries(ctx, hub, v1beta1.ResourceTrackerTypeRoot, []v1beta1.ManagedResource{entry}, false); err != nil {
		return false, fmt.Errorf("recording namespace %q before creating it: %w", name, err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels:      map[string]string{LabelCreatedBy: "oamflow", LabelCreatedForNamespace: k.appNamespace},
		Annotations: map[string]string{AnnoCreatedFor: k.ownerKey()},
	}}
	if len(validation.IsValidLabelValue(k.appName)) == 0 {
		ns.Labels[LabelCreatedForApp] = k.appName
	}
	if err := c.Create(ctx, ns, client.FieldOwner(FieldManager)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return false, nil
		}
		return false, fmt.Errorf("creating namespace %q in cluster %s: %w", name, clusterOrLocal(normCluster(cluster)), err)
	}
	logf.FromContext(ctx).Info("created the target namespace", "namespace", name, "cluster", clusterOrLocal(normCluster(cluster)))
	return true, nil
}

// DefaultNamespaceMemory is how long KnownNamespaces remembers that a
// namespace exists.
const DefaultNamespaceMemory = 30 * time.Second

// KnownNamespaces remembers, for a while, which target namespaces were
// found to exist (and not terminating), per cluster, so that applying the
// objects of many Applications to one namespace does not read it before
// every apply (EnsureNamespaces). Only existence is remembered: a missing
// or terminating namespace is read again each time, and a namespace
// deleted meanwhile fails the apply (NotFound, retried), which forgets
// it. The fact is the cluster's, not an identity's: an Application whose
// identity may not read namespaces is left to its own apply either way,
// and nothing is created on the strength of what is remembered.
type KnownNamespaces struct {
	memory time.Duration
	now    func() time.Time
	mu     sync.Mutex
	seen   map[string]time.Time // cluster + "/" + namespace: when seen existing
}

// NewKnownNamespaces remembers for memory (DefaultNamespaceMemory when
// <= 0); now is the clock (time.Now when nil).
func NewKnownNamespaces(memory time.Duration, now func() time.Time) *KnownNamespaces {
	if memory <= 0 {
		memory = DefaultNamespaceMemory
	}
	if now == nil {
		now = time.Now
	}
	return &KnownNamespaces{memory: memory, now: now, seen: map[string]time.Time{}}
}

func namespaceKey(cluster, name string) string { return normCluster(cluster) + "/" + name }

// exists reports whether name was seen existing in cluster within the
// memory; false on a nil receiver.
func (n *KnownNamespaces) exists(cluster, name string) bool {
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	at, ok := n.seen[namespaceKey(cluster, name)]
	return ok && n.now().Sub(at) < n.memory
}

// saw records that name exists in cluster now.
func (n *KnownNamespaces) saw(cluster, name string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.now()
	if len(n.seen) >= 1024 {
		for k, at := range n.seen {
			if now.Sub(at) >= n.memory {
				delete(n.seen, k)
			}
		}
	}
	n.seen[namespaceKey(cluster, name)] = now
}

// forget drops what is remembered of name in cluster.
func (n *KnownNamespaces) forget(cluster, name string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.seen, namespaceKey(cluster, name))
}
