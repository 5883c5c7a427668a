package render

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
)

// builtinSource is the built-in definitions plus the user-written examples
// kept next to them.
func builtinSource(t testing.TB) appfile.DefinitionSource {
	t.Helper()
	builtin, err := appfile.NewFSSource(definitions.FS, ".")
	require.NoError(t, err)
	user, err := appfile.NewLocalSource("../../definitions/testdata/user")
	require.NoError(t, err)
	return appfile.Chain(user, builtin)
}

// TestRenderBuiltinInputs renders every golden input of the built-in
// definitions: each must parse and render without error, except the cases
// whose golden file records an error (it starts with "# error:").
func TestRenderBuiltinInputs(t *testing.T) {
	files, err := filepath.Glob("../../definitions/testdata/golden/*/*.yaml")
	require.NoError(t, err)
	src := builtinSource(t)
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.yaml") || strings.Contains(f, "missing-") {
			continue
		}
		t.Run(f[len("../../definitions/testdata/golden/"):], func(t *testing.T) {
			ctx := context.Background()
			af, err := appfile.Parse(ctx, loadApp(t, f), src)
			require.NoError(t, err)
			_, err = RenderApplication(ctx, af, Options{})
			want, rerr := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".golden.yaml")
			if rerr == nil && strings.HasPrefix(string(want), "# error:") {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
		})
	}
}
