package helmspec

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Desired is the fetched chart and merged values of a Request: what a
// release should be at.
type Desired struct {
	Chart *Chart
	// Values are the merged values with subchart nulls applied (a copy:
	// Helm may mutate it).
	Values map[string]any
	// Digest is ReleaseDigest of the chart, release and merged values.
	Digest string
}

// Prepare fetches req's chart through charts (a panic inside becomes
// ErrHelmPanic; every fetch failure is wrapped in *ChartError) and
// resolves its values through reader (ResolveValues).
func Prepare(ctx context.Context, charts ChartFetcher, reader client.Reader, req Request) (*Desired, error) {
	if req.Spec == nil {
		return nil, errors.New("helm request has no spec")
	}
	var ch *Chart
	err := Safely("fetch chart", func() error {
		var ferr error
		ch, ferr = charts.Fetch(ctx, req.Namespace, req.Spec.Chart)
		return ferr
	})
	if err != nil {
		return nil, &ChartError{Err: err}
	}
	vals, err := ResolveValues(ctx, reader, req.Namespace, req.Spec)
	if err != nil {
		return nil, err
	}
	d, err := ReleaseDigest(ch.Digest, req.Spec.Release.Name, req.Spec.Release.Namespace, vals)
	if err != nil {
		return nil, err
	}
	vals = CopyValues(vals)
	ApplyNulls(ch.Chart, vals)
	return &Desired{Chart: ch, Values: vals, Digest: d}, nil
}

// Template renders req's chart client-side (`helm template`: no cluster
// access, Helm's default capabilities) and returns the manifest objects
// in manifest order, then hooks (unless skipHooks; test hooks unless
// skipTests is false). CRDs from crds/ come first unless skipped. Chart
// fetch failures wrap *ChartError.
func Template(ctx context.Context, charts ChartFetcher, reader client.Reader, req Request) ([]*unstructured.Unstructured, error) {
	d, err := Prepare(ctx, charts, reader, req)
	if err != nil {
		return nil, err
	}
	return RenderChart(req.Spec, d)
}

// RenderChart renders d as a first install of release s.Release
// (revision 1) would be rendered by Helm's install action in client-only
// dry-run mode, using only Helm's chartutil, engine and releaseutil:
// release name check, dependency conditions/import-values, values schema
// validation, kubeVersion check, templates rendered without cluster
// lookups, manifests sorted in Helm's install order, NOTES.txt dropped.
// The objects are returned as Template describes. A chart that does not
// render with these values gives an error wrapping *RenderError.
func RenderChart(s *Spec, d *Desired) ([]*unstructured.Unstructured, error) {
	var manifest string
	var hooks []*release.Hook
	err := Safely("helm template", func() error {
		var rerr error
		manifest, hooks, rerr = renderChart(s, d)
		return rerr
	})
	if err != nil {
		if !errors.Is(err, ErrHelmPanic) {
			// Client-side: no cluster is involved, so every failure here
			// comes from the chart and its values.
			err = &RenderError{Err: err}
		}
		return nil, fmt.Errorf("render chart %s: %w", d.Chart.Ref, err)
	}
	objs, err := ParseManifest(manifest)
	if err != nil {
		return nil, fmt.Errorf("render chart %s: %w", d.Chart.Ref, err)
	}
	if s.Options.SkipHooks {
		return objs, nil
	}
	for _, h := range hooks {
		if s.Options.EffectiveSkipTests() && isTestHook(h) {
			continue
		}
		hs, err := ParseManifest(h.Manifest)
		if err != nil {
			return nil, fmt.Errorf("render chart %s hook %s: %w", d.Chart.Ref, h.Path, err)
		}
		objs = append(objs, hs...)
	}
	return objs, nil
}

// renderChart returns the manifest (CRDs first unless skipped, then the
// sorted manifests, each as "---\n# Source: <file>\n<content>\n") and the
// sorted hooks.
func renderChart(s *Spec, d *Desired) (string, []*release.Hook, error) {
	ch, vals := d.Chart.Chart, d.Values
	if err := chartutil.ValidateReleaseName(s.Release.Name); err != nil {
		return "", nil, fmt.Errorf("release name %q: %w", s.Release.Name, err)
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return "", nil, err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	opts := chartutil.ReleaseOptions{Name: s.Release.Name, Namespace: s.Release.Namespace, Revision: 1, IsInstall: true}
	top, err := chartutil.ToRenderValues(ch, vals, opts, caps)
	if err != nil {
		return "", nil, err
	}
	if ch.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return "", nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", ch.Metadata.KubeVersion, caps.KubeVersion.String())
	}
	var e engine.Engine
	files, err := e.Render(ch, top)
	if err != nil {
		return "", nil, err
	}
	for k := range files {
		if strings.HasSuffix(k, "NOTES.txt") {
			delete(files, k)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return "", nil, err
	}
	var b strings.Builder
	if !s.Options.EffectiveSkipCRDs() {
		for _, crd := range ch.CRDObjects() {
			fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", crd.Filename, string(crd.File.Data))
		}
	}
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	return b.String(), hooks, nil
}

func isTestHook(h *release.Hook) bool {
	for _, e := range h.Events {
		if e == release.HookTest {
			return true
		}
	}
	return false
}
