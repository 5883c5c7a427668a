package helmspec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/oamflow/oamflow/pkg/errclass"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
)

// ErrChartNotFound marks a chart (or chart version) that its source does
// not have: a 404, a name missing from index.yaml, no tag matching the
// version constraint, a missing bundled path.
var ErrChartNotFound = errclass.Sentinel("chart not found")

// Chart is a loaded chart with the digest of its content.
type Chart struct {
	// Chart is freshly loaded for each Fetch: callers may let Helm mutate it.
	Chart *chart.Chart
	// Digest is "sha256:<hex>" of the archive (or, for a bundled folder, of
	// its files in path order).
	Digest string
	// Ref describes the source without credentials, for messages.
	Ref string
}

// ChartFetcher fetches charts. BundledCharts reads them from a local root;
// helm.Fetcher (package pkg/helm) also fetches remote ones.
type ChartFetcher interface {
	// Fetch returns the chart spec names; namespace is the application's
	// namespace (where spec.Auth.SecretRef is read). Errors wrap
	// ErrChartNotFound or ErrUnsafeChart where those apply.
	Fetch(ctx context.Context, namespace string, spec ChartSpec) (*Chart, error)
}

// ChartFetcherFn adapts a function to ChartFetcher.
type ChartFetcherFn func(ctx context.Context, namespace string, spec ChartSpec) (*Chart, error)

// Fetch calls fn.
func (fn ChartFetcherFn) Fetch(ctx context.Context, namespace string, spec ChartSpec) (*Chart, error) {
	return fn(ctx, namespace, spec)
}

// ChartError wraps a failure to fetch or load the chart of a Request
// (not found, unreachable, refused by a guard, bad credentials). A
// release whose chart fails this way is never healthy.
type ChartError struct{ Err error }

func (e *ChartError) Error() string { return e.Err.Error() }
func (e *ChartError) Unwrap() error { return e.Err }

// IsRemote reports whether spec names a chart that must be downloaded: a
// chart.repoURL, or a source that is an oci://, http:// or https:// URL.
// Any other source is a path under a chart root (BundledCharts).
func IsRemote(spec ChartSpec) bool {
	s := spec.Source
	return spec.RepoURL != "" || strings.HasPrefix(s, "oci://") ||
		strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// BundledCharts fetches charts from a local folder only: chart.source is a
// path (optionally prefixed with file://) of a chart folder or .tgz archive
// under Root; remote sources (IsRemote) are refused. It needs none of
// Helm's download, registry or install code. chart.auth is not read (a
// bundled chart needs no credentials).
type BundledCharts struct {
	// Root is the chart root; "" refuses every source.
	Root string
	// Limits guard archive and folder loading (zero fields take
	// DefaultLimits).
	Limits Limits
}

// Fetch implements ChartFetcher. Errors wrap ErrChartNotFound (missing
// path) or ErrUnsafeChart (absolute path, a path leaving Root, limits).
func (b BundledCharts) Fetch(_ context.Context, _ string, spec ChartSpec) (*Chart, error) {
	if IsRemote(spec) {
		return nil, fmt.Errorf("chart %q is remote: only bundled charts (paths under the chart root) are read here", spec.Source)
	}
	ch, err := LoadBundled(b.Root, spec.Source, b.Limits)
	if err != nil {
		return nil, err
	}
	if err := CheckDependencies(ch); err != nil {
		return nil, err
	}
	return ch, nil
}

// CheckDependencies fails when a dependency listed in ch's Chart.yaml is
// not vendored in its charts/ folder (the same rule as Helm's install,
// which oamflow never lets run `helm dependency update`).
func CheckDependencies(ch *Chart) error {
	var missing []string
	have := map[string]bool{}
	for _, d := range ch.Chart.Dependencies() {
		have[d.Name()] = true
	}
	for _, r := range ch.Chart.Metadata.Dependencies {
		if !have[r.Name] {
			missing = append(missing, r.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("chart %s: found in Chart.yaml, but missing in charts/ directory: %s (oamflow never runs `helm dependency update`: vendor subcharts into charts/)",
			ch.Ref, strings.Join(missing, ", "))
	}
	return nil
}

// LoadBundled loads the chart at source under root: a folder (LoadDir;
// digest of its files) or an archive (LoadArchive; digest of its bytes).
// source must be relative and stay inside root after resolving links.
// Ref is "bundled:<source>".
func LoadBundled(root, source string, limits Limits) (*Chart, error) {
	limits = limits.WithDefaults()
	if root == "" {
		return nil, fmt.Errorf("chart.source %q is not a URL and bundled charts are disabled (no chart root configured): use an oci:// reference, an http(s) URL, or chart.repoURL", source)
	}
	src := strings.TrimPrefix(source, "file://")
	if filepath.IsAbs(src) || !filepath.IsLocal(filepath.FromSlash(src)) {
		return nil, UnsafeChartf("chart.source %q: bundled chart paths must be relative and stay inside the chart root", source)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("chart root: %w", err)
	}
	p := filepath.Join(realRoot, filepath.FromSlash(src))
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("bundled chart %q: %w", source, ErrChartNotFound)
		}
		return nil, fmt.Errorf("bundled chart %q: %w", source, err)
	}
	if rel, err := filepath.Rel(realRoot, real); err != nil || !filepath.IsLocal(rel) {
		return nil, UnsafeChartf("chart.source %q resolves outside the chart root", source)
	}
	info, err := os.Stat(real)
	if err != nil {
		return nil, err
	}
	ref := "bundled:" + filepath.ToSlash(src)
	if !info.IsDir() {
		fh, err := os.Open(real)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		data, err := ReadBounded(fh, limits.MaxArchiveBytes, "bundled chart "+src)
		if err != nil {
			return nil, err
		}
		ch, err := LoadArchive(data, limits)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", ref, err)
		}
		return &Chart{Chart: ch, Digest: SHA256Digest(data), Ref: ref}, nil
	}
	ch, err := LoadDir(real, limits)
	if err != nil {
		return nil, fmt.Errorf("bundled chart %q: %w", source, err)
	}
	return &Chart{Chart: ch, Digest: filesDigest(ch), Ref: ref}, nil
}

// SHA256Digest returns "sha256:<hex>" of data.
func SHA256Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// filesDigest hashes a loaded chart's files (name and content, sorted by
// name), including subcharts', for charts loaded from a folder.
func filesDigest(ch *chart.Chart) string {
	h := sha256.New()
	var walk func(prefix string, c *chart.Chart)
	walk = func(prefix string, c *chart.Chart) {
		files := append([]*chart.File(nil), c.Raw...)
		sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
		for _, f := range files {
			fmt.Fprintf(h, "%s%s\x00%d\x00", prefix, f.Name, len(f.Data))
			h.Write(f.Data)
		}
		for _, d := range c.Dependencies() {
			walk(prefix+"charts/"+d.Name()+"/", d)
		}
	}
	walk("", ch)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
