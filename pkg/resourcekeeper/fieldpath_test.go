package resourcekeeper

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFieldPath(t *testing.T) {
	cases := []struct {
		reason  string
		path    string
		want    []pathSegment
		wantErr bool
	}{
		{reason: "dotted keys", path: "spec.replicas", want: []pathSegment{{key: "spec", index: -1}, {key: "replicas", index: -1}}},
		{reason: "list index", path: "spec.containers[0].image", want: []pathSegment{
			{key: "spec", index: -1}, {key: "containers", index: -1}, {index: 0}, {key: "image", index: -1}}},
		{reason: "quoted key with dots and slashes", path: `metadata.annotations["example.com/key"]`, want: []pathSegment{
			{key: "metadata", index: -1}, {key: "annotations", index: -1}, {key: "example.com/key", index: -1}}},
		{reason: "empty", path: "", wantErr: true},
		{reason: "trailing dot", path: "spec.", wantErr: true},
		{reason: "double dot", path: "spec..replicas", wantErr: true},
		{reason: "unclosed bracket", path: "a[0", wantErr: true},
		{reason: "negative index", path: "a[-1]", wantErr: true},
		{reason: "key right after bracket", path: "a[0]b", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			got, err := parseFieldPath(tc.path)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestGetSetPath(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"image": "a"}}}}
	segs, err := parseFieldPath("spec.containers[0].image")
	require.NoError(t, err)
	v, ok := getPath(obj, segs)
	require.True(t, ok)
	assert.Equal(t, "a", v)
	require.True(t, setPath(obj, segs, "b"))
	v, _ = getPath(obj, segs)
	assert.Equal(t, "b", v)

	segs, _ = parseFieldPath("spec.template.replicas")
	require.True(t, setPath(obj, segs, int64(3)), "intermediate maps are created")
	v, _ = getPath(obj, segs)
	assert.Equal(t, int64(3), v)
	deletePath(obj, segs)
	_, ok = getPath(obj, segs)
	assert.False(t, ok)

	segs, _ = parseFieldPath("spec.containers[3].image")
	assert.False(t, setPath(obj, segs, "x"), "out of range index")
}

func FuzzParseFieldPath(f *testing.F) {
	for _, s := range []string{"spec.replicas", "a[0].b", `m["k.x"]`, "[", "a..b", "a[1][2]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		segs, err := parseFieldPath(p)
		if err != nil {
			return
		}
		obj := map[string]any{}
		if setPath(obj, segs, "v") {
			v, ok := getPath(obj, segs)
			if !ok || v != "v" {
				t.Fatalf("set then get of %q: %v %v", p, v, ok)
			}
		}
	})
}
