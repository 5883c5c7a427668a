package render

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func loadApp(t testing.TB, path string) *v1beta1.Application {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	app := &v1beta1.Application{}
	require.NoError(t, yaml.UnmarshalStrict(b, app))
	return app
}

func testSource(t testing.TB) appfile.DefinitionSource {
	t.Helper()
	src, err := appfile.NewLocalSource("testdata/defs")
	require.NoError(t, err)
	return src
}

// toYAML prints resources as the dry-run does, one document each.
func toYAML(t testing.TB, res []Resource) string {
	t.Helper()
	var b strings.Builder
	for _, r := range res {
		y, err := yaml.Marshal(r.Object.Object)
		require.NoError(t, err)
		b.WriteString("---\n# component: " + r.Component)
		if r.Trait != "" {
			b.WriteString(", trait: " + r.Trait)
		}
		if r.Output != "" {
			b.WriteString(", output: " + r.Output)
		}
		b.WriteString("\n")
		b.Write(y)
	}
	return b.String()
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run go test -update")
	assert.Equal(t, string(want), got)
}

func TestRenderGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/cases/*")
	require.NoError(t, err)
	src := testSource(t)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			ctx := context.Background()
			af, err := appfile.Parse(ctx, loadApp(t, filepath.Join(dir, "app.yaml")), src)
			require.NoError(t, err)
			res, err := RenderApplication(ctx, af, Options{AppRevision: af.Name + "-v3"})
			require.NoError(t, err)
			golden(t, filepath.Join(dir, "expected.yaml"), toYAML(t, res))
		})
	}
}
