package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateGolden = flag.Bool("update", false, "rewrite golden files under testdata/")

// runOamflow runs the oamflow command line in-process and returns what it
// printed and the exit code Execute would return.
func runOamflow(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := NewRootCommand(&out, &errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	code = ExitOK
	if err != nil {
		var ue *UserError
		var ee *ExitError
		code = ExitRuntimeErr
		switch {
		case errors.As(err, &ee):
			code = ee.Code
			if ee.Err != nil {
				errOut.WriteString("Error: " + ee.Err.Error() + "\n")
			}
		case errors.As(err, &ue):
			code = ExitUserError
			errOut.WriteString("Error: " + err.Error() + "\n")
		default:
			errOut.WriteString("Error: " + err.Error() + "\n")
		}
	}
	return out.String(), errOut.String(), code
}

func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestDryRunGolden(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{name: "webservice", args: []string{"-f", "testdata/dryrun/app.yaml"}},
		{name: "multicluster", args: []string{"-f", "testdata/dryrun/multicluster.yaml", "--cluster-labels", "edge-1=tier=edge,region=x", "--cluster-labels", "core-1=tier=core"}},
		{name: "merge-policy", args: []string{"-f", "testdata/dryrun/app.yaml,testdata/dryrun/standalone-policy.yaml", "--merge"}},
		{name: "merge-workflow", args: []string{"-f", "testdata/dryrun/app-with-ref.yaml", "-f", "testdata/dryrun/standalone-workflow.yaml", "--merge"}},
		{name: "standalone-ignored", args: []string{"-f", "testdata/dryrun/app.yaml,testdata/dryrun/standalone-policy.yaml"}},
		{name: "namespace-flag", args: []string{"-f", "testdata/dryrun/app.yaml", "-n", "staging", "-o", "json"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runOamflow(t, append([]string{"dry-run", "--offline"}, tc.args...)...)
			require.Equal(t, ExitOK, code, errOut)
			golden := filepath.Join("testdata", "dryrun", tc.name+".golden")
			got := out
			if errOut != "" {
				got = "# stderr:\n# " + strings.ReplaceAll(strings.TrimSpace(errOut), "\n", "\n# ") + "\n" + out
			}
			if *updateGolden {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
				return
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test ./pkg/cli -run TestDryRunGolden -update")
			assert.Equal(t, string(want), got)
		})
	}
}

func TestDryRunUserDefinitionsWin(t *testing.T) {
	dir := t.TempDir()
	app := writeFile(t, dir, "app.yaml", `apiVersion: core.oam.dev/v1beta1
kind: Application
metadata: {name: a}
spec:
  components:
    - name: web
      type: webservice
      properties: {image: nginx}
      traits:
        - {type: shout-label, properties: {key: team, value: web}}
`)
	out, errOut, code := runOamflow(t, "dry-run", "--offline", "-f", app, "-d", "testdata/dryrun/user-trait.cue")
	require.Equal(t, ExitOK, code, errOut)
	assert.Contains(t, out, "team: WEB")
	assert.Contains(t, out, "namespace: default", "no namespace in the app or flags means default")
}

func TestDryRunBadInput(t *testing.T) {
	dir := t.TempDir()
	header := "apiVersion: core.oam.dev/v1beta1\nkind: Application\nmetadata: {name: a}\nspec:\n  components:\n"
	brokenDef := writeFile(t, dir, "broken.cue", "\"broken\": {\n\ttype: \"trait\"\n}\ntemplate: {\n\tpatch: spec: replicas: parameter.n +\n\tparameter: n: int\n}\n")
	// The unknown package is on file line 4 (found by a tester: reported
	// as 3, the import's line in the template, once a comment preceded
	// the imports).
	badImport := writeFile(t, t.TempDir(), "badimport.cue", "// A licence line.\nimport (\n\t\"strings\"\n\t\"encoding/jsn\"\n)\n\n\"badimport\": {\n\ttype: \"trait\"\n}\ntemplate: {\n\tpatch: metadata: name: strings.ToLower(\"A\")\n}\n")
	cases := []struct {
		reason string
		file   string // content of the -f file
		args   []string
		code   int
		want   []string // substrings of stderr
	}{
		{
			reason: "malformed YAML",
			file:   "apiVersion: core.oam.dev/v1beta1\nkind: Application\nmetadata: {name: a\n",
			code:   ExitUserError,
			want:   []string{"document 0 is not valid YAML"},
		},
		{
			reason: "unknown kind",
			file:   "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\n",
			code:   ExitUserError,
			want:   []string{"document 0 is apps/v1 Deployment; dry-run reads core.oam.dev Applications"},
		},
		{
			reason: "unknown field",
			file:   header + "    - {name: web, type: webservice, propertis: {image: x}}\n",
			code:   ExitUserError,
			want:   []string{`unknown field "propertis"`},
		},
		{
			reason: "no Application",
			file:   "# nothing here\n",
			code:   ExitUserError,
			want:   []string{"no Application found"},
		},
		{
			reason: "all property errors at once, with field paths",
			file:   header + "    - {name: web, type: webservice, properties: {image: 1, replicas: x}, traits: [{type: scaler, properties: {replicas: x}}]}\n",
			code:   ExitUserError,
			want: []string{
				"spec.components[0].properties.image: expected string, got int 1",
				`spec.components[0].traits[0].properties.replicas: expected int & >=0, got string "x"`,
				"spec.components[0].properties.replicas: unknown property; allowed: addRevisionLabel",
			},
		},
		{
			// Checking the whole template reported `expected an object,
			// got object {"constraints":"x"}: cycle error` at the trait's
			// properties.
			reason: "a wrong-typed list the template iterates over is named, not reported as a cycle",
			file:   header + "    - {name: web, type: webservice, properties: {image: x}, traits: [{type: topologyspreadconstraints, properties: {constraints: x}}]}\n",
			code:   ExitUserError,
			want:   []string{`spec.components[0].traits[0].properties.constraints: expected a list, got string "x"`},
		},
		{
			// `*{} | {[string]: string}` let the open `{}` match any
			// object, so both were accepted and rendered.
			reason: "wrong-typed values in expose's annotations and env's env are refused",
			file:   header + "    - {name: web, type: webservice, properties: {image: x, ports: [{port: 80}]}, traits: [{type: expose, properties: {port: [80], annotations: {x: [1]}}}, {type: env, properties: {env: {A: [1]}}}]}\n",
			code:   ExitUserError,
			want:   []string{`spec.components[0].traits[0].properties.annotations.x: expected string, got list [1]`, `spec.components[0].traits[1].properties.env: conflicting values [1] and string`},
		},
		{
			reason: "an error on an import line names its line in the file",
			file:   header + "    - {name: web, type: webservice, properties: {image: x}, traits: [{type: badimport}]}\n",
			args:   []string{"-d", badImport},
			code:   ExitUserError,
			want:   []string{`trait definition "badimport" cannot be used`, "badimport.cue:4:"},
		},
		{
			reason: "a definition whose CUE does not compile",
			file:   header + "    - {name: web, type: webservice, properties: {image: x}, traits: [{type: broken, properties: {n: 1}}]}\n",
			args:   []string{"-d", brokenDef},
			code:   ExitUserError,
			want:   []string{`trait definition "broken" cannot be used`, "broken.cue:6:11"},
		},
		{
			reason: "huge property values, the spec within its budget",
			file:   header + "    - {name: web, type: webservice, properties: {image: \"" + strings.Repeat("x", 2<<20) + "\"}}\n",
			args:   []string{"--max-application-bytes=4194304"},
			code:   ExitUserError,
			want:   []string{`spec.components[0].properties: component "webservice": properties are`, "bytes of JSON, over the limit of 1048576"},
		},
		{
			reason: "a spec over its budget is refused before any evaluation",
			file:   header + "    - {name: web, type: webservice, properties: {image: \"" + strings.Repeat("x", 2<<20) + "\"}}\n",
			code:   ExitUserError,
			want:   []string{`application default/a is invalid: spec: 2097229 bytes; the limit is 1048576 (--max-application-bytes)`},
		},
		{
			reason: "components over their budget",
			file:   header + "    - {name: a, type: webservice, properties: {image: x}}\n    - {name: b, type: webservice, properties: {image: x}}\n",
			args:   []string{"--max-components=1"},
			code:   ExitUserError,
			want:   []string{`spec.components: 2 components; the limit is 1 (--max-components)`},
		},
		{
			reason: "rendered objects over their budget",
			file:   header + "    - {name: a, type: webservice, properties: {image: x, ports: [{port: 80, expose: true}]}}\n",
			args:   []string{"--max-rendered-objects=1"},
			code:   ExitUserError,
			want:   []string{`application default/a is invalid: spec.components: renders 2 objects; the limit is 1 (--max-rendered-objects)`},
		},
		{
			reason: "a zero budget is refused, not silently taken as the default",
			file:   header + "    - {name: a, type: webservice, properties: {image: x}}\n",
			args:   []string{"--max-components=0"},
			code:   ExitUserError,
			want:   []string{`--max-components must be at least 1, got 0`},
		},
		{
			reason: "non-ASCII and over-long names",
			file:   header + "    - {name: wéb, type: webservice, properties: {image: x}}\n    - {name: " + strings.Repeat("a", 64) + ", type: webservice, properties: {image: x}}\n",
			code:   ExitUserError,
			want:   []string{`spec.components[0].name: component name "wéb" is not valid`, "spec.components[1].name", "must be no more than 63 characters"},
		},
		{
			reason: "bad output format",
			file:   header + "    - {name: web, type: webservice, properties: {image: x}}\n",
			args:   []string{"-o", "toml"},
			code:   ExitUserError,
			want:   []string{"--output must be yaml or json"},
		},
		{
			reason: "bad --cluster-labels",
			file:   header + "    - {name: web, type: webservice, properties: {image: x}}\n",
			args:   []string{"--cluster-labels", "nolabels"},
			code:   ExitUserError,
			want:   []string{"want NAME=KEY=VALUE"},
		},
	}
	for i, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			// -f splits on commas, so the file name must have none.
			f := writeFile(t, dir, fmt.Sprintf("app-%d.yaml", i), tc.file)
			_, errOut, code := runOamflow(t, append([]string{"dry-run", "--offline", "-f", f}, tc.args...)...)
			assert.Equal(t, tc.code, code, errOut)
			for _, w := range tc.want {
				assert.Contains(t, errOut, w)
			}
		})
	}
	_, errOut, code := runOamflow(t, "dry-run", "--offline", "-f", filepath.Join(dir, "missing.yaml"))
	assert.Equal(t, ExitUserError, code)
	assert.Contains(t, errOut, "no such file")
}
