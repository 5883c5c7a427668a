package resourcekeeper

import (
	"context"
	"errors"
	"fmt"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/observed"
)

// StateKeep repairs drift: every object tracked by the current revision is
// read and, when it is missing or not in sync with what was last applied
// (see inSync), applied again. Under observed.WithCachedReads the tracker
// and the objects may be read from the observed-state cache; an object
// the cache shows out of sync is read again from the API server, which
// decides the write. Objects now owned by another Application,
// read-only objects, and objects under apply-once (whole object, or the
// listed paths, with affect onStateKeep or always) are left as they are.
// When nothing drifted it issues only reads: zero write requests. Tracked
// Helm releases are ensured again through the ReleaseHandler, which
// upgrades them when their chart or values (valuesFrom objects included)
// changed, reinstalls them when they were uninstalled behind our back, and
// writes nothing otherwise.
func (k *Keeper) StateKeep(ctx context.Context) error {
	hub, err := k.hub(ctx)
	if err != nil {
		return err
	}
	rt, err := getTracker(ctx, hub, VersionedTrackerName(k.appName, k.appNamespace, k.revision))
	if err != nil || rt == nil {
		return err
	}
	var errs []error
	for _, e := range rt.Spec.ManagedResources {
		if e.Deleted || e.Data == nil {
			continue
		}
		if err := k.keepOne(ctx, e); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (k *Keeper) keepOne(ctx context.Context, e v1beta1.ManagedResource) error {
	obj, err := decodeData(e.Data)
	if err != nil {
		return fmt.Errorf("%s: %w", refString(e.ClusterObjectReference), err)
	}
	c, err := k.clients.Client(ctx, e.Cluster)
	if err != nil {
		return err
	}
	var p *plan
	if helmspec.IsHelmRelease(obj) {
		p, err = k.planRelease(ctx, e.Cluster, obj, true)
	} else {
		p, err = k.plan(ctx, c, e.Cluster, obj, true)
		if err == nil && p.action != actNone && observed.CachedReads(ctx) {
			// The cache says something is to be written: decide it from
			// the API server's object, never from a cached one.
			ctx = observed.Direct(ctx)
			p, err = k.plan(ctx, c, e.Cluster, obj, true)
		}
	}
	if err != nil {
		return err
	}
	return k.execute(ctx, c, e.Cluster, p)
}

// AppliedResources lists the objects the current revision tracks, in the
// order they were first applied (for status.appliedResources): empty, not
// nil, when its tracker lists none; nil when it has no tracker.
func (k *Keeper) AppliedResources(ctx context.Context) ([]common.ClusterObjectReference, error) {
	hub, err := k.hub(ctx)
	if err != nil {
		return nil, err
	}
	rt, err := getTracker(ctx, hub, VersionedTrackerName(k.appName, k.appNamespace, k.revision))
	if err != nil || rt == nil {
		return nil, err
	}
	out := make([]common.ClusterObjectReference, 0, len(rt.Spec.ManagedResources))
	for _, e := range rt.Spec.ManagedResources {
		if !e.Deleted {
			out = append(out, e.ClusterObjectReference)
		}
	}
	return out, nil
}
