package chart_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	oamenvtest "github.com/oamflow/oamflow/pkg/testing/envtest"
)

// env is the kube-apiserver + etcd shared by the tests of this package.
var env *oamenvtest.Environment

func TestMain(m *testing.M) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{v1beta1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	os.Exit(oamenvtest.Main(m, &env, oamenvtest.WithCRDs("charts/oamflow/crds"), oamenvtest.WithScheme(scheme)))
}

func readObject(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(data, &u.Object))
	return u
}

// TestCRDsRoundTrip creates valid objects of the kinds users write and checks
// that the API server keeps every field, with properties preserved as JSON.
func TestCRDsRoundTrip(t *testing.T) {
	k8sClient := env.Client
	cases := []struct {
		reason string
		file   string
	}{
		{"an Application with two components, traits, topology+override policies and a 3-step workflow with a step-group", "application.yaml"},
		{"a ComponentDefinition carrying a CUE template and health policy", "componentdefinition.yaml"},
		{"a TraitDefinition carrying a CUE patch template", "traitdefinition.yaml"},
		{"a cluster-scoped ResourceTracker", "resourcetracker.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			ctx := context.Background()
			in := readObject(t, tc.file)
			want := in.DeepCopy()
			require.NoError(t, k8sClient.Create(ctx, in), tc.reason)
			t.Cleanup(func() { _ = k8sClient.Delete(ctx, in) })

			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(in.GroupVersionKind())
			require.NoError(t, k8sClient.Get(ctx, client.ObjectKeyFromObject(in), got))

			wantSpec, err := json.Marshal(want.Object["spec"])
			require.NoError(t, err)
			gotSpec, err := json.Marshal(got.Object["spec"])
			require.NoError(t, err)
			assert.JSONEq(t, string(wantSpec), string(gotSpec), "%s: spec must round-trip unchanged", tc.reason)
		})
	}
}

// TestTypedClientRoundTrip reads the Application back through the Go types:
// raw properties must be byte-identical JSON to what the API server serves.
func TestTypedClientRoundTrip(t *testing.T) {
	k8sClient := env.Client
	ctx := context.Background()
	in := readObject(t, "application.yaml")
	in.SetName("typed-roundtrip")
	require.NoError(t, k8sClient.Create(ctx, in))
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, in) })

	app := &v1beta1.Application{}
	require.NoError(t, k8sClient.Get(ctx, client.ObjectKeyFromObject(in), app))
	require.Len(t, app.Spec.Components, 2)
	require.Len(t, app.Spec.Workflow.Steps, 3)
	require.Len(t, app.Spec.Workflow.Steps[2].SubSteps, 2)

	comps := in.Object["spec"].(map[string]any)["components"].([]any)
	wantProps, err := json.Marshal(comps[0].(map[string]any)["properties"])
	require.NoError(t, err)
	assert.Equal(t, string(wantProps), string(app.Spec.Components[0].Properties.Raw),
		"properties are kept as the exact JSON the API server returned")
	assert.Equal(t, "scaler", app.Spec.Components[0].Traits[0].Type)
	assert.Equal(t, "topology", app.Spec.Policies[0].Type)

	// Writing back through the typed client must not alter anything.
	require.NoError(t, k8sClient.Update(ctx, app))
	again := &unstructured.Unstructured{}
	again.SetGroupVersionKind(in.GroupVersionKind())
	require.NoError(t, k8sClient.Get(ctx, client.ObjectKeyFromObject(in), again))
	a, _ := json.Marshal(in.Object["spec"])
	b, _ := json.Marshal(again.Object["spec"])
	assert.JSONEq(t, string(a), string(b))
}

// TestCRDsRejectMalformed checks that the API server refuses malformed
// objects with a message naming the offending field.
func TestCRDsRejectMalformed(t *testing.T) {
	k8sClient := env.Client
	cases := []struct {
		reason    string
		mutate    func(spec map[string]any)
		wantField string
	}{
		{
			reason:    "components must be a list",
			mutate:    func(spec map[string]any) { spec["components"] = map[string]any{"name": "web"} },
			wantField: "spec.components",
		},
		{
			reason: "a trait needs a type",
			mutate: func(spec map[string]any) {
				comps := spec["components"].([]any)
				comps[0].(map[string]any)["traits"] = []any{map[string]any{"properties": map[string]any{"replicas": 2}}}
			},
			wantField: "spec.components[0].traits[0].type",
		},
		{
			reason: "a component needs a name",
			mutate: func(spec map[string]any) {
				comps := spec["components"].([]any)
				delete(comps[1].(map[string]any), "name")
			},
			wantField: "spec.components[1].name",
		},
		{
			reason: "properties must be an object",
			mutate: func(spec map[string]any) {
				comps := spec["components"].([]any)
				comps[0].(map[string]any)["properties"] = "image: nginx"
			},
			wantField: "spec.components[0].properties",
		},
	}
	for i, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			in := readObject(t, "application.yaml")
			in.SetName("malformed-" + string(rune('a'+i)))
			tc.mutate(in.Object["spec"].(map[string]any))
			err := k8sClient.Create(context.Background(), in)
			require.Error(t, err, tc.reason)
			assert.Contains(t, err.Error(), tc.wantField, tc.reason)
		})
	}
}

// TestApplicationExplain is a `kubectl explain`-style check on the OpenAPI v3
// document the API server publishes for core.oam.dev/v1beta1.
func TestApplicationExplain(t *testing.T) {
	k8sClient := env.Client
	clientset := kubernetes.NewForConfigOrDie(env.Config)
	raw, err := clientset.RESTClient().Get().AbsPath("/openapi/v3/apis/core.oam.dev/v1beta1").DoRaw(context.Background())
	require.NoError(t, err)
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Ref   string `json:"$ref"`
					AllOf []struct {
						Ref string `json:"$ref"`
					} `json:"allOf"`
					Properties map[string]any `json:"properties"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	var app string
	for name := range doc.Components.Schemas {
		if strings.HasSuffix(name, "oam.core.v1beta1.Application") || strings.HasSuffix(name, "core.oam.dev.v1beta1.Application") {
			app = name
		}
	}
	require.NotEmpty(t, app, "the Application schema is published")
	props := doc.Components.Schemas[app].Properties
	for _, f := range []string{"components", "policies", "workflow"} {
		assert.Contains(t, props["spec"].Properties, f, "spec.%s is documented", f)
	}
	assert.Contains(t, props["status"].Properties, "status", "status.status (the phase) is documented")
	assert.Contains(t, props["status"].Properties, "conditions")

	// Printer columns users see with `kubectl get app`.
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Name: "applications.core.oam.dev"}, crd))
	var cols []string
	for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
		cols = append(cols, c.Name)
	}
	assert.Equal(t, []string{"COMPONENT", "TYPE", "PHASE", "HEALTHY", "STATUS", "AGE"}, cols)
	assert.Equal(t, []string{"app", "apps"}, crd.Spec.Names.ShortNames)
}
