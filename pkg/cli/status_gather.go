// Gathering for `oamflow status`: the resources an Application's trackers
// and status name, read from their clusters and judged by pkg/health, and
// the resources of its Helm releases from their records. Nothing here
// writes output; status_format.go turns a statusReport into text.

package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/health"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/multicluster"
)

// auxiliaryWorkload is the trait type recorded for the extra outputs of a
// component (the KubeVela label convention pkg/render follows).
const auxiliaryWorkload = "AuxiliaryWorkload"

// Resource states of --tree besides the health reasons of pkg/health.
const (
	stateMissing     = "MISSING"
	stateUnreachable = "Unreachable"
	stateReadError   = "ReadError"
)

// liveResource is one resource of the Application and what the cluster
// says about it.
type liveResource struct {
	Cluster    string `json:"cluster"`
	Component  string `json:"component,omitempty"`
	Trait      string `json:"trait,omitempty"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// State is a pkg/health reason (Healthy, Progressing, Failed, …) for a
	// live object, or MISSING, Unreachable, ReadError.
	State   string `json:"state"`
	Healthy bool   `json:"healthy"`
	Message string `json:"message,omitempty"`
	// Release names the Helm release whose manifest holds the resource
	// (its release namespace is the HelmRelease row's); "" for resources
	// the Application applied itself.
	Release string `json:"release,omitempty"`
}

// appTrackers lists the ResourceTrackers of app that describe what is
// deployed now: the root tracker and the current revision's (all
// versioned ones when there is no latest revision). note says why they
// could not be read ("" when they were).
func appTrackers(ctx context.Context, c client.Reader, app *v1beta1.Application) ([]v1beta1.ResourceTracker, string) {
	list := &v1beta1.ResourceTrackerList{}
	err := c.List(ctx, list, client.MatchingLabels{v1beta1.LabelAppName: app.Name, v1beta1.LabelAppNamespace: app.Namespace})
	if err != nil {
		return nil, fmt.Sprintf("ResourceTrackers not read (%v); showing status.appliedResources only", err)
	}
	var out []v1beta1.ResourceTracker
	var notes []string
	for _, rt := range list.Items {
		if err := v1beta1.DecodeTracker(&rt); err != nil {
			notes = append(notes, err.Error())
			continue
		}
		current := app.Status.LatestRevision == nil || rt.Labels[v1beta1.LabelAppRevision] == app.Status.LatestRevision.Name
		if rt.Spec.Type == v1beta1.ResourceTrackerTypeRoot || current {
			out = append(out, rt)
		}
	}
	return out, strings.Join(notes, "; ")
}

// resourceKey identifies a resource regardless of its API version.
type resourceKey struct {
	cluster, group, kind, namespace, name string
}

func keyOfResource(r liveResource) resourceKey {
	gv, _ := schema.ParseGroupVersion(r.APIVersion)
	return resourceKey{cluster: r.Cluster, group: gv.Group, kind: r.Kind, namespace: r.Namespace, name: r.Name}
}

// collectResources merges the tracked (not deleted) resources of trackers
// with status.appliedResources, once each, sorted by cluster, component,
// kind, namespace and name. The hub is "local". Component and trait come
// from the trackers; they stay empty for resources only the status lists.
func collectResources(app *v1beta1.Application, trackers []v1beta1.ResourceTracker) []liveResource {
	byKey := map[resourceKey]int{}
	var out []liveResource
	add := func(r liveResource) {
		r.Cluster = clusterLabel(r.Cluster)
		k := keyOfResource(r)
		if i, ok := byKey[k]; ok {
			if out[i].Component == "" {
				out[i].Component, out[i].Trait = r.Component, r.Trait
			}
			return
		}
		byKey[k] = len(out)
		out = append(out, r)
	}
	for _, rt := range trackers {
		for _, m := range rt.Spec.ManagedResources {
			if m.Deleted {
				continue
			}
			add(liveResource{Cluster: m.Cluster, Component: m.Component, Trait: m.Trait,
				APIVersion: m.APIVersion, Kind: m.Kind, Namespace: m.Namespace, Name: m.Name})
		}
	}
	for _, r := range app.Status.AppliedResources {
		add(liveResource{Cluster: r.Cluster, APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name})
	}
	sortResources(out)
	return out
}

func sortResources(rs []liveResource) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		for _, p := range [][2]string{{a.Cluster, b.Cluster}, {a.Component, b.Component}, {a.Kind, b.Kind}, {a.Namespace, b.Namespace}, {a.Name, b.Name}} {
			if p[0] != p[1] {
				return p[0] < p[1]
			}
		}
		return false
	})
}

// readResources reads every resource from its cluster and fills State,
// Healthy and Message (pkg/health judges live objects). A cluster whose
// client cannot be had is listed in unreachable with the reason, and its
// resources get State Unreachable. Resources whose component was unknown
// take it from the object's app.oam.dev/component label.
//
// A Helm release (virtual kind HelmRelease) is no object to read: its state
// is the controller's verdict in services[] for that component and cluster,
// and the resources of its manifest (read from Helm's release record, see
// releaseResources) follow it as rows of the same component, each read
// live like the others. When the record cannot be read, the release's
// message says why.
func readResources(ctx context.Context, clients multicluster.ClusterClients, refs []liveResource, services []common.ApplicationComponentStatus) ([]liveResource, map[string]string) {
	rd := &resourceReader{clients: clients, cache: map[string]client.Client{}, unreachable: map[string]string{}}
	seen := make(map[resourceKey]bool, len(refs))
	for _, r := range refs {
		seen[keyOfResource(r)] = true
	}
	out := make([]liveResource, 0, len(refs))
	for _, r := range refs {
		if r.APIVersion != helmspec.APIVersion || r.Kind != helmspec.Kind {
			rd.read(ctx, &r)
			out = append(out, r)
			continue
		}
		r.State, r.Message = releaseState(&r, services)
		r.Healthy = r.State == stateHealthyRelease
		var members []liveResource
		if c := rd.client(ctx, r.Cluster); c != nil {
			var err error
			if members, err = releaseResources(ctx, c, r); err != nil {
				r.Message = joinMessages(r.Message, "its resources are not listed: "+err.Error())
			}
		}
		out = append(out, r)
		for _, m := range members {
			// A resource the Application also tracks on its own is shown once.
			if k := keyOfResource(m); !seen[k] {
				seen[k] = true
				rd.read(ctx, &m)
				out = append(out, m)
			}
		}
	}
	sortResources(out)
	if len(rd.unreachable) == 0 {
		return out, nil
	}
	return out, rd.unreachable
}

// resourceReader reads resources from their clusters, with one client per
// cluster; clusters whose client cannot be had are kept in unreachable.
type resourceReader struct {
	clients     multicluster.ClusterClients
	cache       map[string]client.Client
	unreachable map[string]string
}

// client returns the client of cluster, or nil when it cannot be had (the
// reason is recorded in unreachable).
func (rd *resourceReader) client(ctx context.Context, cluster string) client.Client {
	if c, ok := rd.cache[cluster]; ok {
		return c
	}
	if _, bad := rd.unreachable[cluster]; bad {
		return nil
	}
	c, err := rd.clients.Client(ctx, cluster)
	if err != nil {
		rd.unreachable[cluster] = err.Error()
		return nil
	}
	rd.cache[cluster] = c
	return c
}

// read reads r from its cluster and fills State, Healthy and Message (and
// Component and Trait from the object's labels when unknown).
func (rd *resourceReader) read(ctx context.Context, r *liveResource) {
	c := rd.client(ctx, r.Cluster)
	if c == nil {
		r.State = stateUnreachable
		return
	}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(r.APIVersion)
	obj.SetKind(r.Kind)
	err := c.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, obj)
	switch {
	case err == nil:
		h := health.Check(ctx, obj)
		r.State, r.Healthy, r.Message = h.Reason, h.Healthy, h.Message
		if r.Component == "" {
			r.Component = obj.GetLabels()[v1beta1.LabelAppComponent]
			r.Trait = obj.GetLabels()[v1beta1.LabelTraitType]
		}
	case apierrors.IsNotFound(err):
		r.State, r.Message = stateMissing, "not found in cluster "+r.Cluster
	case meta.IsNoMatchError(err):
		r.State, r.Message = stateMissing, fmt.Sprintf("cluster %s does not serve %s %s", r.Cluster, r.APIVersion, r.Kind)
	default:
		r.State, r.Message = stateReadError, err.Error()
	}
}

// joinMessages joins two messages with "; ", either may be empty.
func joinMessages(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// stateHealthyRelease is the State of a Helm release services[] calls healthy.
const stateHealthyRelease = "Healthy"

// releaseState reads a Helm release's health from the services[] entry of
// its component and cluster ("" and "local" both name the hub).
func releaseState(r *liveResource, services []common.ApplicationComponentStatus) (string, string) {
	for _, s := range services {
		if s.Name != r.Component || multicluster.IsLocal(s.Cluster) != multicluster.IsLocal(r.Cluster) ||
			(!multicluster.IsLocal(r.Cluster) && s.Cluster != r.Cluster) {
			continue
		}
		if s.Healthy {
			return stateHealthyRelease, s.Message
		}
		return "Unhealthy", s.Message
	}
	return "Unknown", "no health reported for this release yet"
}

// releaseResources lists the resources of Helm release rel (a HelmRelease
// row: Name and Namespace are the release's; an empty Namespace searches
// every namespace) from its record on c: the latest deployed revision,
// else the latest revision. Each comes back as a row of rel's cluster and
// component with Release set and the namespace manifestNamespace gives
// (the release namespace is the record's). Errors say which record was
// missing or unreadable.
func releaseResources(ctx context.Context, c client.Client, rel liveResource) ([]liveResource, error) {
	list := &corev1.SecretList{}
	if err := c.List(ctx, list, client.InNamespace(rel.Namespace), client.MatchingLabels(helmspec.RecordLabels(rel.Name))); err != nil {
		return nil, fmt.Errorf("listing Helm release records (Secrets labelled %s) in namespace %s: %w",
			labels.FormatLabels(helmspec.RecordLabels(rel.Name)), rel.Namespace, err)
	}
	rec := helmspec.LatestRecord(list.Items)
	if rec == nil {
		return nil, fmt.Errorf("no Helm release record (Secret labelled %s) in namespace %s of cluster %s",
			labels.FormatLabels(helmspec.RecordLabels(rel.Name)), rel.Namespace, rel.Cluster)
	}
	hr, err := helmspec.DecodeRecord(rec)
	if err != nil {
		return nil, err
	}
	objs, err := helmspec.ParseManifest(hr.Manifest)
	if err != nil {
		return nil, fmt.Errorf("manifest of Helm release %s revision %d: %w", rel.Name, hr.Version, err)
	}
	out := make([]liveResource, 0, len(objs))
	for _, o := range objs {
		out = append(out, liveResource{Cluster: rel.Cluster, Component: rel.Component, APIVersion: o.GetAPIVersion(),
			Kind: o.GetKind(), Namespace: manifestNamespace(c, o, rec.Namespace), Name: o.GetName(), Release: rel.Name})
	}
	return out, nil
}

// manifestNamespace is the namespace object o of a Helm manifest lives in,
// as Helm installs it: for a kind the cluster's RESTMapper (scope) calls
// namespaced, the manifest's namespace, else the release namespace; for a
// cluster-scoped kind (ClusterRole, ValidatingWebhookConfiguration, a
// cluster-scoped CRD's kind) none, even when the manifest sets one (charts
// often stamp the release namespace on every object; the API server
// ignores it there). For a kind the cluster does not know, what the
// manifest says: its scope cannot be told, and reading it says MISSING.
func manifestNamespace(scope namespaceScoper, o *unstructured.Unstructured, releaseNamespace string) string {
	namespaced, err := scope.IsObjectNamespaced(o)
	switch {
	case err != nil:
		return o.GetNamespace()
	case !namespaced:
		return ""
	case o.GetNamespace() == "":
		return releaseNamespace
	}
	return o.GetNamespace()
}

// namespaceScoper tells whether an object's kind is namespaced
// (controller-runtime's client.Client, through its RESTMapper).
type namespaceScoper interface {
	IsObjectNamespaced(obj runtime.Object) (bool, error)
}
