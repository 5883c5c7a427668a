package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
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

// TestReleaseResourcesNamespace: the rows of a Helm release's manifest
// take their scope from the cluster's RESTMapper. Cluster-scoped objects
// show no namespace even when the chart stamped one on them (they used to
// show in the release namespace); namespaced ones without a namespace are
// in the release namespace; a kind the cluster does not know keeps what
// the manifest says.
func TestReleaseResourcesNamespace(t *testing.T) {
	env := envtest.New(t)
	ctx := context.Background()
	const releaseNS = "apps"
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNS}}))
	cases := []struct {
		reason                     string
		apiVersion, kind, name, ns string
		want                       string
	}{
		{reason: "a ClusterRole the chart put in the release namespace",
			apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", name: "reader", ns: releaseNS, want: ""},
		{reason: "a ClusterRoleBinding without a namespace",
			apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", name: "reader", want: ""},
		{reason: "a ValidatingWebhookConfiguration with a namespace",
			apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingWebhookConfiguration", name: "hooks", ns: "elsewhere", want: ""},
		{reason: "a Deployment without a namespace is in the release namespace",
			apiVersion: "apps/v1", kind: "Deployment", name: "web", want: releaseNS},
		{reason: "a Deployment with its own namespace stays there",
			apiVersion: "apps/v1", kind: "Deployment", name: "worker", ns: "jobs", want: "jobs"},
		{reason: "an unknown kind with a namespace keeps it",
			apiVersion: "example.com/v1", kind: "Widget", name: "w1", ns: "widgets", want: "widgets"},
		{reason: "an unknown kind without a namespace keeps none",
			apiVersion: "example.com/v1", kind: "Widget", name: "w2", want: ""},
	}
	var manifest strings.Builder
	for _, tc := range cases {
		fmt.Fprintf(&manifest, "---\n# Source: web/templates/%s.yaml\napiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n",
			strings.ToLower(tc.kind), tc.apiVersion, tc.kind, tc.name)
		if tc.ns != "" {
			fmt.Fprintf(&manifest, "  namespace: %s\n", tc.ns)
		}
	}
	rel, err := json.Marshal(map[string]any{"name": "web", "namespace": releaseNS, "version": 1, "manifest": manifest.String()})
	require.NoError(t, err)
	require.NoError(t, env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.web.v1", Namespace: releaseNS,
			Labels: map[string]string{"owner": "helm", "name": "web", "version": "1", "status": "deployed"}},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": helmRecordData(t, string(rel), true)},
	}))

	rows, err := releaseResources(ctx, env.Client, liveResource{Cluster: "local", Component: "chart", Namespace: releaseNS, Name: "web"})
	require.NoError(t, err)
	got := map[string]string{}
	for _, r := range rows {
		got[r.Kind+"/"+r.Name] = r.Namespace
	}
	require.Len(t, got, len(cases))
	for _, tc := range cases {
		assert.Equal(t, tc.want, got[tc.kind+"/"+tc.name], tc.reason)
	}
}
