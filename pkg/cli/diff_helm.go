package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// helmHookAnnotation marks a chart's hook objects: Helm keeps them out of
// a release's manifest, so they are not compared.
const helmHookAnnotation = "helm.sh/hook"

// helmDiff compares the Helm release of a virtual HelmRelease (rendered
// from its chart and values as `helm template` would, with helmspec) with
// the manifest of the live release's record on the target cluster c.
// valuesFrom objects are read from the hub. It fills od and returns the
// reference the release is tracked under.
func (o *diffOptions) helmDiff(ctx context.Context, c client.Client, hub client.Reader, app, appNamespace, cluster string, it diffItem, od *diffEntry) (common.ClusterObjectReference, error) {
	spec, err := helmspec.SpecFromObject(it.obj, helmspec.Defaults{Name: it.component, Namespace: appNamespace})
	if err != nil {
		return common.ClusterObjectReference{}, userErrorf("component %s: %v", it.component, err)
	}
	od.Namespace, od.Name = spec.Release.Namespace, spec.Release.Name
	ref := common.ClusterObjectReference{Cluster: cluster, APIVersion: it.obj.GetAPIVersion(), Kind: it.obj.GetKind(),
		Namespace: spec.Release.Namespace, Name: spec.Release.Name}
	list := &corev1.SecretList{}
	if err := c.List(ctx, list, client.InNamespace(spec.Release.Namespace),
		client.MatchingLabels(helmspec.RecordLabels(spec.Release.Name))); err != nil {
		return ref, fmt.Errorf("listing the records of Helm release %s/%s: %w", spec.Release.Namespace, spec.Release.Name, err)
	}
	var hr *helmspec.ReleaseRecord
	if rec := helmspec.LatestRecord(list.Items); rec != nil {
		if owner := helmspec.OwnerOf(rec.Labels); !owner.IsZero() && owner.String() != appNamespace+"/"+app {
			od.Action, od.Owner = actionConflict, owner.String()
			od.Message = fmt.Sprintf("Helm release %s/%s belongs to Application %s", spec.Release.Namespace, spec.Release.Name, owner)
			return ref, nil
		}
		if hr, err = helmspec.DecodeRecord(rec); err != nil {
			return ref, err
		}
	}
	var charts helmspec.ChartFetcher = helmspec.BundledCharts{Root: o.chartRoot}
	remote := ""
	if helmspec.IsRemote(spec.Chart) {
		ch, why := recordChart(spec.Chart, hr)
		if ch == nil {
			od.Action, od.Message = actionNotCompared, fmt.Sprintf("chart %q is remote and diff fetches no chart: %s", spec.Chart.Source, why)
			return ref, nil
		}
		charts = helmspec.ChartFetcherFn(func(context.Context, string, helmspec.ChartSpec) (*helmspec.Chart, error) {
			return &helmspec.Chart{Chart: ch, Digest: "release-record", Ref: spec.Chart.Source}, nil
		})
		remote = fmt.Sprintf(" (chart %s-%s, as the live release's record keeps it)", ch.Metadata.Name, ch.Metadata.Version)
	}
	objs, err := helmspec.Template(ctx, charts, hub, helmspec.Request{Namespace: appNamespace, Spec: spec})
	if err != nil {
		var ce *helmspec.ChartError
		var re *helmspec.RenderError
		if errors.As(err, &ce) || errors.As(err, &re) {
			return ref, userErrorf("component %s: %v", it.component, err)
		}
		return ref, fmt.Errorf("component %s: %w", it.component, err)
	}
	if hr == nil {
		od.Action = actionCreate
		od.Diff = prefixLines(manifestText(objs), "+ ")
		return ref, nil
	}
	live, err := helmspec.ParseManifest(hr.Manifest)
	if err != nil {
		return ref, fmt.Errorf("manifest of Helm release %s/%s revision %d: %w", spec.Release.Namespace, spec.Release.Name, hr.Version, err)
	}
	liveText, desiredText := manifestPair(live, objs)
	if d := unifiedText(liveText, desiredText, fmt.Sprintf("release revision %d", hr.Version), "after upgrade"); d != "" {
		od.Action, od.Diff = actionUpdate, d
		od.Message = fmt.Sprintf("Helm release %s/%s: manifest of revision %d against the chart rendered with the new values%s", spec.Release.Namespace, spec.Release.Name, hr.Version, remote)
		return ref, nil
	}
	od.Action = actionUnchanged
	return ref, nil
}

// recordChart is the chart of the live release hr when it is the one the
// remote chart spec names — the same chart name and exactly its version —
// and whole (Helm's record keeps no subcharts); else nil and why not. The
// controller fetches the same chart then: diff renders it from the record
// instead of from the repository.
func recordChart(spec helmspec.ChartSpec, hr *helmspec.ReleaseRecord) (*chart.Chart, string) {
	if hr == nil {
		return nil, "no live release to take it from"
	}
	if hr.Chart == nil || hr.Chart.Metadata == nil {
		return nil, "the live release's record holds no chart"
	}
	md := hr.Chart.Metadata
	name := spec.Source
	if strings.HasPrefix(name, "oci://") {
		name = name[strings.LastIndex(name, "/")+1:]
	}
	switch {
	case spec.RepoURL == "" && !strings.HasPrefix(spec.Source, "oci://"):
		return nil, "a chart URL names no chart version to check the live release's against"
	case name != md.Name:
		return nil, fmt.Sprintf("the live release runs chart %s-%s, not %s", md.Name, md.Version, name)
	case strings.TrimPrefix(spec.Version, "v") != strings.TrimPrefix(md.Version, "v"):
		return nil, fmt.Sprintf("version %q is resolved when the controller installs; only an exact version equal to the live release's (%s-%s) is compared", spec.Version, md.Name, md.Version)
	case len(md.Dependencies) > 0:
		return nil, fmt.Sprintf("chart %s-%s has subcharts, which Helm's release record does not keep", md.Name, md.Version)
	}
	return hr.Chart, ""
}

// manifestKey identifies an object of a chart's manifest.
func manifestKey(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetKind() + " " + o.GetName()
	}
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// manifestPair prints both manifests in one order (by kind, namespace,
// name), hooks left out, Secret data masked pairwise.
func manifestPair(live, desired []*unstructured.Unstructured) (string, string) {
	lm := map[string]map[string]any{}
	for _, o := range live {
		if o.GetAnnotations()[helmHookAnnotation] == "" {
			lm[manifestKey(o)] = o.DeepCopy().Object
		}
	}
	dm := map[string]map[string]any{}
	for _, o := range desired {
		if o.GetAnnotations()[helmHookAnnotation] == "" {
			dm[manifestKey(o)] = o.DeepCopy().Object
		}
	}
	for k, d := range dm {
		if isSecret(&unstructured.Unstructured{Object: d}) {
			maskSecretData(lm[k], d)
		}
	}
	for k, l := range lm {
		if _, ok := dm[k]; !ok && isSecret(&unstructured.Unstructured{Object: l}) {
			maskSecretData(l, nil)
		}
	}
	return joinManifest(lm), joinManifest(dm)
}

// manifestText prints objs (hooks left out, Secret data masked) as one
// manifest in a stable order.
func manifestText(objs []*unstructured.Unstructured) string {
	_, d := manifestPair(nil, objs)
	return d
}

func joinManifest(m map[string]map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		y, err := yaml.Marshal(m[k])
		if err != nil {
			y = []byte(fmt.Sprintf("# cannot print: %v\n", err))
		}
		fmt.Fprintf(&b, "---\n# %s\n%s", k, y)
	}
	return b.String()
}

func prefixLines(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(prefix + l + "\n")
	}
	return b.String()
}
