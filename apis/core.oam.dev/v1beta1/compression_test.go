package v1beta1_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/testing/corpus"
)

// readList decodes a kubectl "List" fixture of kubevela-state into into.
func readList(t *testing.T, file string, into any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpus.KubeVelaStateDir(t), file))
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(b, into), "%s must decode strictly into oamflow's types (every KubeVela field accepted)", file)
}

func TestDecodeKubeVelaTrackers(t *testing.T) {
	var list v1beta1.ResourceTrackerList
	readList(t, "resourcetrackers.yaml", &list)
	got := map[string][]string{}
	for i := range list.Items {
		rt := &list.Items[i]
		require.NotNil(t, rt.Spec.Compression, rt.Name)
		require.NoError(t, v1beta1.DecodeTracker(rt))
		require.Nil(t, rt.Spec.Compression, "%s: decoded trackers are written back plain", rt.Name)
		for _, e := range rt.Spec.ManagedResources {
			require.NotNil(t, e.Data, "%s: %s %s keeps KubeVela's raw copy as Data", rt.Name, e.Kind, e.Name)
			require.Nil(t, e.Raw)
			got[rt.Name] = append(got[rt.Name], e.Kind+"/"+e.Name+"@"+e.Component)
		}
	}
	require.Equal(t, map[string][]string{
		"settings-shop":      {"ConfigMap/shop-settings@shop-config"},
		"settings-v1-shop":   {"Deployment/cache@cache"},
		"storefront-v2-shop": {"Deployment/frontend@frontend", "Service/frontend@frontend", "Deployment/orders@orders"},
	}, got)
}

func TestDecodeKubeVelaRevisions(t *testing.T) {
	var items struct {
		Items []json.RawMessage `json:"items"`
	}
	b, err := os.ReadFile(filepath.Join(corpus.KubeVelaStateDir(t), "applications-and-revisions.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &items))
	got := map[string][]string{}
	for _, raw := range items.Items {
		var meta struct{ Kind string }
		require.NoError(t, json.Unmarshal(raw, &meta))
		if meta.Kind != "ApplicationRevision" {
			continue
		}
		rev := &v1beta1.ApplicationRevision{}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(rev), "every field of KubeVela's ApplicationRevision is accepted")
		require.NoError(t, v1beta1.DecodeRevision(rev))
		require.Nil(t, rev.Spec.Compression)
		require.Equal(t, rev.Labels[v1beta1.LabelAppName], rev.Spec.Application.Name, rev.Name)
		require.NotEmpty(t, rev.Spec.ComponentDefinitions, "%s keeps its definitions", rev.Name)
		for _, c := range rev.Spec.Application.Spec.Components {
			got[rev.Name] = append(got[rev.Name], c.Name)
		}
	}
	require.Equal(t, map[string][]string{
		"settings-v1":   {"shop-config", "cache"},
		"storefront-v1": {"frontend", "orders"},
		"storefront-v2": {"frontend", "orders"},
	}, got)
}

func compressed(t *testing.T, typ v1beta1.CompressionType, v any) *v1beta1.Compression {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out bytes.Buffer
	switch typ {
	case v1beta1.CompressionGzip:
		w := gzip.NewWriter(&out)
		_, err = w.Write(b)
		require.NoError(t, err)
		require.NoError(t, w.Close())
	case v1beta1.CompressionZstd:
		w, err := zstd.NewWriter(&out)
		require.NoError(t, err)
		_, err = w.Write(b)
		require.NoError(t, err)
		require.NoError(t, w.Close())
	}
	return &v1beta1.Compression{Type: typ, Data: base64.StdEncoding.EncodeToString(out.Bytes())}
}

func TestDecodeTracker(t *testing.T) {
	entries := []map[string]any{{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "ns", "name": "a", "raw": map[string]any{"kind": "ConfigMap"}}}
	cases := []struct {
		reason  string
		spec    v1beta1.ResourceTrackerSpec
		entries int
		wantErr string
	}{
		{reason: "gzip, as KubeVela's GzipResourceTracker gate writes", spec: v1beta1.ResourceTrackerSpec{Compression: compressed(t, v1beta1.CompressionGzip, entries)}, entries: 1},
		{reason: "zstd", spec: v1beta1.ResourceTrackerSpec{Compression: compressed(t, v1beta1.CompressionZstd, entries)}, entries: 1},
		{reason: "plain with an empty compression", spec: v1beta1.ResourceTrackerSpec{Compression: &v1beta1.Compression{},
			ManagedResources: []v1beta1.ManagedResource{{Deleted: true}}}, entries: 1},
		{reason: "not base64", spec: v1beta1.ResourceTrackerSpec{Compression: &v1beta1.Compression{Type: "zstd", Data: "%%%"}}, wantErr: "compression.data: not base64"},
		{reason: "not zstd", spec: v1beta1.ResourceTrackerSpec{Compression: &v1beta1.Compression{Type: "zstd", Data: "aGVsbG8="}}, wantErr: "compression.data: zstd"},
		{reason: "unknown type", spec: v1beta1.ResourceTrackerSpec{Compression: &v1beta1.Compression{Type: "lz4", Data: "aGVsbG8="}}, wantErr: `compression.type: unsupported "lz4", expected zstd, gzip or empty`},
		{reason: "compressed JSON that is not a list of entries", spec: v1beta1.ResourceTrackerSpec{Compression: compressed(t, v1beta1.CompressionGzip, map[string]any{"a": 1})}, wantErr: "compressed spec.managedResources"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			rt := &v1beta1.ResourceTracker{Spec: tc.spec}
			rt.Name = "app-v1-ns"
			before := rt.DeepCopy()
			err := v1beta1.DecodeTracker(rt)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.ErrorContains(t, err, "ResourceTracker app-v1-ns cannot be decoded")
				var de *v1beta1.DecodeError
				require.True(t, errors.As(err, &de))
				require.Equal(t, before, rt, "a failed decode leaves the tracker unchanged")
				return
			}
			require.NoError(t, err)
			require.Len(t, rt.Spec.ManagedResources, tc.entries)
			require.Nil(t, rt.Spec.Compression)
		})
	}
}
