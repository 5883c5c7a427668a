package cuex

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKey(t *testing.T) {
	k := func(parts ...any) string {
		t.Helper()
		s, err := Key(parts...)
		require.NoError(t, err)
		return s
	}
	a := map[string]any{"x": int64(1), "y": []any{"a", nil, true}, "z": map[string]any{"q": 1.5}}
	b := map[string]any{"z": map[string]any{"q": 1.5}, "y": []any{"a", nil, true}, "x": int64(1)}
	assert.Equal(t, k(a), k(b), "map order does not matter")
	assert.NotEqual(t, k(map[string]any{"x": int64(1)}), k(map[string]any{"x": 1.0}), "int and float differ, as in CUE")
	assert.NotEqual(t, k("ab", "c"), k("a", "bc"), "parts are delimited")
	assert.NotEqual(t, k([]any{"a"}), k([]any{"a", nil}))
	assert.Equal(t, k(map[string]string{"a": "b"}), k(map[string]string{"a": "b"}))
}
