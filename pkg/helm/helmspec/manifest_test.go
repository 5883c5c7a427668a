package helmspec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseManifest(t *testing.T) {
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
			objs, err := ParseManifest(tc.manifest)
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
