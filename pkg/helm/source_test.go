package helm

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

func TestFetchRepository(t *testing.T) {
	repo := newRepoServer(t)
	repo.add(t, packageChart(t, "simple", "0.1.0"))
	repo.add(t, packageChart(t, "simple", "0.2.0"))
	repo.add(t, packageChart(t, "simple", "1.0.0"))
	direct := repo.add(t, packageChart(t, "required", ""))

	cases := []struct {
		reason      string
		spec        helmspec.ChartSpec
		wantVersion string
		wantErr     string
		notFound    bool
	}{
		{reason: "no version takes the highest", spec: helmspec.ChartSpec{Source: "simple", RepoURL: repo.URL}, wantVersion: "1.0.0"},
		{reason: "a constraint picks the highest match", spec: helmspec.ChartSpec{Source: "simple", RepoURL: repo.URL + "/", Version: "<1.0.0"}, wantVersion: "0.2.0"},
		{reason: "an exact version", spec: helmspec.ChartSpec{Source: "simple", RepoURL: repo.URL, Version: "0.1.0"}, wantVersion: "0.1.0"},
		{reason: "a typo'd chart name is not found", spec: helmspec.ChartSpec{Source: "simpel", RepoURL: repo.URL}, wantErr: `chart "simpel"`, notFound: true},
		{reason: "no matching version is not found", spec: helmspec.ChartSpec{Source: "simple", RepoURL: repo.URL, Version: ">=2"}, wantErr: "no version matching", notFound: true},
		{reason: "a repository without index.yaml", spec: helmspec.ChartSpec{Source: "simple", RepoURL: repo.URL + "/nothing"}, wantErr: "no index.yaml", notFound: true},
		{reason: "a direct .tgz URL", spec: helmspec.ChartSpec{Source: repo.URL + "/charts/" + direct}, wantVersion: "0.1.0"},
		{reason: "a direct URL that 404s", spec: helmspec.ChartSpec{Source: repo.URL + "/charts/gone-1.0.0.tgz"}, wantErr: "HTTP 404", notFound: true},
	}
	f := NewFetcher(nil)
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			ch, err := f.Fetch(context.Background(), "ns", tc.spec)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.Equal(t, tc.notFound, errorsIs(err, helmspec.ErrChartNotFound))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantVersion, ch.Chart.Metadata.Version)
			assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, ch.Digest)
		})
	}
}

func TestFetchCacheByDigest(t *testing.T) {
	repo := newRepoServer(t)
	file := repo.add(t, packageChart(t, "simple", ""))
	f := NewFetcher(nil, WithCache(NewCache(1<<20)))
	spec := helmspec.ChartSpec{Source: "simple", RepoURL: repo.URL}
	first, err := f.Fetch(context.Background(), "ns", spec)
	require.NoError(t, err)
	second, err := f.Fetch(context.Background(), "ns", spec)
	require.NoError(t, err)
	assert.Equal(t, first.Digest, second.Digest)
	assert.Equal(t, 2, repo.count("/index.yaml"), "the index is read each time")
	assert.Equal(t, 1, repo.count("/charts/"+file), "the archive comes from the cache the second time")
	assert.NotSame(t, first.Chart, second.Chart, "each fetch loads a fresh chart: Helm mutates charts")
}

func TestFetchDigestMismatch(t *testing.T) {
	repo := newRepoServer(t)
	file := repo.add(t, packageChart(t, "simple", ""))
	repo.mu.Lock()
	repo.charts[file] = packageChart(t, "required", "0.1.0") // served bytes differ from the indexed digest
	repo.mu.Unlock()
	_, err := NewFetcher(nil).Fetch(context.Background(), "ns", helmspec.ChartSpec{Source: "simple", RepoURL: repo.URL})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "index.yaml says")
}

func TestFetchArchiveTooLarge(t *testing.T) {
	repo := newRepoServer(t)
	file := repo.add(t, packageChart(t, "simple", ""))
	f := NewFetcher(nil, WithLimits(helmspec.Limits{MaxArchiveBytes: 64}))
	_, err := f.Fetch(context.Background(), "ns", helmspec.ChartSpec{Source: repo.URL + "/charts/" + file})
	require.ErrorIs(t, err, helmspec.ErrUnsafeChart)
}

func TestFetchBundled(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(root, "simple"), os.DirFS(testChartDir(t, "simple"))))
	require.NoError(t, os.WriteFile(filepath.Join(root, "packed.tgz"), packageChart(t, "required", ""), 0o600))
	require.NoError(t, os.CopyFS(filepath.Join(outside, "secret"), os.DirFS(testChartDir(t, "simple"))))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "escape")))
	// A chart that lists a dependency it does not vendor.
	nodeps := filepath.Join(root, "nodeps")
	require.NoError(t, os.MkdirAll(nodeps, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(nodeps, "Chart.yaml"), []byte(
		"apiVersion: v2\nname: nodeps\nversion: 0.1.0\ndependencies:\n- name: redis\n  version: 1.0.0\n  repository: https://charts.invalid\n"), 0o600))

	cases := []struct {
		reason   string
		root     string
		source   string
		wantName string
		wantErr  string
		unsafe   bool
		notFound bool
	}{
		{reason: "a folder under the root", root: root, source: "simple", wantName: "simple"},
		{reason: "a packaged chart under the root", root: root, source: "file://packed.tgz", wantName: "required"},
		{reason: "parent traversal is refused", root: root, source: "../" + filepath.Base(outside) + "/secret", wantErr: "stay inside the chart root", unsafe: true},
		{reason: "absolute paths are refused", root: root, source: filepath.Join(outside, "secret"), wantErr: "stay inside the chart root", unsafe: true},
		{reason: "a symlink leaving the root is refused", root: root, source: "escape", wantErr: "outside the chart root", unsafe: true},
		{reason: "missing", root: root, source: "nothing", wantErr: "chart not found", notFound: true},
		{reason: "bundled charts are disabled without a root", source: "simple", wantErr: "bundled charts are disabled"},
		{reason: "dependencies are never downloaded", root: root, source: "nodeps", wantErr: "never runs `helm dependency update`"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			var opts []FetcherOption
			if tc.root != "" {
				opts = append(opts, WithChartRoot(tc.root))
			}
			ch, err := NewFetcher(nil, opts...).Fetch(context.Background(), "ns", helmspec.ChartSpec{Source: tc.source})
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.Equal(t, tc.unsafe, errorsIs(err, helmspec.ErrUnsafeChart), "ErrUnsafeChart")
				assert.Equal(t, tc.notFound, errorsIs(err, helmspec.ErrChartNotFound), "ErrChartNotFound")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantName, ch.Chart.Name())
		})
	}
}

func TestFetchFolderDigestFollowsContent(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "c")
	require.NoError(t, os.CopyFS(dir, os.DirFS(testChartDir(t, "simple"))))
	f := NewFetcher(nil, WithChartRoot(root))
	a, err := f.Fetch(context.Background(), "ns", helmspec.ChartSpec{Source: "c"})
	require.NoError(t, err)
	b, err := f.Fetch(context.Background(), "ns", helmspec.ChartSpec{Source: "c"})
	require.NoError(t, err)
	assert.Equal(t, a.Digest, b.Digest)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "values.yaml"), []byte("message: changed\n"), 0o600))
	c, err := f.Fetch(context.Background(), "ns", helmspec.ChartSpec{Source: "c"})
	require.NoError(t, err)
	assert.NotEqual(t, a.Digest, c.Digest)
}

// TestPanicInFetchIsAnError: a panic anywhere under a Helm operation is
// returned as ErrHelmPanic, and the process carries on.
func TestPanicInFetchIsAnError(t *testing.T) {
	boom := helmspec.ChartFetcherFn(func(context.Context, string, helmspec.ChartSpec) (*helmspec.Chart, error) { panic("hostile chart") })
	c := NewClient(nil, boom, nil)
	req := helmspec.Request{Namespace: "ns", Spec: spec(t, map[string]any{"chart": map[string]any{"source": "x"}}, "web", "ns")}
	_, err := c.Template(context.Background(), req)
	require.ErrorIs(t, err, helmspec.ErrHelmPanic)
	assert.Contains(t, err.Error(), "hostile chart")
	h, err := c.Status(context.Background(), req)
	require.NoError(t, err)
	assert.False(t, h.Healthy)
	assert.Equal(t, helmspec.ReasonChartUnavailable, h.Reason)
}

func TestSafely(t *testing.T) {
	err := helmspec.Safely("op", func() error { var m map[string]int; m["x"] = 1; return nil }) //nolint:staticcheck // SA5000: the nil-map write is the panic under test
	require.ErrorIs(t, err, helmspec.ErrHelmPanic)
	assert.Contains(t, err.Error(), "op: helm panicked")
	require.NoError(t, helmspec.Safely("op", func() error { return nil }))
}
