package appfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const yamlTrait = `apiVersion: core.oam.dev/v1beta1
kind: TraitDefinition
metadata:
  name: scaler
spec:
  appliesToWorkloads: ["*"]
  schematic:
    cue:
      template: |
        parameter: replicas: *2 | int
        patch: spec: replicas: parameter.replicas
`

func TestLocalSource(t *testing.T) {
	ctx := context.Background()
	src := testSource(t)
	assert.Equal(t, []string{"broken", "hpa", "scaler", "weird-header"}, src.Names(KindTrait), "indexing reads names only; broken files load")
	assert.Equal(t, []string{"apply-object", "notify"}, src.Names(KindWorkflowStep))

	d, err := src.Get(ctx, KindTrait, "weird-header")
	require.NoError(t, err, "a header on one line falls back to the parser")
	assert.Equal(t, "weird-header", d.Name)

	d, err = src.Get(ctx, KindComponent, "web@v3")
	require.NoError(t, err, "a revision pin is ignored offline")
	assert.Equal(t, "web", d.Name)
	assert.Equal(t, "testdata/defs/web.cue", d.File)
	assert.Equal(t, 9, d.LineOffset, "template line 1 (output:) is line 10 of the file")

	_, err = src.Get(ctx, KindTrait, "nope")
	assert.True(t, errors.Is(err, ErrDefinitionNotFound))
	_, err = src.Get(ctx, KindComponent, "scaler")
	assert.True(t, errors.Is(err, ErrDefinitionNotFound), "kinds are separate name spaces")

	// A formatted file is read without parsing its template: the syntax
	// error in broken.cue surfaces when the template is compiled (see
	// TestParseValidation), with its position in the file.
	d, err = src.Get(ctx, KindTrait, "broken")
	require.NoError(t, err)
	assert.Equal(t, 1, d.ColumnOffset, "the template block is indented by one tab")

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad-header.cue"), []byte("bad: {\n\ttype: \"trait\"\n\tlabels: x: 1\n}\ntemplate: {\n\tpatch: {}\n}\n"), 0o644))
	bad, err := NewLocalSource(dir)
	require.NoError(t, err)
	_, err = bad.Get(ctx, KindTrait, "bad")
	var de *DefinitionError
	assert.True(t, errors.As(err, &de), "a definition whose header is wrong is a DefinitionError: %v", err)
	assert.ErrorContains(t, err, "bad-header.cue")
}

// TestLocalSourceSkipsUnreadableFiles: a file in a folder whose name and
// kind cannot be read does not stop the others from loading (found by a
// tester: a syntax error in an unused, space-indented file failed the
// whole dry-run); Skipped names it. A file named directly still fails.
func TestLocalSourceSkipsUnreadableFiles(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.cue")
	require.NoError(t, os.WriteFile(broken, []byte("x: {type: \"trait\"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "good.cue"), []byte("good: {\n    type: \"trait\"\n}\ntemplate: {\n    patch: {}\n}\n"), 0o644))
	src, err := NewLocalSource(dir)
	require.NoError(t, err)
	_, err = src.Get(context.Background(), KindTrait, "good")
	require.NoError(t, err)
	skipped := src.Skipped()
	require.Len(t, skipped, 1)
	assert.ErrorContains(t, skipped[0], broken)

	_, err = NewLocalSource(broken)
	assert.ErrorContains(t, err, broken, "a file named directly is not skipped")
}

func TestFSSourceAndChain(t *testing.T) {
	ctx := context.Background()
	fsys := fstest.MapFS{
		"defs/traits/scaler.yaml": {Data: []byte(yamlTrait)},
		"defs/README.md":          {Data: []byte("not a definition")},
	}
	builtin, err := NewFSSource(fsys, "defs")
	require.NoError(t, err)
	d, err := builtin.Get(ctx, KindTrait, "scaler")
	require.NoError(t, err)
	assert.Contains(t, d.Template(), "*2 | int")

	user := testSource(t)
	d, err = Chain(user, builtin).Get(ctx, KindTrait, "scaler")
	require.NoError(t, err)
	assert.Equal(t, "testdata/defs/scaler.cue", d.Origin, "the first source wins")
	_, err = Chain(user, builtin).Get(ctx, KindPolicy, "nothing")
	assert.True(t, errors.Is(err, ErrDefinitionNotFound))
}

func TestSplitRevision(t *testing.T) {
	for _, tc := range []struct {
		in   string
		name string
		rev  int64
		bad  bool
	}{
		{in: "webservice", name: "webservice"},
		{in: "webservice@v3", name: "webservice", rev: 3},
		{in: "webservice@3", bad: true},
		{in: "webservice@v0", bad: true},
	} {
		name, rev, err := SplitRevision(tc.in)
		if tc.bad {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.name, name)
		assert.Equal(t, tc.rev, rev)
	}
}
