package webhook

import (
	"context"
	"testing"

	oamv1alpha1 "github.com/kubevela/pkg/apis/oam/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/tenancy"
)

func TestScopeCheck(t *testing.T) {
	builtins, err := appfile.NewFSSource(definitions.FS, ".")
	require.NoError(t, err)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	mapper.Add(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}, meta.RESTScopeRoot)
	raw := func(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }
	type spec struct {
		policies   []common.AppPolicy
		components []common.ApplicationComponent
		step       oamv1alpha1.WorkflowStep
	}
	app := func(s spec) *v1beta1.Application {
		a := &v1beta1.Application{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "Application"},
			ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team-a"},
		}
		a.Spec.Components = s.components
		if a.Spec.Components == nil {
			a.Spec.Components = []common.ApplicationComponent{{Name: "web", Type: "webservice", Properties: raw(`{"image":"nginx"}`)}}
		}
		a.Spec.Policies = s.policies
		if s.step.Type != "" {
			a.Spec.Workflow = &common.Workflow{Steps: []oamv1alpha1.WorkflowStep{s.step}}
		}
		return a
	}
	objects := func(typ, objs string) []common.ApplicationComponent {
		return []common.ApplicationComponent{{Name: "cm", Type: typ, Properties: raw(`{"objects":[` + objs + `]}`)}}
	}
	step := func(typ, props string) oamv1alpha1.WorkflowStep {
		s := oamv1alpha1.WorkflowStep{}
		s.Name, s.Type, s.Properties = "s", typ, raw(props)
		return s
	}
	outside := func(what, ns string) string {
		return what + " is outside the scope of Application team-a/app: it may only use namespace " + ns
	}
	cases := []struct {
		reason  string
		app     spec
		message string // "" = admitted
	}{
		{reason: "an app that names no other namespace", app: spec{}},
		{
			reason:  "a topology placing on the hub in another namespace",
			app:     spec{policies: []common.AppPolicy{{Name: "hub-b", Type: "topology", Properties: raw(`{"clusters":["local"],"namespace":"team-b"}`)}}},
			message: `application team-a/app: spec.policies[0].properties.namespace (topology policy "hub-b"): ` + outside("the topology's target in namespace team-b", "team-a"),
		},
		{
			reason:  "a topology with only a namespace places on the hub",
			app:     spec{policies: []common.AppPolicy{{Name: "b", Type: "topology", Properties: raw(`{"namespace":"team-b"}`)}}},
			message: outside("the topology's target in namespace team-b", "team-a"),
		},
		{
			reason: "a topology's namespace on member clusters is in scope there",
			app: spec{
				policies:   []common.AppPolicy{{Name: "m", Type: "topology", Properties: raw(`{"clusters":["member-1"],"namespace":"team-b"}`)}},
				components: objects("k8s-objects", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"team-b"}}`),
			},
		},
		{
			reason:  "a k8s-objects object in another namespace on the hub",
			app:     spec{components: objects("k8s-objects", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"team-b"}}`)},
			message: `spec.components[0].properties.objects[0] (component "cm").metadata.namespace: ` + outside("ConfigMap team-b/x", "team-a") + " here (other namespaces need the controller flag --allow-cross-namespace-resources)",
		},
		{
			reason:  "a cluster-scoped k8s-objects object",
			app:     spec{components: objects("k8s-objects", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ok"}},{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"root"}}`)},
			message: `spec.components[0].properties.objects[1] (component "cm").kind: ClusterRoleBinding root is outside the scope of Application team-a/app: it may only use namespace team-a here (cluster-scoped objects and other namespaces need the controller flag --allow-cross-namespace-resources)`,
		},
		{
			reason:  "a ref-objects reference to another namespace's Secret",
			app:     spec{components: objects("ref-objects", `{"resource":"secrets","name":"db-creds","namespace":"team-b"}`)},
			message: `spec.components[0].properties.objects[0].namespace (component "cm"): ` + outside("secrets team-b/db-creds", "team-a"),
		},
		{reason: "a ref-objects reference to the app's namespace", app: spec{components: objects("ref-objects", `{"resource":"secrets","name":"db-creds","namespace":"team-a"}`)}},
		{
			reason:  "an apply-object step writing another namespace",
			app:     spec{step: step("apply-object", `{"value":{"apiVersion":"v1","kind":"Secret","metadata":{"name":"tok","namespace":"oamflow-system"}}}`)},
			message: `spec.workflow.steps[0].properties.value (step "s").metadata.namespace: ` + outside("Secret oamflow-system/tok", "team-a"),
		},
		{
			reason:  "a read-object step reading another namespace",
			app:     spec{step: step("read-object", `{"apiVersion":"v1","kind":"Secret","name":"cloud-creds","namespace":"kube-system"}`)},
			message: `spec.workflow.steps[0].properties.namespace (step "s"): ` + outside("Secret kube-system/cloud-creds", "team-a"),
		},
		{
			reason:  "a pinned version of k8s-objects writing another namespace",
			app:     spec{components: []common.ApplicationComponent{{Name: "cm", Type: "k8s-objects@v1", Properties: raw(`{"objects":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"team-b"}}]}`)}}},
			message: outside("ConfigMap team-b/x", "team-a"),
		},
		{
			reason:  "a helm component releasing into another namespace",
			app:     spec{components: []common.ApplicationComponent{{Name: "db", Type: "helm", Properties: raw(`{"chart":{"source":"simple"},"release":{"namespace":"team-b"}}`)}}},
			message: `spec.components[0].properties.release.namespace (component "db"): ` + outside("HelmRelease team-b/db", "team-a"),
		},
		{
			reason:  "a helm-install step releasing into another namespace",
			app:     spec{step: step("helm-install", `{"chart":{"source":"simple"},"release":{"name":"db","namespace":"team-b"}}`)},
			message: `spec.workflow.steps[0].properties.release.namespace (step "s"): ` + outside("HelmRelease team-b/db", "team-a"),
		},
		{reason: "a helm component releasing into the app's namespace", app: spec{components: []common.ApplicationComponent{{Name: "db", Type: "helm", Properties: raw(`{"chart":{"source":"simple"},"release":{"namespace":"team-a"}}`)}}}},
		{reason: "a read-object step reading the app's namespace", app: spec{step: step("read-object", `{"apiVersion":"v1","kind":"Secret","name":"x","namespace":"team-a"}`)}},
	}
	yes := true
	for _, tc := range cases {
		for _, mode := range []struct {
			name   string
			config tenancy.Config
			denied bool
		}{
			{name: "lockdown", config: tenancy.Config{DefaultServiceAccount: "oamflow-app"}, denied: tc.message != ""},
			{name: "lockdown with --allow-cross-namespace-resources", config: tenancy.Config{DefaultServiceAccount: "oamflow-app", AllowCrossNamespace: &yes}},
			{name: "single-tenant", config: tenancy.Config{}},
		} {
			t.Run(mode.name+": "+tc.reason, func(t *testing.T) {
				v := NewApplicationValidator(SourceFactoryFn(func(string) appfile.DefinitionSource { return builtins }), nil)
				v.Identity = &IdentityChecker{Tenancy: mode.config, Reviews: fake.NewClientBuilder().WithRESTMapper(mapper).Build()}
				req := review(t, admissionv1.Create, app(tc.app), nil)
				req.Namespace = "team-a"
				req.UserInfo = authenticationv1.UserInfo{Username: "dev"}
				res := v.Handle(context.Background(), req)
				if !mode.denied {
					assert.True(t, res.Allowed, res.Result)
					return
				}
				assert.False(t, res.Allowed)
				require.NotNil(t, res.Result)
				assert.Contains(t, res.Result.Message, tc.message)
			})
		}
	}
}
