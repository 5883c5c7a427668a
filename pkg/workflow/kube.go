package workflow

import (
	"context"
	"errors"
	"fmt"
	"github.com/oamflow/oamflow/pkg/errclass"

	"cuelang.org/go/cue"
	cuexruntime "github.com/kubevela/pkg/cue/cuex/runtime"
	kvmulticluster "github.com/kubevela/pkg/multicluster"
	"github.com/kubevela/workflow/pkg/providers/kube"
	providertypes "github.com/kubevela/workflow/pkg/providers/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/pkg/multicluster"
)

// kubeProviders are vela/kube's actions as oamflow runs them: every action
// acts on the cluster its `cluster` parameter names (the hub when empty),
// through the Application's clients (its identity and scope, package
// tenancy). What the identity or scope does not allow, an unknown cluster,
// and what retrying cannot fix (errclass.IsTerminal) fail the step with the
// reason; other read, list and delete errors stay in $returns.err, as in
// kubevela/workflow.
func kubeProviders() map[string]cuexruntime.ProviderFn {
	p := kube.GetProviders()
	p["apply"] = providertypes.GenericProviderFn[kube.ResourceVars, kube.ResourceReturns](
		func(ctx context.Context, params *kube.ResourceParams) (*kube.ResourceReturns, error) {
			ret, err := kube.Apply(ctx, params)
			return ret, failRefused(ctx, params.RuntimeParams, "applying "+describe(params.Params.Resource, params.Params.Cluster), err)
		})
	p["apply-in-parallel"] = providertypes.GenericProviderFn[kube.ApplyInParallelVars, kube.ApplyInParallelReturns](
		func(ctx context.Context, params *kube.ApplyInParallelParams) (*kube.ApplyInParallelReturns, error) {
			ret, err := kube.ApplyInParallel(ctx, params)
			return ret, failRefused(ctx, params.RuntimeParams, "applying objects"+inCluster(params.Params.Cluster), err)
		})
	p["patch"] = providertypes.NativeProviderFn(func(ctx context.Context, params *providertypes.Params[cue.Value]) (cue.Value, error) {
		ret, err := kube.Patch(ctx, params)
		return ret, failRefused(ctx, params.RuntimeParams, "patching an object", err)
	})
	p["read"] = providertypes.GenericProviderFn[kube.ResourceVars, kube.ResourceReturns](readObject)
	p["list"] = providertypes.GenericProviderFn[kube.ResourceVars, kube.ListReturns](listObjects)
	p["delete"] = providertypes.GenericProviderFn[kube.ResourceVars, kube.ResourceReturns](deleteObject)
	return p
}

// failRefused fails the step (what: what was tried) when err is a refusal
// of the Application's identity or scope, an unknown cluster, or terminal;
// other errors are returned as they are (the step is retried).
func failRefused(ctx context.Context, rt providertypes.RuntimeParams, what string, err error) error {
	if err == nil {
		return nil
	}
	if errclass.IsTerminal(err) || errors.Is(err, multicluster.ErrClusterNotFound) {
		return fail(ctx, rt, fmt.Sprintf("%s: %v", what, err))
	}
	return err
}

func inCluster(cluster string) string {
	if multicluster.IsLocal(cluster) {
		return ""
	}
	return " in cluster " + cluster
}

func describe(obj *unstructured.Unstructured, cluster string) string {
	if obj == nil {
		return "an object" + inCluster(cluster)
	}
	s := obj.GetKind() + " "
	if ns := obj.GetNamespace(); ns != "" {
		s += ns + "/"
	}
	return s + obj.GetName() + inCluster(cluster)
}

// appClient returns the client of cluster acting for the Application of
// the run (params.KubeClient routes by the cluster in ctx; here the
// cluster is explicit).
func appClient(ctx context.Context, rt providertypes.RuntimeParams, cluster string) (client.Client, error) {
	if r, ok := rt.KubeClient.(*clusterRouter); ok {
		return r.clients.Client(ctx, cluster)
	}
	if !multicluster.IsLocal(cluster) {
		return nil, &multicluster.ClusterNotFoundError{Names: []string{cluster}}
	}
	return rt.KubeClient, nil
}

func readObject(ctx context.Context, params *kube.ResourceParams) (*kube.ResourceReturns, error) {
	obj := params.Params.Resource
	if obj == nil {
		return nil, fail(ctx, params.RuntimeParams, "vela/kube read: $params.value is required")
	}
	key := client.ObjectKeyFromObject(obj)
	if key.Namespace == "" {
		key.Namespace = "default"
	}
	what := "reading " + describe(obj, params.Params.Cluster)
	c, err := appClient(ctx, params.RuntimeParams, params.Params.Cluster)
	if err != nil {
		return nil, failRefused(ctx, params.RuntimeParams, what, err)
	}
	if err := c.Get(ctx, key, obj); err != nil {
		if ferr := failRefused(ctx, params.RuntimeParams, what, err); ferr != err { //nolint:errorlint // identity, not a sentinel: did failRefused replace err?
			return nil, ferr
		}
		return &kube.ResourceReturns{Returns: kube.ResourceReturnVars{Resource: obj, Error: err.Error()}}, nil
	}
	return &kube.ResourceReturns{Returns: kube.ResourceReturnVars{Resource: obj}}, nil
}

func listObjects(ctx context.Context, params *kube.ResourceParams) (*kube.ListReturns, error) {
	obj := params.Params.Resource
	if obj == nil {
		return nil, fail(ctx, params.RuntimeParams, "vela/kube list: $params.value is required")
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{"kind": obj.GetKind(), "apiVersion": obj.GetAPIVersion()}}
	var opts []client.ListOption
	ns := ""
	if f := params.Params.Filter; f != nil {
		ns = f.Namespace
		opts = append(opts, client.InNamespace(f.Namespace), client.MatchingLabels(f.MatchingLabels))
	}
	what := fmt.Sprintf("listing %s in %s%s", obj.GetKind(), namespaceOrAll(ns), inCluster(params.Params.Cluster))
	c, err := appClient(ctx, params.RuntimeParams, params.Params.Cluster)
	if err != nil {
		return nil, failRefused(ctx, params.RuntimeParams, what, err)
	}
	if err := c.List(ctx, list, opts...); err != nil {
		if ferr := failRefused(ctx, params.RuntimeParams, what, err); ferr != err { //nolint:errorlint // identity, not a sentinel: did failRefused replace err?
			return nil, ferr
		}
		return &kube.ListReturns{Returns: kube.ListReturnVars{Resources: list, Error: err.Error()}}, nil
	}
	return &kube.ListReturns{Returns: kube.ListReturnVars{Resources: list}}, nil
}

func namespaceOrAll(ns string) string {
	if ns == "" {
		return "every namespace"
	}
	return "namespace " + ns
}

func deleteObject(ctx context.Context, params *kube.ResourceParams) (*kube.ResourceReturns, error) {
	obj := params.Params.Resource
	if obj == nil {
		return nil, fail(ctx, params.RuntimeParams, "vela/kube delete: $params.value is required")
	}
	c, err := appClient(ctx, params.RuntimeParams, params.Params.Cluster)
	what := "deleting " + describe(obj, params.Params.Cluster)
	if err != nil {
		return nil, failRefused(ctx, params.RuntimeParams, what, err)
	}
	if f := params.Params.Filter; f != nil {
		what = fmt.Sprintf("deleting %s in %s%s", obj.GetKind(), namespaceOrAll(f.Namespace), inCluster(params.Params.Cluster))
		sel, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchLabels: f.MatchingLabels})
		if err != nil {
			return nil, fail(ctx, params.RuntimeParams, fmt.Sprintf("%s: filter.matchingLabels: %v", what, err))
		}
		err = c.DeleteAllOf(ctx, obj, &client.DeleteAllOfOptions{ListOptions: client.ListOptions{Namespace: f.Namespace, LabelSelector: sel}})
		if err != nil {
			if ferr := failRefused(ctx, params.RuntimeParams, what, err); ferr != err { //nolint:errorlint // identity, not a sentinel: did failRefused replace err?
				return nil, ferr
			}
			return &kube.ResourceReturns{Returns: kube.ResourceReturnVars{Resource: obj, Error: err.Error()}}, nil
		}
		return nil, nil
	}
	if err := c.Delete(ctx, obj); err != nil {
		if ferr := failRefused(ctx, params.RuntimeParams, what, err); ferr != err { //nolint:errorlint // identity, not a sentinel: did failRefused replace err?
			return nil, ferr
		}
		return &kube.ResourceReturns{Returns: kube.ResourceReturnVars{Resource: obj, Error: err.Error()}}, nil
	}
	return nil, nil
}

// clusterRouter is the client the workflow providers get
// (providertypes.KubeClientKey): each request goes to the client of the
// cluster kubevela/workflow put in its context (multicluster.WithCluster of
// kubevela/pkg; the hub when none), acting for the Application. Scheme and
// REST mapper are the hub's.
type clusterRouter struct {
	client.Client // the hub client of the Engine: Scheme, RESTMapper
	clients       multicluster.ClusterClients
}

func (r *clusterRouter) pick(ctx context.Context) (client.Client, error) {
	cluster, _ := kvmulticluster.ClusterFrom(ctx)
	return r.clients.Client(ctx, cluster)
}

func (r *clusterRouter) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c, err := r.pick(ctx)
	if err != nil {
		return err
	}
	return c.Get(ctx, key, obj, opts...)
}

func (r *clusterRouter) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c, err := r.pick(ctx)
	if err != nil {
		return err
	}
	return c.List(ctx, list, opts...)
}

func (r *clusterRouter) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c, err := r.pick(ctx)
	if err != nil {
		return err
	}
	return c.Create(ctx, obj, opts...)
}

func (r *clusterRouter) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c, err := r.pick(ctx)
	if err != nil {
		return err
	}
	return c.Update(ctx, obj, opts...)
}

func (r *clusterRouter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c, err := r.pick(ctx)
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj, patch, opts...)
}

func (r *clusterRouter) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c, err := r.pick(ctx)
	if err != nil {
		return err
	}
	return c.Delete(ctx, obj, opts...)
}

func (r *clusterRouter) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	c, err := r.pick(ctx)
	if err != nil {
		return err
	}
	return c.DeleteAllOf(ctx, obj, opts...)
}

// errNoSubResources: no provider writes status or subresources for an
// Application; refusing keeps them from being written as the controller.
var errNoSubResources = errors.New("vela/kube: status and subresource requests are not supported")

func (r *clusterRouter) Status() client.SubResourceWriter { return noSubResource{} }

func (r *clusterRouter) SubResource(string) client.SubResourceClient { return noSubResource{} }

type noSubResource struct{}

func (noSubResource) Get(context.Context, client.Object, client.Object, ...client.SubResourceGetOption) error {
	return errNoSubResources
}

func (noSubResource) Create(context.Context, client.Object, client.Object, ...client.SubResourceCreateOption) error {
	return errNoSubResources
}

func (noSubResource) Update(context.Context, client.Object, ...client.SubResourceUpdateOption) error {
	return errNoSubResources
}

func (noSubResource) Patch(context.Context, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
	return errNoSubResources
}
