package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// File is one entry of an image's flattened file system.
type File struct {
	Path     string
	Dir      bool
	Mode     fs.FileMode // permission bits
	UID, GID int
	Size     int64
}

// ls is the file's type and permissions as ls -l writes them.
func (f File) ls() string {
	m := f.Mode.Perm().String()
	if f.Dir {
		m = "d" + m[1:]
	}
	return m
}

func (f File) String() string {
	return fmt.Sprintf("%s %d/%d %10d %s", f.ls(), f.UID, f.GID, f.Size, f.Path)
}

// PlatformReport is what one platform's image holds.
type PlatformReport struct {
	Platform Platform
	// Manifest is the image's manifest digest; Size adds up the manifest,
	// the config and the compressed layers (what a pull downloads).
	Manifest v1.Hash
	Size     int64
	Layers   []v1.Hash
	Config   v1.Config
	Files    []File
	// Binary describes the entrypoint: its ELF machine and whether it
	// asks for a dynamic loader (PT_INTERP) or shared libraries.
	Binary struct {
		Machine elf.Machine
		Static  bool
		Size    int64
	}
}

// Report is what Inspect finds in an OCI layout written by Write.
type Report struct {
	Index     v1.Hash
	Platforms []PlatformReport
}

// Inspect reads the image index of the OCI layout at dir (written by
// Write) and describes each platform's image.
func Inspect(dir string) (Report, error) {
	idx, err := LayoutIndex(dir)
	if err != nil {
		return Report{}, err
	}
	r := Report{}
	if r.Index, err = idx.Digest(); err != nil {
		return Report{}, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return Report{}, err
	}
	for _, desc := range im.Manifests {
		if desc.Platform == nil {
			return Report{}, fmt.Errorf("manifest %s has no platform", desc.Digest)
		}
		img, err := idx.Image(desc.Digest)
		if err != nil {
			return Report{}, err
		}
		p, err := inspectImage(img)
		if err != nil {
			return Report{}, fmt.Errorf("%s/%s: %w", desc.Platform.OS, desc.Platform.Architecture, err)
		}
		if p.Platform != (Platform{OS: desc.Platform.OS, Arch: desc.Platform.Architecture}) {
			return Report{}, fmt.Errorf("the index says %s/%s for an image whose config says %s", desc.Platform.OS, desc.Platform.Architecture, p.Platform)
		}
		p.Size += desc.Size
		r.Platforms = append(r.Platforms, p)
	}
	return r, nil
}

func inspectImage(img v1.Image) (PlatformReport, error) {
	var p PlatformReport
	var err error
	if p.Manifest, err = img.Digest(); err != nil {
		return p, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return p, err
	}
	p.Platform, p.Config = Platform{OS: cf.OS, Arch: cf.Architecture}, cf.Config
	m, err := img.Manifest()
	if err != nil {
		return p, err
	}
	p.Size = m.Config.Size
	for _, l := range m.Layers {
		p.Size += l.Size
		p.Layers = append(p.Layers, l.Digest)
	}
	entry := ""
	if len(cf.Config.Entrypoint) > 0 {
		entry = strings.TrimPrefix(cf.Config.Entrypoint[0], "/")
	}
	err = walk(img, func(h *tar.Header, r io.Reader) error {
		p.Files = append(p.Files, File{Path: h.Name, Dir: h.Typeflag == tar.TypeDir, Mode: fs.FileMode(h.Mode).Perm(), UID: h.Uid, GID: h.Gid, Size: h.Size})
		if h.Typeflag != tar.TypeReg || h.Name != entry {
			return nil
		}
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		p.Binary.Size = int64(len(b))
		if p.Binary.Machine, p.Binary.Static, err = elfInfo(b); err != nil {
			return fmt.Errorf("the entrypoint /%s: %w", entry, err)
		}
		return nil
	})
	if err != nil {
		return p, err
	}
	sort.Slice(p.Files, func(i, j int) bool { return p.Files[i].Path < p.Files[j].Path })
	return p, nil
}

// elfInfo is the machine of an ELF executable and whether it is static
// (no program interpreter, no dynamic section).
func elfInfo(b []byte) (elf.Machine, bool, error) {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return 0, false, fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	static := true
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
			static = false
		}
	}
	return f.Machine, static, nil
}

// machines are the ELF machines of the architectures an image is built for.
var machines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "arm": elf.EM_ARM,
	"ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV}

// wantFiles is the whole file system of the image: the CA bundle, the
// binary and their folders, all owned by root and not writable by the
// user the controller runs as.
var wantFiles = []string{
	"etc/ 0/0 drwxr-xr-x", "etc/ssl/ 0/0 drwxr-xr-x", "etc/ssl/certs/ 0/0 drwxr-xr-x",
	caPath + " 0/0 -rw-r--r--", binaryPath + " 0/0 -rwxr-xr-x",
}

// Problems lists how the platform's image differs from what the chart
// and the issue promise: only the binary and the CA certificates, owned by
// root; user 65532 (so not root, and with a read-only root file system
// nothing of the image is writable anyway); the entrypoint a static binary
// of the image's architecture; the OCI labels set.
func (p PlatformReport) Problems() []string {
	var probs []string
	var files []string
	for _, f := range p.Files {
		path := f.Path
		if f.Dir && !strings.HasSuffix(path, "/") {
			path += "/"
		}
		files = append(files, fmt.Sprintf("%s %d/%d %s", path, f.UID, f.GID, f.ls()))
	}
	if !slices.Equal(files, wantFiles) {
		probs = append(probs, fmt.Sprintf("files %q, want %q", files, wantFiles))
	}
	if p.Config.User != nonRoot {
		probs = append(probs, fmt.Sprintf("user %q, want %q", p.Config.User, nonRoot))
	}
	if !slices.Equal(p.Config.Entrypoint, []string{"/" + binaryPath}) {
		probs = append(probs, fmt.Sprintf("entrypoint %q, want [/%s]", p.Config.Entrypoint, binaryPath))
	}
	if want, ok := machines[p.Platform.Arch]; !ok || p.Binary.Machine != want {
		probs = append(probs, fmt.Sprintf("the binary is for %s, the image for %s", p.Binary.Machine, p.Platform))
	}
	if !p.Binary.Static {
		probs = append(probs, "the binary is dynamically linked (the image has no libc)")
	}
	for _, k := range []string{"org.opencontainers.image.source", "org.opencontainers.image.version", "org.opencontainers.image.revision"} {
		if p.Config.Labels[k] == "" {
			probs = append(probs, "label "+k+" is not set")
		}
	}
	return probs
}

// Print writes the report for people.
func (r Report) Print(w io.Writer) {
	fmt.Fprintf(w, "index %s\n", r.Index)
	for _, p := range r.Platforms {
		fmt.Fprintf(w, "%s manifest %s, %d bytes to pull (%.1f MiB), layers %v\n", p.Platform, p.Manifest, p.Size, float64(p.Size)/(1<<20), p.Layers)
		fmt.Fprintf(w, "  user %s, entrypoint %v, env %v\n", p.Config.User, p.Config.Entrypoint, p.Config.Env)
		keys := make([]string, 0, len(p.Config.Labels))
		for k := range p.Config.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  label %s=%s\n", k, p.Config.Labels[k])
		}
		for _, f := range p.Files {
			fmt.Fprintf(w, "  %s\n", f)
		}
		linking := "statically linked"
		if !p.Binary.Static {
			linking = "dynamically linked"
		}
		fmt.Fprintf(w, "  binary: ELF %s, %s, %d bytes\n", p.Binary.Machine, linking, p.Binary.Size)
	}
}

// Verify inspects the layout at dir, prints what it holds to w and fails
// on every problem of every platform.
func Verify(dir string, w io.Writer) error {
	r, err := Inspect(dir)
	if err != nil {
		return err
	}
	r.Print(w)
	var errs []error
	for _, p := range r.Platforms {
		for _, prob := range p.Problems() {
			errs = append(errs, fmt.Errorf("%s: %s", p.Platform, prob))
		}
	}
	return errors.Join(errs...)
}
