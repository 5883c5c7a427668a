package helm

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Factory builds Helm action configurations. It is the single seam between
// oamflow and Helm's cluster access: every Helm action in this package gets
// its *action.Configuration from a Factory, and tests replace the release
// storage through WithStorage (e.g. with Helm's memory driver).
type Factory interface {
	// For returns a configuration acting on cluster ("" or "local" is the
	// hub) with releases stored in namespace. Errors when the cluster is
	// unknown or its client cannot be built.
	For(ctx context.Context, cluster, namespace string) (*action.Configuration, error)
}

// FactoryFn adapts a function to Factory.
type FactoryFn func(ctx context.Context, cluster, namespace string) (*action.Configuration, error)

// For calls fn.
func (fn FactoryFn) For(ctx context.Context, cluster, namespace string) (*action.Configuration, error) {
	return fn(ctx, cluster, namespace)
}

// RESTConfigs returns the REST config of a named cluster.
type RESTConfigs interface {
	RESTConfig(ctx context.Context, cluster string) (*rest.Config, error)
}

// RESTConfigsFn adapts a function to RESTConfigs.
type RESTConfigsFn func(ctx context.Context, cluster string) (*rest.Config, error)

// RESTConfig calls fn.
func (fn RESTConfigsFn) RESTConfig(ctx context.Context, cluster string) (*rest.Config, error) {
	return fn(ctx, cluster)
}

// SingleCluster serves cfg for every cluster name.
func SingleCluster(cfg *rest.Config) RESTConfigs {
	return RESTConfigsFn(func(context.Context, string) (*rest.Config, error) { return cfg, nil })
}

// StorageFn returns the release storage driver for a cluster and namespace.
type StorageFn func(cluster, namespace string) driver.Driver

// FactoryOption configures NewFactory.
type FactoryOption func(*factory)

// WithStorage replaces Helm's Secret storage driver (the production
// default). Tests pass MemoryStorage().
func WithStorage(fn StorageFn) FactoryOption { return func(f *factory) { f.storage = fn } }

// MemoryStorage returns a StorageFn keeping releases in memory, one driver
// per cluster and namespace, kept for the life of the StorageFn.
func MemoryStorage() StorageFn {
	var mu sync.Mutex
	drivers := map[string]*driver.Memory{}
	return func(cluster, namespace string) driver.Driver {
		mu.Lock()
		defer mu.Unlock()
		k := cluster + "/" + namespace
		d, ok := drivers[k]
		if !ok {
			d = driver.NewMemory()
			d.SetNamespace(namespace)
			drivers[k] = d
		}
		return d
	}
}

// NewFactory returns the production Factory: clients from configs, release
// records in Secrets of the release namespace (Helm's default "secret"
// driver, readable by the helm CLI). A discovery cache is kept per cluster.
func NewFactory(configs RESTConfigs, opts ...FactoryOption) Factory {
	f := &factory{configs: configs, getters: map[string]*restGetter{}}
	for _, o := range opts {
		o(f)
	}
	return f
}

type factory struct {
	configs RESTConfigs
	storage StorageFn

	mu      sync.Mutex
	getters map[string]*restGetter
}

func (f *factory) For(ctx context.Context, cluster, namespace string) (*action.Configuration, error) {
	g, err := f.getter(ctx, cluster)
	if err != nil {
		return nil, err
	}
	ng := g.inNamespace(namespace)
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", cluster, "namespace", namespace)
	cfg := new(action.Configuration)
	if err := cfg.Init(ng, namespace, "secret", debugLog(log)); err != nil {
		return nil, fmt.Errorf("helm configuration for cluster %q namespace %q: %w", cluster, namespace, err)
	}
	if f.storage != nil {
		cfg.Releases = storage.Init(f.storage(cluster, namespace))
	}
	return cfg, nil
}

// getter returns the REST getter of cluster for the config the RESTConfigs
// give in ctx: one per cluster and impersonated user (the controller's
// RESTConfigs impersonate the Application's identity), sharing the
// cluster's discovery cache (kinds do not depend on the user).
func (f *factory) getter(ctx context.Context, cluster string) (*restGetter, error) {
	rc, err := f.configs.RESTConfig(ctx, cluster)
	if err != nil {
		return nil, fmt.Errorf("rest config of cluster %q: %w", cluster, err)
	}
	key := cluster + "\x00" + rc.Impersonate.UserName
	f.mu.Lock()
	defer f.mu.Unlock()
	if g, ok := f.getters[key]; ok {
		return g, nil
	}
	var g *restGetter
	if base, ok := f.getters[cluster]; ok {
		g = &restGetter{config: rest.CopyConfig(rc), discovery: base.discovery, mapper: base.mapper}
	} else {
		if g, err = newRESTGetter(rc); err != nil {
			return nil, fmt.Errorf("clients of cluster %q: %w", cluster, err)
		}
		// The cluster's first getter lends its discovery cache to the
		// getters of other users.
		f.getters[cluster] = g
	}
	f.getters[key] = g
	return g, nil
}

// debugLog routes Helm's printf-style debug output to the context logger at V(1).
func debugLog(log logr.Logger) action.DebugLog {
	return func(format string, v ...any) { log.V(1).Info(fmt.Sprintf(format, v...)) }
}

// restGetter adapts a rest.Config to Helm's RESTClientGetter with a shared
// discovery cache; inNamespace gives a view defaulting to one namespace.
type restGetter struct {
	config    *rest.Config
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
	namespace string
}

var _ genericclioptions.RESTClientGetter = (*restGetter)(nil)

func newRESTGetter(rc *rest.Config) (*restGetter, error) {
	rc = rest.CopyConfig(rc)
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
	return &restGetter{config: rc, discovery: cached, mapper: mapper}, nil
}

func (g *restGetter) inNamespace(ns string) *restGetter {
	c := *g
	c.namespace = ns
	return &c
}

func (g *restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.config), nil }

func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.discovery, nil
}

func (g *restGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.mapper, nil }

func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return namespaceConfig{ns: g.namespace, rc: g.config}
}

// namespaceConfig is the minimal clientcmd.ClientConfig Helm's kube client
// needs: the default namespace and the REST config.
type namespaceConfig struct {
	ns string
	rc *rest.Config
}

func (c namespaceConfig) RawConfig() (clientcmdapi.Config, error) {
	return clientcmdapi.Config{}, nil
}
func (c namespaceConfig) ClientConfig() (*rest.Config, error) { return rest.CopyConfig(c.rc), nil }
func (c namespaceConfig) Namespace() (string, bool, error) {
	if c.ns == "" {
		return "default", false, nil
	}
	return c.ns, true, nil
}
func (c namespaceConfig) ConfigAccess() clientcmd.ConfigAccess { return nil }
