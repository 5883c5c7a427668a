package resourcekeeper

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FieldManager is the server-side apply field manager of every write.
const FieldManager = "oamflow"

// Annotations written on applied objects.
const (
	// AnnoAppliedHash holds a hash of the desired object as last applied
	// (without this annotation and app.oam.dev/shared-by). A live object
	// whose hash matches and whose fields still hold the desired values is
	// in sync and is not written again.
	AnnoAppliedHash = "app.oam.dev/applied-hash"
	// AnnoSharedBy lists the Applications sharing an object under a
	// shared-resource policy, as comma-separated "namespace/name" entries;
	// the owner (app.oam.dev/name+namespace labels) is one of them.
	AnnoSharedBy = "app.oam.dev/shared-by"
	// LabelAppliedHash holds the same hash as AnnoAppliedHash on objects
	// adopted from KubeVela (and written by oamflow ever since): a
	// Deployment's metadata.generation moves with every annotation change
	// (Kubernetes copies them to its ReplicaSets), labels do not count, so
	// adoption keeps the object's annotations exactly as KubeVela left
	// them. An object carries one form or the other, never both.
	LabelAppliedHash = "app.oam.dev/applied-hash"
)

// appliedHash returns obj's applied hash, in either form.
func appliedHash(obj *unstructured.Unstructured) string {
	if h := obj.GetAnnotations()[AnnoAppliedHash]; h != "" {
		return h
	}
	return obj.GetLabels()[LabelAppliedHash]
}

// withoutAppliedHash removes both forms of the applied hash (and the
// shared-by list, which is not part of the render) from obj.
func withoutAppliedHash(obj *unstructured.Unstructured) {
	if annos := obj.GetAnnotations(); annos != nil {
		delete(annos, AnnoAppliedHash)
		delete(annos, AnnoSharedBy)
		if len(annos) == 0 {
			annos = nil
		}
		obj.SetAnnotations(annos)
	}
	if labels := obj.GetLabels(); labels != nil {
		if _, ok := labels[LabelAppliedHash]; ok {
			delete(labels, LabelAppliedHash)
			if len(labels) == 0 {
				labels = nil
			}
			obj.SetLabels(labels)
		}
	}
}

// cleanDesired returns a deep copy of obj without server-owned fields
// (status, resourceVersion, uid, managedFields, creationTimestamp, generation).
func cleanDesired(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	delete(out.Object, "status")
	if md, ok := out.Object["metadata"].(map[string]any); ok {
		for _, k := range []string{"resourceVersion", "uid", "managedFields", "creationTimestamp", "generation", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"} {
			delete(md, k)
		}
	}
	return out
}

// desiredHash hashes the desired object, ignoring the keeper's own
// annotations. The result is stable across runs (encoding/json sorts map keys).
func desiredHash(obj *unstructured.Unstructured) (string, error) {
	c := obj.DeepCopy()
	withoutAppliedHash(c)
	b, err := json.Marshal(c.Object)
	if err != nil {
		return "", fmt.Errorf("hashing %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	sum := sha256.Sum256(b)
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:15])), nil
}

// inSync reports whether live already is what applying desired would make
// it, without asking the API server: the live object carries desired's
// applied-hash (so the last apply by this manager was this exact desired
// state), still has a field set owned by our manager, and every field of
// desired holds the same value live (so nobody changed or removed a field we
// set since). Comparison is semantic: numbers compare by value, resource
// quantities by amount ("0.5" == "500m"), empty desired maps/lists/nulls
// match absent fields, lists of scalars must be equal, and in lists of
// objects each desired item must be contained in a live item (the one with
// the same "name", else the one at the same position, else any) while
// extra live items are allowed — server-side apply keeps items other
// managers added to such (associative) lists, so they are not drift.
func inSync(desired, live *unstructured.Unstructured) bool {
	if live == nil || live.GetDeletionTimestamp() != nil {
		return false
	}
	if h := appliedHash(live); h == "" || h != appliedHash(desired) {
		return false
	}
	if !managedByUs(live) {
		return false
	}
	return contains(desired.Object, live.Object)
}

// managedByUs reports whether FieldManager owns fields of the main resource
// (not only of a subresource).
func managedByUs(obj *unstructured.Unstructured) bool {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == FieldManager && mf.Subresource == "" &&
			(mf.Operation == metav1.ManagedFieldsOperationApply || mf.Operation == metav1.ManagedFieldsOperationUpdate) {
			return true
		}
	}
	return false
}

// contains reports whether every value of want is present, with the same
// value, in got.
func contains(want, got any) bool {
	switch w := want.(type) {
	case nil:
		return true
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return len(w) == 0 && got == nil
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				if isEmpty(wv) {
					continue
				}
				return false
			}
			if !contains(wv, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok {
			return len(w) == 0 && got == nil
		}
		return listContains(w, g)
	default:
		return scalarEqual(want, got)
	}
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

// scalarEqual compares JSON scalars: numbers by value, quantity strings by amount.
func scalarEqual(a, b any) bool {
	if af, ok := number(a); ok {
		bf, ok := number(b)
		return ok && af == bf
	}
	as, aok := a.(string)
	bs, bok := b.(string)
	if aok && bok {
		if as == bs {
			return true
		}
		qa, errA := resource.ParseQuantity(as)
		qb, errB := resource.ParseQuantity(bs)
		return errA == nil && errB == nil && qa.Cmp(qb) == 0
	}
	return a == b
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func listContains(w, g []any) bool {
	objects := len(w) > 0
	for _, item := range w {
		if _, ok := item.(map[string]any); !ok {
			objects = false
			break
		}
	}
	if !objects {
		if len(w) != len(g) {
			return false
		}
		for i := range w {
			if !contains(w[i], g[i]) {
				return false
			}
		}
		return true
	}
	for i, item := range w {
		m := item.(map[string]any)
		if name, ok := m["name"].(string); ok {
			found := false
			for _, gi := range g {
				if gm, ok := gi.(map[string]any); ok && gm["name"] == name {
					found = contains(m, gm)
					break
				}
			}
			if !found {
				return false
			}
			continue
		}
		if i < len(g) && contains(m, g[i]) {
			continue
		}
		found := false
		for _, gi := range g {
			if contains(m, gi) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
