package tenancy

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Impersonator gives the clients of a cluster ("" or "local": the hub)
// acting as the controller, or as a user (package multicluster's Registry
// implements it, caching one client per cluster and user).
type Impersonator interface {
	Clients(ctx context.Context, cluster string) (client.Client, *rest.Config, error)
	ClientsAs(ctx context.Context, cluster, user string) (client.Client, *rest.Config, error)
}

// ErrNoTenant is returned by Clients when the context carries no Tenant:
// a code path acting for an Application did not say which one. It is a
// bug in oamflow; the request is refused rather than made as the
// controller.
var ErrNoTenant = errors.New("tenancy: no Application identity in the context; refusing to act as the controller")

// Clients serves the clients that act for the Tenant of the context: as
// its identity, limited to its scope, with Forbidden answers turned into
// *DeniedError. It implements package multicluster's ClusterClients and
// package helm's RESTConfigs.
type Clients struct {
	src Impersonator
}

// NewClients returns Clients over src.
func NewClients(src Impersonator) *Clients { return &Clients{src: src} }

// Client returns the client of cluster for the Tenant of ctx.
func (c *Clients) Client(ctx context.Context, cluster string) (client.Client, error) {
	t, ok := From(ctx)
	if !ok {
		return nil, ErrNoTenant
	}
	var cl client.Client
	var err error
	if t.Identity.IsController() {
		cl, _, err = c.src.Clients(ctx, cluster)
	} else {
		cl, _, err = c.src.ClientsAs(ctx, cluster, t.Identity.UserName())
	}
	if err != nil {
		return nil, err
	}
	if t.Identity.IsController() && t.AllowCrossNamespace {
		return cl, nil
	}
	return &scopedClient{Client: cl, tenant: t, cluster: cluster}, nil
}

// RESTConfig returns the REST config of cluster for the identity of the
// Tenant of ctx (for Helm's action configuration). Scope is not enforced
// by the config: callers check the release namespace with Tenant.Check.
func (c *Clients) RESTConfig(ctx context.Context, cluster string) (*rest.Config, error) {
	t, ok := From(ctx)
	if !ok {
		return nil, ErrNoTenant
	}
	var cfg *rest.Config
	var err error
	if t.Identity.IsController() {
		_, cfg, err = c.src.Clients(ctx, cluster)
	} else {
		_, cfg, err = c.src.ClientsAs(ctx, cluster, t.Identity.UserName())
	}
	return cfg, err
}

// HubReader reads the hub for the Tenant of the context (Helm's valuesFrom
// and chart credentials).
func (c *Clients) HubReader() client.Reader { return hubReader{c: c} }

type hubReader struct{ c *Clients }

func (r hubReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	cl, err := r.c.Client(ctx, "")
	if err != nil {
		return err
	}
	return cl.Get(ctx, key, obj, opts...)
}

func (r hubReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	cl, err := r.c.Client(ctx, "")
	if err != nil {
		return err
	}
	return cl.List(ctx, list, opts...)
}

// scopedClient checks every request against the Tenant's scope before
// making it, and reports a Forbidden answer as a *DeniedError.
type scopedClient struct {
	client.Client
	tenant  Tenant
	cluster string
}

// check refuses obj (in namespace ns; the kind's scope decides whether ns
// counts) outside the scope. A kind the cluster does not know is left to
// the request, which fails with the API server's error.
func (c *scopedClient) check(obj client.Object, gvk schema.GroupVersionKind, ns, name string) error {
	if c.tenant.AllowCrossNamespace {
		return nil
	}
	namespaced := true
	if gvk.Kind != "" {
		m, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil
		}
		namespaced = m.Scope.Name() == meta.RESTScopeNameNamespace
	} else if obj != nil {
		n, err := c.IsObjectNamespaced(obj)
		if err != nil {
			return nil
		}
		namespaced = n
		if k, err := c.GroupVersionKindFor(obj); err == nil {
			gvk = k
		}
	}
	if !namespaced {
		ns = ""
	}
	return c.tenant.Check(Object{Cluster: c.cluster, Kind: gvk.Kind, Namespace: ns, Name: name})
}

func (c *scopedClient) denied(err error) error { return Denied(c.tenant.Identity, err) }

func (c *scopedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.check(obj, schema.GroupVersionKind{}, key.Namespace, key.Name); err != nil {
		return err
	}
	return c.denied(c.Client.Get(ctx, key, obj, opts...))
}

func (c *scopedClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	gvk, err := c.GroupVersionKindFor(list)
	if err != nil {
		return fmt.Errorf("listing %T: %w", list, err)
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	if err := c.check(nil, gvk, lo.Namespace, ""); err != nil {
		return err
	}
	return c.denied(c.Client.List(ctx, list, opts...))
}

func (c *scopedClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := c.check(obj, schema.GroupVersionKind{}, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	return c.denied(c.Client.Create(ctx, obj, opts...))
}

func (c *scopedClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := c.check(obj, schema.GroupVersionKind{}, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	return c.denied(c.Client.Update(ctx, obj, opts...))
}

func (c *scopedClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := c.check(obj, schema.GroupVersionKind{}, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	return c.denied(c.Client.Patch(ctx, obj, patch, opts...))
}

func (c *scopedClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := c.check(obj, schema.GroupVersionKind{}, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	return c.denied(c.Client.Delete(ctx, obj, opts...))
}

func (c *scopedClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	do := (&client.DeleteAllOfOptions{}).ApplyOptions(opts)
	if err := c.check(obj, schema.GroupVersionKind{}, do.Namespace, ""); err != nil {
		return err
	}
	return c.denied(c.Client.DeleteAllOf(ctx, obj, opts...))
}

// Status and SubResource writes are made for the Application's objects
// only by the libraries oamflow uses for them (none today); they keep
// the identity (impersonated client) and are checked like the object.
func (c *scopedClient) Status() client.SubResourceWriter { return c.SubResource("status") }

func (c *scopedClient) SubResource(sub string) client.SubResourceClient {
	return &scopedSubResource{SubResourceClient: c.Client.SubResource(sub), c: c}
}

type scopedSubResource struct {
	client.SubResourceClient
	c *scopedClient
}

func (s *scopedSubResource) Get(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceGetOption) error {
	if err := s.c.check(obj, schema.GroupVersionKind{}, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	return s.c.denied(s.SubResourceClient.Get(ctx, obj, sub, opts...))
}

func (s *scopedSubResource) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	if err := s.c.check(obj, schema.GroupVersionKind{}, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	return s.c.denied(s.SubResourceClient.Create(ctx, obj, sub, opts...))
}

func (s *scopedSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := s.c.check(obj, schema.GroupVersionKind{}, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	return s.c.denied(s.SubResourceClient.Update(ctx, obj, opts...))
}

func (s *scopedSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := s.c.check(obj, schema.GroupVersionKind{}, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	return s.c.denied(s.SubResourceClient.Patch(ctx, obj, patch, opts...))
}
