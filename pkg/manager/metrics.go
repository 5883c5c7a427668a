package manager

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/controller"
	"github.com/oamflow/oamflow/pkg/helm"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/metrics"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/render"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
)

// timedRenderer records the CUE render duration of each component by its
// definition (the component type as written).
type timedRenderer struct {
	next controller.Renderer
	rec  *metrics.Recorder
}

func (t timedRenderer) RenderComponent(ctx context.Context, af *appfile.AppFile, component string, opts render.Options) ([]render.Resource, error) {
	start := time.Now()
	res, err := t.next.RenderComponent(ctx, af, component, opts)
	def := "unknown"
	if c := af.Component(component); c != nil {
		def = c.Type
	}
	t.rec.ObserveRender(def, time.Since(start))
	return res, err
}

// timedHelm records the duration and failures of the Helm calls that
// change releases (Ensure, Uninstall); reads pass through.
type timedHelm struct {
	*helm.Client
	rec *metrics.Recorder
}

func (t timedHelm) Ensure(ctx context.Context, req helmspec.Request) (helmspec.Result, error) {
	start := time.Now()
	res, err := t.Client.Ensure(ctx, req)
	t.rec.ObserveHelm("ensure", string(res.Action), time.Since(start), err)
	return res, err
}

func (t timedHelm) Uninstall(ctx context.Context, cluster, namespace, name string, opts helmspec.Options) (helmspec.Result, error) {
	start := time.Now()
	res, err := t.Client.Uninstall(ctx, cluster, namespace, name, opts)
	t.rec.ObserveHelm("uninstall", string(res.Action), time.Since(start), err)
	return res, err
}

func (t timedHelm) UninstallOwned(ctx context.Context, cluster, namespace, name string, owner helmspec.Owner, opts helmspec.Options) (helmspec.Result, error) {
	start := time.Now()
	res, err := t.Client.UninstallOwned(ctx, cluster, namespace, name, owner, opts)
	t.rec.ObserveHelm("uninstall", string(res.Action), time.Since(start), err)
	return res, err
}

// countingClients gives the resource keeper clients that count the
// objects they delete (garbage collection and Application deletion).
type countingClients struct {
	next multicluster.ClusterClients
	rec  *metrics.Recorder
}

func (c countingClients) Client(ctx context.Context, cluster string) (client.Client, error) {
	cl, err := c.next.Client(ctx, cluster)
	if err != nil {
		return nil, err
	}
	return countingClient{Client: cl, rec: c.rec}, nil
}

type countingClient struct {
	client.Client
	rec *metrics.Recorder
}

func (c countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	err := c.Client.Delete(ctx, obj, opts...)
	if err == nil {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		if kind == "" {
			if gvk, gerr := c.Client.GroupVersionKindFor(obj); gerr == nil {
				kind = gvk.Kind
			}
		}
		c.rec.CountDeletion(kind)
	}
	return err
}

// keepers builds resourcekeeper Keepers as the controller's default does,
// with deletions counted: objects through clients (acting for the
// Application), ResourceTrackers through trackers (the controller's).
func keepers(clients multicluster.ClusterClients, trackers client.Client, releases resourcekeeper.ReleaseHandler, rec *metrics.Recorder) controller.KeeperFactory {
	counted := countingClients{next: clients, rec: rec}
	namespaces := resourcekeeper.NewKnownNamespaces(0, nil)
	return controller.KeeperFactoryFn(func(app *v1beta1.Application, n int64, p resourcekeeper.Policies) (controller.Keeper, error) {
		return resourcekeeper.New(app, n, resourcekeeper.Options{Clients: counted, Trackers: trackers, Policies: p, Releases: releases, Namespaces: namespaces})
	})
}
