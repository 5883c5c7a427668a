package cuex

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/pkg/definition"
)

func TestReduceToParameter(t *testing.T) {
	cases := []struct {
		reason, src string
		want        []string // top-level labels kept; nil: not reducible
	}{
		{"plain schema", "import \"strings\"\nparameter: {image: string, replicas: *1 | int}\noutput: spec: replicas: parameter.replicas\nx: strings.ToUpper(\"a\")",
			[]string{"parameter"}},
		{"schema through top-level definitions", "#Port: {port: int, name?: string}\n#Unused: {}\nparameter: ports: [...#Port]\noutput: x: context.name",
			[]string{"#Port", "parameter"}},
		{"defaults from context, imports it uses", "import \"strings\"\ncontext: _\nparameter: name: *strings.ToUpper(context.name) | string\noutput: {}",
			[]string{"import", "context", "parameter"}},
		{"let clauses", "let N = 3\nparameter: n: *N | int", []string{"let N", "parameter"}},
		{"a comprehension that adds to parameter", "parameter: a: bool\nif parameter.a {parameter: b: string}", nil},
		{"comprehensions that add outputs are left out", "parameter: a: bool\nif parameter.a {outputs: x: {}}\nfor k, v in parameter {if v {errs: [k]}}", []string{"parameter"}},
		{"a comprehension that adds to a definition parameter uses", "#Port: port: int\nparameter: ports: [...#Port]\nif true {#Port: name: string}", nil},
		{"a comprehension embedding a reference may add anything", "#P: parameter: b: string\nparameter: a: bool\nif parameter.a {#P}", nil},
		{"an embedding may add to parameter", "{parameter: b: string}\nparameter: a: bool", nil},
		{"no parameter", "output: {}", nil},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			f, err := parser.ParseFile("x.cue", tc.src)
			require.NoError(t, err)
			r := reduceToParameter(f)
			if tc.want == nil {
				assert.Nil(t, r)
				return
			}
			require.NotNil(t, r)
			var got []string
			for _, d := range r.Decls {
				switch x := d.(type) {
				case *ast.ImportDecl:
					got = append(got, "import")
				case *ast.LetClause:
					got = append(got, "let "+x.Ident.Name)
				case *ast.Field:
					name, _, _ := ast.LabelName(x.Label)
					got = append(got, name)
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestCheckParameterAloneMatchesFull checks, over every built-in
// definition and a spread of wrong and right properties, that checking
// `parameter` alone reports exactly what the full evaluation reports.
func TestCheckParameterAloneMatchesFull(t *testing.T) {
	files, err := filepath.Glob("../../definitions/*/*.cue")
	require.NoError(t, err)
	cctx := map[string]any{"name": "web", "namespace": "default", "appName": "app", "appRevision": "app-v1", "revision": "web-v1"}
	alone := 0
	for _, file := range files {
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		def, err := definition.LoadCUE(file, src)
		require.NoError(t, err)
		e := NewEngine()
		tmpl, err := e.Compile(Source{Kind: string(def.Kind), Name: def.Name}, def.Template)
		require.NoError(t, err, file)
		if tmpl.paramsFile == nil {
			continue
		}
		alone++
		full := *tmpl
		full.paramsFile, full.params = nil, nil
		var names []string
		// (A parameter that is a disjunction has no fields to list.)
		if iter, err := tmpl.value.LookupPath(cue.ParsePath("parameter")).Fields(cue.Optional(true)); err == nil {
			for iter.Next() {
				names = append(names, iter.Selector().Unquoted())
			}
		}
		sort.Strings(names)
		if len(names) > 6 {
			names = names[:6]
		}
		inputs := []map[string]any{{}, {"notAProperty": "x"}}
		for _, n := range names {
			for _, v := range []any{"x", int64(3), true, []any{map[string]any{"name": "a", "value": "b"}}, map[string]any{"a": "b"}} {
				inputs = append(inputs, map[string]any{n: v})
			}
		}
		for _, in := range inputs {
			got, err := e.CheckParameter(context.Background(), tmpl, in, cctx, nil)
			require.NoError(t, err, "%s with %v", def.Name, in)
			require.NotNil(t, tmpl.params, "%s: the reduced template builds", def.Name)
			want, err := NewEngine().CheckParameter(context.Background(), &full, in, cctx, nil)
			require.NoError(t, err)
			if fmt.Sprint(want) == fmt.Sprint(got) {
				continue
			}
			// The one known difference is for the better: a wrong type
			// the rest of the template iterates over makes the whole
			// evaluation report a cycle at the root
			// (topologyspreadconstraints with constraints: "x"); the
			// reduced template names the property and what it expected.
			require.Len(t, want.Errors, 1, "%s with %v: want %v, got %v", def.Name, in, want, got)
			assert.Contains(t, want.Errors[0].Message, "cycle error", "%s with %v", def.Name, in)
			for _, fe := range got.Errors {
				assert.NotEmpty(t, fe.Path, "%s with %v: %v", def.Name, in, got)
				assert.NotContains(t, fe.Message, "cycle", "%s with %v", def.Name, in)
			}
		}
	}
	t.Logf("%d of %d built-ins check a reduced template", alone, len(files))
	assert.Greater(t, alone, len(files)/2, "most built-ins should not need the full evaluation")
}
