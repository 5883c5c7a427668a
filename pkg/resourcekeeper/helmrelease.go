package resourcekeeper

import (
	"context"
	"encoding/json"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/helm"
)

// HelmClient is the part of *helm.Client that NewHelmReleases uses.
type HelmClient interface {
	Ensure(ctx context.Context, req helm.Request) (helm.Result, error)
	Uninstall(ctx context.Context, cluster, namespace, name string, opts helm.Options) (helm.Result, error)
}

// NewHelmReleases returns the ReleaseHandler backed by a Helm client
// (normally *helm.Client): Ensure parses the HelmRelease spec
// (helm.SpecFromObject) and calls Client.Ensure, which installs, upgrades,
// or does nothing when chart digest, merged values and release name are
// unchanged; Uninstall calls Client.Uninstall with the options last
// ensured. An invalid spec, a chart its source does not have
// (helm.ErrChartNotFound) and a chart refused by a guard
// (helm.ErrUnsafeChart) give errors for which apierrors.IsInvalid is true
// (and errors.Is still finds the helm error), so that a workflow step fails
// at once instead of retrying the same spec.
func NewHelmReleases(c HelmClient) ReleaseHandler { return helmReleases{c: c} }

type helmReleases struct{ c HelmClient }

func (h helmReleases) Ensure(ctx context.Context, cluster, appNamespace string, obj *unstructured.Unstructured) (ReleaseResult, error) {
	spec, err := helm.SpecFromObject(obj, releaseDefaults(obj, appNamespace))
	if err != nil {
		return ReleaseResult{}, invalidRelease(obj, err)
	}
	res, err := h.c.Ensure(ctx, helm.Request{Cluster: cluster, Namespace: appNamespace, Spec: spec})
	out := ReleaseResult{Action: string(res.Action), Revision: res.Release.Revision, Recovery: res.Recovery, RetryAfter: res.RetryAfter}
	if errors.Is(err, helm.ErrChartNotFound) || errors.Is(err, helm.ErrUnsafeChart) {
		err = invalidRelease(obj, err)
	}
	return out, err
}

func (h helmReleases) Uninstall(ctx context.Context, cluster string, tracked v1beta1.ManagedResource) error {
	_, err := h.c.Uninstall(ctx, cluster, tracked.Namespace, tracked.Name, trackedOptions(tracked))
	return err
}

// trackedOptions returns spec.options of the HelmRelease a tracker entry
// recorded; defaults when there is none or it cannot be read (the release
// must be uninstallable whatever its spec became).
func trackedOptions(e v1beta1.ManagedResource) helm.Options {
	var opts helm.Options
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
		return helm.Options{}
	}
	return opts
}

// invalidReleaseError is an error about a HelmRelease object that retrying
// cannot fix. It carries an Invalid API status (apierrors.IsInvalid, which
// the workflow treats as terminal) and wraps the original error.
type invalidReleaseError struct {
	status *apierrors.StatusError
	err    error
}

func (e *invalidReleaseError) Error() string         { return e.status.Error() }
func (e *invalidReleaseError) Unwrap() error         { return e.err }
func (e *invalidReleaseError) Status() metav1.Status { return e.status.Status() }

// invalidRelease wraps err (a spec error with field paths, or a chart
// error) as an Invalid error naming obj and the field at fault, e.g.
// `HelmRelease.helm.oamflow.dev "web" is invalid: spec.chart.source:
// Invalid value: "simpel": bundled chart "simpel": chart not found`.
func invalidRelease(obj *unstructured.Unstructured, err error) error {
	var list field.ErrorList
	chart := field.NewPath("spec", "chart")
	switch {
	case errors.Is(err, helm.ErrChartNotFound):
		source, _, _ := unstructured.NestedString(obj.Object, "spec", "chart", "source")
		list = append(list, field.Invalid(chart.Child("source"), source, err.Error()))
	case errors.Is(err, helm.ErrUnsafeChart):
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
	status := apierrors.NewInvalid(schema.GroupKind{Group: helm.Group, Kind: helm.Kind}, obj.GetName(), list)
	return &invalidReleaseError{status: status, err: err}
}
