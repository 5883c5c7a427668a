package localcluster

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeFile creates path (and its parents) with content and mode.
func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), mode))
}

func TestCheckBinaries(t *testing.T) {
	cases := map[string]struct {
		reason      string
		executables []string
		plain       []string
		dirs        []string
		wantMissing []string
	}{
		"AllPresent": {
			reason:      "every binary is an executable file",
			executables: ClusterBinaries(),
		},
		"NoneBuilt": {
			reason:      "an empty directory misses everything, in order",
			wantMissing: ClusterBinaries(),
		},
		"SomeMissing": {
			reason:      "only the absent ones are named",
			executables: []string{BinEtcd, BinKwok, BinKwokctl},
			wantMissing: []string{BinKubeAPIServer, BinKubeControllerManager, BinKubeScheduler},
		},
		"NotExecutable": {
			reason:      "a file without the executable bit does not count",
			executables: []string{BinEtcd, BinKubeAPIServer, BinKubeControllerManager, BinKubeScheduler, BinKwok},
			plain:       []string{BinKwokctl},
			wantMissing: []string{BinKwokctl},
		},
		"Directory": {
			reason:      "a directory of that name does not count",
			executables: []string{BinEtcd, BinKubeAPIServer, BinKubeControllerManager, BinKubeScheduler, BinKwokctl},
			dirs:        []string{BinKwok},
			wantMissing: []string{BinKwok},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for _, b := range tc.executables {
				writeFile(t, filepath.Join(dir, b), "#!/bin/sh\n", 0o755)
			}
			for _, b := range tc.plain {
				writeFile(t, filepath.Join(dir, b), "data", 0o644)
			}
			for _, d := range tc.dirs {
				require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
			}
			err := CheckBinaries(dir, ClusterBinaries()...)
			if tc.wantMissing == nil {
				require.NoError(t, err, tc.reason)
				return
			}
			var me *MissingBinariesError
			require.True(t, errors.As(err, &me), tc.reason)
			assert.Equal(t, tc.wantMissing, me.Missing, tc.reason)
			assert.Equal(t, dir, me.Dir)
			assert.Contains(t, err.Error(), "make k8s-binaries", "the message says how to build them")
			for _, b := range tc.wantMissing {
				assert.Contains(t, err.Error(), b, "the message names each missing binary")
			}
		})
	}
}

func TestResolveBinDir(t *testing.T) {
	repo := t.TempDir()
	writeFile(t, filepath.Join(repo, "go.mod"), "module github.com/oamflow/oamflow\n\ngo 1.24.0\n", 0o644)
	deep := filepath.Join(repo, "pkg", "a", "b")
	require.NoError(t, os.MkdirAll(deep, 0o755))
	other := t.TempDir()
	writeFile(t, filepath.Join(other, "go.mod"), "module example.com/other\n", 0o644)
	nested := filepath.Join(repo, "hack", "tools", "k8s")
	writeFile(t, filepath.Join(nested, "go.mod"), "module github.com/oamflow/oamflow/hack/tools/k8s\n", 0o644)

	cases := map[string]struct {
		reason  string
		flag    string
		env     string
		starts  []string
		want    string
		wantErr bool
	}{
		"Flag":        {reason: "the flag wins over everything", flag: "/opt/k8s", env: "/env/k8s", starts: []string{deep}, want: "/opt/k8s"},
		"Env":         {reason: "the environment wins over the repository", env: "/env/k8s", starts: []string{deep}, want: "/env/k8s"},
		"WalkUp":      {reason: "bin/k8s of the repository found above the working directory", starts: []string{deep}, want: filepath.Join(repo, "bin", "k8s")},
		"NestedTools": {reason: "a tools module's go.mod is skipped", starts: []string{nested}, want: filepath.Join(repo, "bin", "k8s")},
		"SecondStart": {reason: "the executable's directory is tried next", starts: []string{other, deep}, want: filepath.Join(repo, "bin", "k8s")},
		"Outside":     {reason: "another module is not ours", starts: []string{other}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ResolveBinDir(tc.flag, tc.env, tc.starts...)
			if tc.wantErr {
				require.Error(t, err, tc.reason)
				assert.Contains(t, err.Error(), BinDirEnv, "the message says what to set")
				return
			}
			require.NoError(t, err, tc.reason)
			assert.Equal(t, tc.want, got, tc.reason)
		})
	}
}

func TestReadStamp(t *testing.T) {
	dir := t.TempDir()
	assert.Equal(t, "", ReadStamp(dir), "no stamp file")
	writeFile(t, filepath.Join(dir, "VERSION"), "pins=abc kubernetes=v1.34.2\nignored\n", 0o644)
	assert.Equal(t, "pins=abc kubernetes=v1.34.2", ReadStamp(dir))
}

func TestDefaultHome(t *testing.T) {
	got, err := DefaultHome("/srv/oam")
	require.NoError(t, err)
	assert.Equal(t, "/srv/oam", got, "$OAMFLOW_HOME wins")

	t.Setenv("HOME", "/home/tester")
	got, err = DefaultHome("")
	require.NoError(t, err)
	assert.Equal(t, "/home/tester/.oamflow", got, "default under the home directory")
}
