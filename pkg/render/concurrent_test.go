package render

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
)

// TestConcurrentRendering shares one Engine between goroutines (run with
// -race): results are the same as rendering alone.
func TestConcurrentRendering(t *testing.T) {
	src := builtinSource(t)
	app := loadApp(t, "testdata/bench/one.yaml")
	ctx := appfile.WithEngine(context.Background(), cuex.NewEngine())
	af, err := appfile.Parse(ctx, app, src)
	require.NoError(t, err)
	want, err := RenderApplication(ctx, af, Options{})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			af, err := appfile.Parse(ctx, app, src)
			if !assert.NoError(t, err) {
				return
			}
			got, err := RenderApplication(ctx, af, Options{})
			if assert.NoError(t, err) {
				assert.Equal(t, toYAML(t, want), toYAML(t, got))
			}
		}()
	}
	wg.Wait()
}
