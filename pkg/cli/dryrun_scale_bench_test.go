package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkDryRunComponents runs `dry-run --offline` in-process on one
// Application of n webservice components: the cost per component should
// not grow with n (compare ns/op ÷ n between the sizes).
func BenchmarkDryRunComponents(b *testing.B) {
	for _, n := range []int{50, 200, 800} {
		var doc strings.Builder
		doc.WriteString("apiVersion: core.oam.dev/v1beta1\nkind: Application\nmetadata: {name: big, namespace: default}\nspec:\n  components:\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&doc, "    - {name: web-%d, type: webservice, properties: {image: 'nginx:1.%d', port: 80}}\n", i, i%30)
		}
		app := filepath.Join(b.TempDir(), "app.yaml")
		if err := os.WriteFile(app, []byte(doc.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("components=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				var out, errOut bytes.Buffer
				root := NewRootCommand(&out, &errOut)
				root.SetArgs([]string{"dry-run", "--offline", "-f", app, "--max-components", "5000"})
				if err := root.ExecuteContext(context.Background()); err != nil {
					b.Fatal(err, errOut.String())
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/component")
		})
	}
}
