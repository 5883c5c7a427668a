package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// entry is one crafted tar entry.
type entry struct {
	name     string
	body     string
	typeflag byte
	link     string
}

const validChartYAML = "apiVersion: v2\nname: crafted\nversion: 0.1.0\n"

// craft builds a gzip'd tar from entries, exactly as given (no checks).
func craft(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		tf := e.typeflag
		if tf == 0 {
			tf = tar.TypeReg
		}
		hdr := &tar.Header{Name: e.name, Typeflag: tf, Mode: 0o644, Linkname: e.link}
		if tf == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		require.NoError(t, tw.WriteHeader(hdr))
		if tf == tar.TypeReg {
			_, err := tw.Write([]byte(e.body))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

func TestLoadArchiveGuards(t *testing.T) {
	chartYAML := entry{name: "crafted/Chart.yaml", body: validChartYAML}
	many := []entry{chartYAML}
	for i := 0; i < 12; i++ {
		many = append(many, entry{name: "crafted/templates/f" + string(rune('a'+i)) + ".yaml", body: "# x\n"})
	}
	small := helmspec.Limits{MaxArchiveBytes: 1 << 20, MaxFiles: 10, MaxDecompressedBytes: 64 << 10, MaxFileBytes: 48 << 10}
	cases := []struct {
		reason  string
		data    []byte
		limits  helmspec.Limits
		wantErr string // "" = loads
		unsafe  bool
	}{
		{reason: "a well-formed chart loads", data: craft(t, chartYAML, entry{name: "crafted/values.yaml", body: "a: 1\n"})},
		{reason: "the real test chart loads", data: packageChart(t, "simple", "")},
		{reason: "compressed size over the limit", data: craft(t, chartYAML, entry{name: "crafted/values.yaml", body: strings.Repeat("a", 4096)}),
			limits: helmspec.Limits{MaxArchiveBytes: 100}, wantErr: "more than the limit", unsafe: true},
		{reason: "too many files", data: craft(t, many...), limits: small, wantErr: "more than 10 files", unsafe: true},
		{reason: "one file decompresses past the per-file limit (gzip bomb)", data: craft(t, chartYAML, entry{name: "crafted/values.yaml", body: strings.Repeat("0", 60<<10)}),
			limits: small, wantErr: "more than the limit of 49152", unsafe: true},
		{reason: "files together decompress past the total limit", data: craft(t, chartYAML,
			entry{name: "crafted/a.yaml", body: strings.Repeat("0", 40<<10)}, entry{name: "crafted/b.yaml", body: strings.Repeat("0", 40<<10)}),
			limits: small, wantErr: "decompresses to more than 65536", unsafe: true},
		{reason: "symlinks are refused", data: craft(t, chartYAML, entry{name: "crafted/templates/x.yaml", typeflag: tar.TypeSymlink, link: "/etc/passwd"}),
			wantErr: "is a link", unsafe: true},
		{reason: "hard links are refused", data: craft(t, chartYAML, entry{name: "crafted/values.yaml", typeflag: tar.TypeLink, link: "crafted/Chart.yaml"}),
			wantErr: "is a link", unsafe: true},
		{reason: "devices are refused", data: craft(t, chartYAML, entry{name: "crafted/dev", typeflag: tar.TypeChar}),
			wantErr: "only files and folders", unsafe: true},
		{reason: "parent-directory traversal is refused", data: craft(t, chartYAML, entry{name: "crafted/../../etc/cron.d/x", body: "x"}),
			wantErr: "escapes the chart folder", unsafe: true},
		{reason: "absolute paths are refused", data: craft(t, entry{name: "/crafted/Chart.yaml", body: validChartYAML}),
			wantErr: "absolute path", unsafe: true},
		{reason: "backslashes are refused", data: craft(t, chartYAML, entry{name: `crafted\..\x`, body: "x"}),
			wantErr: "backslash", unsafe: true},
		{reason: "two top-level folders are refused", data: craft(t, chartYAML, entry{name: "other/values.yaml", body: "a: 1"}),
			wantErr: "more than one top-level folder", unsafe: true},
		{reason: "files outside any folder are refused", data: craft(t, entry{name: "Chart.yaml", body: validChartYAML}),
			wantErr: "not inside the chart folder", unsafe: true},
		{reason: "not gzip", data: []byte("PK\x03\x04 not a tgz"), wantErr: "not gzip"},
		{reason: "no Chart.yaml", data: craft(t, entry{name: "crafted/values.yaml", body: "a: 1"}), wantErr: "Chart.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			ch, err := helmspec.LoadArchive(tc.data, tc.limits)
			if tc.wantErr == "" {
				require.NoError(t, err)
				require.NotNil(t, ch.Metadata)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.Equal(t, tc.unsafe, errorsIs(err, helmspec.ErrUnsafeChart), "ErrUnsafeChart")
		})
	}
}

func TestLoadDirRefusesSymlinks(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte(validChartYAML), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "templates"), 0o700))
	ch, err := helmspec.LoadDir(dir, helmspec.Limits{})
	require.NoError(t, err)
	assert.Equal(t, "crafted", ch.Name())

	require.NoError(t, os.Symlink("/etc/hostname", filepath.Join(dir, "templates", "leak.yaml")))
	_, err = helmspec.LoadDir(dir, helmspec.Limits{})
	require.ErrorIs(t, err, helmspec.ErrUnsafeChart)
	assert.Contains(t, err.Error(), "symlink")
}

func TestLoadDirLimits(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte(validChartYAML), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "values.yaml"), bytes.Repeat([]byte("#"), 2048), 0o600))
	_, err := helmspec.LoadDir(dir, helmspec.Limits{MaxFileBytes: 1024})
	require.ErrorIs(t, err, helmspec.ErrUnsafeChart)
	_, err = helmspec.LoadDir(dir, helmspec.Limits{MaxFiles: 1})
	require.ErrorIs(t, err, helmspec.ErrUnsafeChart)
}

func FuzzLoadArchive(f *testing.F) {
	f.Add(craft(f, entry{name: "c/Chart.yaml", body: validChartYAML}))
	f.Add(craft(f, entry{name: "c/Chart.yaml", body: validChartYAML}, entry{name: "c/templates/a.yaml", body: "{{ .Values.x }}"}))
	f.Add(craft(f, entry{name: "c/../x", body: "x"}))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Must never panic, whatever the bytes.
		_, _ = helmspec.LoadArchive(data, helmspec.Limits{MaxArchiveBytes: 1 << 16, MaxFiles: 50, MaxDecompressedBytes: 1 << 18, MaxFileBytes: 1 << 16})
	})
}
