// Command image builds the oamflow-controller container image without a
// Docker daemon or a base image (go-containerregistry, scratch layers):
// static binaries cross-compiled for each platform, the build machine's CA
// certificates, user 65532, OCI labels, every timestamp the commit's time.
// One commit gives one digest. It writes an OCI image layout (an index of
// one image per platform) and a `docker load`-able tarball per platform
// under -out, and with -push copies the layout's index to a registry;
// -verify checks what a built layout holds.
//
//	go run ./hack/image                      # make image
//	go run ./hack/image -push REGISTRY/oamflow-controller:TAG   # make image-push
//	go run ./hack/image -verify              # make image-verify, after two builds compared
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"sigs.k8s.io/yaml"
)

// DefaultSource is the org.opencontainers.image.source label.
const DefaultSource = "https://github.com/oamflow/oamflow"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", ".", "module root (the repository)")
	out := fs.String("out", "bin/image", "output folder: oci/ (OCI layout), <repo>-<os>-<arch>.tar (docker load), digest")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated os/arch list")
	repository := fs.String("repository", "", "image repository (default: the chart's image.repository)")
	tag := fs.String("tag", "", "image tag and version label (default: the chart's appVersion)")
	revision := fs.String("revision", "", "commit of the org.opencontainers.image.revision label (default: git rev-parse HEAD)")
	source := fs.String("source", DefaultSource, "org.opencontainers.image.source label")
	epoch := fs.String("source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "seconds since 1970 used for every timestamp (default: $SOURCE_DATE_EPOCH, else the commit time)")
	caBundle := fs.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM bundle of CA certificates put into the image")
	push := fs.String("push", "", "instead of building, push the index in -out's OCI layout to this reference (registry/repository:tag)")
	verify := fs.Bool("verify", false, "instead of building, print what the images of -out's OCI layout hold and fail unless that is only the binary (static, of the image's architecture) and the CA certificates, owned by root, run as 65532, with the OCI labels")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *verify {
		return Verify(filepath.Join(*out, "oci"), stdout)
	}
	if *push != "" {
		d, err := Push(ctx, filepath.Join(*out, "oci"), *push)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "pushed %s@%s\n", *push, d)
		return nil
	}
	ps, err := ParsePlatforms(*platforms)
	if err != nil {
		return err
	}
	defRepo, defTag, err := ChartImage(*root)
	if err != nil {
		return err
	}
	if *repository == "" {
		*repository = defRepo
	}
	if *tag == "" {
		*tag = defTag
	}
	if *revision == "" {
		if *revision, err = git(*root, "rev-parse", "HEAD"); err != nil {
			return err
		}
	}
	if *epoch == "" {
		if *epoch, err = git(*root, "log", "-1", "--format=%ct"); err != nil {
			return err
		}
	}
	secs, err := strconv.ParseInt(*epoch, 10, 64)
	if err != nil {
		return fmt.Errorf("-source-date-epoch: %w", err)
	}
	ca, err := os.ReadFile(*caBundle)
	if err != nil {
		return fmt.Errorf("-ca-bundle: %w (install Debian's ca-certificates or pass a PEM bundle)", err)
	}
	spec := Spec{Version: *tag, Revision: *revision, Source: *source, Created: time.Unix(secs, 0).UTC(), CABundle: ca}
	start := time.Now()
	bins, err := BuildBinaries(ctx, *root, filepath.Join(*out, "binaries"), ps, stderr)
	if err != nil {
		return err
	}
	ref, err := name.NewTag(*repository + ":" + *tag)
	if err != nil {
		return fmt.Errorf("image reference: %w", err)
	}
	d, err := Write(spec, ps, bins, ref, *out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "built %s@%s in %s (%s)\n", ref, d, time.Since(start).Round(time.Second), *out)
	return nil
}

// Write assembles the images from the binaries, writes out/oci (an OCI
// layout whose index.json points at the image index, annotated with ref),
// out/<repo>-<os>-<arch>.tar per platform and out/digest, and returns the
// index digest.
func Write(spec Spec, ps []Platform, bins map[Platform]string, ref name.Tag, out string) (v1.Hash, error) {
	images := map[Platform]v1.Image{}
	for _, p := range ps {
		b, err := os.ReadFile(bins[p])
		if err != nil {
			return v1.Hash{}, err
		}
		if images[p], err = Image(spec, p, b); err != nil {
			return v1.Hash{}, fmt.Errorf("image for %s: %w", p, err)
		}
	}
	idx := Index(spec, ps, images)
	d, err := idx.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	dir := filepath.Join(out, "oci")
	if err := os.RemoveAll(dir); err != nil {
		return v1.Hash{}, err
	}
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.TagStr(),
		"io.containerd.image.name":          ref.String(),
	})); err != nil {
		return v1.Hash{}, fmt.Errorf("writing the OCI layout: %w", err)
	}
	base := filepath.Base(ref.RepositoryStr())
	for _, p := range ps {
		path := filepath.Join(out, fmt.Sprintf("%s-%s-%s.tar", base, p.OS, p.Arch))
		if err := tarball.WriteToFile(path, ref, images[p]); err != nil {
			return v1.Hash{}, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return d, os.WriteFile(filepath.Join(out, "digest"), []byte(d.String()+"\n"), 0o644)
}

// Push copies the image index of the OCI layout at dir to ref, with the
// credentials of the Docker config (~/.docker/config.json).
func Push(ctx context.Context, dir, ref string) (v1.Hash, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("-push: %w", err)
	}
	idx, err := LayoutIndex(dir)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := remote.WriteIndex(r, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return v1.Hash{}, fmt.Errorf("pushing %s: %w", ref, err)
	}
	return idx.Digest()
}

// LayoutIndex is the image index that the OCI layout at dir (written by
// Write) points at.
func LayoutIndex(dir string) (v1.ImageIndex, error) {
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the OCI layout %s (run make image first): %w", dir, err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("OCI layout %s: want one index in index.json, found %d", dir, len(m.Manifests))
	}
	return top.ImageIndex(m.Manifests[0].Digest)
}

// ChartImage is the chart's default image: values.yaml's image.repository
// and Chart.yaml's appVersion (the tag an empty image.tag means).
func ChartImage(root string) (repository, tag string, err error) {
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	var values struct {
		Image struct {
			Repository string `json:"repository"`
		} `json:"image"`
	}
	for f, v := range map[string]any{"Chart.yaml": &chart, "values.yaml": &values} {
		b, err := os.ReadFile(filepath.Join(root, "charts", "oamflow", f))
		if err != nil {
			return "", "", err
		}
		if err := yaml.Unmarshal(b, v); err != nil {
			return "", "", fmt.Errorf("charts/oamflow/%s: %w", f, err)
		}
	}
	if chart.AppVersion == "" || values.Image.Repository == "" {
		return "", "", errors.New("charts/oamflow: appVersion or image.repository is empty")
	}
	return values.Image.Repository, chart.AppVersion, nil
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(b)), nil
}
