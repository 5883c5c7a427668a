package resourcekeeper

import (
	"context"
	"fmt"
	"slices"

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
	live := &corev1.Namespace{}
	err := c.Get(ctx, client.ObjectKey{Name: name}, live)
	switch {
	case err == nil && live.DeletionTimestamp != nil:
		return false, &NamespaceTerminatingError{Cluster: normCluster(cluster), Namespace: name}
	case err == nil:
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
	if err := k.upsertEntries(ctx, hub, v1beta1.ResourceTrackerTypeRoot, []v1beta1.ManagedResource{entry}); err != nil {
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
