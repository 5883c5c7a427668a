package definition

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLoadCUEMatchesParseCUE checks that LoadCUE's fast path reads every
// built-in and user definition, and returns what ParseCUE returns.
func TestLoadCUEMatchesParseCUE(t *testing.T) {
	files, err := filepath.Glob("../../definitions/*/*.cue")
	require.NoError(t, err)
	more, _ := filepath.Glob("../../definitions/testdata/user/*.cue")
	files = append(files, more...)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			want, err := ParseCUE(f, src)
			require.NoError(t, err)
			got, ok := loadFormatted(f, src)
			require.True(t, ok, "the fast path should read a formatted file")
			assert.Equal(t, want, got)
			wantObj, err := want.Object("")
			require.NoError(t, err)
			gotObj, err := got.Object("")
			require.NoError(t, err)
			assert.Equal(t, wantObj, gotObj)
		})
	}
}

// TestLoadCUEFallsBack lists files the fast path must leave to ParseCUE;
// each still loads (or fails) exactly as ParseCUE does.
func TestLoadCUEFallsBack(t *testing.T) {
	const tmpl = "template: {\n\toutput: {kind: \"ConfigMap\", apiVersion: \"v1\"}\n}\n"
	cases := []struct {
		reason, src string
	}{
		{"computed description", "import \"strings\"\n\na: {\n\ttype: \"trait\"\n\tdescription: strings.ToUpper(\"x\")\n}\n" + tmpl},
		{"interpolation", "a: {\n\ttype: \"trait\"\n\tdescription: \"a \\(1+1)\"\n}\n" + tmpl},
		{"label given twice", "a: {\n\ttype: \"trait\"\n\tattributes: podDisruptive: true\n\tattributes: appliesToWorkloads: [\"*\"]\n}\n" + tmpl},
		{"optional field", "a: {\n\ttype: \"trait\"\n\tattributes?: {}\n}\n" + tmpl},
		{"negative number", "a: {\n\ttype: \"trait\"\n\tattributes: stage: -1\n}\n" + tmpl},
		{"not formatted", "a: {type: \"trait\"}\n" + tmpl},
		{"body at column 0", "a: {\n\ttype: \"trait\"\n}\ntemplate: {\noutput: {}\n}\n"},
		{"package clause", "package x\n\na: {\n\ttype: \"trait\"\n}\n" + tmpl},
		{"trailing comment on import", "import \"strings\" // for later\n\na: {\n\ttype: \"trait\"\n}\n" + tmpl},
		{"two headers", "a: {\n\ttype: \"trait\"\n}\nb: {\n\ttype: \"trait\"\n}\n" + tmpl},
		{"no template", "a: {\n\ttype: \"trait\"\n}\n"},
		{"bad kind", "a: {\n\ttype: \"widget\"\n}\n" + tmpl},
		{"annotation not a string", "a: {\n\ttype: \"trait\"\n\tannotations: x: 1\n}\n" + tmpl},
		// Found by a tester: each loaded through the fast path although
		// ParseCUE (and so def vet) rejects the file.
		{"an import inside the template block", "a: {\n\ttype: \"trait\"\n}\ntemplate: {\n\timport \"strings\"\n\n\tpatch: metadata: name: strings.ToLower(\"A\")\n}\n"},
		{"an import after the header", "a: {\n\ttype: \"trait\"\n}\n\nimport \"strings\"\n\n" + tmpl},
		{"an unreferenced alias in the header", "a: {\n\ttype: \"trait\"\n\tX=attributes: {podDisruptive: true}\n}\n" + tmpl},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			_, ok := loadFormatted("x.cue", []byte(tc.src))
			assert.False(t, ok, "fast path should give up")
			want, wantErr := ParseCUE("x.cue", []byte(tc.src))
			got, gotErr := LoadCUE("x.cue", []byte(tc.src))
			assert.Equal(t, want, got)
			assert.Equal(t, wantErr, gotErr)
		})
	}
}

// TestLoadCUELeavesTemplateSyntax documents the trade: a syntax error
// inside the template of a formatted file is not LoadCUE's to report (the
// compiler reports it, mapped to the file's line 6).
func TestLoadCUELeavesTemplateSyntax(t *testing.T) {
	src := "a: {\n\ttype: \"trait\"\n}\n\ntemplate: {\n\toutput: {\n}\n"
	_, err := ParseCUE("x.cue", []byte(src))
	require.Error(t, err)
	f, err := LoadCUE("x.cue", []byte(src))
	require.NoError(t, err)
	assert.Equal(t, "output: {\n", f.Template)
	assert.Equal(t, 6, 1+f.TemplateLineOffset, "template line 1 is file line 6")
}

// TestLoadCUEImports checks the template text and line mapping with both
// import forms.
func TestLoadCUEImports(t *testing.T) {
	src := "import (\n\t\"strings\"\n\t\"list\"\n)\nimport \"math\"\n\n// The header.\n\"my-trait\": {\n\ttype: \"trait\"\n\tdescription: \"\"\"\n\t\tTwo\n\t\tlines\n\t\t\"\"\"\n\tattributes: {\n\t\tappliesToWorkloads: [\"deployments.apps\"]\n\t\tstage: \"PostDispatch\"\n\t\tnumbers: [1, 2.5, true, null]\n\t}\n}\n\ntemplate: {\n\tparameter: n: int\n\n\tpatch: metadata: labels: x: strings.ToUpper(\"a\")\n}\n"
	want, err := ParseCUE("x.cue", []byte(src))
	require.NoError(t, err)
	got, ok := loadFormatted("x.cue", []byte(src))
	require.True(t, ok)
	assert.Equal(t, want, got)
	assert.Equal(t, "Two\nlines", got.Description)
	assert.Equal(t, []any{int64(1), 2.5, true, nil}, got.Attributes["numbers"])
}

func BenchmarkLoadCUE(b *testing.B) {
	src, err := os.ReadFile("../../definitions/components/webservice.cue")
	require.NoError(b, err)
	for _, bc := range []struct {
		name string
		load func(string, []byte) (*File, error)
	}{{"ParseCUE", ParseCUE}, {"LoadCUE", LoadCUE}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := bc.load("webservice.cue", src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzLoadCUE checks that LoadCUE never panics and that whenever its fast
// path reads a file that ParseCUE also reads, both return the same File.
// (The fast path may read files whose template ParseCUE rejects: template
// syntax is left to the compiler.)
func FuzzLoadCUE(f *testing.F) {
	files, _ := filepath.Glob("../../definitions/*/*.cue")
	for _, p := range files {
		if src, err := os.ReadFile(p); err == nil {
			f.Add(src)
		}
	}
	f.Add([]byte("a: {\n\ttype: \"trait\"\n\tattributes: x: [1, 2.5, \"s\", true, null, {y: \"z\"}]\n}\ntemplate: {\n\tpatch: {}\n}\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		fast, ok := loadFormatted("x.cue", src)
		if _, err := LoadCUE("x.cue", src); err != nil && ok {
			t.Fatalf("fast path accepted a file LoadCUE rejects: %v", err)
		}
		if !ok {
			return
		}
		slow, err := ParseCUE("x.cue", src)
		if err != nil {
			return
		}
		assert.Equal(t, slow, fast)
	})
}
