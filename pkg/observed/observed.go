// Package observed keeps what the controller needs to confirm that nothing
// changed — the ResourceTrackers and ApplicationRevisions it wrote and the
// objects Applications deployed (labelled app.oam.dev/name) — in an
// informer cache, so that a periodic resync of an Application in its
// steady state reads nothing from the API server.
//
// The cache answers only reads made under a context marked with
// WithCachedReads (the controller marks the resync of an Application
// whose workflow succeeded for its current generation), only for the
// kinds it may watch (Kinds), and only once their informer has synced;
// everything else — a miss, another kind, an Application acting as its
// own ServiceAccount (reads must be made as that identity), any read
// after a write made under the same context — goes to the API server.
// Reads under MayLag are the exception: they take the cache's answer, an
// empty list included, whenever it has synced, for deciding only whether
// to read closer.
// A cached read can lag behind the API server by the watch's latency: it
// may say an object is in sync when it drifted a moment ago (found at
// the next resync), never the reverse, because callers decide writes from
// a fresh read (package resourcekeeper's drift repair reads again before
// writing).
//
// Memory: objects are kept without the fieldsV1 of their managedFields
// (the managers and operations stay: drift detection asks whether oamflow
// manages an object), revisions with their definition templates
// interned (one copy per distinct template, however many revisions use
// it). Kinds the scheme has Go types for (oamflow's records and every
// kind of DefaultKinds) are kept as those types, listed and watched as
// protobuf where the API server speaks it; unstructured reads of them
// are converted on the way out. Kinds it has none for are kept
// unstructured. It grows with what Applications deploy, about the size
// of each object's JSON without its managed fields.
package observed

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unique"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// DefaultKinds are the kinds the cache may watch: oamflow's own records
// and what the built-in definitions deploy (the kinds the chart's
// single-tenant role lets the controller list and watch).
func DefaultKinds() []schema.GroupKind {
	return []schema.GroupKind{
		{Group: v1beta1.GroupVersion.Group, Kind: "ResourceTracker"},
		{Group: v1beta1.GroupVersion.Group, Kind: "ApplicationRevision"},
		{Kind: "ConfigMap"}, {Kind: "Secret"}, {Kind: "Service"}, {Kind: "ServiceAccount"}, {Kind: "PersistentVolumeClaim"},
		{Group: "apps", Kind: "Deployment"}, {Group: "apps", Kind: "StatefulSet"}, {Group: "apps", Kind: "DaemonSet"},
		{Group: "batch", Kind: "Job"}, {Group: "batch", Kind: "CronJob"},
		{Group: "networking.k8s.io", Kind: "Ingress"}, {Group: "networking.k8s.io", Kind: "NetworkPolicy"},
		{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"},
	}
}

// Cache is the observed-state cache of one cluster (the hub). It is a
// manager Runnable (Start).
type Cache struct {
	cache  cache.Cache
	scheme *runtime.Scheme
	kinds  map[schema.GroupKind]bool
	// warned remembers the kinds whose informer was reported not synced.
	warned sync.Map
}

// Options configure a Cache.
type Options struct {
	// Kinds are the kinds the cache may watch (nil: DefaultKinds).
	Kinds []schema.GroupKind
	// Records, when set, further selects the ResourceTrackers and
	// ApplicationRevisions cached (a shard's: its label).
	Records labels.Selector
}

// New returns a Cache of the cluster of cfg watching, of o.Kinds, the
// objects labelled app.oam.dev/name. Informers start on the first cached
// read of their kind.
func New(cfg *rest.Config, scheme *runtime.Scheme, mapper meta.RESTMapper, o Options) (*Cache, error) {
	kinds := o.Kinds
	if kinds == nil {
		kinds = DefaultKinds()
	}
	owned, err := labels.NewRequirement(v1beta1.LabelAppName, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	sel := labels.NewSelector().Add(*owned)
	opts := cache.Options{
		Scheme:                      scheme,
		Mapper:                      mapper,
		DefaultLabelSelector:        sel,
		DefaultTransform:            Slim,
		ReaderFailOnMissingInformer: true,
	}
	if o.Records != nil {
		reqs, _ := o.Records.Requirements()
		records := sel.Add(reqs...)
		opts.ByObject = map[client.Object]cache.ByObject{
			&v1beta1.ResourceTracker{}:     {Label: records},
			&v1beta1.ApplicationRevision{}: {Label: records},
		}
	}
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("building the observed-state cache: %w", err)
	}
	oc := &Cache{cache: c, scheme: scheme, kinds: map[schema.GroupKind]bool{}}
	for _, k := range kinds {
		oc.kinds[k] = true
	}
	return oc, nil
}

// Start runs the cache until ctx is done.
func (c *Cache) Start(ctx context.Context) error { return c.cache.Start(ctx) }

// reads is what WithCachedReads puts in a context: whether a write was
// made under it since (then reads go to the API server).
type reads struct {
	mu    sync.Mutex
	wrote bool
}

type readsKey struct{}

// WithCachedReads lets reads made under ctx (through a Client of this
// package) be answered from the cache, until a write is made under it.
func WithCachedReads(ctx context.Context) context.Context {
	return context.WithValue(ctx, readsKey{}, &reads{})
}

// Direct returns ctx with cached reads off (for a read that decides a
// write), MayLag's included.
func Direct(ctx context.Context) context.Context {
	if ctx.Value(lagKey{}) == true {
		ctx = context.WithValue(ctx, lagKey{}, false)
	}
	if _, ok := ctx.Value(readsKey{}).(*reads); !ok {
		return ctx
	}
	return context.WithValue(ctx, readsKey{}, (*reads)(nil))
}

type lagKey struct{}

// MayLag lets reads made under ctx be answered from the cache whenever it
// holds their kind and has synced — in any reconcile, after writes, and
// with an empty list as an answer (the cache holds every object of its
// kinds labelled app.oam.dev/name, only maybe not the newest). It is for
// reads that only decide whether to look closer, where a lagging answer
// delays work and never makes a wrong write; package resourcekeeper asks
// it whether an Application has trackers of older revisions, and reads
// them from the API server before collecting anything.
func MayLag(ctx context.Context) context.Context {
	return context.WithValue(ctx, lagKey{}, true)
}

// mayLag reports whether ctx is MayLag's.
func mayLag(ctx context.Context) bool { return ctx.Value(lagKey{}) == true }

// CachedReads reports whether reads under ctx may be answered from the
// cache.
func CachedReads(ctx context.Context) bool {
	if mayLag(ctx) {
		return true
	}
	r, _ := ctx.Value(readsKey{}).(*reads)
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.wrote
}

func wrote(ctx context.Context) {
	if r, _ := ctx.Value(readsKey{}).(*reads); r != nil {
		r.mu.Lock()
		r.wrote = true
		r.mu.Unlock()
	}
}

// Client wraps direct (a client of the cache's cluster, acting as the
// controller): reads under WithCachedReads are answered from the cache
// when it can, writes go to direct and end cached reads for the context.
// A nil Cache returns direct.
func (c *Cache) Client(direct client.Client) client.Client {
	if c == nil {
		return direct
	}
	return &cachedClient{Client: direct, c: c}
}

type cachedClient struct {
	client.Client
	c *Cache
}

// reader returns the cache's reader for obj when ctx allows cached reads,
// its kind is watched and its informer has synced.
func (c *Cache) reader(ctx context.Context, obj runtime.Object) (client.Reader, bool) {
	if !CachedReads(ctx) {
		return nil, false
	}
	gvk, err := c.gvkOf(obj)
	if err != nil || !c.kinds[gvk.GroupKind()] {
		return nil, false
	}
	io, err := c.informerObject(obj, gvk)
	if err != nil {
		return nil, false
	}
	inf, err := c.cache.GetInformer(ctx, io, cache.BlockUntilSynced(false))
	if err != nil {
		logf.FromContext(ctx).V(1).Info("not caching a kind", "kind", gvk.String(), "reason", err.Error())
		return nil, false
	}
	if !inf.HasSynced() {
		if _, seen := c.warned.LoadOrStore(gvk, true); !seen {
			logf.FromContext(ctx).V(1).Info("the observed-state cache of a kind has not synced yet; reading from the API server", "kind", gvk.String())
		}
		return nil, false
	}
	return c.cache, true
}

func (c *Cache) gvkOf(obj runtime.Object) (schema.GroupVersionKind, error) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return o.GroupVersionKind(), nil
	case *unstructured.UnstructuredList:
		gvk := o.GroupVersionKind()
		gvk.Kind = trimList(gvk.Kind)
		return gvk, nil
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return schema.GroupVersionKind{}, errors.New("metadata-only reads are not cached")
	}
	gvk, err := apiutilGVK(obj, c.scheme)
	if err != nil {
		return gvk, err
	}
	gvk.Kind = trimList(gvk.Kind)
	return gvk, nil
}

func (cc *cachedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if r, ok := cc.c.reader(ctx, obj); ok {
		err := cc.c.get(ctx, r, key, obj, opts...)
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) && !errors.As(err, new(*cache.ErrResourceNotCached)) {
			return err
		}
		// A miss: the object may be newer than the cache.
	}
	return cc.Client.Get(ctx, key, obj, opts...)
}

func (cc *cachedClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if r, ok := cc.c.reader(ctx, list); ok && selectsOwned(opts) {
		err := cc.c.list(ctx, r, list, opts...)
		if err == nil && (meta.LenList(list) > 0 || mayLag(ctx)) {
			return nil
		}
		if err != nil && !errors.As(err, new(*cache.ErrResourceNotCached)) {
			return err
		}
	}
	return cc.Client.List(ctx, list, opts...)
}

// selectsOwned reports whether a List selects by app.oam.dev/name: the
// cache holds only such objects, so any other List could miss some.
func selectsOwned(opts []client.ListOption) bool {
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	if lo.LabelSelector == nil {
		return false
	}
	reqs, _ := lo.LabelSelector.Requirements()
	for _, r := range reqs {
		if r.Key() == v1beta1.LabelAppName && r.Operator() == selection.Equals {
			return true
		}
	}
	return false
}

func (cc *cachedClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	wrote(ctx)
	return cc.Client.Create(ctx, obj, opts...)
}

func (cc *cachedClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	wrote(ctx)
	return cc.Client.Update(ctx, obj, opts...)
}

func (cc *cachedClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	wrote(ctx)
	return cc.Client.Patch(ctx, obj, patch, opts...)
}

func (cc *cachedClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	wrote(ctx)
	return cc.Client.Delete(ctx, obj, opts...)
}

func (cc *cachedClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	wrote(ctx)
	return cc.Client.DeleteAllOf(ctx, obj, opts...)
}

func (cc *cachedClient) Status() client.SubResourceWriter { return cc.SubResource("status") }

func (cc *cachedClient) SubResource(sub string) client.SubResourceClient {
	return &cachedSubResource{SubResourceClient: cc.Client.SubResource(sub)}
}

type cachedSubResource struct{ client.SubResourceClient }

func (s *cachedSubResource) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	wrote(ctx)
	return s.SubResourceClient.Create(ctx, obj, sub, opts...)
}

func (s *cachedSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	wrote(ctx)
	return s.SubResourceClient.Update(ctx, obj, opts...)
}

func (s *cachedSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	wrote(ctx)
	return s.SubResourceClient.Patch(ctx, obj, patch, opts...)
}

// Slim is the cache's transform: managedFields without their fieldsV1,
// revisions' definition templates interned.
func Slim(obj any) (any, error) {
	if o, ok := obj.(metav1.Object); ok {
		if mf := o.GetManagedFields(); len(mf) > 0 {
			slim := make([]metav1.ManagedFieldsEntry, len(mf))
			for i, e := range mf {
				e.FieldsV1 = nil
				slim[i] = e
			}
			o.SetManagedFields(slim)
		}
	}
	if rev, ok := obj.(*v1beta1.ApplicationRevision); ok {
		internRevision(rev)
	}
	return obj, nil
}

// internRevision makes the revision's definition templates and status
// CUE share one copy with every other revision holding the same text.
func internRevision(rev *v1beta1.ApplicationRevision) {
	s := &rev.Spec
	for k, d := range s.ComponentDefinitions {
		internSchematic(d.Spec.Schematic)
		internStatus(d.Spec.Status)
		s.ComponentDefinitions[k] = d
	}
	for k, d := range s.TraitDefinitions {
		internSchematic(d.Spec.Schematic)
		internStatus(d.Spec.Status)
		s.TraitDefinitions[k] = d
	}
	for k, d := range s.PolicyDefinitions {
		internSchematic(d.Spec.Schematic)
		s.PolicyDefinitions[k] = d
	}
	for k, d := range s.WorkflowStepDefinitions {
		internSchematic(d.Spec.Schematic)
		s.WorkflowStepDefinitions[k] = d
	}
}

func internSchematic(sc *common.Schematic) {
	if sc != nil && sc.CUE != nil {
		sc.CUE.Template = intern(sc.CUE.Template)
	}
}

func internStatus(st *common.Status) {
	if st != nil {
		st.HealthPolicy = intern(st.HealthPolicy)
		st.CustomStatus = intern(st.CustomStatus)
	}
}

func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

func apiutilGVK(obj runtime.Object, scheme *runtime.Scheme) (schema.GroupVersionKind, error) {
	return apiutil.GVKForObject(obj, scheme)
}

func trimList(kind string) string { return strings.TrimSuffix(kind, "List") }

// informerObject is the object whose informer holds the kind gvk: the
// scheme's Go type when it has one (obj typed or not: see get), else an
// unstructured object.
func (c *Cache) informerObject(obj runtime.Object, gvk schema.GroupVersionKind) (client.Object, error) {
	if !c.scheme.Recognizes(gvk) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u, nil
	}
	if o, ok := obj.(client.Object); ok && !meta.IsListType(obj) && !isUnstructured(obj) {
		return o, nil
	}
	n, err := c.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	o, ok := n.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s is not an object kind", gvk)
	}
	return o, nil
}

func isUnstructured(obj runtime.Object) bool {
	_, ok := obj.(runtime.Unstructured)
	return ok
}

// get reads key from r into obj. An unstructured read of a kind the scheme
// has a Go type for is served by that type's informer and converted: the
// cache keeps one informer per kind, and a typed object is a fraction of
// the memory of its unstructured maps (and is listed and watched as
// protobuf, which costs less to decode than JSON). A field the API server
// has and the scheme's Go type has not (a newer Kubernetes) is missing
// from such an answer; no write is decided from a cached read (see the
// package doc).
func (c *Cache) get(ctx context.Context, r client.Reader, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || !c.scheme.Recognizes(u.GroupVersionKind()) {
		return r.Get(ctx, key, obj, opts...)
	}
	gvk := u.GroupVersionKind()
	n, err := c.scheme.New(gvk)
	if err != nil {
		return err
	}
	typed, ok := n.(client.Object)
	if !ok {
		return fmt.Errorf("%s is not an object kind", gvk)
	}
	if err := r.Get(ctx, key, typed, opts...); err != nil {
		return err
	}
	m, err := toUnstructured(typed)
	if err != nil {
		return err
	}
	u.SetUnstructuredContent(m)
	u.SetGroupVersionKind(gvk)
	return nil
}

// list is get's List.
func (c *Cache) list(ctx context.Context, r client.Reader, list client.ObjectList, opts ...client.ListOption) error {
	ul, ok := list.(*unstructured.UnstructuredList)
	if !ok {
		return r.List(ctx, list, opts...)
	}
	gvk := ul.GroupVersionKind()
	if !strings.HasSuffix(gvk.Kind, "List") {
		gvk.Kind += "List"
	}
	if !c.scheme.Recognizes(gvk) {
		return r.List(ctx, list, opts...)
	}
	n, err := c.scheme.New(gvk)
	if err != nil {
		return err
	}
	typed, ok := n.(client.ObjectList)
	if !ok {
		return fmt.Errorf("%s is not a list kind", gvk)
	}
	// The items are only read (converted below): no copy of them is made.
	if err := r.List(ctx, typed, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return err
	}
	items, err := meta.ExtractList(typed)
	if err != nil {
		return err
	}
	itemGVK := gvk.GroupVersion().WithKind(trimList(gvk.Kind))
	ul.Items = make([]unstructured.Unstructured, 0, len(items))
	for _, it := range items {
		m, err := toUnstructured(it)
		if err != nil {
			return err
		}
		item := unstructured.Unstructured{Object: m}
		item.SetGroupVersionKind(itemGVK)
		ul.Items = append(ul.Items, item)
	}
	ul.SetResourceVersion(typed.GetResourceVersion())
	ul.SetGroupVersionKind(gvk)
	return nil
}

// toUnstructured converts a typed object as the API server encodes it: the
// Go types of this client write a zero creationTimestamp of embedded
// object metadata (a pod template's) as null, where the API server
// (since Kubernetes 1.33) leaves it out.
func toUnstructured(obj runtime.Object) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	dropNullCreationTimestamps(m, false)
	return m, nil
}

func dropNullCreationTimestamps(v any, isMetadata bool) {
	switch t := v.(type) {
	case map[string]any:
		if isMetadata {
			if ts, ok := t["creationTimestamp"]; ok && ts == nil {
				delete(t, "creationTimestamp")
			}
			return
		}
		for k, e := range t {
			dropNullCreationTimestamps(e, k == "metadata")
		}
	case []any:
		for _, e := range t {
			dropNullCreationTimestamps(e, false)
		}
	}
}
