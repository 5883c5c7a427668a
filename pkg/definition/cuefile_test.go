package definition

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
