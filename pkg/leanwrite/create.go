package leanwrite

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// metadataAnswer is the Accept header asking for the answer's metadata
// only (the API server's transformation for PartialObjectMetadata, which
// its create handler applies as its get and list handlers do).
const metadataAnswer = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

// Creating returns c with Create of typed objects of the given kinds
// answered with metadata only: on success the object written keeps what
// it held, with the metadata of the API server's answer (uid,
// resourceVersion, creationTimestamp, generation, a generated name,
// managedFields) set on it. Nothing the API server changed in the rest of
// the object is read back, so the kinds must be ones whose create the API
// server stores as sent: no defaults in their schema and no mutating
// webhook; their status is dropped on create by the status subresource,
// so objects created must carry none. Every other call goes to c.
//
// cfg and httpClient are those c was built from (the requests share its
// connections, and so its User-Agent, which httpClient sets when cfg has
// one); without a warning handler in cfg, warnings are logged as c logs
// them, each once.
func Creating(c client.Client, cfg *rest.Config, httpClient *http.Client, kinds ...schema.GroupKind) client.Client {
	cfg = rest.CopyConfig(cfg)
	if cfg.WarningHandler == nil {
		// The API server's warnings are logged once each, as c (a
		// controller-runtime client) logs them, not once per create.
		cfg.WarningHandler = log.NewKubeAPIWarningLogger(log.Log.WithName("KubeAPIWarningLogger"),
			log.KubeAPIWarningLoggerOptions{Deduplicate: true})
	}
	set := make(map[schema.GroupKind]bool, len(kinds))
	for _, k := range kinds {
		set[k] = true
	}
	return &creating{Client: c, cfg: cfg, httpClient: httpClient, kinds: set,
		codecs: serializer.NewCodecFactory(c.Scheme()), rest: map[schema.GroupVersion]rest.Interface{}}
}

type creating struct {
	client.Client
	cfg        *rest.Config
	httpClient *http.Client
	kinds      map[schema.GroupKind]bool
	codecs     serializer.CodecFactory

	mu   sync.Mutex
	rest map[schema.GroupVersion]rest.Interface
}

func (c *creating) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if _, isUnstructured := obj.(runtime.Unstructured); isUnstructured {
		return c.Client.Create(ctx, obj, opts...)
	}
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil || !c.kinds[gvk.GroupKind()] {
		return c.Client.Create(ctx, obj, opts...)
	}
	mapping, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	rc, err := c.restFor(gvk)
	if err != nil {
		return err
	}
	co := &client.CreateOptions{}
	co.ApplyOptions(opts)
	raw, err := rc.Post().
		NamespaceIfScoped(obj.GetNamespace(), mapping.Scope.Name() == meta.RESTScopeNameNamespace).
		Resource(mapping.Resource.Resource).
		VersionedParams(co.AsCreateOptions(), metav1.ParameterCodec).
		Body(obj).
		SetHeader("Accept", metadataAnswer).
		Do(ctx).Raw()
	if err != nil {
		return err
	}
	answer := &metav1.PartialObjectMetadata{}
	if err := json.Unmarshal(raw, answer); err != nil {
		return fmt.Errorf("decoding the answer to creating %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	setMeta(obj, &answer.ObjectMeta)
	return nil
}

// restFor returns the REST client for gvk's group version, made once.
func (c *creating) restFor(gvk schema.GroupVersionKind) (rest.Interface, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rc, ok := c.rest[gvk.GroupVersion()]; ok {
		return rc, nil
	}
	rc, err := apiutil.RESTClientForGVK(gvk, false, c.cfg, c.codecs, c.httpClient)
	if err != nil {
		return nil, err
	}
	c.rest[gvk.GroupVersion()] = rc
	return rc, nil
}

// setMeta sets on obj the metadata m the API server answered.
func setMeta(obj client.Object, m *metav1.ObjectMeta) {
	obj.SetName(m.Name)
	obj.SetGenerateName(m.GenerateName)
	obj.SetNamespace(m.Namespace)
	obj.SetUID(m.UID)
	obj.SetResourceVersion(m.ResourceVersion)
	obj.SetGeneration(m.Generation)
	obj.SetCreationTimestamp(m.CreationTimestamp)
	obj.SetDeletionTimestamp(m.DeletionTimestamp)
	obj.SetDeletionGracePeriodSeconds(m.DeletionGracePeriodSeconds)
	obj.SetLabels(m.Labels)
	obj.SetAnnotations(m.Annotations)
	obj.SetOwnerReferences(m.OwnerReferences)
	obj.SetFinalizers(m.Finalizers)
	obj.SetManagedFields(m.ManagedFields)
}
