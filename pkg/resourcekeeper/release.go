package resourcekeeper

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/helm"
)

// ReleaseHandler installs, upgrades and uninstalls the Helm releases behind
// virtual HelmRelease objects (helm.IsHelmRelease), which are never applied
// to a cluster (routing contract: package helm's documentation).
// NewHelmReleases adapts a *helm.Client.
type ReleaseHandler interface {
	// Ensure brings the release described by obj (a rendered HelmRelease,
	// metadata.name/namespace = release name/namespace) to its desired state
	// on cluster ("" = hub). appNamespace is the Application's namespace,
	// the only one auth Secrets and valuesFrom objects are read from. It
	// must write nothing when the release is already in the desired state.
	// Errors about the object itself (bad spec, chart not found, unsafe
	// chart) should satisfy apierrors.IsInvalid so that they are terminal.
	Ensure(ctx context.Context, cluster, appNamespace string, obj *unstructured.Unstructured) (ReleaseResult, error)
	// Uninstall removes the release a tracker entry records (Namespace and
	// Name are the release's; Data is the HelmRelease last ensured, or nil).
	// A release that does not exist is not an error.
	Uninstall(ctx context.Context, cluster string, tracked v1beta1.ManagedResource) error
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
	return e.APIVersion == helm.APIVersion && e.Kind == helm.Kind
}

// planRelease prepares a virtual HelmRelease: our ownership labels, the
// release name and namespace from its spec (defaults: the component name
// and the Application's namespace) as its identity, and the action to hand
// it to the ReleaseHandler. A read-only HelmRelease is neither tracked nor
// ensured. There is no live object to read, so ownership, sharing,
// apply-once and resource-update rules do not apply.
func (k *Keeper) planRelease(cluster string, obj *unstructured.Unstructured) (*plan, error) {
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
	spec, err := helm.SpecFromObject(d, releaseDefaults(d, k.appNamespace))
	if err != nil {
		return nil, invalidRelease(d, err)
	}
	d.SetName(spec.Release.Name)
	d.SetNamespace(spec.Release.Namespace)
	p := &plan{desired: d}
	if k.policies.readOnly(d) {
		return p, nil
	}
	p.tracked = d.DeepCopy()
	p.action = actRelease
	return p, nil
}

// releaseDefaults are the defaults of a rendered HelmRelease: its
// component's name (else its metadata.name) and the Application's namespace.
func releaseDefaults(obj *unstructured.Unstructured, appNamespace string) helm.Defaults {
	name := obj.GetLabels()[v1beta1.LabelAppComponent]
	if name == "" {
		name = obj.GetName()
	}
	return helm.Defaults{Name: name, Namespace: appNamespace}
}

// ensureRelease hands a planned HelmRelease to the ReleaseHandler.
func (k *Keeper) ensureRelease(ctx context.Context, cluster string, p *plan) error {
	ref := refString(refOf(cluster, p.desired))
	res, err := k.releases.Ensure(ctx, normCluster(cluster), k.appNamespace, p.desired)
	log := ctrl.LoggerFrom(ctx)
	if res.Recovery != "" {
		log.Info("recovered a helm release", "release", klog.KObj(p.desired), "cluster", cluster, "recovery", res.Recovery)
	}
	if err != nil {
		if apierrors.IsInvalid(err) {
			return err // names the HelmRelease and the field already
		}
		return fmt.Errorf("%s: %w", ref, err)
	}
	if res.Action != string(helm.ActionUnchanged) {
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
	log := ctrl.LoggerFrom(ctx)
	obj := trackedObject(e)
	rule := k.gcRule(obj)
	if !appDelete && (rule.Strategy == GCNever || rule.Strategy == GCOnAppDelete ||
		(k.policies.GarbageCollect != nil && k.policies.GarbageCollect.KeepLegacyResource)) {
		return outKeep, nil
	}
	if appDelete && rule.Strategy == GCNever {
		return outGone, nil
	}
	if rule.Propagation == GCPropagationOrphan {
		log.Info("orphaned helm release", "release", klog.KRef(e.Namespace, e.Name), "cluster", e.Cluster)
		return outGone, nil
	}
	if k.releases == nil {
		return outPending, fmt.Errorf("uninstalling %s: %w", ref, ErrNoReleaseHandler)
	}
	if err := k.releases.Uninstall(ctx, normCluster(e.Cluster), e); err != nil {
		return outPending, fmt.Errorf("uninstalling %s: %w", ref, err)
	}
	log.Info("uninstalled helm release", "release", klog.KRef(e.Namespace, e.Name), "cluster", e.Cluster)
	return outGone, nil
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
}

// Ensure calls EnsureFn.
func (f ReleaseHandlerFns) Ensure(ctx context.Context, cluster, appNamespace string, obj *unstructured.Unstructured) (ReleaseResult, error) {
	if f.EnsureFn == nil {
		return ReleaseResult{Action: string(helm.ActionUnchanged)}, nil
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
