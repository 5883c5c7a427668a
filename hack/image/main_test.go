package main

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/hack/buildflags"
)

var testPlatforms = []Platform{{"linux", "amd64"}, {"linux", "arm64"}}

func testSpec() Spec {
	return Spec{Version: "0.1.0", Revision: "0123456789abcdef", Source: DefaultSource,
		Created: time.Unix(1764547200, 0).UTC(), CABundle: []byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")}
}

// fakeBinaries writes one small file per platform, with the given
// modification time (which must not reach the image).
func fakeBinaries(t *testing.T, mtime time.Time) map[Platform]string {
	t.Helper()
	dir := t.TempDir()
	bins := map[Platform]string{}
	for _, p := range testPlatforms {
		f := filepath.Join(dir, p.Arch)
		require.NoError(t, os.WriteFile(f, []byte("binary for "+p.String()), 0o700))
		require.NoError(t, os.Chtimes(f, mtime, mtime))
		bins[p] = f
	}
	return bins
}

// TestReproducibleDigest builds the image twice from the same inputs, at
// different wall-clock times, from files of different mtimes and into
// different folders: the index digest and every file written are the
// same. A change of input changes the digest.
func TestReproducibleDigest(t *testing.T) {
	ref, err := name.NewTag("ghcr.io/oamflow/oamflow-controller:0.1.0")
	require.NoError(t, err)
	outA, outB := t.TempDir(), t.TempDir()
	dA, err := Write(testSpec(), testPlatforms, fakeBinaries(t, time.Now()), ref, outA)
	require.NoError(t, err)
	time.Sleep(1100 * time.Millisecond) // a second later: tar and gzip headers would differ if they took the clock
	dB, err := Write(testSpec(), testPlatforms, fakeBinaries(t, time.Unix(0, 0)), ref, outB)
	require.NoError(t, err)
	assert.Equal(t, dA, dB)
	assert.Equal(t, treeDigest(t, outA), treeDigest(t, outB), "files under -out")

	changes := []struct {
		reason string
		spec   func(*Spec)
	}{
		{"another commit", func(s *Spec) { s.Revision = "fedcba9876543210" }},
		{"another commit time", func(s *Spec) { s.Created = s.Created.Add(time.Second) }},
		{"other CA certificates", func(s *Spec) { s.CABundle = append(s.CABundle, '\n') }},
	}
	for _, c := range changes {
		t.Run(c.reason, func(t *testing.T) {
			s := testSpec()
			c.spec(&s)
			d, err := Write(s, testPlatforms, fakeBinaries(t, time.Now()), ref, t.TempDir())
			require.NoError(t, err)
			assert.NotEqual(t, dA, d)
		})
	}
}

// treeDigest maps each file's path under dir to its contents.
func treeDigest(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	require.NoError(t, filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = string(b)
		return err
	}))
	return files
}

// TestImageContents checks what the image holds and how it runs: only the
// binary and the CA bundle (with their folders), owned by root; user
// 65532; the OCI labels; one manifest per platform.
func TestImageContents(t *testing.T) {
	ref, err := name.NewTag("ghcr.io/oamflow/oamflow-controller:0.1.0")
	require.NoError(t, err)
	out := t.TempDir()
	_, err = Write(testSpec(), testPlatforms, fakeBinaries(t, time.Now()), ref, out)
	require.NoError(t, err)
	idx, err := LayoutIndex(filepath.Join(out, "oci"))
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 2)
	for i, p := range testPlatforms {
		t.Run(p.String(), func(t *testing.T) {
			desc := im.Manifests[i]
			require.NotNil(t, desc.Platform)
			assert.Equal(t, v1.Platform{OS: p.OS, Architecture: p.Arch}, *desc.Platform)
			img, err := idx.Image(desc.Digest)
			require.NoError(t, err)
			cfg, err := img.ConfigFile()
			require.NoError(t, err)
			assert.Equal(t, "65532:65532", cfg.Config.User)
			assert.Equal(t, []string{"/oamflow-controller"}, cfg.Config.Entrypoint)
			assert.Equal(t, p.Arch, cfg.Architecture)
			assert.Equal(t, DefaultSource, cfg.Config.Labels["org.opencontainers.image.source"])
			assert.Equal(t, "0.1.0", cfg.Config.Labels["org.opencontainers.image.version"])
			assert.Equal(t, "0123456789abcdef", cfg.Config.Labels["org.opencontainers.image.revision"])
			assert.Equal(t, "2025-12-01T00:00:00Z", cfg.Config.Labels["org.opencontainers.image.created"])
			files := listFiles(t, img)
			assert.Equal(t, []string{
				"etc 0 0755", "etc/ssl 0 0755", "etc/ssl/certs 0 0755", "etc/ssl/certs/ca-certificates.crt 0 0644",
				"oamflow-controller 0 0755",
			}, files)
			bin, err := ExtractFile(img, "oamflow-controller")
			require.NoError(t, err)
			assert.Equal(t, "binary for "+p.String(), string(bin))
			// The docker-loadable tarball holds the same image.
			tb, err := tarball.ImageFromPath(filepath.Join(out, "oamflow-controller-linux-"+p.Arch+".tar"), &ref)
			require.NoError(t, err)
			want, err := img.ConfigName()
			require.NoError(t, err)
			got, err := tb.ConfigName()
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

// listFiles is "path uid mode" of every entry of the image's file system.
func listFiles(t *testing.T, img v1.Image) []string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	var files []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		files = append(files, fmt.Sprintf("%s %d %04o", h.Name, h.Uid, h.Mode))
	}
	sort.Strings(files)
	return files
}

// TestChartImage: the image make image tags is the chart's default image
// reference (values.yaml's repository, Chart.yaml's appVersion).
func TestChartImage(t *testing.T) {
	repo, tag, err := ChartImage("../..")
	require.NoError(t, err)
	assert.Equal(t, "ghcr.io/oamflow/oamflow-controller", repo)
	assert.NotEmpty(t, tag)
}

// TestDockerfileEquivalent: the Dockerfile builds the same binary with the
// same flags and copies the same files to the same paths, as the same user,
// with the same labels and entrypoint.
func TestDockerfileEquivalent(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	require.NoError(t, err)
	df := string(b)
	for _, want := range []string{
		"CGO_ENABLED=0",
		`go build -trimpath -buildvcs=false -tags=` + buildflags.ControllerTags + ` -ldflags="` + ldflags + `" -o /out/oamflow-controller ./cmd/oamflow-controller`,
		"FROM scratch",
		"COPY --from=build /etc/ssl/certs/ca-certificates.crt /" + caPath,
		"COPY --from=build /out/oamflow-controller /" + binaryPath,
		"USER " + nonRoot,
		`ENTRYPOINT ["/` + binaryPath + `"]`,
		`ENV SSL_CERT_FILE=/` + caPath,
	} {
		assert.Contains(t, df, want)
	}
	for k := range testSpec().labels() {
		assert.Contains(t, df, k, "label")
	}
}
