package health

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// ReasonHelmNotConfigured is the reason of a HelmRelease judged without a
// ReleaseChecker.
const ReasonHelmNotConfigured = "HelmNotConfigured"

// ReleaseChecker judges virtual HelmRelease objects (helmspec.IsHelmRelease),
// which no API server serves: their health is that of the Helm release
// they stand for. NewHelmReleases adapts a *helm.Client.
type ReleaseChecker interface {
	// ReleaseHealth returns the health of the release rendered as obj on
	// cluster ("" = hub); appNamespace is the Application's namespace. An
	// unhealthy release (chart not found included) is not an error: errors
	// are failures to read the cluster.
	ReleaseHealth(ctx context.Context, cluster, appNamespace string, obj *unstructured.Unstructured) (ReleaseHealth, error)
}

// ReleaseCheckerFn adapts a function to ReleaseChecker.
type ReleaseCheckerFn func(ctx context.Context, cluster, appNamespace string, obj *unstructured.Unstructured) (ReleaseHealth, error)

// ReleaseHealth calls fn.
func (fn ReleaseCheckerFn) ReleaseHealth(ctx context.Context, cluster, appNamespace string, obj *unstructured.Unstructured) (ReleaseHealth, error) {
	return fn(ctx, cluster, appNamespace, obj)
}

// ReleaseHealth is the health of one Helm release.
type ReleaseHealth struct {
	Healthy bool
	// Reason is a CamelCase word, e.g. helmspec.ReasonReady, helmspec.ReasonChartUnavailable.
	Reason string
	// Message is "release R revision N, chart C-V: N/M resources ready", or
	// what went wrong before resources could be counted.
	Message string
	// Details group the resources not ready and MISSING by kind (see
	// helmspec.Health.Details); nil when all are ready.
	Details map[string]string
	// Name and Namespace of the release; Revision, Status, Chart,
	// ChartVersion and AppVersion of its newest revision (zero when none).
	Name, Namespace                         string
	Revision                                int
	Status, Chart, ChartVersion, AppVersion string
	// Ready of Total manifest resources are ready.
	Ready, Total int
}

// Fetcher reads the live counterparts of rendered objects. A virtual
// HelmRelease has none: Fetch asks Releases instead and returns, as its
// live object, the rendered HelmRelease with a status describing the
// release (see releaseStatus), which Check and Evaluate judge (and CUE
// status and workflow outputs may read).
type Fetcher struct {
	// Releases judges HelmRelease objects; nil makes them unhealthy with
	// reason HelmNotConfigured.
	Releases ReleaseChecker
	// Cluster is where the objects are ("" = hub).
	Cluster string
	// AppNamespace is the Application's namespace.
	AppNamespace string
}

// Fetch reads the live counterpart of rendered through r (see Fetcher); a
// missing object is returned with Live nil and no error.
func (f Fetcher) Fetch(ctx context.Context, r client.Reader, rendered *unstructured.Unstructured) (Object, error) {
	if !helmspec.IsHelmRelease(rendered) {
		return fetchObject(ctx, r, rendered)
	}
	rh := ReleaseHealth{
		Reason:  ReasonHelmNotConfigured,
		Message: "helm components need the controller's Helm support, which is not configured",
		Name:    rendered.GetName(), Namespace: rendered.GetNamespace(),
	}
	if f.Releases != nil {
		var err error
		rh, err = f.Releases.ReleaseHealth(ctx, f.Cluster, f.AppNamespace, rendered)
		if err != nil {
			return Object{}, fmt.Errorf("reading Helm release %s/%s: %w", rendered.GetNamespace(), rendered.GetName(), err)
		}
	}
	live := rendered.DeepCopy()
	if rh.Name != "" {
		live.SetName(rh.Name)
	}
	if rh.Namespace != "" {
		live.SetNamespace(rh.Namespace)
	}
	live.Object["status"] = releaseStatus(rh)
	return Object{Kind: live.GetKind(), Namespace: live.GetNamespace(), Name: live.GetName(), Live: live}, nil
}

// releaseStatus is the status of a synthetic live HelmRelease:
//
//	healthy: bool, reason, message, details: {Kind: "..."} (when any),
//	release: {name, namespace, revision, status, chart, chartVersion, appVersion},
//	resources: {ready, total}
func releaseStatus(rh ReleaseHealth) map[string]any {
	st := map[string]any{
		"healthy": rh.Healthy,
		"reason":  rh.Reason,
		"message": rh.Message,
		"release": map[string]any{
			"name": rh.Name, "namespace": rh.Namespace, "revision": int64(rh.Revision), "status": rh.Status,
			"chart": rh.Chart, "chartVersion": rh.ChartVersion, "appVersion": rh.AppVersion,
		},
		"resources": map[string]any{"ready": int64(rh.Ready), "total": int64(rh.Total)},
	}
	if len(rh.Details) > 0 {
		d := make(map[string]any, len(rh.Details))
		for k, v := range rh.Details {
			d[k] = v
		}
		st["details"] = d
	}
	return st
}

// checkHelmRelease judges a live HelmRelease by the status Fetcher wrote;
// without one it is unhealthy (never healthy by default).
func checkHelmRelease(obj *unstructured.Unstructured, _ *status.Result) Result {
	healthy, found, _ := unstructured.NestedBool(obj.Object, "status", "healthy")
	if !found {
		return Result{Reason: ReasonUnknown, Message: "no Helm release status: read HelmRelease objects with a health.Fetcher"}
	}
	r := Result{Healthy: healthy, Reason: nestedString(obj, "status", "reason"), Message: nestedString(obj, "status", "message")}
	if r.Reason == "" {
		r.Reason = ReasonUnknown
		if healthy {
			r.Reason = ReasonHealthy
		}
	}
	return r
}

// releaseDetails returns status.details of a live HelmRelease.
func releaseDetails(obj *unstructured.Unstructured) map[string]string {
	d, _, _ := unstructured.NestedStringMap(obj.Object, "status", "details")
	if len(d) == 0 {
		return nil
	}
	return d
}

// mergeDetails adds src to dst (allocating it when nil).
func mergeDetails(dst, src map[string]string) map[string]string {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = map[string]string{}
	}
	maps.Copy(dst, src)
	return dst
}
