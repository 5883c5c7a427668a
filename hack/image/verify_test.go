package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeELF is the header of a little-endian 64-bit ELF executable for
// machine, with a PT_INTERP program header when dynamic.
func fakeELF(t *testing.T, machine elf.Machine, dynamic bool) []byte {
	t.Helper()
	h := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(machine), Version: uint32(elf.EV_CURRENT), Ehsize: 64, Phentsize: 56, Shentsize: 64}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS], h.Ident[elf.EI_DATA], h.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	var progs []elf.Prog64
	if dynamic {
		progs = append(progs, elf.Prog64{Type: uint32(elf.PT_INTERP), Off: 120, Filesz: 1, Memsz: 1})
		h.Phoff, h.Phnum = 64, 1
	}
	var buf bytes.Buffer
	require.NoError(t, binary.Write(&buf, binary.LittleEndian, h))
	for _, p := range progs {
		require.NoError(t, binary.Write(&buf, binary.LittleEndian, p))
	}
	buf.WriteByte(0)
	return buf.Bytes()
}

// buildWith writes the test image with the given binary per platform and
// returns its OCI layout.
func buildWith(t *testing.T, bins map[Platform][]byte) string {
	t.Helper()
	ref, err := name.NewTag("ghcr.io/oamflow/oamflow-controller:0.1.0")
	require.NoError(t, err)
	dir, out := t.TempDir(), t.TempDir()
	paths := map[Platform]string{}
	for p, b := range bins {
		paths[p] = filepath.Join(dir, p.Arch)
		require.NoError(t, os.WriteFile(paths[p], b, 0o755))
	}
	_, err = Write(testSpec(), testPlatforms, paths, ref, out)
	require.NoError(t, err)
	return filepath.Join(out, "oci")
}

// TestVerify: -verify passes the image make image builds (static binaries
// of each architecture) and names what is wrong otherwise.
func TestVerify(t *testing.T) {
	amd64, arm64 := testPlatforms[0], testPlatforms[1]
	good := map[Platform][]byte{amd64: fakeELF(t, elf.EM_X86_64, false), arm64: fakeELF(t, elf.EM_AARCH64, false)}
	var out bytes.Buffer
	require.NoError(t, Verify(buildWith(t, good), &out))
	assert.Contains(t, out.String(), "linux/arm64 manifest sha256:")
	assert.Contains(t, out.String(), "user 65532:65532, entrypoint [/oamflow-controller]")
	assert.Contains(t, out.String(), "label org.opencontainers.image.revision=0123456789abcdef")
	assert.Contains(t, out.String(), "-rwxr-xr-x 0/0 ")
	assert.Contains(t, out.String(), "binary: ELF EM_AARCH64, statically linked")

	wrongArch := map[Platform][]byte{amd64: good[amd64], arm64: good[amd64]}
	err := Verify(buildWith(t, wrongArch), &bytes.Buffer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "linux/arm64: the binary is for EM_X86_64")
	assert.NotContains(t, err.Error(), "linux/amd64")

	dynamic := map[Platform][]byte{amd64: fakeELF(t, elf.EM_X86_64, true), arm64: good[arm64]}
	err = Verify(buildWith(t, dynamic), &bytes.Buffer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "linux/amd64: the binary is dynamically linked")

	script := map[Platform][]byte{amd64: []byte("#!/bin/sh\n"), arm64: good[arm64]}
	err = Verify(buildWith(t, script), &bytes.Buffer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not an ELF executable")
}

// TestProblems: a file besides the binary and the CA bundle, a writable
// file, another user or a missing label are each named.
func TestProblems(t *testing.T) {
	ok := PlatformReport{Platform: Platform{"linux", "amd64"}}
	ok.Binary.Machine, ok.Binary.Static = elf.EM_X86_64, true
	ok.Config.User, ok.Config.Entrypoint = nonRoot, []string{"/oamflow-controller"}
	ok.Config.Labels = testSpec().labels()
	ok.Files = []File{{Path: "etc", Dir: true, Mode: 0o755}, {Path: "etc/ssl", Dir: true, Mode: 0o755}, {Path: "etc/ssl/certs", Dir: true, Mode: 0o755},
		{Path: caPath, Mode: 0o644}, {Path: binaryPath, Mode: 0o755}}
	assert.Empty(t, ok.Problems())

	shell := ok
	shell.Files = append(append([]File{}, ok.Files...), File{Path: "bin/sh", Mode: 0o755})
	assert.Len(t, shell.Problems(), 1)
	writable := ok
	writable.Files = append([]File{}, ok.Files...)
	writable.Files[4].Mode, writable.Files[4].UID = 0o777, 65532
	assert.Len(t, writable.Problems(), 1)
	root := ok
	root.Config.User = ""
	assert.Equal(t, []string{`user "", want "65532:65532"`}, root.Problems())
	unlabelled := ok
	unlabelled.Config.Labels = nil
	assert.Len(t, unlabelled.Problems(), 3)
}
