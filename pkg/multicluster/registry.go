package multicluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/placement"
	"github.com/oamflow/oamflow/pkg/render"
)

// Registry is the set of clusters an Application can deploy to: the hub
// ("local", always present, never stored) and every cluster Secret in the
// system namespace (see NewClusterSecret for the form). It hands out one
// cached client per cluster, rebuilt when the cluster's Secret changes
// (its resourceVersion, and then only if the credentials, endpoint or
// settings changed), and reports each cluster's reachability and version.
// A malformed Secret makes only that cluster fail, with a
// *MisconfiguredError naming the field. Errors and logs never contain
// credentials. Safe for concurrent use.
//
// Every call reads the cluster's Secret through the secret reader (the hub
// client unless WithSecretReader says otherwise); give a cache-backed
// reader restricted to the system namespace so that a cached-client hit
// costs no API request.
type Registry struct {
	secrets   client.Reader
	hub       *entry
	hubClient client.Client
	namespace string
	scheme    *runtime.Scheme
	defaults  ClientSettings
	userAgent string
	wrap      transport.WrapperFunc

	mu      sync.RWMutex
	entries map[string]*entry
}

// entry is one cluster's cached client.
type entry struct {
	resourceVersion string
	fingerprint     string
	cluster         Cluster
	config          *rest.Config
	client          client.Client
	http            *http.Client
	discovery       discovery.DiscoveryInterface
	version         *versionCache
	// as holds the clients impersonating users on this cluster (ClientsAs),
	// built on first use and dropped with the entry.
	as *impersonated
}

// impersonated is an entry's clients per impersonated user.
type impersonated struct {
	mu      sync.Mutex
	clients map[string]*userClient
}

type userClient struct {
	config *rest.Config
	client client.Client
}

// versionCache holds a cluster's version once read.
type versionCache struct {
	mu sync.Mutex
	v  *render.ClusterVersion
}

// Option configures NewRegistry.
type Option func(*Registry)

// WithSystemNamespace sets the namespace holding cluster Secrets (default
// DefaultSystemNamespace).
func WithSystemNamespace(ns string) Option {
	return func(r *Registry) { r.namespace = ns }
}

// WithSecretReader reads cluster Secrets through rd instead of the hub
// client (for example a controller-runtime cache watching only the system
// namespace).
func WithSecretReader(rd client.Reader) Option {
	return func(r *Registry) { r.secrets = rd }
}

// WithScheme sets the scheme of member-cluster clients (default: the hub
// client's scheme).
func WithScheme(s *runtime.Scheme) Option {
	return func(r *Registry) { r.scheme = s }
}

// WithClientSettings sets the QPS, burst and timeout of member clusters
// whose Secret has no annotations saying otherwise (default
// DefaultClientSettings). Zero fields keep the default.
func WithClientSettings(s ClientSettings) Option {
	return func(r *Registry) {
		if s.QPS > 0 {
			r.defaults.QPS = s.QPS
		}
		if s.Burst > 0 {
			r.defaults.Burst = s.Burst
		}
		if s.Timeout > 0 {
			r.defaults.Timeout = s.Timeout
		}
	}
}

// WithUserAgent sets the User-Agent of member-cluster clients (default
// client-go's, from the program's name), so that a cluster's audit log
// tells which oamflow program sent a request.
func WithUserAgent(ua string) Option {
	return func(r *Registry) { r.userAgent = ua }
}

// WithTransportWrapper wraps the HTTP transport of every member-cluster
// client in w (rest.Config.Wrap), as the hub's config may already be: a
// seam for proxies and for the fault suite's injected API errors.
func WithTransportWrapper(w transport.WrapperFunc) Option {
	return func(r *Registry) { r.wrap = w }
}

// NewRegistry returns a registry whose hub is reached with hub and
// hubConfig (both required). The hub's clients are returned as given.
func NewRegistry(hub client.Client, hubConfig *rest.Config, opts ...Option) (*Registry, error) {
	if hub == nil || hubConfig == nil {
		return nil, errors.New("multicluster: NewRegistry needs the hub client and its REST config")
	}
	r := &Registry{
		secrets:   hub,
		hubClient: hub,
		namespace: DefaultSystemNamespace,
		scheme:    hub.Scheme(),
		defaults:  DefaultClientSettings(),
		entries:   map[string]*entry{},
	}
	for _, o := range opts {
		o(r)
	}
	httpClient, err := rest.HTTPClientFor(hubConfig)
	if err != nil {
		return nil, fmt.Errorf("multicluster: building the hub's HTTP client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfigAndClient(hubConfig, httpClient)
	if err != nil {
		return nil, fmt.Errorf("multicluster: building the hub's discovery client: %w", err)
	}
	r.hub = &entry{
		cluster: Cluster{
			Name:           v1beta1.ClusterLocal,
			Endpoint:       hubConfig.Host,
			CredentialType: CredentialInternal,
			Labels:         map[string]string{},
			Settings:       ClientSettings{QPS: hubConfig.QPS, Burst: hubConfig.Burst, Timeout: hubConfig.Timeout},
		},
		config:    hubConfig,
		client:    hub,
		http:      httpClient,
		discovery: disc,
		version:   &versionCache{},
		as:        &impersonated{},
	}
	return r, nil
}

// Namespace returns the system namespace holding cluster Secrets.
func (r *Registry) Namespace() string { return r.namespace }

// Clients returns the client and a copy of the REST config of cluster (""
// or "local" is the hub). Errors: a *ClusterNotFoundError (errors.Is
// ErrClusterNotFound) for an unregistered name, a *MisconfiguredError
// (errors.Is ErrClusterMisconfigured) for a malformed Secret, or the error
// reading the Secret. The client is shared: do not change its config.
func (r *Registry) Clients(ctx context.Context, cluster string) (client.Client, *rest.Config, error) {
	e, err := r.lookup(ctx, cluster)
	if err != nil {
		return nil, nil, err
	}
	return e.client, rest.CopyConfig(e.config), nil
}

// Client returns the client of cluster; it implements ClusterClients with
// the errors of Clients.
func (r *Registry) Client(ctx context.Context, cluster string) (client.Client, error) {
	e, err := r.lookup(ctx, cluster)
	if err != nil {
		return nil, err
	}
	return e.client, nil
}

var _ ClusterClients = (*Registry)(nil)

// ClientsAs returns the client and a copy of the REST config of cluster
// that impersonate user (e.g. system:serviceaccount:team-a:deployer) with
// the cluster's credentials, which must be allowed to impersonate (verb
// impersonate on serviceaccounts, or users). They are built once per
// cluster and user and kept until the cluster's Secret changes; the
// REST mapper is the cluster's own client's (kinds do not depend on the
// user). Errors are those of Clients.
func (r *Registry) ClientsAs(ctx context.Context, cluster, user string) (client.Client, *rest.Config, error) {
	if user == "" {
		return r.Clients(ctx, cluster)
	}
	e, err := r.lookup(ctx, cluster)
	if err != nil {
		return nil, nil, err
	}
	e.as.mu.Lock()
	defer e.as.mu.Unlock()
	if uc, ok := e.as.clients[user]; ok {
		return uc.client, rest.CopyConfig(uc.config), nil
	}
	cfg := rest.CopyConfig(e.config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("building the HTTP client of cluster %q as %s: %w", e.cluster.Name, user, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: e.client.Scheme(), Mapper: e.client.RESTMapper(), HTTPClient: httpClient})
	if err != nil {
		return nil, nil, fmt.Errorf("building the client of cluster %q as %s: %w", e.cluster.Name, user, err)
	}
	if e.as.clients == nil {
		e.as.clients = map[string]*userClient{}
	}
	e.as.clients[user] = &userClient{config: cfg, client: c}
	return c, rest.CopyConfig(cfg), nil
}

// lookup returns cluster's usable entry.
func (r *Registry) lookup(ctx context.Context, cluster string) (*entry, error) {
	if IsLocal(cluster) {
		return r.hub, nil
	}
	e, err := r.entry(ctx, cluster)
	if err != nil {
		return nil, err
	}
	if e.cluster.Err != nil {
		return nil, e.cluster.Err
	}
	return e, nil
}

// entry returns the cached entry of a member cluster, rebuilding it when
// its Secret changed. The entry of a malformed Secret has cluster.Err set.
func (r *Registry) entry(ctx context.Context, name string) (*entry, error) {
	if ValidateName(name) != nil {
		return nil, &ClusterNotFoundError{Names: []string{name}, Namespace: r.namespace}
	}
	s := &corev1.Secret{}
	if err := r.secrets.Get(ctx, types.NamespacedName{Namespace: r.namespace, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			r.drop(name)
			return nil, &ClusterNotFoundError{Names: []string{name}, Namespace: r.namespace}
		}
		return nil, fmt.Errorf("reading the registration of cluster %q (Secret %s/%s): %w", name, r.namespace, name, err)
	}
	if _, ok := s.Labels[v1beta1.LabelClusterCredType]; !ok {
		r.drop(name)
		return nil, &ClusterNotFoundError{Names: []string{name}, Namespace: r.namespace}
	}
	r.mu.RLock()
	e := r.entries[name]
	r.mu.RUnlock()
	if e != nil && e.resourceVersion == s.ResourceVersion {
		return e, nil
	}
	return r.rebuild(ctx, s, e)
}

// rebuild replaces old (nil when there is none) by an entry for s. When only
// labels or annotations other than the settings changed, the client is kept.
func (r *Registry) rebuild(ctx context.Context, s *corev1.Secret, old *entry) (*entry, error) {
	p := parseSecret(s, r.defaults)
	e := &entry{resourceVersion: s.ResourceVersion, fingerprint: p.fingerprint, cluster: p.cluster, version: &versionCache{}, as: &impersonated{}}
	reused := false
	switch {
	case p.cluster.Err != nil:
	case old != nil && old.cluster.Err == nil && old.fingerprint == p.fingerprint:
		e.config, e.client, e.http, e.discovery, e.version, e.as = old.config, old.client, old.http, old.discovery, old.version, old.as
		reused = true
	default:
		if r.userAgent != "" {
			p.config.UserAgent = r.userAgent
		}
		if r.wrap != nil {
			p.config.Wrap(r.wrap)
		}
		if err := e.build(p.config, r.scheme); err != nil {
			e.cluster.Err = &MisconfiguredError{Cluster: s.Name, Namespace: s.Namespace, Reason: err.Error()}
		}
	}
	r.mu.Lock()
	cur := r.entries[s.Name]
	if cur != nil && cur != old && cur.resourceVersion == s.ResourceVersion {
		// Another caller rebuilt it meanwhile: keep theirs.
		r.mu.Unlock()
		if !reused && e.http != nil {
			e.http.CloseIdleConnections()
		}
		return cur, nil
	}
	r.entries[s.Name] = e
	r.mu.Unlock()
	if cur != nil && cur.http != nil && cur.http != e.http {
		cur.http.CloseIdleConnections()
	}
	logf.FromContext(ctx).V(1).Info("cluster client updated", "cluster", s.Name, "resourceVersion", s.ResourceVersion,
		"clientReused", reused, "misconfigured", e.cluster.Err != nil)
	return e, nil
}

// build makes the clients of cfg. The REST mapper discovers lazily, so
// building never contacts the cluster.
func (e *entry) build(cfg *rest.Config, scheme *runtime.Scheme) error {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("building the HTTP client: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme, HTTPClient: httpClient})
	if err != nil {
		return fmt.Errorf("building the client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return fmt.Errorf("building the discovery client: %w", err)
	}
	e.config, e.client, e.http, e.discovery = cfg, c, httpClient, disc
	return nil
}

// drop forgets name's entry.
func (r *Registry) drop(name string) {
	r.mu.Lock()
	old := r.entries[name]
	delete(r.entries, name)
	r.mu.Unlock()
	if old != nil && old.http != nil {
		old.http.CloseIdleConnections()
	}
}

// clusterSecretSelector selects cluster Secrets carrying every label of
// match (nil: all cluster Secrets).
func clusterSecretSelector(match map[string]string) (labels.Selector, error) {
	sel := labels.NewSelector()
	for _, k := range sortedKeys(match) {
		req, err := labels.NewRequirement(k, selection.Equals, []string{match[k]})
		if err != nil {
			return nil, fmt.Errorf("label %s=%s: %w", k, match[k], err)
		}
		sel = sel.Add(*req)
	}
	req, err := labels.NewRequirement(v1beta1.LabelClusterCredType, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	return sel.Add(*req), nil
}

// listSecrets lists the cluster Secrets matching match, sorted by name,
// without one named "local" (the hub's name is reserved).
func (r *Registry) listSecrets(ctx context.Context, match map[string]string) ([]corev1.Secret, error) {
	sel, err := clusterSecretSelector(match)
	if err != nil {
		return nil, err
	}
	list := &corev1.SecretList{}
	if err := r.secrets.List(ctx, list, client.InNamespace(r.namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing cluster Secrets in namespace %s: %w", r.namespace, err)
	}
	out := make([]corev1.Secret, 0, len(list.Items))
	for _, s := range list.Items {
		if s.Name == v1beta1.ClusterLocal {
			logf.FromContext(ctx).Info("ignoring a cluster Secret named after the hub", "secret", s.Namespace+"/"+s.Name)
			continue
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// List returns every cluster, the hub first, then the members sorted by
// name. A malformed member has Err set; List fails only when the Secrets
// cannot be listed. It does not contact the clusters (see Health).
func (r *Registry) List(ctx context.Context) ([]Cluster, error) {
	secrets, err := r.listSecrets(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := []Cluster{r.hub.cluster}
	for i := range secrets {
		out = append(out, parseSecret(&secrets[i], r.defaults).cluster)
	}
	return out, nil
}

// SelectClusters returns the names of the member clusters carrying every
// label of selector, sorted; an empty selector selects every member. The
// hub has no labels: a non-empty selector never selects it, and for an
// empty one package placement adds it (as KubeVela does). Malformed
// members are selected too, so that their failure is reported rather than
// their resources treated as unwanted. It implements placement.Resolver.
func (r *Registry) SelectClusters(ctx context.Context, selector map[string]string) ([]string, error) {
	secrets, err := r.listSecrets(ctx, selector)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(secrets))
	for i := range secrets {
		names[i] = secrets[i].Name
	}
	return names, nil
}

var _ placement.Resolver = (*Registry)(nil)

// ValidateClusters checks that every name is registered ("" and "local"
// always are); the error is a *ClusterNotFoundError listing every unknown
// name.
func (r *Registry) ValidateClusters(ctx context.Context, names []string) error {
	unknown := map[string]bool{}
	for _, n := range names {
		if IsLocal(n) {
			continue
		}
		if _, err := r.entry(ctx, n); err != nil {
			if errors.Is(err, ErrClusterNotFound) {
				unknown[n] = true
				continue
			}
			return err
		}
	}
	if len(unknown) > 0 {
		return &ClusterNotFoundError{Names: sortedKeys(unknown), Namespace: r.namespace}
	}
	return nil
}

// Health is whether a cluster answers and which Kubernetes version it runs.
type Health struct {
	Reachable bool `json:"reachable"`
	// Version is the API server's gitVersion ("v1.34.2") when reachable.
	Version string `json:"version,omitempty"`
	// Message says why the cluster is not reachable or not usable.
	Message string `json:"message,omitempty"`
}

// Health asks cluster's API server for its version (GET /version, bounded
// by the cluster's timeout and ctx). It never fails: an unknown, malformed
// or unreachable cluster gives Reachable false and the reason.
func (r *Registry) Health(ctx context.Context, cluster string) Health {
	e, err := r.lookup(ctx, cluster)
	if err != nil {
		return Health{Message: err.Error()}
	}
	v, err := e.probe(ctx)
	if err != nil {
		return Health{Message: fmt.Sprintf("cluster %q: %v", e.cluster.Name, err)}
	}
	return Health{Reachable: true, Version: v.GitVersion}
}

// ClusterVersion returns the Kubernetes version of cluster, as templates see
// it in context.clusterVersion. It is read once per client (until the
// cluster's Secret changes) and then served from memory; errors are those
// of Clients or of the request.
func (r *Registry) ClusterVersion(ctx context.Context, cluster string) (render.ClusterVersion, error) {
	e, err := r.lookup(ctx, cluster)
	if err != nil {
		return render.ClusterVersion{}, err
	}
	e.version.mu.Lock()
	defer e.version.mu.Unlock()
	if e.version.v != nil {
		return *e.version.v, nil
	}
	info, err := e.fetchVersion(ctx)
	if err != nil {
		return render.ClusterVersion{}, fmt.Errorf("reading the version of cluster %q: %w", e.cluster.Name, err)
	}
	v := render.ParseClusterVersion(info.Major, info.Minor, info.GitVersion, info.Platform)
	e.version.v = &v
	return v, nil
}

// probe reads the version and refreshes the cached one.
func (e *entry) probe(ctx context.Context) (*version.Info, error) {
	info, err := e.fetchVersion(ctx)
	if err != nil {
		return nil, err
	}
	v := render.ParseClusterVersion(info.Major, info.Minor, info.GitVersion, info.Platform)
	e.version.mu.Lock()
	e.version.v = &v
	e.version.mu.Unlock()
	return info, nil
}

// fetchVersion is GET /version.
func (e *entry) fetchVersion(ctx context.Context) (*version.Info, error) {
	raw, err := e.discovery.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	info := &version.Info{}
	if err := json.Unmarshal(raw, info); err != nil {
		return nil, fmt.Errorf("decoding GET /version: %w", err)
	}
	return info, nil
}

// NewSecretCache returns a controller-runtime cache holding only the cluster
// Secrets (label v1beta1.LabelClusterCredType present) of namespace, read
// without deep copies (the registry never modifies them), for
// WithSecretReader. The caller starts it (mgr.Add(c), or go c.Start(ctx)
// then c.WaitForCacheSync(ctx)); reads block until it has synced.
func NewSecretCache(cfg *rest.Config, scheme *runtime.Scheme, namespace string) (cache.Cache, error) {
	sel, err := clusterSecretSelector(nil)
	if err != nil {
		return nil, err
	}
	c, err := cache.New(cfg, cache.Options{
		Scheme:            scheme,
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: sel, UnsafeDisableDeepCopy: ptr.To(true)},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("multicluster: building the cluster Secret cache: %w", err)
	}
	return c, nil
}
