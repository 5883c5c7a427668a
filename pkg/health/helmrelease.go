package health

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// ReasonInvalidRelease is the reason of a HelmRelease whose spec does not
// parse.
const ReasonInvalidRelease = "InvalidRelease"

// NewHelmReleases returns the ReleaseChecker backed by a Helm client
// (normally *helm.Client): the HelmRelease spec is parsed
// (helmspec.SpecFromObject; release name defaults to the component, namespace
// to the Application's) and helm.Client.Status judges the release: healthy
// when deployed at the desired chart and values and every manifest
// resource is ready by kstatus (or every healthStatus criterion holds). A
// chart that cannot be found or fetched, values that cannot be read, a
// missing or failed release, and a spec that does not parse are unhealthy
// with the reason.
func NewHelmReleases(c helmspec.Releases) ReleaseChecker { return helmReleases{c: c} }

type helmReleases struct{ c helmspec.Releases }

func (h helmReleases) ReleaseHealth(ctx context.Context, cluster, appNamespace string, obj *unstructured.Unstructured) (ReleaseHealth, error) {
	name := obj.GetLabels()[v1beta1.LabelAppComponent]
	if name == "" {
		name = obj.GetName()
	}
	spec, err := helmspec.SpecFromObject(obj, helmspec.Defaults{Name: name, Namespace: appNamespace})
	if err != nil {
		return ReleaseHealth{Reason: ReasonInvalidRelease, Message: err.Error(), Name: obj.GetName(), Namespace: obj.GetNamespace()}, nil
	}
	hh, err := h.c.Status(ctx, helmspec.Request{Cluster: cluster, Namespace: appNamespace, Spec: spec})
	if err != nil {
		return ReleaseHealth{}, err
	}
	rh := ReleaseHealth{
		Healthy: hh.Healthy, Reason: hh.Reason, Message: hh.Message, Details: hh.Details(),
		Name: hh.Release.Name, Namespace: hh.Release.Namespace, Revision: hh.Release.Revision, Status: hh.Release.Status,
		Chart: hh.Release.Chart, ChartVersion: hh.Release.ChartVersion, AppVersion: hh.Release.AppVersion,
		Ready: hh.Ready, Total: hh.Total,
	}
	if rh.Name == "" {
		rh.Name, rh.Namespace = spec.Release.Name, spec.Release.Namespace
	}
	return rh, nil
}
