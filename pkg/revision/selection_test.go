package revision

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/placement"
)

// gzipped stores rev's spec as KubeVela's GzipApplicationRevision feature
// gate does: compressed, the plain fields empty.
func gzipped(t *testing.T, rev *v1beta1.ApplicationRevision) *v1beta1.ApplicationRevision {
	t.Helper()
	b, err := json.Marshal(rev.Spec)
	require.NoError(t, err)
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, err = w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	out := rev.DeepCopy()
	out.Spec = v1beta1.ApplicationRevisionSpec{Compression: &v1beta1.Compression{Type: v1beta1.CompressionGzip, Data: base64.StdEncoding.EncodeToString(buf.Bytes())}}
	return out
}

// RecordSelection is given the revision the parse phase goes on rendering
// from: recording the placement must leave it as it was read (decoded),
// whatever the API server answers the patch with.
func TestRecordSelectionKeepsTheRevisionDecoded(t *testing.T) {
	defs := Definitions{Components: map[string]v1beta1.ComponentDefinition{"webservice": {
		ObjectMeta: metav1.ObjectMeta{Name: "webservice"},
		Spec:       v1beta1.ComponentDefinitionSpec{Schematic: &common.Schematic{CUE: &common.CUE{Template: "output: {}"}}},
	}}}
	plain := Snapshot(newApp(), defs, 1, "h1")
	sel := placement.Selection{"spread": {"east", "west"}}
	cases := []struct {
		reason string
		stored *v1beta1.ApplicationRevision
	}{
		{"a revision stored in plain fields", plain},
		{"a revision KubeVela stored compressed (gzip)", gzipped(t, plain)},
	}
	for _, tc := range cases {
		scheme := runtime.NewScheme()
		require.NoError(t, v1beta1.AddToScheme(scheme), tc.reason)
		c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.stored.DeepCopy()).Build()
		m := NewManager(c, c)

		rev, err := m.Get(t.Context(), plain.Namespace, plain.Name)
		require.NoError(t, err, tc.reason)
		require.NotNil(t, rev, tc.reason)
		require.NoError(t, m.RecordSelection(t.Context(), rev, sel), tc.reason)

		assert.Equal(t, defs.Components, FromRevision(rev).Components, "%s: the revision goes on rendering with its definitions", tc.reason)
		assert.Equal(t, "shop", rev.Spec.Application.Name, "%s: and its Application", tc.reason)
		got, ok, err := SelectionOf(rev)
		require.NoError(t, err, tc.reason)
		assert.True(t, ok, tc.reason)
		assert.Equal(t, sel, got, tc.reason)

		stored := &v1beta1.ApplicationRevision{}
		require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(plain), stored), tc.reason)
		assert.Contains(t, stored.Annotations, AnnoPlacement, "%s: recorded on the stored revision", tc.reason)
	}
}
