package leanwrite

import (
	"context"
	"encoding/json"
	"fmt"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// PatchStatus writes the change from before to after (obj's status, before and
// after the caller changed it) to obj's status subresource. With lock the
// patch carries obj's resourceVersion, so the API server refuses it with a
// Conflict when obj changed since it was read. Nothing is sent when the
// two statuses marshal alike. On success obj has the resourceVersion (and
// generation and managedFields) of the answer, and nothing else of it:
// the rest of obj is what the caller held, so a later write that depends
// on its current spec or metadata must read it again.
func PatchStatus(ctx context.Context, c client.Client, obj client.Object, before, after any, lock bool) error {
	b, err := json.Marshal(before)
	if err != nil {
		return fmt.Errorf("encoding the status: %w", err)
	}
	a, err := json.Marshal(after)
	if err != nil {
		return fmt.Errorf("encoding the status: %w", err)
	}
	status, err := jsonpatch.CreateMergePatch(b, a)
	if err != nil {
		return fmt.Errorf("diffing the status: %w", err)
	}
	if string(status) == "{}" {
		return nil
	}
	body := map[string]any{"status": json.RawMessage(status)}
	if lock {
		body["metadata"] = map[string]string{"resourceVersion": obj.GetResourceVersion()}
	}
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encoding the patch: %w", err)
	}
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return err
	}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(gvk)
	meta.SetNamespace(obj.GetNamespace())
	meta.SetName(obj.GetName())
	if err := c.Status().Patch(ctx, meta, client.RawPatch(types.MergePatchType, data)); err != nil {
		return err
	}
	obj.SetResourceVersion(meta.GetResourceVersion())
	obj.SetGeneration(meta.GetGeneration())
	obj.SetManagedFields(meta.GetManagedFields())
	return nil
}
