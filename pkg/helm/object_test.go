package helm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// TestDefinitionOutputsParse checks the contract between the helm/helmchart
// definitions and this package: every HelmRelease rendered in the
// definitions' golden files parses as a Spec.
func TestDefinitionOutputsParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(moduleRoot(t), "definitions", "testdata", "golden", "helm*", "*.golden.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			objs, err := helmspec.ParseManifest(string(b))
			require.NoError(t, err)
			require.NotEmpty(t, objs)
			for _, o := range objs {
				require.True(t, helmspec.IsHelmRelease(o), "%s %s", o.GetAPIVersion(), o.GetKind())
				s, err := helmspec.SpecFromObject(o, helmspec.Defaults{Name: o.GetLabels()["app.oam.dev/component"], Namespace: o.GetLabels()["app.oam.dev/namespace"]})
				require.NoError(t, err)
				assert.Equal(t, o.GetName(), s.Release.Name)
				assert.Equal(t, o.GetNamespace(), s.Release.Namespace)
			}
		})
	}
}

// TestHelmchartIsAnAliasOfHelm: the two definition files differ only in
// their leading comment and name.
func TestHelmchartIsAnAliasOfHelm(t *testing.T) {
	body := func(name string) string {
		b, err := os.ReadFile(filepath.Join(moduleRoot(t), "definitions", "components", name+".cue"))
		require.NoError(t, err)
		_, after, ok := strings.Cut(string(b), "\n\""+name+"\": {\n")
		require.True(t, ok, "%s.cue must start its header with %q", name, name)
		return after
	}
	assert.Equal(t, body("helm"), body("helmchart"))
}

func TestSpecFromObject(t *testing.T) {
	cases := []struct {
		reason  string
		obj     map[string]any
		wantErr string
	}{
		{reason: "a HelmRelease parses", obj: map[string]any{"apiVersion": helmspec.APIVersion, "kind": helmspec.Kind, "metadata": map[string]any{"name": "x"},
			"spec": map[string]any{"chart": map[string]any{"source": "oci://r/c"}}}},
		{reason: "another kind is refused", obj: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}, wantErr: "is not a helm.oamflow.dev/v1alpha1 HelmRelease"},
		{reason: "no spec", obj: map[string]any{"apiVersion": helmspec.APIVersion, "kind": helmspec.Kind, "metadata": map[string]any{"name": "x"}}, wantErr: "has no spec"},
		{reason: "spec errors name the field", obj: map[string]any{"apiVersion": helmspec.APIVersion, "kind": helmspec.Kind,
			"spec": map[string]any{"chart": map[string]any{"source": ""}}}, wantErr: "spec.chart.source: Required value"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			s, err := helmspec.SpecFromObject(&unstructured.Unstructured{Object: tc.obj}, helmspec.Defaults{Name: "c", Namespace: "ns"})
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "c", s.Release.Name)
		})
	}
}
