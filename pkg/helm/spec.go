package helm

import (
	"context"

	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// The HelmRelease contract, spec types, bundled chart loading and
// client-side templating live in package helmspec, which links none of
// Helm's install, registry or repository code (the CLI uses it directly);
// these aliases keep this package's API whole.

// HelmRelease identity: see helmspec.
const (
	Group       = helmspec.Group
	APIVersion  = helmspec.APIVersion
	Kind        = helmspec.Kind
	LabelDigest = helmspec.LabelDigest
	// LabelOwnerName and LabelOwnerNamespace: see helmspec.
	LabelOwnerName      = helmspec.LabelOwnerName
	LabelOwnerNamespace = helmspec.LabelOwnerNamespace
)

// Spec types: see helmspec.
type (
	Spec               = helmspec.Spec
	Owner              = helmspec.Owner
	NotOwnedError      = helmspec.NotOwnedError
	ChartSpec          = helmspec.ChartSpec
	ChartAuth          = helmspec.ChartAuth
	SecretRef          = helmspec.SecretRef
	ReleaseSpec        = helmspec.ReleaseSpec
	ValuesFrom         = helmspec.ValuesFrom
	HealthCriterion    = helmspec.HealthCriterion
	CriterionResource  = helmspec.CriterionResource
	CriterionCondition = helmspec.CriterionCondition
	Options            = helmspec.Options
	Defaults           = helmspec.Defaults
	Limits             = helmspec.Limits
	Chart              = helmspec.Chart
	ChartFetcher       = helmspec.ChartFetcher
	ChartFetcherFn     = helmspec.ChartFetcherFn
	ChartError         = helmspec.ChartError
	RenderError        = helmspec.RenderError
	Request            = helmspec.Request
	ReleaseInfo        = helmspec.ReleaseInfo
	Health             = helmspec.Health
	ResourceHealth     = helmspec.ResourceHealth
	ResourceState      = helmspec.ResourceState
)

// Health reasons and resource states: see helmspec.
const (
	ReasonReady              = helmspec.ReasonReady
	ReasonChartUnavailable   = helmspec.ReasonChartUnavailable
	ReasonValuesUnavailable  = helmspec.ReasonValuesUnavailable
	ReasonReleaseNotFound    = helmspec.ReasonReleaseNotFound
	ReasonReleaseNotDeployed = helmspec.ReasonReleaseNotDeployed
	ReasonOutOfSync          = helmspec.ReasonOutOfSync
	ReasonResourcesNotReady  = helmspec.ReasonResourcesNotReady
	ReasonCriteriaNotMet     = helmspec.ReasonCriteriaNotMet

	StateReady    = helmspec.StateReady
	StateNotReady = helmspec.StateNotReady
	StateMissing  = helmspec.StateMissing
)

// Sentinel errors: see helmspec (the same values, so errors.Is works
// across both packages).
var (
	ErrChartNotFound = helmspec.ErrChartNotFound
	ErrUnsafeChart   = helmspec.ErrUnsafeChart
	ErrHelmPanic     = helmspec.ErrHelmPanic
)

// DefaultLimits are the archive limits used when a field is zero.
var DefaultLimits = helmspec.DefaultLimits

// IsHelmRelease is helmspec.IsHelmRelease.
func IsHelmRelease(obj *unstructured.Unstructured) bool { return helmspec.IsHelmRelease(obj) }

// SpecFromObject is helmspec.SpecFromObject.
func SpecFromObject(obj *unstructured.Unstructured, d Defaults) (*Spec, error) {
	return helmspec.SpecFromObject(obj, d)
}

// ParseSpec is helmspec.ParseSpec.
func ParseSpec(raw []byte, d Defaults) (*Spec, error) { return helmspec.ParseSpec(raw, d) }

// ParseSpecMap is helmspec.ParseSpecMap.
func ParseSpecMap(props map[string]any, d Defaults) (*Spec, error) {
	return helmspec.ParseSpecMap(props, d)
}

// ResolveValues is helmspec.ResolveValues.
func ResolveValues(ctx context.Context, r client.Reader, namespace string, spec *Spec) (map[string]any, error) {
	return helmspec.ResolveValues(ctx, r, namespace, spec)
}

// MergeValues is helmspec.MergeValues.
func MergeValues(base, override map[string]any) map[string]any {
	return helmspec.MergeValues(base, override)
}

// LoadArchive is helmspec.LoadArchive.
func LoadArchive(data []byte, limits Limits) (*chart.Chart, error) {
	return helmspec.LoadArchive(data, limits)
}

// LoadDir is helmspec.LoadDir.
func LoadDir(dir string, limits Limits) (*chart.Chart, error) { return helmspec.LoadDir(dir, limits) }
