package resourcekeeper

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// ReleaseHandler installs, upgrades and uninstalls the Helm releases behind
// virtual HelmRelease objects (helmspec.IsHelmRelease), which are never applied
// to a cluster (routing contract: package helm's documentation).
// NewHelmReleases adapts a helmspec.Releases (normally *helm.Client).
type ReleaseHandler interface {
	// Ensure brings the release described by obj (a rendered HelmRelease,
	// metadata.name/namespace = release name/namespace) to its desired state
	// on cluster ("" = hub). appNamespace is the Application's namespace,
	// the only one auth Secrets and valuesFrom objects are read from. It
	// must write nothing when the release is already in the desired state.
	// Errors about the object itself (bad spec, chart not found, unsafe
	// chart) are terminal (errclass.IsTerminal) and worded as the API
	// server words an invalid object.
	Ensure(ctx context.Context, cluster, appNamespace string, obj *unstructured.Unstructured) (ReleaseResult, error)
	// Uninstall removes the release a tracker entry records (Namespace and
	// Name are the release's; Data is the HelmRelease last ensured, or nil).
	// A release that does not exist is not an error; one that is no longer
	// the Application's is left installed with a *helmspec.NotOwnedError.
	Uninstall(ctx context.Context, cluster string, tracked v1beta1.ManagedResource) error
	// Owner reads who owns release name in namespace on cluster.
	Owner(ctx context.Context, cluster, namespace, name string) (helmspec.ReleaseOwner, error)
}

// ReleaseResult reports one Ensure.
type ReleaseResult struct {
	// Action is what was done, e.g. "Installed", "Upgraded", "Unchanged".
	Action string
	// Revision is the release revision after the call (0 when unknown).
	Revision int
	// Recovery is non-empty when a stuck or failed release was repaired on
	// the way; it says what was done.
	Recovery string
	// RetryAfter is set when another operation holds the release.
	RetryAfter time.Duration
}

// ErrNoReleaseHandler is returned for HelmRelease objects when the Keeper
// has no ReleaseHandler (Options.Releases).
var ErrNoReleaseHandler = errors.New("helm components need the controller's Helm support, which is not configured (resourcekeeper.Options.Releases is nil)")

// isReleaseEntry reports whether a tracker entry records a Helm release.
func isReleaseEntry(e v1beta1.ManagedResource) bool {
	return e.APIVersion == helmspec.APIVersion && e.Kind == helmspec.Kind
}

// planRelease prepares a virtual HelmRelease: our ownership labels, the
// release name and namespace from its spec (defaults: the component name
// and the Application's namespace) as its identity, and the action to hand
// it to the ReleaseHandler. A read-only HelmRelease is neither tracked nor
// ensured. The release must be in the Application's scope and be ours: a
// release recording another Application is refused (*OwnershipError), as
// is one recording none unless a take-over rule selects it — or oamflow
// installed it before releases recorded their owner and this Application
// tracks it already. During drift repair (stateKeep) a release that is no
// longer ours is left alone. Sharing, apply-once and resource-update rules
// do not apply.
func (k *Keeper) planRelease(ctx context.Context, cluster string, obj *unstructured.Unstructured, stateKeep bool) (*plan, error) {
	d := cleanDesired(obj)
	ref := refString(refOf(cluster, d))
	if k.releases == nil {
		return nil, fmt.Errorf("%s: %w", ref, ErrNoReleaseHandler)
	}
	labels := d.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1beta1.LabelAppName] = k.appName
	labels[v1beta1.LabelAppNamespace] = k.appNamespace
	d.SetLabels(labels)
	spec, err := helmspec.SpecFromObject(d, releaseDefaults(d, k.appNamespace))
	if err != nil {
		return nil, invalidRelease(d, err)
	}
	d.SetName(spec.Release.Name)
	d.SetNamespace(spec.Release.Namespace)
	p := &plan{desired: d}
	if err := checkScope(ctx, cluster, d); err != nil {
		if stateKeep {
			return p, nil
		}
		return nil, err
	}
	if k.policies.readOnly(d) {
		return p, nil
	}
	if err := k.checkReleaseOwner(ctx, cluster, d); err != nil {
		var oe *OwnershipError
		if stateKeep && errors.As(err, &oe) {
			logf.FromContext(ctx).V(1).Info("leaving a helm release that is not ours", "release", klog.KObj(d), "cluster", cluster, "reason", err.Error())
			return p, nil
		}
		return nil, err
	}
	p.tracked = d.DeepCopy()
	p.action = actRelease
	return p, nil
}

// checkReleaseOwner refuses the release d names unless it is new, ours, or
// ours to adopt (see planRelease).
func (k *Keeper) checkReleaseOwner(ctx context.Context, cluster string, d *unstructured.Unstructured) error {
	ref := refOf(cluster, d)
	own, err := k.releases.Owner(ctx, normCluster(cluster), d.GetNamespace(), d.GetName())
	if err != nil {
		return fmt.Errorf("reading the owner of %s: %w", refString(ref), denied(ctx, err))
	}
	us := helmspec.Owner{Name: k.appName, Namespace: k.appNamespace}
	switch {
	case !own.Exists, own.Owner == us:
		return nil
	case !own.Owner.IsZero():
		return &OwnershipError{Object: ref, OwnerName: own.Owner.Name, OwnerNamespace: own.Owner.Namespace, TakeOver: k.policies.takeOver(d)}
	case k.policies.takeOver(d):
		logf.FromContext(ctx).Info("taking over a helm release", "release", klog.KObj(d), "cluster", cluster)
		return nil
	case own.Oamflow:
		tracked, err := k.tracksRelease(ctx, ref)
		if err != nil {
			return err
		}
		if tracked {
			return nil
		}
	}
	return &OwnershipError{Object: ref}
}

// tracksRelease reports whether one of the Application's trackers records
// the release ref (a release installed before releases recorded their
// owner is adopted by the Application that installed it).
func (k *Keeper) tracksRelease(ctx context.Context, ref common.ClusterObjectReference) (bool, error) {
	return k.tracks(ctx, func(e v1beta1.ManagedResource) bool {
		return isReleaseEntry(e) && normCluster(e.Cluster) == normCluster(ref.Cluster) && e.Namespace == ref.Namespace && e.Name == ref.Name
	})
}

// releaseDefaults are the defaults of a rendered HelmRelease: its
// component's name (else its metadata.name) and the Application's namespace.
func releaseDefaults(obj *unstructured.Unstructured, appNamespace string) helmspec.Defaults {
	name := obj.GetLabels()[v1beta1.LabelAppComponent]
	if name == "" {
		name = obj.GetName()
	}
	return helmspec.Defaults{Name: name, Namespace: appNamespace}
}

// ensureRelease hands a planned HelmRelease to the ReleaseHandler.
func (k *Keeper) ensureRelease(ctx context.Context, cluster string, p *plan) error {
	ref := refString(refOf(cluster, p.desired))
	res, err := k.releases.Ensure(ctx, normCluster(cluster), k.appNamespace, p.desired)
	log := logf.FromContext(ctx)
	if res.Recovery != "" {
		log.Info("recovered a helm release", "release", klog.KObj(p.desired), "cluster", cluster, "recovery", res.Recovery)
	}
	if err != nil {
		if apierrors.IsInvalid(err) {
			return err // names the HelmRelease and the field already
		}
		return fmt.Errorf("%s: %w", ref, denied(ctx, err))
	}
	if res.Action != string(helmspec.ActionUnchanged) {
		log.Info("ensured helm release", "release", klog.KObj(p.desired), "cluster", cluster, "action", res.Action, "revision", res.Revision)
	}
	return nil
}

// collectRelease collects a tracked Helm release: kept (strategy never or
// onAppDelete, keepLegacyResource), left installed (propagation orphan, or
// strategy never at app deletion), or uninstalled. The garbage-collect
// rules are matched against the HelmRelease last ensured (its labels, kind
// and release name).
func (k *Keeper) collectRelease(ctx context.Context, e v1beta1.ManagedResource, appDelete bool) (outcome, error) {
	ref := refString(e.ClusterObjectReference)
	log := logf.FromContext(ctx)
	switch k.judge(e, nil, appDelete).act {
	case gcKeep:
		return outKeep, nil
	case gcLeave:
		return outGone, nil
	case gcOrphan:
		log.Info("orphaned helm release", "release", klog.KRef(e.Namespace, e.Name), "cluster", e.Cluster)
		return outGone, nil
	}
	if k.releases == nil {
		return outPending, fmt.Errorf("uninstalling %s: %w", ref, ErrNoReleaseHandler)
	}
	if err := k.releases.Uninstall(ctx, normCluster(e.Cluster), e); err != nil {
		if k.leftOnGoneCluster(ctx, e, appDelete, err) {
			return outGone, nil
		}
		var no *helmspec.NotOwnedError
		if errors.As(err, &no) {
			// Someone else's now: dropped from our books, left installed.
			log.Info("left a helm release that is not ours", "release", klog.KRef(e.Namespace, e.Name), "cluster", e.Cluster, "reason", err.Error())
			return outGone, nil
		}
		return outPending, fmt.Errorf("uninstalling %s: %w", ref, denied(ctx, err))
	}
	log.Info("uninstalled helm release", "release", klog.KRef(e.Namespace, e.Name), "cluster", e.Cluster)
	return outGone, nil
}

// releaseVerdictOf decides what collecting the tracked release obj (the
// HelmRelease last ensured) does: gcKeep, gcLeave (strategy never at app
// deletion), gcOrphan (left installed) or gcDelete (uninstalled).
func (k *Keeper) releaseVerdictOf(obj *unstructured.Unstructured, appDelete bool) gcAct {
	rule := k.gcRule(obj)
	switch {
	case !appDelete && (rule.Strategy == GCNever || rule.Strategy == GCOnAppDelete ||
		(k.policies.GarbageCollect != nil && k.policies.GarbageCollect.KeepLegacyResource)):
		return gcKeep
	case appDelete && rule.Strategy == GCNever:
		return gcLeave
	case rule.Propagation == GCPropagationOrphan:
		return gcOrphan
	}
	return gcDelete
}

// trackedObject returns the object a tracker entry recorded, or (without
// data) one with the entry's identity and component label.
func trackedObject(e v1beta1.ManagedResource) *unstructured.Unstructured {
	if obj, err := decodeData(e.Data); err == nil {
		return obj
	}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(e.APIVersion)
	obj.SetKind(e.Kind)
	obj.SetNamespace(e.Namespace)
	obj.SetName(e.Name)
	if e.Component != "" {
		obj.SetLabels(map[string]string{v1beta1.LabelAppComponent: e.Component})
	}
	return obj
}

// ReleaseHandlerFns adapts functions to ReleaseHandler; a nil function
// does nothing and succeeds.
type ReleaseHandlerFns struct {
	EnsureFn    func(ctx context.Context, cluster, appNamespace string, obj *unstructured.Unstructured) (ReleaseResult, error)
	UninstallFn func(ctx context.Context, cluster string, tracked v1beta1.ManagedResource) error
	// OwnerFn nil: no release exists.
	OwnerFn func(ctx context.Context, cluster, namespace, name string) (helmspec.ReleaseOwner, error)
}

// Owner calls OwnerFn.
func (f ReleaseHandlerFns) Owner(ctx context.Context, cluster, namespace, name string) (helmspec.ReleaseOwner, error) {
	if f.OwnerFn == nil {
		return helmspec.ReleaseOwner{}, nil
	}
	return f.OwnerFn(ctx, cluster, namespace, name)
}

// Ensure calls EnsureFn.
func (f ReleaseHandlerFns) Ensure(ctx context.Context, cluster, appNamespace string, obj *unstructured.Unstructured) (ReleaseResult, error) {
	if f.EnsureFn == nil {
		return ReleaseResult{Action: string(helmspec.ActionUnchanged)}, nil
	}
	return f.EnsureFn(ctx, cluster, appNamespace, obj)
}

// Uninstall calls UninstallFn.
func (f ReleaseHandlerFns) Uninstall(ctx context.Context, cluster string, tracked v1beta1.ManagedResource) error {
	if f.UninstallFn == nil {
		return nil
	}
	return f.UninstallFn(ctx, cluster, tracked)
}
