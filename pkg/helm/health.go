package helm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

func unhealthy(reason, format string, args ...any) helmspec.Health {
	return helmspec.Health{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Status returns the health of req's release. It fetches the chart and
// values (through the cache) so that an unavailable chart or values source
// makes the release unhealthy with the reason, and a release deployed at
// another digest is reported OutOfSync. The error is for failures to read
// the cluster, not for unhealthy releases.
func (c *Client) Status(ctx context.Context, req helmspec.Request) (helmspec.Health, error) {
	d, err := c.prepare(ctx, req)
	if err != nil {
		reason := helmspec.ReasonValuesUnavailable
		if isChartError(err) {
			reason = helmspec.ReasonChartUnavailable
		}
		h := unhealthy(reason, "%v", err)
		h.Release = helmspec.ReleaseInfo{Name: req.Spec.Release.Name, Namespace: req.Spec.Release.Namespace}
		return h, nil
	}
	h, err := c.StatusRelease(ctx, req.Cluster, req.Spec.Release.Namespace, req.Spec.Release.Name, req.Spec.HealthStatus)
	if err != nil || h.Reason == helmspec.ReasonReleaseNotFound || h.Reason == helmspec.ReasonReleaseNotDeployed {
		return h, err
	}
	if h.Release.Digest != d.Digest {
		h.Healthy = false
		h.Reason = helmspec.ReasonOutOfSync
		h.Message += "; chart or values changed since this revision, upgrade pending"
	}
	return h, nil
}

// isChartError reports whether err came from fetching or loading the chart.
func isChartError(err error) bool {
	var ce *helmspec.ChartError
	return errors.As(err, &ce)
}

// StatusRelease returns the health of a stored release without fetching
// its chart: deployed, and every manifest resource ready by kstatus (or
// every criterion holding when criteria are given).
func (c *Client) StatusRelease(ctx context.Context, cluster, namespace, name string, criteria []helmspec.HealthCriterion) (helmspec.Health, error) {
	cfg, err := c.config(ctx, cluster, namespace)
	if err != nil {
		return helmspec.Health{}, err
	}
	cur, err := last(cfg, name)
	if err != nil {
		return helmspec.Health{}, err
	}
	if cur == nil {
		h := unhealthy(helmspec.ReasonReleaseNotFound, "release %s/%s not found", namespace, name)
		h.Release = helmspec.ReleaseInfo{Name: name, Namespace: namespace}
		return h, nil
	}
	info := infoOf(cur)
	if cur.Info.Status != release.StatusDeployed {
		h := unhealthy(helmspec.ReasonReleaseNotDeployed, "release %s revision %d, chart %s-%s: %s: %s",
			name, cur.Version, info.Chart, info.ChartVersion, cur.Info.Status, cur.Info.Description)
		h.Release = info
		return h, nil
	}
	h, err := releaseHealth(ctx, cfg, cur, criteria)
	h.Release = info
	return h, err
}

func releaseHealth(ctx context.Context, cfg *action.Configuration, rel *release.Release, criteria []helmspec.HealthCriterion) (helmspec.Health, error) {
	objs, err := helmspec.ParseManifest(rel.Manifest)
	if err != nil {
		return helmspec.Health{}, fmt.Errorf("release %s/%s manifest: %w", rel.Namespace, rel.Name, err)
	}
	rc, err := cfg.RESTClientGetter.ToRESTConfig()
	if err != nil {
		return helmspec.Health{}, err
	}
	mapper, err := cfg.RESTClientGetter.ToRESTMapper()
	if err != nil {
		return helmspec.Health{}, err
	}
	dc, err := dynamic.NewForConfig(rc)
	if err != nil {
		return helmspec.Health{}, err
	}
	live := make([]*unstructured.Unstructured, len(objs))
	h := helmspec.Health{Total: len(objs)}
	for i, o := range objs {
		rh := helmspec.ResourceHealth{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName(), Namespace: o.GetNamespace()}
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			if meta.IsNoMatchError(err) {
				rh.State, rh.Message = helmspec.StateMissing, "kind not served by the cluster"
				h.Resources = append(h.Resources, rh)
				continue
			}
			return helmspec.Health{}, fmt.Errorf("map %s: %w", gvk, err)
		}
		var ri dynamic.ResourceInterface = dc.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			if rh.Namespace == "" {
				rh.Namespace = rel.Namespace
			}
			ri = dc.Resource(m.Resource).Namespace(rh.Namespace)
		} else {
			rh.Namespace = ""
		}
		obj, err := ri.Get(ctx, rh.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			rh.State = helmspec.StateMissing
		case err != nil:
			return helmspec.Health{}, fmt.Errorf("read %s %s/%s: %w", rh.Kind, rh.Namespace, rh.Name, err)
		default:
			live[i] = obj
			ok, msg, err := ResourceReady(obj)
			if err != nil {
				return helmspec.Health{}, err
			}
			if ok {
				rh.State = helmspec.StateReady
				h.Ready++
			} else {
				rh.State, rh.Message = helmspec.StateNotReady, msg
			}
		}
		h.Resources = append(h.Resources, rh)
	}
	h.Message = fmt.Sprintf("release %s revision %d, chart %s-%s: %d/%d resources ready",
		rel.Name, rel.Version, rel.Chart.Metadata.Name, rel.Chart.Metadata.Version, h.Ready, h.Total)
	if len(criteria) > 0 {
		failed := unmetCriteria(objs, live, criteria)
		h.Healthy = len(failed) == 0
		h.Reason = helmspec.ReasonReady
		if !h.Healthy {
			h.Reason = helmspec.ReasonCriteriaNotMet
			h.Message += "; healthStatus not met: " + strings.Join(failed, ", ")
		}
		return h, nil
	}
	h.Healthy = h.Ready == h.Total
	h.Reason = helmspec.ReasonReady
	if !h.Healthy {
		h.Reason = helmspec.ReasonResourcesNotReady
	}
	return h, nil
}

// ResourceReady reports whether obj is ready by kstatus (status Current):
// Deployments available and updated, StatefulSets rolled out (honouring a
// partition), DaemonSets scheduled and ready, Jobs complete, PVCs bound,
// resources with a Ready condition ready (kstatus calls a running Job
// Current; here a Job must have Complete=True), others present. msg is kstatus's
// explanation when not ready.
func ResourceReady(obj *unstructured.Unstructured) (ready bool, msg string, err error) {
	err = helmspec.Safely("kstatus", func() error {
		res, cerr := status.Compute(obj)
		if cerr != nil {
			return fmt.Errorf("compute status of %s %s: %w", obj.GetKind(), obj.GetName(), cerr)
		}
		ready = res.Status == status.CurrentStatus
		// kstatus calls a running Job Current; a release is ready only
		// when its Jobs have completed.
		if ready && obj.GroupVersionKind().GroupKind() == (schema.GroupKind{Group: "batch", Kind: "Job"}) &&
			!hasCondition(obj, "Complete", "True") {
			ready = false
			msg = "Job not complete: " + res.Message
			return nil
		}
		if !ready {
			msg = res.Message
			if msg == "" {
				msg = res.Status.String()
			}
		}
		return nil
	})
	return ready, msg, err
}

// unmetCriteria returns a description of each criterion that does not hold.
func unmetCriteria(objs, live []*unstructured.Unstructured, criteria []helmspec.HealthCriterion) []string {
	var failed []string
	for _, c := range criteria {
		desc := c.Resource.Kind
		if c.Resource.Name != "" {
			desc += "/" + c.Resource.Name
		}
		desc += " " + c.Condition.Type + "=" + c.Condition.Status
		idx := -1
		for i, o := range objs {
			if o.GetKind() == c.Resource.Kind && (c.Resource.Name == "" || o.GetName() == c.Resource.Name) {
				idx = i
				break
			}
		}
		if idx < 0 || live[idx] == nil {
			failed = append(failed, desc+" (resource not found)")
			continue
		}
		if !hasCondition(live[idx], c.Condition.Type, c.Condition.Status) {
			failed = append(failed, desc)
		}
	}
	return failed
}

func hasCondition(obj *unstructured.Unstructured, typ, want string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ && m["status"] == want {
			return true
		}
	}
	return false
}
