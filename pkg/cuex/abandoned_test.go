package cuex

import (
	"context"
	"testing"
	"time"

	"cuelang.org/go/cue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAbandonedEvaluationsAreBounded: timed-out evaluations keep running
// (CUE cannot be interrupted); while one runs, the same evaluation is not
// started again (it fails at once as a timeout), other inputs are
// evaluated, and once Max of them run, Engines sharing the count start
// nothing (ErrBusy) until they end.
func TestAbandonedEvaluationsAreBounded(t *testing.T) {
	shared := NewAbandoned(2)
	engine := func() *Engine {
		return NewEngine(WithLimits(Limits{Timeout: 100 * time.Millisecond}), WithAbandoned(shared))
	}
	const grid = `import "list"
parameter: n: int
n: len([for i in list.Range(0, parameter.n, 1) for j in list.Range(0, parameter.n, 1) if i*j == -1 {i}])
`
	a, b := engine(), engine()
	eval := func(e *Engine, n int64) error {
		tm, err := e.Compile(Source{Kind: "component", Name: "grid"}, grid)
		if err != nil {
			return err
		}
		return e.Eval(context.Background(), tm, map[string]any{"parameter": map[string]any{"n": n}}, func(v cue.Value) error {
			_, err := v.LookupPath(cue.ParsePath("n")).Int64()
			return err
		})
	}
	// Slow enough to outlive its timeout, finishing within seconds.
	const slow, slower = 700, 750
	err := eval(a, slow)
	require.ErrorIs(t, err, ErrTimeout)
	require.Equal(t, 1, shared.Running())

	start := time.Now()
	err = eval(b, slow)
	require.ErrorIs(t, err, ErrTimeout, "the same evaluation, on another Engine sharing the count")
	assert.Contains(t, err.Error(), "the same evaluation, abandoned at its timeout earlier, is still running")
	assert.Less(t, time.Since(start), 100*time.Millisecond, "not started again")
	assert.Equal(t, 1, shared.Running(), "and not counted again")

	require.NoError(t, eval(b, 3), "another input is evaluated")

	require.ErrorIs(t, eval(b, slower), ErrTimeout)
	require.Equal(t, 2, shared.Running())
	err = eval(a, 4)
	require.ErrorIs(t, err, ErrBusy, "at the limit nothing is started")
	assert.Contains(t, err.Error(), "not evaluated now: 2 earlier evaluations that timed out are still running (CUE cannot be interrupted; at most 2 may run)")

	require.Eventually(t, func() bool { return shared.Running() == 0 }, time.Minute, 50*time.Millisecond, "abandoned evaluations end by themselves")
	require.NoError(t, eval(a, 4), "and then evaluations start again")
}
