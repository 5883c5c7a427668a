package cli

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
)

// TestReleaseState: a Helm release in `status --tree` takes the controller's
// verdict for its component and cluster instead of being read as an object
// (it used to show as MISSING: "cluster does not serve HelmRelease").
func TestReleaseState(t *testing.T) {
	services := []common.ApplicationComponentStatus{
		{Name: "engine", Cluster: "member-1", Healthy: true, Message: "release engine revision 1: 3/3 resources ready"},
		{Name: "engine", Cluster: "member-2", Healthy: false, Message: "release engine revision 1: 1/3 resources ready"},
		{Name: "hubchart", Cluster: "", Healthy: true, Message: "ready"},
	}
	cases := []struct {
		reason      string
		res         liveResource
		wantState   string
		wantMessage string
	}{
		{"healthy on member-1", liveResource{Component: "engine", Cluster: "member-1"}, "Healthy", services[0].Message},
		{"unhealthy on member-2", liveResource{Component: "engine", Cluster: "member-2"}, "Unhealthy", services[1].Message},
		{"hub named local matches an empty cluster", liveResource{Component: "hubchart", Cluster: "local"}, "Healthy", "ready"},
		{"no verdict yet", liveResource{Component: "engine", Cluster: "member-3"}, "Unknown", "no health reported for this release yet"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			state, msg := releaseState(&tc.res, services)
			assert.Equal(t, tc.wantState, state)
			assert.Equal(t, tc.wantMessage, msg)
		})
	}
}

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

func TestDecodeHelmRelease(t *testing.T) {
	const rel = `{"name":"web","namespace":"apps","version":3,"info":{"status":"deployed"},"manifest":"---\nkind: ConfigMap\n"}`
	gzipped := helmRecordData(t, rel, true)
	cases := []struct {
		reason  string
		data    []byte
		want    *helmRelease
		wantErr string
	}{
		{reason: "gzipped JSON, as Helm writes it", data: gzipped,
			want: &helmRelease{Name: "web", Namespace: "apps", Version: 3, Manifest: "---\nkind: ConfigMap\n"}},
		{reason: "plain JSON, as older Helm versions wrote it", data: helmRecordData(t, rel, false),
			want: &helmRelease{Name: "web", Namespace: "apps", Version: 3, Manifest: "---\nkind: ConfigMap\n"}},
		{reason: "an empty value", data: nil, wantErr: "data.release is empty"},
		{reason: "not base64", data: []byte("%%%"), wantErr: "not base64"},
		{reason: "a truncated gzip stream", data: []byte(base64.StdEncoding.EncodeToString(mustB64(t, gzipped)[:20])), wantErr: "gzip"},
		{reason: "not JSON", data: helmRecordData(t, "manifest: x", true), wantErr: "not a Helm release"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			got, err := decodeHelmRelease(tc.data)
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

func TestManifestObjects(t *testing.T) {
	type obj struct{ apiVersion, kind, namespace, name string }
	cases := []struct {
		reason   string
		manifest string
		want     []obj
		wantErr  string
	}{
		{reason: "Helm's layout: a separator and a Source comment before each document", manifest: `---
# Source: simple/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
---
# Source: simple/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: apps
`, want: []obj{{"v1", "ConfigMap", "", "web-config"}, {"apps/v1", "Deployment", "apps", "web"}}},
		{reason: "empty and comment-only documents are skipped", manifest: "---\n---\n# Source: simple/templates/empty.yaml\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n",
			want: []obj{{"v1", "Service", "", "web"}}},
		{reason: "a List is flattened", manifest: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: b\n",
			want: []obj{{"v1", "ConfigMap", "", "a"}, {"v1", "Secret", "", "b"}}},
		{reason: "an empty manifest has no objects", manifest: ""},
		{reason: "a document without a name is an error naming it", manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\n",
			wantErr: "document 2: not an object with apiVersion, kind and metadata.name"},
		{reason: "a document that is not YAML is an error naming it", manifest: "kind: [", wantErr: "document 1"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			objs, err := manifestObjects(tc.manifest)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			var got []obj
			for _, o := range objs {
				got = append(got, obj{o.GetAPIVersion(), o.GetKind(), o.GetNamespace(), o.GetName()})
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestLatestHelmRecord(t *testing.T) {
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
			got := latestHelmRecord(tc.records)
			if tc.want == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tc.want, got.Name)
		})
	}
}

// FuzzDecodeHelmRelease: any Secret value is decoded or refused, never a
// panic; a decoded manifest is parsed or refused, never a panic.
func FuzzDecodeHelmRelease(f *testing.F) {
	f.Add(helmRecordData(f, `{"name":"web","manifest":"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"}`, true))
	f.Add(helmRecordData(f, `{"manifest":"---\n---\nkind: List\nitems: [1]\n"}`, false))
	f.Add([]byte("H4sI"))
	f.Fuzz(func(t *testing.T, data []byte) {
		hr, err := decodeHelmRelease(data)
		if err != nil {
			return
		}
		_, _ = manifestObjects(hr.Manifest)
	})
}
