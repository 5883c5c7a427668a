package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/oamflow/oamflow/hack/buildflags"
)

// Paths inside the image; the Dockerfile at the repository root copies
// the same files to the same places (TestDockerfileEquivalent).
const (
	binaryPath = "oamflow-controller"
	caPath     = "etc/ssl/certs/ca-certificates.crt"
	// nonRoot is the user and group the controller runs as (distroless's
	// "nonroot", the chart's runAsUser).
	nonRoot = "65532:65532"
	// ldflags strip the symbol tables and the build ID.
	ldflags = "-s -w -buildid="
)

// Spec is what goes into the image besides the binaries.
type Spec struct {
	// Version is the tag and the org.opencontainers.image.version label.
	Version string
	// Revision is the commit (org.opencontainers.image.revision).
	Revision string
	// Source is the repository URL (org.opencontainers.image.source).
	Source string
	// Created is the timestamp of every file, of the configs and of the
	// org.opencontainers.image.created label: the commit's time
	// (SOURCE_DATE_EPOCH), so that one commit gives one digest.
	Created time.Time
	// CABundle is the PEM file copied to /etc/ssl/certs.
	CABundle []byte
}

// labels are the OCI annotation keys set as image labels.
func (s Spec) labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "oamflow-controller",
		"org.opencontainers.image.description": "oamflow application delivery controller (KubeVela-compatible OAM Applications)",
		"org.opencontainers.image.source":      s.Source,
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.revision":    s.Revision,
		"org.opencontainers.image.created":     s.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.licenses":    "Apache-2.0",
	}
}

// Platform is one os/arch the image is built for.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// ParsePlatforms reads "linux/amd64,linux/arm64".
func ParsePlatforms(s string) ([]Platform, error) {
	var ps []Platform
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		osName, arch, ok := strings.Cut(f, "/")
		if !ok || osName == "" || arch == "" {
			return nil, fmt.Errorf("-platforms: %q is not os/arch", f)
		}
		ps = append(ps, Platform{OS: osName, Arch: arch})
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("-platforms: no platform given")
	}
	return ps, nil
}

// HostPlatform is the platform of this machine (for tests that run the
// image's binary).
func HostPlatform() Platform { return Platform{OS: "linux", Arch: runtime.GOARCH} }

// GoBuildArgs are the arguments of `go build` for a static, reproducible
// binary: no cgo, no local paths, no build ID, no VCS stamp (a checkout
// with or without .git, clean or not, builds the same bytes; the commit is
// the image's revision label), symbols stripped. The Dockerfile runs the
// same command.
func GoBuildArgs(out string) []string {
	return []string{"build", "-trimpath", "-buildvcs=false", "-tags=" + buildflags.ControllerTags, "-ldflags=" + ldflags, "-o", out, "./cmd/oamflow-controller"}
}

// BuildBinaries cross-compiles cmd/oamflow-controller (in the module at
// root) for each platform into dir/<os>_<arch>/oamflow-controller and
// returns the paths by platform.
func BuildBinaries(ctx context.Context, root, dir string, platforms []Platform, stderr io.Writer) (map[Platform]string, error) {
	bins := map[Platform]string{}
	for _, p := range platforms {
		out, err := filepath.Abs(filepath.Join(dir, p.OS+"_"+p.Arch, binaryPath))
		if err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, "go", GoBuildArgs(out)...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
		cmd.Stdout, cmd.Stderr = stderr, stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("building oamflow-controller for %s: %w", p, err)
		}
		bins[p] = out
	}
	return bins, nil
}

// fileEntry is one regular file of a layer.
type fileEntry struct {
	path string
	mode int64
	data []byte
}

// layer is a gzipped tar of files (with their parent folders), every
// entry owned by root with the time t, so that its digest depends only
// on the contents.
func layer(t time.Time, files ...fileEntry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	seen := map[string]bool{}
	for _, f := range files {
		var parents []string
		for d := filepath.Dir(f.path); d != "." && d != "/"; d = filepath.Dir(d) {
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if seen[d] {
				continue
			}
			seen[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: t, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: f.path, Mode: f.mode, Size: int64(len(f.data)), ModTime: t, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// Image is one platform's image: a CA certificates layer and the binary's
// layer, no base image, no shell.
func Image(s Spec, p Platform, binary []byte) (v1.Image, error) {
	ca, err := layer(s.Created, fileEntry{path: caPath, mode: 0o644, data: s.CABundle})
	if err != nil {
		return nil, fmt.Errorf("CA certificates layer: %w", err)
	}
	bin, err := layer(s.Created, fileEntry{path: binaryPath, mode: 0o755, data: binary})
	if err != nil {
		return nil, fmt.Errorf("binary layer: %w", err)
	}
	created := v1.Time{Time: s.Created.UTC()}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: ca, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "COPY ca-certificates.crt /" + caPath}},
		mutate.Addendum{Layer: bin, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "COPY oamflow-controller /" + binaryPath}},
	)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = p.OS, p.Arch, created
	cfg.Config = v1.Config{
		Entrypoint: []string{"/" + binaryPath},
		User:       nonRoot,
		WorkingDir: "/",
		Env:        []string{"PATH=/", "SSL_CERT_FILE=/" + caPath},
		Labels:     s.labels(),
	}
	return mutate.ConfigFile(img, cfg)
}

// Index is the multi-platform image index of the images by platform, in
// the order of platforms.
func Index(s Spec, platforms []Platform, images map[Platform]v1.Image) v1.ImageIndex {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        images[p],
			Descriptor: v1.Descriptor{MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch}},
		})
	}
	return mutate.Annotations(idx, s.labels()).(v1.ImageIndex)
}

// ExtractFile reads one regular file (path without the leading slash)
// from the image's flattened file system.
func ExtractFile(img v1.Image, path string) ([]byte, error) {
	var out []byte
	found := false
	err := walk(img, func(h *tar.Header, r io.Reader) error {
		if found || h.Name != path || h.Typeflag != tar.TypeReg {
			return nil
		}
		found = true
		var err error
		out, err = io.ReadAll(r)
		return err
	})
	if err == nil && !found {
		err = fmt.Errorf("%s is not in the image", path)
	}
	return out, err
}

// walk calls fn for every entry of the image's flattened file system, in
// order, with a reader of the entry's content; it stops at fn's first
// error.
func walk(img v1.Image, fn func(h *tar.Header, r io.Reader) error) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(h, tr); err != nil {
			return err
		}
	}
}
