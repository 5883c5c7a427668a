package resourcekeeper

import (
	"context"
	"encoding/json"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// NewHelmReleases returns the ReleaseHandler backed by a Helm client
// (normally *helm.Client): Ensure parses the HelmRelease spec
// (helmspec.SpecFromObject) and calls Client.Ensure, which installs, upgrades,
// or does nothing when chart digest, merged values and release name are
// unchanged; Uninstall calls Client.Uninstall with the options last
// ensured. An invalid spec, a chart its source does not have
// (helmspec.ErrChartNotFound) and a chart refused by a guard
// (helmspec.ErrUnsafeChart) give errors for which apierrors.IsInvalid is true
// (and errors.Is still finds the helm error), so that a workflow step fails
// at once instead of retrying the same spec.
//
// With WithReleaseEvents, the Application owning the HelmRelease (its
// app.oam.dev/name and app.oam.dev/namespace labels) gets a Warning Event
// (reason EventReasonReleaseFailed) when an install or upgrade fails, and
// a Normal Event (EventReasonReleaseRecovered) when a failed or stuck
// release was repaired.
func NewHelmReleases(c helmspec.Releases, opts ...HelmReleasesOption) ReleaseHandler {
	h := helmReleases{c: c}
	for _, o := range opts {
		o(&h)
	}
	return h
}

// HelmReleasesOption configures NewHelmReleases.
type HelmReleasesOption func(*helmReleases)

// WithReleaseEvents records Events about releases on their Application
// through rec; apps (a cached client is fine) gives the Application's UID
// so that `kubectl describe application` shows them.
func WithReleaseEvents(rec record.EventRecorder, apps client.Reader) HelmReleasesOption {
	return func(h *helmReleases) { h.events, h.apps = rec, apps }
}

// Event reasons recorded on the Application (WithReleaseEvents).
const (
	EventReasonReleaseFailed    = "HelmReleaseFailed"
	EventReasonReleaseRecovered = "HelmReleaseRecovered"
)

type helmReleases struct {
	c      helmspec.Releases
	events record.EventRecorder
	apps   client.Reader
}

func (h helmReleases) Ensure(ctx context.Context, cluster, appNamespace string, obj *unstructured.Unstructured) (ReleaseResult, error) {
	spec, err := helmspec.SpecFromObject(obj, releaseDefaults(obj, appNamespace))
	if err != nil {
		return ReleaseResult{}, invalidRelease(obj, err)
	}
	owner := appOwner(obj)
	res, err := h.c.Ensure(ctx, helmspec.Request{Cluster: cluster, Namespace: appNamespace, Spec: spec, Owner: &owner})
	out := ReleaseResult{Action: string(res.Action), Revision: res.Release.Revision, Recovery: res.Recovery, RetryAfter: res.RetryAfter}
	h.record(ctx, obj, cluster, spec, res, err)
	if errors.Is(err, helmspec.ErrChartNotFound) || errors.Is(err, helmspec.ErrUnsafeChart) {
		err = invalidRelease(obj, err)
	}
	return out, err
}

// record emits the Events of one Ensure: a repair (even if the operation
// after it failed), then a failure. Another operation holding the release
// is no failure. Messages come from package helm, which keeps credentials
// out of them.
func (h helmReleases) record(ctx context.Context, obj *unstructured.Unstructured, cluster string, spec *helmspec.Spec, res helmspec.Result, err error) {
	if h.events == nil || (res.Recovery == "" && (err == nil || errors.Is(err, helmspec.ErrOperationInProgress))) {
		return
	}
	app := h.application(ctx, obj)
	if app == nil {
		return
	}
	where := ""
	if c := normCluster(cluster); c != "" {
		where = " in cluster " + c
	}
	if res.Recovery != "" {
		h.events.Eventf(app, corev1.EventTypeNormal, EventReasonReleaseRecovered, "%s%s", res.Recovery, where)
	}
	if err != nil && !errors.Is(err, helmspec.ErrOperationInProgress) {
		h.events.Eventf(app, corev1.EventTypeWarning, EventReasonReleaseFailed, "helm release %s/%s%s: %v", spec.Release.Namespace, spec.Release.Name, where, err)
	}
}

// application returns the Application owning obj (from its labels), read
// through apps for its UID, or a bare reference when it cannot be read;
// nil when obj carries no owner labels.
func (h helmReleases) application(ctx context.Context, obj *unstructured.Unstructured) *v1beta1.Application {
	labels := obj.GetLabels()
	name, ns := labels[v1beta1.LabelAppName], labels[v1beta1.LabelAppNamespace]
	if name == "" || ns == "" {
		return nil
	}
	app := &v1beta1.Application{}
	if h.apps != nil && h.apps.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, app) == nil {
		return app
	}
	app = &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	app.SetGroupVersionKind(v1beta1.GroupVersion.WithKind("Application"))
	return app
}

// Uninstall uninstalls the tracked release only while it is the tracking
// Application's (the owner its HelmRelease recorded): helm.Client's
// UninstallOwned returns a *helmspec.NotOwnedError otherwise.
func (h helmReleases) Uninstall(ctx context.Context, cluster string, tracked v1beta1.ManagedResource) error {
	_, err := h.c.UninstallOwned(ctx, cluster, tracked.Namespace, tracked.Name, appOwner(trackedObject(tracked)), trackedOptions(tracked))
	return err
}

func (h helmReleases) Owner(ctx context.Context, cluster, namespace, name string) (helmspec.ReleaseOwner, error) {
	return h.c.Owner(ctx, cluster, namespace, name)
}

// appOwner is the Application a HelmRelease object's labels name.
func appOwner(obj *unstructured.Unstructured) helmspec.Owner {
	l := obj.GetLabels()
	return helmspec.Owner{Name: l[v1beta1.LabelAppName], Namespace: l[v1beta1.LabelAppNamespace]}
}

// trackedOptions returns spec.options of the HelmRelease a tracker entry
// recorded; defaults when there is none or it cannot be read (the release
// must be uninstallable whatever its spec became).
func trackedOptions(e v1beta1.ManagedResource) helmspec.Options {
	var opts helmspec.Options
	obj, err := decodeData(e.Data)
	if err != nil {
		return opts
	}
	raw, ok, err := unstructured.NestedMap(obj.Object, "spec", "options")
	if !ok || err != nil {
		return opts
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return opts
	}
	if err := json.Unmarshal(b, &opts); err != nil {
		return helmspec.Options{}
	}
	return opts
}

// invalidReleaseError is an error about a HelmRelease object that retrying
// cannot fix (Terminal, package errclass). It words the original error,
// which it wraps, as an Invalid API status naming the field at fault, as the
// API server words an invalid object.
type invalidReleaseError struct {
	status *apierrors.StatusError
	err    error
}

func (e *invalidReleaseError) Error() string         { return e.status.Error() }
func (e *invalidReleaseError) Unwrap() error         { return e.err }
func (e *invalidReleaseError) Status() metav1.Status { return e.status.Status() }
func (e *invalidReleaseError) Terminal() bool        { return true }

// invalidRelease wraps err (a spec error with field paths, or a chart
// error) as an Invalid error naming obj and the field at fault, e.g.
// `HelmRelease.helm.oamflow.dev "web" is invalid: spec.chart.source:
// Invalid value: "simpel": bundled chart "simpel": chart not found`.
func invalidRelease(obj *unstructured.Unstructured, err error) error {
	var list field.ErrorList
	chart := field.NewPath("spec", "chart")
	switch {
	case errors.Is(err, helmspec.ErrChartNotFound):
		source, _, _ := unstructured.NestedString(obj.Object, "spec", "chart", "source")
		list = append(list, field.Invalid(chart.Child("source"), source, err.Error()))
	case errors.Is(err, helmspec.ErrUnsafeChart):
		list = append(list, field.Forbidden(chart, err.Error()))
	default:
		var errs []error
		var agg utilerrors.Aggregate
		if errors.As(err, &agg) {
			errs = agg.Errors()
		} else {
			errs = []error{err}
		}
		for _, e := range errs {
			var fe *field.Error
			if errors.As(e, &fe) {
				list = append(list, fe)
				continue
			}
			list = append(list, &field.Error{Type: field.ErrorTypeInvalid, Field: "spec", BadValue: field.OmitValueType{}, Detail: e.Error()})
		}
	}
	status := apierrors.NewInvalid(schema.GroupKind{Group: helmspec.Group, Kind: helmspec.Kind}, obj.GetName(), list)
	return &invalidReleaseError{status: status, err: err}
}
