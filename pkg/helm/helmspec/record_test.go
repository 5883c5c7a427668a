package helmspec

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// helmRecordData encodes release JSON the way Helm's Secret driver stores
// it in data.release: base64 of the gzipped JSON (plain JSON when !gz).
func helmRecordData(t testing.TB, releaseJSON string, gz bool) []byte {
	t.Helper()
	raw := []byte(releaseJSON)
	if gz {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, err := zw.Write(raw)
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		raw = b.Bytes()
	}
	return []byte(base64.StdEncoding.EncodeToString(raw))
}

func TestDecodeRecordData(t *testing.T) {
	const rel = `{"name":"web","namespace":"apps","version":3,"info":{"status":"deployed"},"manifest":"---\nkind: ConfigMap\n"}`
	gzipped := helmRecordData(t, rel, true)
	cases := []struct {
		reason  string
		data    []byte
		want    *ReleaseRecord
		wantErr string
	}{
		{reason: "gzipped JSON, as Helm writes it", data: gzipped,
			want: &ReleaseRecord{Name: "web", Namespace: "apps", Version: 3, Manifest: "---\nkind: ConfigMap\n"}},
		{reason: "plain JSON, as older Helm versions wrote it", data: helmRecordData(t, rel, false),
			want: &ReleaseRecord{Name: "web", Namespace: "apps", Version: 3, Manifest: "---\nkind: ConfigMap\n"}},
		{reason: "an empty value", data: nil, wantErr: "data.release is empty"},
		{reason: "not base64", data: []byte("%%%"), wantErr: "not base64"},
		{reason: "a truncated gzip stream", data: []byte(base64.StdEncoding.EncodeToString(mustB64(t, gzipped)[:20])), wantErr: "gzip"},
		{reason: "not JSON", data: helmRecordData(t, "manifest: x", true), wantErr: "not a Helm release"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			got, err := decodeRecordData(tc.data)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func mustB64(t testing.TB, data []byte) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(string(data))
	require.NoError(t, err)
	return b
}

func TestLatestRecord(t *testing.T) {
	record := func(version, status string) corev1.Secret {
		return corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.web.v" + version,
			Labels: map[string]string{"owner": "helm", "name": "web", "version": version, "status": status}}}
	}
	cases := []struct {
		reason  string
		records []corev1.Secret
		want    string
	}{
		{reason: "no record", want: ""},
		{reason: "the deployed revision wins over later pending or failed ones",
			records: []corev1.Secret{record("1", "superseded"), record("2", "deployed"), record("3", "pending-upgrade"), record("4", "failed")},
			want:    "sh.helm.release.v1.web.v2"},
		{reason: "versions compare as numbers",
			records: []corev1.Secret{record("10", "deployed"), record("9", "deployed")},
			want:    "sh.helm.release.v1.web.v10"},
		{reason: "without a deployed revision, the latest (a failed first install)",
			records: []corev1.Secret{record("1", "failed"), record("2", "pending-install")},
			want:    "sh.helm.release.v1.web.v2"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			got := LatestRecord(tc.records)
			if tc.want == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tc.want, got.Name)
		})
	}
}

// FuzzDecodeRecord: any Secret value is decoded or refused, never a
// panic; a decoded manifest is parsed or refused, never a panic.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(helmRecordData(f, `{"name":"web","manifest":"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"}`, true))
	f.Add(helmRecordData(f, `{"manifest":"---\n---\nkind: List\nitems: [1]\n"}`, false))
	f.Add([]byte("H4sI"))
	f.Fuzz(func(t *testing.T, data []byte) {
		hr, err := decodeRecordData(data)
		if err != nil {
			return
		}
		_, _ = ParseManifest(hr.Manifest)
	})
}
