package helm

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// Fetcher fetches charts from Helm repositories, URLs, OCI registries and a
// local chart root, through a digest-keyed Cache and the archive Limits.
// It never runs `helm dependency update`: a chart whose Chart.yaml lists a
// dependency missing from its charts/ folder is refused.
type Fetcher struct {
	secrets   client.Reader
	root      string
	cache     *Cache
	limits    helmspec.Limits
	transport http.RoundTripper
	plainHTTP bool
}

// FetcherOption configures NewFetcher.
type FetcherOption func(*Fetcher)

// WithChartRoot enables bundled charts: sources that are not URLs are paths
// under dir. Without it, such sources are refused.
func WithChartRoot(dir string) FetcherOption { return func(f *Fetcher) { f.root = dir } }

// WithCache sets the archive cache (default: DefaultCacheBytes).
func WithCache(c *Cache) FetcherOption { return func(f *Fetcher) { f.cache = c } }

// WithLimits sets the archive limits (zero fields take DefaultLimits).
func WithLimits(l helmspec.Limits) FetcherOption { return func(f *Fetcher) { f.limits = l } }

// WithTransport sets the base HTTP transport (an *http.Transport for TLS
// settings from auth Secrets to apply).
func WithTransport(rt http.RoundTripper) FetcherOption { return func(f *Fetcher) { f.transport = rt } }

// WithPlainHTTPRegistries talks plain HTTP to OCI registries (local
// development registries only; registries on a loopback address always
// are spoken to in plain HTTP, as Helm pulls from them).
func WithPlainHTTPRegistries() FetcherOption { return func(f *Fetcher) { f.plainHTTP = true } }

// NewFetcher returns a Fetcher reading auth Secrets through secrets (the
// hub's client).
func NewFetcher(secrets client.Reader, opts ...FetcherOption) *Fetcher {
	f := &Fetcher{secrets: secrets, cache: NewCache(DefaultCacheBytes), transport: http.DefaultTransport}
	for _, o := range opts {
		o(f)
	}
	f.limits = f.limits.WithDefaults()
	return f
}

const maxIndexBytes = 32 << 20

// Fetch implements ChartFetcher.
func (f *Fetcher) Fetch(ctx context.Context, namespace string, spec helmspec.ChartSpec) (*helmspec.Chart, error) {
	var ref *helmspec.SecretRef
	if spec.Auth != nil {
		ref = spec.Auth.SecretRef
	}
	creds, err := readCredentials(ctx, f.secrets, namespace, ref)
	if err != nil {
		return nil, err
	}
	var ch *helmspec.Chart
	switch {
	case strings.HasPrefix(spec.Source, "oci://"):
		ch, err = f.fetchOCI(spec.Source, spec.Version, creds)
	case strings.HasPrefix(spec.RepoURL, "oci://"):
		ch, err = f.fetchOCI(strings.TrimSuffix(spec.RepoURL, "/")+"/"+spec.Source, spec.Version, creds)
	case spec.RepoURL != "":
		ch, err = f.fetchRepo(ctx, spec.RepoURL, spec.Source, spec.Version, creds)
	case strings.HasPrefix(spec.Source, "http://") || strings.HasPrefix(spec.Source, "https://"):
		ch, err = f.fetchURL(ctx, spec.Source, creds)
	default:
		ch, err = f.fetchLocal(spec.Source)
	}
	if err != nil {
		return nil, err
	}
	if err := helmspec.CheckDependencies(ch); err != nil {
		return nil, err
	}
	return ch, nil
}

func (f *Fetcher) load(data []byte, digest, ref string) (*helmspec.Chart, error) {
	ch, err := helmspec.LoadArchive(data, f.limits)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", ref, err)
	}
	return &helmspec.Chart{Chart: ch, Digest: digest, Ref: ref}, nil
}

// get downloads u with creds (sent only when sendCreds) and at most max bytes.
func (f *Fetcher) get(ctx context.Context, u string, creds *credentials, sendCreds bool, max int64, what string) ([]byte, error) {
	hc, err := creds.httpClient(f.transport)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if sendCreds {
		creds.authorize(req)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, redactURLError(err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%s: %w (HTTP 404)", what, helmspec.ErrChartNotFound)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("%s: HTTP %d: check chart.auth.secretRef", what, resp.StatusCode)
	case resp.StatusCode/100 != 2:
		return nil, fmt.Errorf("%s: HTTP %d", what, resp.StatusCode)
	}
	if resp.ContentLength > max {
		return nil, helmspec.UnsafeChartf("%s is %d bytes, more than the limit of %d", what, resp.ContentLength, max)
	}
	return helmspec.ReadBounded(resp.Body, max, what)
}

// redactURLError drops credentials from URLs inside err's message.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			return fmt.Errorf("%s %s: %w", ue.Op, u.Redacted(), ue.Err)
		}
	}
	return err
}

func (f *Fetcher) fetchURL(ctx context.Context, u string, creds *credentials) (*helmspec.Chart, error) {
	ref := redacted(u)
	data, err := f.get(ctx, u, creds, true, f.limits.MaxArchiveBytes, "download chart "+ref)
	if err != nil {
		return nil, err
	}
	digest := helmspec.SHA256Digest(data)
	f.cache.Put(digest, data)
	return f.load(data, digest, ref)
}

func (f *Fetcher) fetchRepo(ctx context.Context, repoURL, name, version string, creds *credentials) (*helmspec.Chart, error) {
	base := strings.TrimSuffix(repoURL, "/")
	raw, err := f.get(ctx, base+"/index.yaml", creds, true, maxIndexBytes, "read index of repository "+redacted(base))
	if err != nil {
		if errors.Is(err, helmspec.ErrChartNotFound) {
			return nil, fmt.Errorf("repository %s has no index.yaml: %w", redacted(base), helmspec.ErrChartNotFound)
		}
		return nil, err
	}
	var idx repo.IndexFile
	if err := yaml.Unmarshal(raw, &idx); err != nil {
		return nil, fmt.Errorf("index.yaml of repository %s: %w", redacted(base), err)
	}
	idx.SortEntries()
	cv, err := idx.Get(name, version)
	if err != nil {
		if _, ok := idx.Entries[name]; !ok {
			return nil, fmt.Errorf("chart %q in repository %s: %w", name, redacted(base), helmspec.ErrChartNotFound)
		}
		return nil, fmt.Errorf("chart %q in repository %s has no version matching %q: %w", name, redacted(base), version, helmspec.ErrChartNotFound)
	}
	if len(cv.URLs) == 0 {
		return nil, fmt.Errorf("chart %s-%s in repository %s has no download URL", name, cv.Version, redacted(base))
	}
	ref := fmt.Sprintf("%s-%s from repository %s", name, cv.Version, redacted(base))
	var want string
	if cv.Digest != "" {
		want = "sha256:" + strings.TrimPrefix(cv.Digest, "sha256:")
		if data, ok := f.cache.Get(want); ok {
			return f.load(data, want, ref)
		}
	}
	chartURL, err := repo.ResolveReferenceURL(base+"/", cv.URLs[0])
	if err != nil {
		return nil, fmt.Errorf("chart %s: bad URL in index.yaml: %w", ref, err)
	}
	data, err := f.get(ctx, chartURL, creds, sameHost(base, chartURL), f.limits.MaxArchiveBytes, "download chart "+ref)
	if err != nil {
		return nil, err
	}
	digest := helmspec.SHA256Digest(data)
	if want != "" && digest != want {
		return nil, fmt.Errorf("chart %s: downloaded archive has digest %s but index.yaml says %s", ref, digest, want)
	}
	f.cache.Put(digest, data)
	return f.load(data, digest, ref)
}

// sameHost reports whether credentials for a may be sent to b (Helm's
// default: only to the repository's own host).
func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && ua.Host == ub.Host
}

func redacted(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "<invalid URL>"
	}
	return p.Redacted()
}

func (f *Fetcher) fetchOCI(source, version string, creds *credentials) (*helmspec.Chart, error) {
	ref := strings.TrimPrefix(source, "oci://")
	if strings.Contains(ref[strings.LastIndex(ref, "/")+1:], ":") || strings.Contains(ref, "@") {
		return nil, fmt.Errorf("chart.source %s: put the tag in chart.version, not in the reference", redacted(source))
	}
	rc, cleanup, err := f.registryClient(ref, creds)
	if err != nil {
		return nil, err
	}
	defer cleanup()

	tag := version
	if _, err := semver.StrictNewVersion(version); err != nil || version == "" {
		tag, err = pickTag(rc, ref, version)
		if err != nil {
			return nil, err
		}
	}
	full := ref + ":" + strings.ReplaceAll(tag, "+", "_")
	var res *registry.PullResult
	err = helmspec.Safely("pull chart", func() error {
		var perr error
		res, perr = rc.Pull(full, registry.PullOptWithChart(true), registry.PullOptIgnoreMissingProv(true))
		return perr
	})
	if err != nil {
		if looksNotFound(err) {
			return nil, fmt.Errorf("pull oci://%s: %w", full, helmspec.ErrChartNotFound)
		}
		return nil, fmt.Errorf("pull oci://%s: %w", full, err)
	}
	if res.Chart == nil || int64(res.Chart.Size) > f.limits.MaxArchiveBytes {
		return nil, helmspec.UnsafeChartf("oci://%s: chart layer missing or larger than %d bytes", full, f.limits.MaxArchiveBytes)
	}
	data := res.Chart.Data
	digest := helmspec.SHA256Digest(data)
	f.cache.Put(digest, data)
	return f.load(data, digest, "oci://"+full)
}

// looksNotFound recognises a registry's "no such repository/tag" answer
// in the untyped errors of Helm's registry client.
func looksNotFound(err error) bool {
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"not found", "status code 404", "name unknown", "manifest unknown"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// pickTag lists the registry's semver tags and returns the highest that
// satisfies constraint ("" = any).
func pickTag(rc *registry.Client, ref, constraint string) (string, error) {
	var tags []string
	err := helmspec.Safely("list tags", func() error {
		var terr error
		tags, terr = rc.Tags(ref)
		return terr
	})
	if err != nil {
		if looksNotFound(err) {
			return "", fmt.Errorf("list tags of oci://%s: %w", ref, helmspec.ErrChartNotFound)
		}
		return "", fmt.Errorf("list tags of oci://%s: %w", ref, err)
	}
	if constraint == "" {
		constraint = "*"
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return "", fmt.Errorf("chart.version %q: %w", constraint, err)
	}
	for _, t := range tags { // sorted highest first
		if v, err := semver.NewVersion(t); err == nil && c.Check(v) {
			return t, nil
		}
	}
	return "", fmt.Errorf("oci://%s has no tag matching %q: %w", ref, constraint, helmspec.ErrChartNotFound)
}

// registryClient returns a Helm registry client for ref with creds in a
// private, temporary credentials file (removed by cleanup).
func (f *Fetcher) registryClient(ref string, creds *credentials) (*registry.Client, func(), error) {
	dir, err := os.MkdirTemp("", "oamflow-helm-registry-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	credFile := filepath.Join(dir, "config.json")
	host, _, _ := strings.Cut(ref, "/")
	entry := map[string]string{}
	switch {
	case creds == nil:
	case creds.token != "":
		entry["identitytoken"] = creds.token
	case creds.username != "":
		entry["auth"] = base64.StdEncoding.EncodeToString([]byte(creds.username + ":" + creds.password))
	}
	cfg, _ := json.Marshal(map[string]any{"auths": map[string]any{host: entry}})
	if err := os.WriteFile(credFile, cfg, 0o600); err != nil {
		cleanup()
		return nil, nil, err
	}
	hc, err := creds.httpClient(f.transport)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	opts := []registry.ClientOption{
		registry.ClientOptCredentialsFile(credFile),
		registry.ClientOptHTTPClient(hc),
		registry.ClientOptWriter(io.Discard),
	}
	if f.plainHTTP || isLoopback(host) {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	rc, err := registry.NewClient(opts...)
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("registry client: %w", err)
	}
	return rc, cleanup, nil
}

// isLoopback reports whether a registry host[:port] is localhost or a
// loopback address. Helm's pulls (containerd's resolver) always speak plain
// HTTP to such hosts, so its other registry calls must too: otherwise
// listing tags (a version constraint or "latest") fails over HTTPS where
// an exact version works.
func isLoopback(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

func (f *Fetcher) fetchLocal(source string) (*helmspec.Chart, error) {
	return helmspec.LoadBundled(f.root, source, f.limits)
}
