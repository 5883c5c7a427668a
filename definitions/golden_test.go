package definitions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/render"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/**/*.golden.yaml from the current rendering")

const (
	goldenDir  = "testdata/golden"
	userDefDir = "testdata/user"
	goldenExt  = ".golden.yaml"
)

// skipped names golden cases that cannot render yet, with the reason.
var skipped = map[string]string{}

// source is the built-in definitions (definitions.FS) plus the user-written
// KubeVela-format definitions of testdata/user, which must load unchanged.
func source(t testing.TB) appfile.DefinitionSource {
	t.Helper()
	builtin, err := appfile.NewFSSource(definitions.FS, ".")
	require.NoError(t, err)
	user, err := appfile.NewLocalSource(userDefDir)
	require.NoError(t, err)
	return appfile.Chain(user, builtin)
}

// goldenCases lists testdata/golden/<dir>/<case>.yaml as "<dir>/<case>".
func goldenCases(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(goldenDir, "*", "*.yaml"))
	require.NoError(t, err)
	var cases []string
	for _, f := range files {
		if strings.HasSuffix(f, goldenExt) {
			continue
		}
		rel, err := filepath.Rel(goldenDir, f)
		require.NoError(t, err)
		cases = append(cases, strings.TrimSuffix(filepath.ToSlash(rel), ".yaml"))
	}
	require.NotEmpty(t, cases)
	return cases
}

func loadApp(t testing.TB, path string) *v1beta1.Application {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	app := &v1beta1.Application{}
	require.NoError(t, yaml.UnmarshalStrict(b, app), "reading %s", path)
	return app
}

// renderGolden parses and renders one Application and prints every resource
// as a YAML document headed by a comment naming where it came from; a
// failure is printed as a single `# error:` document so that expected
// errors (a trait's errs) are golden too.
func renderGolden(t *testing.T, src appfile.DefinitionSource, app *v1beta1.Application) []byte {
	t.Helper()
	ctx := context.Background()
	var buf bytes.Buffer
	af, err := appfile.Parse(ctx, app, src)
	if err == nil {
		for _, w := range af.Warnings {
			fmt.Fprintf(&buf, "# warning: %s\n", w)
		}
		var res []render.Resource
		res, err = render.RenderApplication(ctx, af, render.Options{})
		for i, r := range res {
			if i > 0 {
				buf.WriteString("---\n")
			}
			fmt.Fprintf(&buf, "# component: %s", r.Component)
			if r.Trait != "" {
				fmt.Fprintf(&buf, ", trait: %s", r.Trait)
			}
			if r.Output != "" {
				fmt.Fprintf(&buf, ", output: %s", r.Output)
			}
			if r.Reference {
				buf.WriteString(", reference to existing objects")
			}
			fmt.Fprintf(&buf, ", cluster: %q, namespace: %q\n", r.Cluster, r.Namespace)
			b, merr := yaml.Marshal(r.Object.Object)
			require.NoError(t, merr)
			buf.Write(b)
		}
	}
	if err != nil {
		buf.Reset()
		buf.WriteString("# error:\n")
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(&buf, "#   %s\n", line)
		}
	}
	return buf.Bytes()
}

// TestGolden renders testdata/golden/<definition or "combinations">/<case>.yaml
// with the built-in definitions and compares the result with
// <case>.golden.yaml. Run `go test ./definitions -update` to rewrite them.
func TestGolden(t *testing.T) {
	src := source(t)
	for _, name := range goldenCases(t) {
		t.Run(name, func(t *testing.T) {
			if reason, ok := skipped[name]; ok {
				t.Skip(reason)
			}
			got := renderGolden(t, src, loadApp(t, filepath.Join(goldenDir, name+".yaml")))
			goldenFile := filepath.Join(goldenDir, name+goldenExt)
			if *update {
				require.NoError(t, os.WriteFile(goldenFile, got, 0o644))
				return
			}
			want, err := os.ReadFile(goldenFile)
			require.NoError(t, err, "missing golden file; run `go test ./definitions -update`")
			assert.Equal(t, string(want), string(got))
		})
	}
}

// TestEveryBuiltinHasGolden checks that each built-in definition has a golden
// folder with at least one case.
func TestEveryBuiltinHasGolden(t *testing.T) {
	for _, kind := range []string{"components", "traits", "policies"} {
		files, err := filepath.Glob(filepath.Join(kind, "*.cue"))
		require.NoError(t, err)
		require.NotEmpty(t, files, kind)
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".cue")
			cases, err := filepath.Glob(filepath.Join(goldenDir, name, "*.yaml"))
			require.NoError(t, err)
			assert.NotEmpty(t, cases, "built-in %s %q has no golden case under %s/%s", kind, name, goldenDir, name)
		}
	}
}

// openParameters are built-ins whose parameter is a map by design (label
// and annotation names, or an arbitrary merge patch).
var openParameters = map[string]bool{"labels": true, "annotations": true, "json-merge-patch": true}

// TestUnknownPropertiesRejected takes the first golden case of every
// built-in, adds a property the definition does not know, and expects
// appfile.Parse to reject it with the property's path: the built-ins close
// their top-level parameters so that typos do not pass silently.
func TestUnknownPropertiesRejected(t *testing.T) {
	src := source(t)
	for _, kind := range []string{"components", "traits", "policies"} {
		files, err := filepath.Glob(filepath.Join(kind, "*.cue"))
		require.NoError(t, err)
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".cue")
			if openParameters[name] {
				continue
			}
			t.Run(kind+"/"+name, func(t *testing.T) {
				inputs, err := filepath.Glob(filepath.Join(goldenDir, name, "*.yaml"))
				require.NoError(t, err)
				var input string
				for _, in := range inputs {
					if !strings.HasSuffix(in, goldenExt) {
						input = in
						break
					}
				}
				require.NotEmpty(t, input, "no golden input for %s", name)
				app := loadApp(t, input)
				path := addUnknownProperty(t, app, kind, name)
				_, err = appfile.Parse(context.Background(), app, src)
				require.Error(t, err)
				assert.Contains(t, err.Error(), path+": unknown property")
			})
		}
	}
}

// addUnknownProperty adds `zzUnknown: 1` to the properties of the first
// component, trait or policy of the given type and returns its field path.
func addUnknownProperty(t *testing.T, app *v1beta1.Application, kind, name string) string {
	t.Helper()
	add := func(raw **runtime.RawExtension) {
		props := map[string]any{}
		if *raw != nil && len((*raw).Raw) > 0 {
			require.NoError(t, json.Unmarshal((*raw).Raw, &props))
		}
		props["zzUnknown"] = 1
		b, err := json.Marshal(props)
		require.NoError(t, err)
		*raw = &runtime.RawExtension{Raw: b}
	}
	for i := range app.Spec.Components {
		c := &app.Spec.Components[i]
		if kind == "components" && c.Type == name {
			add(&c.Properties)
			return fmt.Sprintf("spec.components[%d].properties.zzUnknown", i)
		}
		for j := range c.Traits {
			if kind == "traits" && c.Traits[j].Type == name {
				add(&c.Traits[j].Properties)
				return fmt.Sprintf("spec.components[%d].traits[%d].properties.zzUnknown", i, j)
			}
		}
	}
	for i := range app.Spec.Policies {
		if kind == "policies" && app.Spec.Policies[i].Type == name {
			add(&app.Spec.Policies[i].Properties)
			return fmt.Sprintf("spec.policies[%d].properties.zzUnknown", i)
		}
	}
	t.Fatalf("no %s of type %q in the application", kind, name)
	return ""
}
