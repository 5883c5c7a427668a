package multicluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// ErrClusterExists is matched (errors.Is) when Join finds the name taken
// and force is off.
var ErrClusterExists = errors.New("cluster already registered")

// ErrSecretConflict is matched (errors.Is) when Join finds a Secret of the
// cluster's name that is not a cluster registration (never replaced).
var ErrSecretConflict = errors.New("a Secret of that name exists and is not a cluster registration")

// JoinOptions are the optional parts of Join.
type JoinOptions struct {
	// Labels become the cluster's labels (the Secret's labels).
	Labels map[string]string
	// Settings override the registry's client defaults for this cluster
	// (non-zero fields only), stored as annotations.
	Settings ClientSettings
	// Force replaces an existing registration of the same name.
	Force bool
}

// Join stores cluster name with cred in the system namespace (created when
// missing) and returns the stored registration (no credentials). Errors: an
// invalid name, "local", invalid labels or credentials (plain errors naming
// the field), ErrClusterExists when name is taken and o.Force is off, or a
// refusal when a Secret of that name exists and is not a cluster
// registration. Join does not contact the cluster.
func (r *Registry) Join(ctx context.Context, name string, cred Credentials, o JoinOptions) (Cluster, error) {
	want, err := NewClusterSecret(r.namespace, name, cred, o.Labels, o.Settings)
	if err != nil {
		return Cluster{}, err
	}
	if err := r.ensureNamespace(ctx); err != nil {
		return Cluster{}, err
	}
	key := types.NamespacedName{Namespace: r.namespace, Name: name}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &corev1.Secret{}
		err := r.hubClient.Get(ctx, key, cur)
		switch {
		case apierrors.IsNotFound(err):
			return r.hubClient.Create(ctx, want.DeepCopy())
		case err != nil:
			return err
		}
		if _, ok := cur.Labels[v1beta1.LabelClusterCredType]; !ok {
			return fmt.Errorf("secret %s: %w (no label %s); choose another cluster name", key, ErrSecretConflict, v1beta1.LabelClusterCredType)
		}
		if !o.Force {
			return fmt.Errorf("cluster %q is already joined (endpoint %s): %w; give --force to replace it", name, string(cur.Data[KeyEndpoint]), ErrClusterExists)
		}
		upd := want.DeepCopy()
		upd.ResourceVersion = cur.ResourceVersion
		return r.hubClient.Update(ctx, upd)
	})
	if err != nil {
		return Cluster{}, fmt.Errorf("joining cluster %q: %w", name, err)
	}
	return parseSecret(want, r.defaults).cluster, nil
}

// ensureNamespace creates the system namespace if needed.
func (r *Registry) ensureNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.namespace}}
	if err := r.hubClient.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", r.namespace, err)
	}
	return nil
}

// Detach removes cluster name's registration. Unless force, it is refused
// with an *InUseError while Usage finds users. Errors: "local" is refused,
// an unregistered name gives a *ClusterNotFoundError.
func (r *Registry) Detach(ctx context.Context, name string, force bool) error {
	if IsLocal(name) {
		return invalidf("the hub %q cannot be detached", v1beta1.ClusterLocal)
	}
	s, err := r.getClusterSecret(ctx, name)
	if err != nil {
		return err
	}
	if !force {
		users, err := r.Usage(ctx, name)
		if err != nil {
			return err
		}
		if len(users) > 0 {
			return &InUseError{Cluster: name, Users: users}
		}
	}
	if err := r.hubClient.Delete(ctx, s, client.Preconditions{UID: &s.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("detaching cluster %q: deleting Secret %s/%s: %w", name, s.Namespace, s.Name, err)
	}
	r.drop(name)
	return nil
}

// getClusterSecret reads name's Secret through the hub client (not the
// secret reader: writes follow).
func (r *Registry) getClusterSecret(ctx context.Context, name string) (*corev1.Secret, error) {
	notFound := &ClusterNotFoundError{Names: []string{name}, Namespace: r.namespace}
	if ValidateName(name) != nil {
		return nil, notFound
	}
	s := &corev1.Secret{}
	if err := r.hubClient.Get(ctx, types.NamespacedName{Namespace: r.namespace, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, notFound
		}
		return nil, fmt.Errorf("reading the registration of cluster %q: %w", name, err)
	}
	if _, ok := s.Labels[v1beta1.LabelClusterCredType]; !ok {
		return nil, notFound
	}
	return s, nil
}

// UpdateLabels sets the labels in set and removes the keys in remove on
// cluster name and returns the resulting labels. The credential-type label
// cannot be changed; the hub has no stored labels. A label-only change
// keeps the cluster's cached client.
func (r *Registry) UpdateLabels(ctx context.Context, name string, set map[string]string, remove []string) (map[string]string, error) {
	if IsLocal(name) {
		return nil, invalidf("the hub %q is not stored and has no labels to change", v1beta1.ClusterLocal)
	}
	if err := ValidateLabels(set); err != nil {
		return nil, err
	}
	for _, k := range remove {
		if k == v1beta1.LabelClusterCredType {
			return nil, invalidf("label %s is set by oamflow from the credentials and cannot be removed", k)
		}
	}
	var result map[string]string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := r.getClusterSecret(ctx, name)
		if err != nil {
			return err
		}
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		for k, v := range set {
			s.Labels[k] = v
		}
		for _, k := range remove {
			delete(s.Labels, k)
		}
		if err := r.hubClient.Update(ctx, s); err != nil {
			return err
		}
		result = clusterLabels(s.Labels)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("updating the labels of cluster %q: %w", name, err)
	}
	return result, nil
}

// Usage returns who still deploys to cluster: "Application <ns>/<name>" for
// each Application whose status.services or status.appliedResources names
// it, and "ResourceTracker <name>" for each ResourceTracker tracking a
// not-yet-deleted object there; sorted. Kinds whose CRDs are not installed
// have no users. The hub client's scheme must know core.oam.dev/v1beta1.
func (r *Registry) Usage(ctx context.Context, cluster string) ([]string, error) {
	users := map[string]bool{}
	apps := &v1beta1.ApplicationList{}
	err := listAll(ctx, r.hubClient, apps, func() {
		for _, a := range apps.Items {
			if appUses(&a, cluster) {
				users["Application "+a.Namespace+"/"+a.Name] = true
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("finding Applications deploying to cluster %q: %w", cluster, err)
	}
	rts := &v1beta1.ResourceTrackerList{}
	err = listAll(ctx, r.hubClient, rts, func() {
		for _, rt := range rts.Items {
			if err := v1beta1.DecodeTracker(&rt); err != nil {
				// Unreadable: it may track the cluster, so it counts.
				users["ResourceTracker "+rt.Name+" (cannot be decoded)"] = true
				continue
			}
			for _, mr := range rt.Spec.ManagedResources {
				if mr.Cluster == cluster && !mr.Deleted {
					users["ResourceTracker "+rt.Name] = true
					break
				}
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("finding ResourceTrackers of cluster %q: %w", cluster, err)
	}
	return sortedKeys(users), nil
}

// appUses reports whether app's status places anything in cluster.
func appUses(app *v1beta1.Application, cluster string) bool {
	for _, s := range app.Status.Services {
		if s.Cluster == cluster {
			return true
		}
	}
	for _, ref := range app.Status.AppliedResources {
		if ref.Cluster == cluster {
			return true
		}
	}
	return false
}

// listAll lists list page by page (500 items), calling each after every
// page. A kind that is not served (CRD missing) lists nothing.
func listAll(ctx context.Context, c client.Reader, list client.ObjectList, each func()) error {
	opts := []client.ListOption{client.Limit(500)}
	for {
		if err := c.List(ctx, list, opts...); err != nil {
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		each()
		cont := list.(metav1.ListInterface).GetContinue()
		if cont == "" {
			return nil
		}
		opts = []client.ListOption{client.Limit(500), client.Continue(cont)}
	}
}
