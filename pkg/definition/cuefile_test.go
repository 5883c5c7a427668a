package definition

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScanLines covers layouts the line scan must read right or leave to
// the parser (found by a tester: a multi-line description holding a
// `type:` line at two tabs was read as the kind).
func TestScanLines(t *testing.T) {
	cases := []struct {
		reason, src string
		name        string
		kind        Kind
		ok          bool
	}{
		{"tabs", "a: {\n\ttype: \"trait\"\n}\ntemplate: {}\n", "a", KindTrait, true},
		{"four spaces", "a: {\n    description: \"d\"\n    type: \"trait\"\n}\ntemplate: {}\n", "a", KindTrait, true},
		{"a type line inside a multi-line description", "a: {\n\tdescription: \"\"\"\n\t\ttype: \"component\"\n\t\t\"\"\"\n\ttype: \"trait\"\n}\ntemplate: {}\n", "a", KindTrait, true},
		{"a nested type is not the kind", "a: {\n\tattributes: {\n\t\ttype: \"component\"\n\t}\n\ttype: \"trait\"\n}\ntemplate: {}\n", "a", KindTrait, true},
		{"CRLF", "a: {\r\n\ttype: \"policy\"\r\n}\r\ntemplate: {}\r\n", "a", KindPolicy, true},
		{"no type line", "a: {type: \"trait\"}\ntemplate: {}\n", "", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			name, kind, ok := scanLines([]byte(tc.src))
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.name, name)
			assert.Equal(t, tc.kind, kind)
		})
	}
}

// TestScanMatchesParse checks that the cheap scan finds the same name and
// kind as the full parse for every built-in and user definition.
func TestScanMatchesParse(t *testing.T) {
	files, err := filepath.Glob("../../definitions/*/*.cue")
	require.NoError(t, err)
	more, _ := filepath.Glob("../../definitions/testdata/user/*.cue")
	files = append(files, more...)
	require.NotEmpty(t, files)
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		name, kind, ok := scanLines(src)
		full, err := ParseCUE(f, src)
		require.NoError(t, err, f)
		assert.True(t, ok, "%s: the line scan should recognize a formatted file", f)
		assert.Equal(t, full.Name, name, f)
		assert.Equal(t, full.Kind, kind, f)
	}
}
