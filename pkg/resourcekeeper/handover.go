package resourcekeeper

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"
)

// KubeVelaFieldManager is the field manager of KubeVela's writes
// (operation Update: KubeVela applies with a three-way merge, not
// server-side apply).
const KubeVelaFieldManager = "kubevela"

// handOver (after every apply; it writes only when KubeVela's manager
// shares fields with oamflow's, as right after an adoption) makes oamflow the only owner of the fields it just applied to
// an adopted object: a server-side apply of a value equal to another
// manager's only shares the field (force matters only for differing
// values), so KubeVela's entry would keep owning what oamflow renders.
// The fields of oamflow's apply entry are removed from KubeVela's entries
// (an entry left empty goes); KubeVela's other fields — those oamflow does
// not render, such as its annotations — stay KubeVela's and are never
// changed. Only managedFields is written (guarded by resourceVersion), so
// nothing else of the object, its generation included, moves.
func handOver(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	mfs := obj.GetManagedFields()
	if !slices.ContainsFunc(mfs, func(mf metav1.ManagedFieldsEntry) bool { return mf.Manager == KubeVelaFieldManager }) {
		return nil
	}
	var ours *fieldpath.Set
	for _, mf := range mfs {
		if mf.Manager == FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Subresource == "" && mf.FieldsV1 != nil {
			ours = &fieldpath.Set{}
			if err := ours.FromJSON(bytes.NewReader(mf.FieldsV1.Raw)); err != nil {
				return fmt.Errorf("reading oamflow's managed fields: %w", err)
			}
		}
	}
	if ours == nil {
		return nil
	}
	changed := false
	out := make([]metav1.ManagedFieldsEntry, 0, len(mfs))
	for _, mf := range mfs {
		if mf.Manager != KubeVelaFieldManager || mf.Subresource != "" || mf.FieldsV1 == nil {
			out = append(out, mf)
			continue
		}
		theirs := &fieldpath.Set{}
		if err := theirs.FromJSON(bytes.NewReader(mf.FieldsV1.Raw)); err != nil {
			return fmt.Errorf("reading %s's managed fields: %w", mf.Manager, err)
		}
		left := theirs.Difference(ours)
		if left.Equals(theirs) {
			out = append(out, mf)
			continue
		}
		changed = true
		if left.Empty() {
			continue
		}
		raw, err := left.ToJSON()
		if err != nil {
			return err
		}
		mf.FieldsV1 = &metav1.FieldsV1{Raw: raw}
		out = append(out, mf)
	}
	if !changed {
		return nil
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": obj.GetResourceVersion()},
		{"op": "replace", "path": "/metadata/managedFields", "value": out},
	})
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch))
}
