package render

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestFrozenRoundTrip: what the render memo keeps (freeze) comes back
// (thaw) equal to what was rendered, number types included, and as fresh
// maps a caller may modify without touching the memo.
func TestFrozenRoundTrip(t *testing.T) {
	deploy := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "labels": map[string]any{"app.oam.dev/component": "web"}},
		"spec": map[string]any{
			"replicas": int64(2), "paused": false, "progressDeadlineSeconds": int(600), "ratio": 0.5,
			"whole": float64(3), "big": int64(math.MaxInt64), "neg": int64(-7), "none": nil,
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "image": "nginx:1.27", "args": []any{"-v", int64(1), true, []any{}}},
			}}},
			"empty": map[string]any{},
		},
	}
	cases := []struct {
		reason string
		st     *rendered
	}{
		{reason: "a workload and one output", st: &rendered{
			output:      deploy,
			outputs:     map[string]map[string]any{"svc": {"apiVersion": "v1", "kind": "Service", "spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}}},
			outputOrder: []string{"svc"},
		}},
		{reason: "a trait's own objects and their indices", st: &rendered{
			outputs:  map[string]map[string]any{},
			traitRes: []Resource{{Component: "web", Trait: "expose", Output: "svc", Cluster: "local", Object: &unstructured.Unstructured{Object: map[string]any{"kind": "Service", "apiVersion": "v1"}}}},
			traitIdx: []int{2},
		}},
		{reason: "nothing at all", st: &rendered{outputs: map[string]map[string]any{}}},
	}
	for _, tc := range cases {
		f, ok := freeze(tc.st)
		require.True(t, ok, tc.reason)
		got := f.thaw()
		assert.Equal(t, tc.st, got, tc.reason)
		if got.output != nil {
			got.output["kind"] = "Changed"
			got.output["spec"].(map[string]any)["replicas"] = int64(9)
			again := f.thaw()
			assert.Equal(t, "Deployment", again.output["kind"], "%s: a thawed state is the caller's own", tc.reason)
			assert.Equal(t, int64(2), again.output["spec"].(map[string]any)["replicas"], tc.reason)
		}
	}

	_, ok := freeze(&rendered{output: map[string]any{"x": struct{}{}}, outputs: map[string]map[string]any{}})
	assert.False(t, ok, "a value pack does not know is not memoized")
}

// FuzzPack: any JSON document packs and unpacks to itself.
//
//	go test ./pkg/render -run '^$' -fuzz FuzzPack -fuzztime 30s
func FuzzPack(f *testing.F) {
	f.Add(`{"a":1,"b":[true,null,"x",1.5,{"c":{}}],"d":""}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, doc string) {
		var m map[string]any
		if json.Unmarshal([]byte(doc), &m) != nil || m == nil {
			return
		}
		b, err := pack(m)
		require.NoError(t, err)
		assert.Equal(t, m, unpackMap(b))
	})
}
