package workflow

import (
	"context"
	"io/fs"
	"path"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"github.com/kubevela/pkg/cue/cuex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/definition"
)

// stepTemplates returns the templates of definitions/workflowsteps by name.
func stepTemplates(t testing.TB) map[string]string {
	t.Helper()
	out := map[string]string{}
	files, err := fs.Glob(definitions.FS, "workflowsteps/*.cue")
	require.NoError(t, err)
	require.NotEmpty(t, files, "definitions.FS embeds no workflowsteps/*.cue")
	for _, f := range files {
		b, err := fs.ReadFile(definitions.FS, f)
		require.NoError(t, err)
		df, err := definition.ParseCUE(f, b)
		require.NoError(t, err)
		require.Equal(t, definition.KindWorkflowStep, df.Kind, f)
		require.Equal(t, strings.TrimSuffix(path.Base(f), ".cue"), df.Name, "%s: the file is named after the definition", f)
		out[df.Name] = df.Template
	}
	return out
}

// TestBuiltinStepDefinitionsCompile checks that every built-in step
// definition is valid CUE against the provider packages the engine serves.
func TestBuiltinStepDefinitionsCompile(t *testing.T) {
	comp, err := NewCompiler()
	require.NoError(t, err)
	want := []string{"apply-component", "apply-object", "read-object", "suspend", "step-group",
		"print-message-in-status", "depends-on-app", "request", "webhook", "deploy"}
	tmpls := stepTemplates(t)
	for _, name := range want {
		t.Run(name, func(t *testing.T) {
			tmpl, ok := tmpls[name]
			require.True(t, ok, "definitions/workflowsteps/%s.cue is missing", name)
			src := tmpl + "\ncontext: {name: \"app\", namespace: \"default\"}\n"
			v, err := comp.CompileStringWithOptions(context.Background(), src, cuex.DisableResolveProviderFunctions{})
			require.NoError(t, err)
			assert.NoError(t, v.Err())
			assert.True(t, v.LookupPath(parsePath("parameter")).Exists(), "a step definition declares its parameter")
		})
	}
}

func parsePath(p string) cue.Path { return cue.ParsePath(p) }
