package cuex

import (
	"context"
	"testing"
	"time"

	"cuelang.org/go/cue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPool(t *testing.T) {
	src, text := Source{Kind: "component", Name: "c"}, `output: {x: parameter.x}
parameter: x: int`
	p := NewPool(1)

	e, err := p.Get(context.Background())
	require.NoError(t, err)
	compiled, err := e.Compile(src, text)
	require.NoError(t, err)
	require.NoError(t, e.Eval(context.Background(), compiled, map[string]any{"parameter": map[string]any{"x": 1}}, func(cue.Value) error { return nil }))
	require.Equal(t, 1, e.values.order.Len(), "the evaluated value is kept while the Engine is lent")

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = p.Get(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "the only Engine is lent: Get waits until its context ends")

	p.Put(e)
	again, err := p.Get(context.Background())
	require.NoError(t, err)
	assert.Same(t, e, again, "the Engine given back is lent again")
	assert.Zero(t, again.values.order.Len(), "given back, it forgot the values it evaluated")
	kept, err := again.Compile(src, text)
	require.NoError(t, err)
	assert.Same(t, compiled, kept, "and kept what it compiled")
}
