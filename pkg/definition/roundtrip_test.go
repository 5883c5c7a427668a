package definition

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRoundTrip converts every built-in and user definition .cue → CRD
// object → YAML → object → .cue → object and expects the same object.
func TestRoundTrip(t *testing.T) {
	files, err := filepath.Glob("../../definitions/*/*.cue")
	require.NoError(t, err)
	more, _ := filepath.Glob("../../definitions/testdata/user/*.cue")
	files = append(files, more...)
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			file, err := ParseCUE(f, src)
			require.NoError(t, err)
			obj, err := file.Object("oamflow-system")
			require.NoError(t, err)

			y, err := EncodeYAML(obj)
			require.NoError(t, err)
			objs, err := DecodeYAML("roundtrip.yaml", y)
			require.NoError(t, err)
			require.Len(t, objs, 1)
			assert.Equal(t, obj, objs[0], "YAML round trip")

			back, err := FromObject(objs[0])
			require.NoError(t, err)
			cueSrc, err := back.FormatCUE()
			require.NoError(t, err)
			again, err := ParseCUE("roundtrip.cue", cueSrc)
			require.NoError(t, err, "formatted .cue must parse:\n%s", cueSrc)
			obj2, err := again.Object("oamflow-system")
			require.NoError(t, err)
			assert.Equal(t, obj, obj2, ".cue round trip:\n%s", cueSrc)
		})
	}
}

func TestParseCUEErrors(t *testing.T) {
	cases := []struct {
		reason, src, want string
	}{
		{"no header", "template: {}\n", "x.cue: no header block"},
		{"no template", "a: {type: \"trait\"}\n", "x.cue: no `template: {...}` block"},
		{"two headers", "a: {type: \"trait\"}\nb: {type: \"trait\"}\ntemplate: {}\n", `second header block "b"`},
		{"bad kind", "a: {type: \"widget\"}\ntemplate: {}\n", `type "widget" is not one of component, trait, policy, workflow-step`},
		{"syntax", "a: {type: \"trait\"\ntemplate: {}\n", "x.cue: parsing CUE:"},
		{"attributes of the wrong shape", "a: {type: \"trait\", attributes: appliesToWorkloads: \"x\"}\ntemplate: {}\n", "attributes do not match the TraitDefinition spec"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			f, err := ParseCUE("x.cue", []byte(tc.src))
			if err == nil {
				_, err = f.Object("")
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
