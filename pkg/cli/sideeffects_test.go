package cli

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestToolImportsRefused: a definition importing one of CUE's tool packages
// is refused by every CLI entry point that reads definitions, with the
// import named (the webhook's case is in pkg/webhook).
func TestToolImportsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, pkg := range []string{"tool/exec", "tool/file", "tool/http", "tool/os", "tool/cli"} {
		def := filepath.Join(dir, filepath.Base(pkg)+".cue")
		writeFile(t, dir, filepath.Base(pkg)+".cue", "import \"strings\"\nimport \""+pkg+"\"\n\nrunner: {\n\ttype: \"component\"\n}\ntemplate: {\n\toutput: {apiVersion: \"v1\", kind: \"ConfigMap\", data: a: strings.ToUpper(\"x\")}\n}\n")
		app := writeFile(t, dir, filepath.Base(pkg)+"-app.yaml", "apiVersion: core.oam.dev/v1beta1\nkind: Application\nmetadata: {name: a}\nspec:\n  components: [{name: c, type: runner}]\n")
		want := `imports "` + pkg + `", which is refused: CUE's tool packages run commands`
		cases := []struct {
			reason string
			args   []string
		}{
			{reason: "def vet", args: []string{"def", "vet", def}},
			{reason: "def apply (refused before any cluster is asked)", args: []string{"def", "apply", def}},
			{reason: "dry-run with the definition", args: []string{"dry-run", "--offline", "-f", app, "-d", def}},
		}
		for _, tc := range cases {
			t.Run(pkg+"/"+tc.reason, func(t *testing.T) {
				out, errOut, code := runOamflow(t, tc.args...)
				assert.Equal(t, ExitUserError, code, "%s\n%s", out, errOut)
				assert.Contains(t, out+errOut, want)
				assert.Contains(t, out+errOut, def+":2:", "the import's position")
			})
		}
	}
}
