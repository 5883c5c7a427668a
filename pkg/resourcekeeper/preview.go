package resourcekeeper

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// Change is what Apply would do with one object (see Preview).
type Change struct {
	Object common.ClusterObjectReference
	// Refused says why Apply would refuse the object ("": it would not),
	// in the words of its error (*OwnershipError, *ReadOnlyMissingError).
	Refused string
	// Adopt: the object is one KubeVela applied for this Application,
	// which Apply would adopt in place.
	Adopt bool
	// Live is the object as it is (nil: Apply would create it). After is
	// what a server-side dry run of Apply's write makes of it; nil when
	// Apply would not write it (in sync, read-only, kept whole by
	// apply-once, a Helm release).
	Live, After *unstructured.Unstructured
}

// Preview reports what Apply(ctx, cluster, objs) would do, writing
// nothing: the objects go through Apply's own plan (ownership, adoption,
// shared and read-only objects, apply-once) and each write is made as a
// server-side dry run. Trackers are neither read for writing nor written.
func (k *Keeper) Preview(ctx context.Context, cluster string, objs []*unstructured.Unstructured) ([]Change, error) {
	c, err := k.clients.Client(ctx, cluster)
	if err != nil {
		return nil, err
	}
	out := make([]Change, 0, len(objs))
	for _, obj := range objs {
		ch := Change{Object: refOf(cluster, obj)}
		if helmspec.IsHelmRelease(obj) {
			out = append(out, ch)
			continue
		}
		p, err := k.plan(ctx, c, cluster, obj, false)
		var own *OwnershipError
		var ro *ReadOnlyMissingError
		switch {
		case errors.As(err, &own) || errors.As(err, &ro):
			ch.Refused = err.Error()
			out = append(out, ch)
			continue
		case err != nil:
			return nil, err
		}
		ch.Object, ch.Live, ch.Adopt = refOf(cluster, p.desired), p.live, p.adopt
		if p.action == actApply {
			after := p.desired.DeepCopy()
			if err := c.Patch(ctx, after, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership, client.DryRunAll); err != nil {
				return nil, fmt.Errorf("applying %s (server-side dry run): %w", refString(ch.Object), err)
			}
			ch.After = after
		}
		out = append(out, ch)
	}
	return out, nil
}
