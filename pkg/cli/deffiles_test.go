package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
)

const (
	traitCUE = "stamp: {\n\ttype: \"trait\"\n}\ntemplate: {\n\tparameter: v: string\n\tpatch: metadata: labels: stamp: parameter.v\n}\n"
	twoYAML  = `apiVersion: core.oam.dev/v1beta1
kind: PolicyDefinition
metadata: {name: p1}
spec: {schematic: {cue: {template: "parameter: {}"}}}
---
apiVersion: core.oam.dev/v1beta1
kind: TraitDefinition
metadata: {name: t1}
spec: {schematic: {cue: {template: "patch: {}"}}}
`
)

func TestReadDefinitionFS(t *testing.T) {
	fsys := fstest.MapFS{
		"traits/stamp.cue":  {Data: []byte(traitCUE)},
		"traits/STAMP.CUE":  {Data: []byte(traitCUE)},
		"two.yaml":          {Data: []byte(twoYAML)},
		"bad.cue":           {Data: []byte("bad: {\n\ttype: \"gadget\"\n}\ntemplate: {}\n")},
		"broken.cue":        {Data: []byte("stamp: {\n")},
		"not-a-def.yaml":    {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")},
		"traits/other.json": {Data: []byte(`{"apiVersion": "core.oam.dev/v1beta1", "kind": "TraitDefinition", "metadata": {"name": "j"}}`)},
	}
	cases := []struct {
		reason  string
		name    string
		label   string
		want    []string // "kind name origin"
		wantErr []string // substrings of the error
	}{
		{reason: ".cue file", name: "traits/stamp.cue", label: "defs/traits/stamp.cue", want: []string{"trait stamp defs/traits/stamp.cue"}},
		{reason: "the .cue extension in any case", name: "traits/STAMP.CUE", label: "STAMP.CUE", want: []string{"trait stamp STAMP.CUE"}},
		{reason: "YAML documents", name: "two.yaml", label: "two.yaml", want: []string{"policy p1 two.yaml", "trait t1 two.yaml"}},
		{reason: "JSON", name: "traits/other.json", label: "other.json", want: []string{"trait j other.json"}},
		{reason: "missing file: named by its label, the cause once", name: "nothing.cue", label: "/home/u/nothing.cue",
			wantErr: []string{"reading /home/u/nothing.cue: file does not exist"}},
		{reason: "bad header names the label", name: "bad.cue", label: "my/bad.cue", wantErr: []string{"my/bad.cue", `"gadget"`}},
		{reason: "CUE syntax error names the label", name: "broken.cue", label: "my/broken.cue", wantErr: []string{"my/broken.cue"}},
		{reason: "a YAML object of another kind", name: "not-a-def.yaml", label: "x.yaml", wantErr: []string{"x.yaml", "ConfigMap", "not a core.oam.dev definition"}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			defs, err := readDefinitionFS(fsys, tc.name, tc.label)
			if len(tc.wantErr) > 0 {
				require.Error(t, err)
				var ue *UserError
				assert.True(t, errors.As(err, &ue), "a *UserError: %v", err)
				for _, w := range tc.wantErr {
					assert.Contains(t, err.Error(), w)
				}
				assert.NotContains(t, err.Error(), "open "+tc.name, "the file is named once, by its label")
				return
			}
			require.NoError(t, err)
			var got []string
			for _, d := range defs {
				got = append(got, string(d.Kind)+" "+d.Name+" "+d.Origin)
				assert.Empty(t, d.Object.GetNamespace())
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestReadDefinitionFilesOSPaths(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	writeFile(t, dir, "stamp.cue", traitCUE)
	writeFile(t, dir, "two.yml", twoYAML)
	t.Chdir(sub)

	defs, _, err := readDefinitionFiles([]string{"../stamp.cue", filepath.Join(dir, "two.yml")})
	require.NoError(t, err)
	require.Len(t, defs, 3)
	assert.Equal(t, "../stamp.cue", defs[0].Origin, "named as typed")
	assert.Equal(t, "../stamp.cue", defs[0].File, "CUE positions name the path as typed")
	assert.Equal(t, filepath.Join(dir, "two.yml"), defs[2].Origin)

	_, _, err = readDefinitionFiles([]string{"../stamp.cue", "../missing.cue"})
	require.Error(t, err)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Regexp(t, `^reading \.\./missing\.cue: [^:]+$`, err.Error(), "the path once, then the cause")
}

func TestReadDefinitionFolders(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "defs", "trait", "deep"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "empty"), 0o755))
	writeFile(t, filepath.Join(dir, "defs", "trait", "deep"), "stamp.cue", traitCUE)
	writeFile(t, filepath.Join(dir, "defs"), "two.yml", twoYAML)
	writeFile(t, filepath.Join(dir, "defs"), "app.yaml", "apiVersion: core.oam.dev/v1beta1\nkind: Application\nmetadata: {name: a}\n")
	writeFile(t, filepath.Join(dir, "defs"), "README.md", "not read")
	writeFile(t, filepath.Join(dir, "empty"), "notes.txt", "not read")
	t.Chdir(dir)

	cases := []struct {
		reason  string
		paths   []string
		want    []string // "kind name origin"
		skipped int
		wantErr string
	}{
		{reason: "a folder is walked recursively, files sorted; an Application in it is skipped, other files ignored",
			paths: []string{"defs"}, skipped: 1,
			want: []string{"trait stamp defs/trait/deep/stamp.cue", "policy p1 defs/two.yml", "trait t1 defs/two.yml"}},
		{reason: "folders and files mix, in the order given",
			paths: []string{"defs/two.yml", "defs/trait"},
			want:  []string{"policy p1 defs/two.yml", "trait t1 defs/two.yml", "trait stamp defs/trait/deep/stamp.cue"}},
		{reason: "a file named directly must be a definition", paths: []string{"defs/app.yaml"}, wantErr: "not a core.oam.dev definition"},
		{reason: "a folder without definition files is an error", paths: []string{"empty"}, wantErr: "empty: no definition files"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			defs, skipped, err := readDefinitionFiles(tc.paths)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			var got []string
			for _, d := range defs {
				got = append(got, string(d.Kind)+" "+d.Name+" "+d.Origin)
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.skipped, skipped)
		})
	}
}

func TestReadDefinitionTree(t *testing.T) {
	fsys := fstest.MapFS{
		"traits/b.cue":         {Data: []byte(traitCUE)},
		"traits/a.cue":         {Data: []byte(traitCUE)},
		"traits/README.md":     {Data: []byte("not read")},
		"traits/nested/c.cue":  {Data: []byte(traitCUE)},
		"policies/p.yaml":      {Data: []byte(twoYAML)},
		"components/empty.cue": {Data: []byte("broken: {\n")},
	}
	_, err := readDefinitionTree(fsys)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "components/empty.cue", "the error names the file")

	delete(fsys, "components/empty.cue")
	defs, err := readDefinitionTree(fsys)
	require.NoError(t, err)
	var origins []string
	for _, d := range defs {
		origins = append(origins, d.Origin)
	}
	assert.Equal(t, []string{"traits/a.cue", "traits/b.cue", "traits/nested/c.cue"}, origins, ".cue files only, in lexical order")
}

// TestBuiltinDefinitions: install reads every built-in, named by its path
// in definitions.FS, with the same reader as def apply.
func TestBuiltinDefinitions(t *testing.T) {
	defs, err := builtinDefinitions()
	require.NoError(t, err)
	byOrigin := map[string]*appfile.Definition{}
	for _, d := range defs {
		byOrigin[d.Origin] = d
	}
	require.Contains(t, byOrigin, "components/webservice.cue")
	ws := byOrigin["components/webservice.cue"]
	assert.Equal(t, appfile.KindComponent, ws.Kind)
	assert.IsType(t, &v1beta1.ComponentDefinition{}, ws.Object)
	assert.Equal(t, "components/webservice.cue", ws.File)

	fromFile, _, err := readDefinitionFiles([]string{"../../definitions/components/webservice.cue"})
	require.NoError(t, err)
	require.Len(t, fromFile, 1)
	assert.True(t, sameDefinition(ws.Object, fromFile[0].Object), "def apply of the built-in's file gives the same object")
}
