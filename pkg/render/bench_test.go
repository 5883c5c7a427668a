package render

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
)

// BenchmarkRender parses and renders (a) one webservice with four traits
// and (b) twenty components with three traits each, using the built-in
// definitions. "cold" uses a new Engine every time (every template is
// compiled); "warm" reuses one Engine (templates compiled once, cached by
// content hash), as the controller does.
func BenchmarkRender(b *testing.B) {
	src := builtinSource(b)
	for _, app := range []struct{ name, file string }{
		{"a-webservice+4traits", "testdata/bench/one.yaml"},
		{"b-20components", "testdata/bench/twenty.yaml"},
	} {
		a := loadApp(b, app.file)
		run := func(b *testing.B, engine func() *cuex.Engine) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				ctx := appfile.WithEngine(context.Background(), engine())
				af, err := appfile.Parse(ctx, a, src)
				if err != nil {
					b.Fatal(err)
				}
				res, err := RenderApplication(ctx, af, Options{AppRevision: "bench-v1"})
				if err != nil || len(res) == 0 {
					b.Fatal(err)
				}
			}
		}
		b.Run(app.name+"/cold", func(b *testing.B) { run(b, func() *cuex.Engine { return cuex.NewEngine() }) })
		shared := cuex.NewEngine()
		ctx := appfile.WithEngine(context.Background(), shared)
		af, err := appfile.Parse(ctx, a, src)
		require.NoError(b, err)
		_, err = RenderApplication(ctx, af, Options{})
		require.NoError(b, err)
		b.Run(app.name+"/warm", func(b *testing.B) { run(b, func() *cuex.Engine { return shared }) })
		// Compiled templates cached, but every evaluation is new: the
		// image changes each time, so no memoized result applies.
		b.Run(app.name+"/warm-new-properties", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				changed := a.DeepCopy()
				for j := range changed.Spec.Components {
					raw := changed.Spec.Components[j].Properties.Raw
					changed.Spec.Components[j].Properties.Raw = []byte(strings.Replace(string(raw), `"image":"`, fmt.Sprintf(`"image":"r%d/`, i), 1))
				}
				af, err := appfile.Parse(ctx, changed, src)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := RenderApplication(ctx, af, Options{AppRevision: "bench-v1"}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(app.name+"/warm-render-only", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := RenderApplication(ctx, af, Options{AppRevision: "bench-v1"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
