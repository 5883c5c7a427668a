package helm

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// templateClient renders bundled test charts without a cluster.
func templateClient(t *testing.T) *Client {
	return NewClient(nil, NewFetcher(nil, WithChartRoot(moduleRoot(t)+"/charts/testdata")), nil)
}

func byKindName(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		out[o.GetKind()+"/"+o.GetName()] = o
	}
	return out
}

func TestTemplate(t *testing.T) {
	cases := []struct {
		reason  string
		props   map[string]any
		wantErr string
		check   func(t *testing.T, objs map[string]*unstructured.Unstructured)
	}{
		{
			reason: "the simple chart renders its Deployment, Service and ConfigMap with defaults",
			props:  map[string]any{"chart": map[string]any{"source": "simple"}},
			check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
				assert.Len(t, objs, 3)
				assert.Contains(t, objs, "Deployment/web-web")
				assert.Contains(t, objs, "Service/web-web")
				msg, _, _ := unstructured.NestedString(objs["ConfigMap/web-config"].Object, "data", "message")
				assert.Equal(t, "hello", msg)
			},
		},
		{
			reason: "inline values override chart defaults; the release name follows release.name",
			props: map[string]any{"chart": map[string]any{"source": "simple"}, "release": map[string]any{"name": "shop"},
				"values": map[string]any{"message": "bonjour", "replicaCount": 3}},
			check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
				msg, _, _ := unstructured.NestedString(objs["ConfigMap/shop-config"].Object, "data", "message")
				assert.Equal(t, "bonjour", msg)
				n, _, _ := unstructured.NestedInt64(objs["Deployment/shop-web"].Object, "spec", "replicas")
				assert.Equal(t, int64(3), n)
			},
		},
		{
			reason: "without values the subchart keeps its defaults",
			props:  map[string]any{"chart": map[string]any{"source": "parent"}},
			check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
				data, _, _ := unstructured.NestedStringMap(objs["ConfigMap/web-child"].Object, "data")
				assert.Equal(t, map[string]string{"feature-a": "on", "feature-b": "on", "extra": "present"}, data)
			},
		},
		{
			reason: "null deletes keys from subchart defaults, a map and a leaf",
			props: map[string]any{"chart": map[string]any{"source": "parent"},
				"values": map[string]any{"child": map[string]any{"features": map[string]any{"b": nil}, "extra": nil}}},
			check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
				data, _, _ := unstructured.NestedStringMap(objs["ConfigMap/web-child"].Object, "data")
				assert.Equal(t, map[string]string{"feature-a": "on"}, data)
			},
		},
		{
			reason:  "a template that requires a missing value fails with the chart's message",
			props:   map[string]any{"chart": map[string]any{"source": "required"}},
			wantErr: "db.host is required",
		},
		{
			reason: "the required value given, it renders",
			props:  map[string]any{"chart": map[string]any{"source": "required"}, "values": map[string]any{"db": map[string]any{"host": "db.local"}}},
			check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
				host, _, _ := unstructured.NestedString(objs["ConfigMap/web-db"].Object, "data", "host")
				assert.Equal(t, "db.local", host)
			},
		},
		{
			reason:  "a missing bundled chart is not found",
			props:   map[string]any{"chart": map[string]any{"source": "nope"}},
			wantErr: "chart not found",
		},
	}
	c := templateClient(t)
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			objs, err := c.Template(context.Background(), helmspec.Request{Namespace: "ns", Spec: spec(t, tc.props, "web", "ns")})
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			tc.check(t, byKindName(objs))
		})
	}
}

func TestMergeValues(t *testing.T) {
	cases := []struct {
		reason         string
		base, override map[string]any
		want           map[string]any
	}{
		{reason: "maps merge key by key", base: map[string]any{"a": map[string]any{"x": 1, "y": 2}}, override: map[string]any{"a": map[string]any{"y": 3}},
			want: map[string]any{"a": map[string]any{"x": 1, "y": 3}}},
		{reason: "lists are replaced, not appended", base: map[string]any{"l": []any{1, 2}}, override: map[string]any{"l": []any{3}},
			want: map[string]any{"l": []any{3}}},
		{reason: "null is kept so Helm deletes the key", base: map[string]any{"a": map[string]any{"x": 1}}, override: map[string]any{"a": nil},
			want: map[string]any{"a": nil}},
		{reason: "a scalar replaces a map", base: map[string]any{"a": map[string]any{"x": 1}}, override: map[string]any{"a": "s"},
			want: map[string]any{"a": "s"}},
		{reason: "nil base", override: map[string]any{"a": 1}, want: map[string]any{"a": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, helmspec.MergeValues(tc.base, tc.override))
		})
	}
}

// BenchmarkTemplate measures fetch (bundled folder) + values + render of
// the simple chart: the per-reconcile cost of a dry run.
func BenchmarkTemplate(b *testing.B) {
	c := NewClient(nil, NewFetcher(nil, WithChartRoot(moduleRoot(b)+"/charts/testdata")), nil)
	s, err := helmspec.ParseSpec([]byte(`{"chart":{"source":"simple"},"values":{"message":"bench"}}`), helmspec.Defaults{Name: "web", Namespace: "ns"})
	require.NoError(b, err)
	req := helmspec.Request{Namespace: "ns", Spec: s}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := c.Template(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
