package webhook

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/tenancy"
)

// reviewer answers SubjectAccessReviews as RBAC would with one rule: alice
// may impersonate serviceaccounts/deployer in team-a. It records the
// reviews.
func reviewer(t *testing.T, got *[]authorizationv1.SubjectAccessReviewSpec) client.Client {
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	return fake.NewClientBuilder().WithScheme(s).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			sar := obj.(*authorizationv1.SubjectAccessReview)
			*got = append(*got, sar.Spec)
			ra := sar.Spec.ResourceAttributes
			sar.Status.Allowed = sar.Spec.User == "alice" && ra.Verb == "impersonate" && ra.Resource == "serviceaccounts" &&
				ra.Namespace == "team-a" && ra.Name == "deployer"
			return nil
		},
	}).Build()
}

func TestIdentityCheck(t *testing.T) {
	builtins, err := appfile.NewFSSource(definitions.FS, ".")
	require.NoError(t, err)
	app := func(sa string) *v1beta1.Application {
		a := &v1beta1.Application{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "Application"},
			ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "team-a"},
		}
		if sa != "-" {
			a.Annotations = map[string]string{v1beta1.AnnoServiceAccountName: sa}
		}
		a.Spec.Components = []common.ApplicationComponent{{Name: "web", Type: "webservice", Properties: &runtime.RawExtension{Raw: []byte(`{"image":"nginx"}`)}}}
		return a
	}
	withImage := func(a *v1beta1.Application, image string) *v1beta1.Application {
		a.Spec.Components[0].Properties = &runtime.RawExtension{Raw: []byte(`{"image":"` + image + `"}`)}
		return a
	}
	lockdown := tenancy.Config{DefaultServiceAccount: "oamflow-app"}
	cases := []struct {
		reason  string
		config  tenancy.Config
		user    string
		op      admissionv1.Operation
		obj     *v1beta1.Application
		old     *v1beta1.Application
		allowed bool
		reviews int
		message string
	}{
		{reason: "lockdown: a user allowed to impersonate the ServiceAccount", config: lockdown, user: "alice", op: admissionv1.Create, obj: app("deployer"), allowed: true, reviews: 1},
		{
			reason: "lockdown: a user who may not act as the ServiceAccount", config: lockdown, user: "bob", op: admissionv1.Create, obj: app("deployer"), reviews: 1,
			message: `application team-a/a: metadata.annotations[app.oam.dev/service-account-name]: user "bob" may not act as serviceaccount team-a/deployer: the Application would act as it, which needs the verb impersonate on serviceaccounts/deployer in namespace team-a`,
		},
		{reason: "lockdown: adding the annotation to an unchanged spec is checked", config: lockdown, user: "bob", op: admissionv1.Update, obj: app("deployer"), old: app("-"), reviews: 1, message: `user "bob" may not act as serviceaccount team-a/deployer`},
		{reason: "lockdown: an unchanged annotation is not checked again", config: lockdown, user: "bob", op: admissionv1.Update, obj: app("deployer"), old: app("deployer"), allowed: true},
		{
			reason: "lockdown: a spec change under an unchanged annotation is checked (it changes what the ServiceAccount does)", config: lockdown, user: "bob",
			op: admissionv1.Update, obj: app("deployer"), old: withImage(app("deployer"), "busybox"), reviews: 1, message: `user "bob" may not act as serviceaccount team-a/deployer`,
		},
		{reason: "lockdown: the default ServiceAccount needs no review", config: lockdown, user: "bob", op: admissionv1.Create, obj: app("-"), allowed: true},
		{reason: "single-tenant: writers act as the controller anyway; no review", user: "bob", op: admissionv1.Create, obj: app("deployer"), allowed: true},
		{reason: "any mode: an annotation naming no ServiceAccount", user: "alice", op: admissionv1.Create, obj: app("kube-system:admin"), message: `metadata.annotations[app.oam.dev/service-account-name]: "kube-system:admin" is not a ServiceAccount name`},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			var reviews []authorizationv1.SubjectAccessReviewSpec
			v := NewApplicationValidator(SourceFactoryFn(func(string) appfile.DefinitionSource { return builtins }), nil)
			v.Identity = &IdentityChecker{Tenancy: tc.config, Reviews: reviewer(t, &reviews)}
			var old runtime.Object
			if tc.old != nil {
				old = tc.old
			}
			req := review(t, tc.op, tc.obj, old)
			req.Namespace = "team-a"
			req.UserInfo = authenticationv1.UserInfo{Username: tc.user, Groups: []string{"team-a-devs"}}
			res := v.Handle(context.Background(), req)
			assert.Equal(t, tc.allowed, res.Allowed, res.Result)
			if tc.message != "" {
				require.NotNil(t, res.Result)
				assert.Contains(t, res.Result.Message, tc.message)
			}
			require.Len(t, reviews, tc.reviews)
			if tc.reviews > 0 {
				assert.Equal(t, []string{"team-a-devs"}, reviews[0].Groups, "the writer's groups are reviewed too")
			}
		})
	}
}
