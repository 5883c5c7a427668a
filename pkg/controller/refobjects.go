package controller

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/render"
)

// objectRef is a reference to existing objects as a ref-objects template
// renders it (KubeVela's field names): the type by resource (+ group) or
// apiVersion + kind, the objects by name or labelSelector (neither: the
// object named after the component), where they live by namespace
// (default: the Application's) and cluster (default: the hub).
type objectRef struct {
	Resource, Group    string
	APIVersion, Kind   string
	Name               string
	Namespace, Cluster string
	LabelSelector      map[string]string
	hasName, hasLabels bool
	// namespaced and gvk are filled by resolve.
	namespaced bool
	gvk        schema.GroupVersionKind
}

func parseRef(m map[string]any) (objectRef, error) {
	str := func(k string) string { s, _ := m[k].(string); return s }
	r := objectRef{Resource: str("resource"), Group: str("group"), APIVersion: str("apiVersion"), Kind: str("kind"),
		Name: str("name"), Namespace: str("namespace"), Cluster: str("cluster")}
	r.hasName = r.Name != ""
	if sel, ok := m["labelSelector"].(map[string]any); ok {
		r.hasLabels = true
		r.LabelSelector = map[string]string{}
		for k, v := range sel {
			s, ok := v.(string)
			if !ok {
				return r, fmt.Errorf("labelSelector.%s: want a string, got %T", k, v)
			}
			r.LabelSelector[k] = s
		}
	}
	if r.hasName && r.hasLabels {
		return r, fmt.Errorf("name and labelSelector are exclusive")
	}
	if r.Resource == "" && (r.APIVersion == "" || r.Kind == "") {
		return r, fmt.Errorf("set resource (and group), or apiVersion and kind")
	}
	return r, nil
}

// resolve finds the type of r through the source cluster's REST mapper.
func (r *objectRef) resolve(mapper meta.RESTMapper) error {
	if r.Resource != "" {
		gvk, err := mapper.KindFor(schema.GroupVersionResource{Group: r.Group, Resource: r.Resource})
		if err != nil {
			return fmt.Errorf("resource %q of group %q: %w", r.Resource, r.Group, err)
		}
		r.gvk = gvk
	} else {
		gv, err := schema.ParseGroupVersion(r.APIVersion)
		if err != nil {
			return fmt.Errorf("apiVersion %q: %w", r.APIVersion, err)
		}
		r.gvk = gv.WithKind(r.Kind)
	}
	mapping, err := mapper.RESTMapping(r.gvk.GroupKind(), r.gvk.Version)
	if err != nil {
		return fmt.Errorf("%s: %w", r.gvk, err)
	}
	r.namespaced = mapping.Scope.Name() == meta.RESTScopeNameNamespace
	return nil
}

// resolveReferences replaces every ref-objects reference among res with
// the objects it selects, read from their cluster and made ready to apply
// to the component's target (req.Cluster; the topology namespace when
// set, else the objects' own): server-set fields and status are dropped,
// the OAM labels stamped. The first object of the main reference is the
// component's workload; the others are outputs named after their
// reference ("<output>" or "<output>-<k>"). A named object that does not
// exist is an error; a selector matching nothing selects nothing.
func resolveReferences(ctx context.Context, clients multicluster.ClusterClients, af *appfile.AppFile, comp *appfile.Component,
	opts render.Options, res []render.Resource) ([]render.Resource, error) {
	var out []render.Resource
	for _, r := range res {
		if !r.Reference {
			out = append(out, r)
			continue
		}
		where := "output"
		if r.Output != "" {
			where = "outputs." + r.Output
		}
		objs, err := fetchRef(ctx, clients, af, comp.Name, r.Object.Object)
		if err != nil {
			return nil, fmt.Errorf("component %q: reference %s: %w", comp.Name, where, err)
		}
		for k, obj := range objs {
			nr := render.Resource{Component: comp.Name, Trait: r.Trait, Output: r.Output, Cluster: opts.Cluster, Object: obj}
			if k > 0 {
				base := r.Output
				if base == "" {
					base = "ref"
				}
				nr.Output = base + "-" + strconv.Itoa(k)
			}
			if obj.GetNamespace() != "" && opts.Namespace != "" {
				obj.SetNamespace(opts.Namespace)
			}
			render.StampMetadata(af, comp, opts, nr)
			nr.Namespace = obj.GetNamespace()
			out = append(out, nr)
		}
	}
	return out, nil
}

// fetchRef reads the objects one reference selects, sorted by name.
func fetchRef(ctx context.Context, clients multicluster.ClusterClients, af *appfile.AppFile, component string, m map[string]any) ([]*unstructured.Unstructured, error) {
	ref, err := parseRef(m)
	if err != nil {
		return nil, err
	}
	c, err := clients.Client(ctx, ref.Cluster)
	if err != nil {
		return nil, err
	}
	if err := ref.resolve(c.RESTMapper()); err != nil {
		return nil, err
	}
	ns := ""
	if ref.namespaced {
		ns = ref.Namespace
		if ns == "" {
			ns = af.Namespace
		}
	}
	cluster := ref.Cluster
	if multicluster.IsLocal(cluster) {
		cluster = v1beta1.ClusterLocal
	}
	var objs []*unstructured.Unstructured
	if ref.hasLabels {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(ref.gvk.GroupVersion().WithKind(ref.gvk.Kind + "List"))
		if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels(ref.LabelSelector)); err != nil {
			return nil, fmt.Errorf("listing %s in %s (cluster %s): %w", ref.gvk.Kind, nsOrCluster(ns), cluster, err)
		}
		for i := range list.Items {
			objs = append(objs, &list.Items[i])
		}
		sort.Slice(objs, func(i, j int) bool { return objs[i].GetName() < objs[j].GetName() })
	} else {
		name := ref.Name
		if name == "" {
			name = component
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(ref.gvk)
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("%s %s not found in %s (cluster %s)", ref.gvk.Kind, name, nsOrCluster(ns), cluster)
			}
			return nil, fmt.Errorf("reading %s %s in %s (cluster %s): %w", ref.gvk.Kind, name, nsOrCluster(ns), cluster, err)
		}
		objs = append(objs, obj)
	}
	for _, o := range objs {
		o.SetGroupVersionKind(ref.gvk)
		clearServerFields(o)
	}
	return objs, nil
}

func nsOrCluster(ns string) string {
	if ns == "" {
		return "the cluster scope"
	}
	return "namespace " + ns
}

// clearServerFields drops what the API server or other controllers own
// from a read object so that applying it elsewhere (or again) claims only
// its content: identity and bookkeeping metadata, status, controller
// annotations, and a Service's allocated cluster IPs.
func clearServerFields(o *unstructured.Unstructured) {
	o.SetResourceVersion("")
	o.SetUID("")
	o.SetGeneration(0)
	o.SetSelfLink("")
	o.SetManagedFields(nil)
	o.SetOwnerReferences(nil)
	o.SetDeletionTimestamp(nil)
	o.SetDeletionGracePeriodSeconds(nil)
	o.SetFinalizers(nil)
	unstructured.RemoveNestedField(o.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(o.Object, "status")
	if annos := o.GetAnnotations(); len(annos) > 0 {
		for k := range annos {
			if k == "kubectl.kubernetes.io/last-applied-configuration" || strings.HasPrefix(k, "deployment.kubernetes.io/") {
				delete(annos, k)
			}
		}
		o.SetAnnotations(annos)
	}
	if o.GetKind() == "Service" && o.GetAPIVersion() == "v1" {
		if ip, _, _ := unstructured.NestedString(o.Object, "spec", "clusterIP"); ip != "None" {
			unstructured.RemoveNestedField(o.Object, "spec", "clusterIP")
			unstructured.RemoveNestedField(o.Object, "spec", "clusterIPs")
		}
	}
}
