package helmspec

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIsRemote(t *testing.T) {
	cases := []struct {
		reason string
		spec   ChartSpec
		want   bool
	}{
		{reason: "a relative path is bundled", spec: ChartSpec{Source: "simple"}},
		{reason: "file:// is bundled", spec: ChartSpec{Source: "file://charts/simple"}},
		{reason: "a repoURL makes any source remote", spec: ChartSpec{Source: "simple", RepoURL: "https://charts.example.com"}, want: true},
		{reason: "an oci:// reference is remote", spec: ChartSpec{Source: "oci://r.example.com/c/simple"}, want: true},
		{reason: "an http URL is remote", spec: ChartSpec{Source: "http://example.com/simple-1.0.0.tgz"}, want: true},
		{reason: "an https URL is remote", spec: ChartSpec{Source: "https://example.com/simple-1.0.0.tgz"}, want: true},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, IsRemote(tc.spec))
		})
	}
}

func writeChart(t *testing.T, dir, chartYAML string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "templates"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte(chartYAML), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "templates", "cm.yaml"),
		[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}'}\n"), 0o644))
}

func TestBundledCharts(t *testing.T) {
	root := t.TempDir()
	writeChart(t, filepath.Join(root, "ok"), "apiVersion: v2\nname: ok\nversion: 1.0.0\n")
	writeChart(t, filepath.Join(root, "needs-dep"), "apiVersion: v2\nname: needs-dep\nversion: 1.0.0\ndependencies:\n- {name: redis, version: 1.0.0, repository: https://charts.example.com}\n")
	cases := []struct {
		reason  string
		root    string
		spec    ChartSpec
		wantErr string
		wantIs  error
	}{
		{reason: "a folder under the root loads", root: root, spec: ChartSpec{Source: "ok"}},
		{reason: "a remote source is refused, never fetched", root: root, spec: ChartSpec{Source: "oci://r.example.com/ok"}, wantErr: "is remote"},
		{reason: "a missing path is not found", root: root, spec: ChartSpec{Source: "nope"}, wantIs: ErrChartNotFound},
		{reason: "a path leaving the root is unsafe", root: root, spec: ChartSpec{Source: "../x"}, wantIs: ErrUnsafeChart},
		{reason: "without a root nothing is bundled", spec: ChartSpec{Source: "ok"}, wantErr: "no chart root configured"},
		{reason: "a dependency missing from charts/ is refused", root: root, spec: ChartSpec{Source: "needs-dep"}, wantErr: "missing in charts/ directory: redis"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			ch, err := BundledCharts{Root: tc.root}.Fetch(context.Background(), "default", tc.spec)
			switch {
			case tc.wantIs != nil:
				require.ErrorIs(t, err, tc.wantIs)
			case tc.wantErr != "":
				require.ErrorContains(t, err, tc.wantErr)
			default:
				require.NoError(t, err)
				assert.Equal(t, "bundled:"+tc.spec.Source, ch.Ref)
				assert.Regexp(t, "^sha256:[0-9a-f]{64}$", ch.Digest)
			}
		})
	}
}

func TestTemplateBundled(t *testing.T) {
	root := t.TempDir()
	writeChart(t, filepath.Join(root, "ok"), "apiVersion: v2\nname: ok\nversion: 1.0.0\n")
	s, err := ParseSpecMap(map[string]any{"chart": map[string]any{"source": "ok"}}, Defaults{Name: "web", Namespace: "shop"})
	require.NoError(t, err)
	objs, err := Template(context.Background(), BundledCharts{Root: root}, nil, Request{Namespace: "shop", Spec: s})
	require.NoError(t, err)
	require.Len(t, objs, 1)
	assert.Equal(t, "web", objs[0].GetName())
	assert.Equal(t, "ConfigMap", objs[0].GetKind())
}
