package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/render"
)

// helmTemplater renders the virtual HelmRelease objects of helm/helmchart
// components for dry-run as `helm template` would (helmspec.Template: no
// cluster access, default capabilities). Only charts on disk are
// rendered: a chart.source that is a path is read under the chart root;
// remote sources (repoURL, http(s), oci://) are not fetched and the
// HelmRelease is printed as is, with a warning. It uses package helmspec
// only, so the CLI links none of Helm's install, registry, repository or
// lint code (cmd/oamflow's TestLeanImportGraph).
type helmTemplater struct {
	charts helmspec.ChartFetcher
	values client.Reader
}

// newHelmTemplater reads bundled/local charts under chartRoot; valuesFrom
// ConfigMaps/Secrets and auth Secrets are read through values (nil: such
// references fail with a user error).
func newHelmTemplater(chartRoot string, values client.Reader) *helmTemplater {
	if values == nil {
		values = offlineReader{}
	}
	return &helmTemplater{charts: helmspec.BundledCharts{Root: chartRoot}, values: values}
}

// expand replaces each HelmRelease in res by the objects its chart renders
// (in manifest order, then hooks), attributed to the same component.
// appNamespace is the Application's namespace. Spec and chart errors are
// the user's.
func (h *helmTemplater) expand(ctx context.Context, appNamespace string, res []render.Resource, errOut io.Writer) ([]render.Resource, error) {
	if h == nil {
		return res, nil
	}
	out := make([]render.Resource, 0, len(res))
	for _, r := range res {
		if r.Reference || !helmspec.IsHelmRelease(r.Object) {
			out = append(out, r)
			continue
		}
		spec, err := helmspec.SpecFromObject(r.Object, helmspec.Defaults{Name: r.Component, Namespace: appNamespace})
		if err != nil {
			return nil, userErrorf("component %s: %v", r.Component, err)
		}
		if helmspec.IsRemote(spec.Chart) {
			fmt.Fprintf(errOut, "Warning: component %s: chart %q is remote and not fetched by dry-run; printing the HelmRelease instead of the chart's objects\n", r.Component, spec.Chart.Source)
			out = append(out, r)
			continue
		}
		objs, err := helmspec.Template(ctx, h.charts, h.values, helmspec.Request{Namespace: appNamespace, Spec: spec})
		if err != nil {
			var ce *helmspec.ChartError
			if errors.As(err, &ce) || errors.Is(err, errOffline) {
				return nil, userErrorf("component %s: %v", r.Component, err)
			}
			return nil, fmt.Errorf("component %s: %w", r.Component, err)
		}
		for _, o := range objs {
			out = append(out, render.Resource{Component: r.Component, Trait: r.Trait, Output: r.Output,
				Cluster: r.Cluster, Namespace: o.GetNamespace(), Object: o})
		}
	}
	return out, nil
}

var errOffline = errors.New("dry-run reads no cluster objects (valuesFrom, chart.auth)")

// offlineReader fails every read.
type offlineReader struct{}

func (offlineReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	return fmt.Errorf("reading %T %s: %w", obj, key, errOffline)
}

func (offlineReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	return fmt.Errorf("listing %T: %w", list, errOffline)
}
