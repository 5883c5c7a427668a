package resourcekeeper

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// seenKey names one object in one cluster.
type seenKey struct {
	cluster   string
	gvk       schema.GroupVersionKind
	namespace string
	name      string
}

func seenKeyOf(cluster string, gvk schema.GroupVersionKind, key client.ObjectKey) seenKey {
	return seenKey{cluster: normCluster(cluster), gvk: gvk, namespace: key.Namespace, name: key.Name}
}

// seenObject is what remember keeps of one object.
type seenObject struct {
	obj *unstructured.Unstructured
	// written: obj is the answer to this Keeper's write of it.
	written bool
}

// remember keeps obj as the API server answered it to this Keeper: the
// read of an object Apply is about to write (planned by Apply, not as an
// expected object of a later step: that read may be older than the later
// step's own write), or the answer to the write (written). A read never
// replaces a write's answer, which is newer than any read made before
// it. Reader serves them.
func (k *Keeper) remember(cluster string, obj *unstructured.Unstructured, written bool) {
	if obj == nil {
		return
	}
	key := seenKeyOf(cluster, obj.GroupVersionKind(), client.ObjectKeyFromObject(obj))
	k.seenMu.Lock()
	defer k.seenMu.Unlock()
	if k.seen == nil {
		k.seen = map[seenKey]seenObject{}
	}
	if !written && k.seen[key].written {
		return
	}
	k.seen[key] = seenObject{obj: obj.DeepCopy(), written: written}
}

// forgetSeen drops what remember kept of obj (it was deleted).
func (k *Keeper) forgetSeen(cluster string, obj *unstructured.Unstructured) {
	k.seenMu.Lock()
	defer k.seenMu.Unlock()
	delete(k.seen, seenKeyOf(cluster, obj.GroupVersionKind(), client.ObjectKeyFromObject(obj)))
}

// Reader returns r, reading from cluster, but that a Get of an object
// this Keeper read or wrote there (Apply) is answered with what the API
// server answered it then, without a request: a workflow step checks the
// health of what it has just applied, and a read a few milliseconds later
// would answer the same (a controller's status update in between is seen
// by the next check, which the update's watch event triggers).
func (k *Keeper) Reader(cluster string, r client.Reader) client.Reader {
	return seenReader{Reader: r, k: k, cluster: cluster}
}

type seenReader struct {
	client.Reader
	k       *Keeper
	cluster string
}

func (s seenReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if u, ok := obj.(*unstructured.Unstructured); ok && len(opts) == 0 {
		s.k.seenMu.Lock()
		live := s.k.seen[seenKeyOf(s.cluster, u.GroupVersionKind(), key)].obj
		s.k.seenMu.Unlock()
		if live != nil {
			live.DeepCopyInto(u)
			return nil
		}
	}
	return s.Reader.Get(ctx, key, obj, opts...)
}
