package cuex

import (
	"context"
	"testing"

	"cuelang.org/go/cue"

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

func TestSharedMemo(t *testing.T) {
	m := NewMemo(2)
	a, b := NewEngine(WithMemo(m)), NewEngine(WithMemo(m))
	a.Remember("k1", "one")
	got, ok := b.Recall("k1")
	assert.True(t, ok, "an Engine sharing the Memo finds what another remembered")
	assert.Equal(t, "one", got)
	b.Remember("k2", "two")
	b.Remember("k3", "three")
	assert.Equal(t, 2, m.Len(), "the bound holds for the Engines together")
	_, ok = a.Recall("k1")
	assert.False(t, ok, "the least recently used result is dropped")
	_, ok = NewEngine().Recall("k3")
	assert.False(t, ok, "an Engine without the Memo has its own")
}

func TestForgetDropsValuesKeepsMemo(t *testing.T) {
	e := NewEngine()
	tpl, err := e.Compile(Source{Kind: "component", Name: "x"}, "parameter: {n: int}\nout: parameter.n + 1\n")
	require.NoError(t, err)
	eval := func() {
		t.Helper()
		require.NoError(t, e.Eval(context.Background(), tpl, map[string]any{"parameter": map[string]any{"n": 1}}, func(cue.Value) error { return nil }))
	}
	eval()
	e.Remember("result", 2)
	assert.Equal(t, 1, e.values.order.Len(), "the evaluated value is kept for the same piece of work")
	e.Forget()
	assert.Equal(t, 0, e.values.order.Len(), "Forget drops the CUE values")
	_, ok := e.Recall("result")
	assert.True(t, ok, "remembered results stay")
	eval()
	assert.Equal(t, 1, e.values.order.Len())
}
