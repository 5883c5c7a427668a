package tenancy

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

func app(annotations map[string]string, policies ...common.AppPolicy) *v1beta1.Application {
	return &v1beta1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a", Annotations: annotations},
		Spec:       v1beta1.ApplicationSpec{Policies: policies},
	}
}

func TestIdentityOf(t *testing.T) {
	cases := []struct {
		reason  string
		config  Config
		app     *v1beta1.Application
		want    Identity
		user    string
		wantErr string
	}{
		{
			reason: "single-tenant without the annotation: the controller itself",
			app:    app(nil),
			want:   Identity{Source: FromController},
		},
		{
			reason: "the annotation names a ServiceAccount of the app's namespace",
			app:    app(map[string]string{v1beta1.AnnoServiceAccountName: "deployer"}),
			want:   Identity{Namespace: "team-a", Name: "deployer", Source: FromAnnotation},
			user:   "system:serviceaccount:team-a:deployer",
		},
		{
			reason: "lockdown: the default ServiceAccount of the app's namespace",
			config: Config{DefaultServiceAccount: "oamflow-app"},
			app:    app(nil),
			want:   Identity{Namespace: "team-a", Name: "oamflow-app", Source: FromDefault},
			user:   "system:serviceaccount:team-a:oamflow-app",
		},
		{
			reason: "the annotation wins over the default",
			config: Config{DefaultServiceAccount: "oamflow-app"},
			app:    app(map[string]string{v1beta1.AnnoServiceAccountName: "deployer"}),
			want:   Identity{Namespace: "team-a", Name: "deployer", Source: FromAnnotation},
			user:   "system:serviceaccount:team-a:deployer",
		},
		{
			reason:  "an annotation that is no ServiceAccount name (no other namespace either)",
			app:     app(map[string]string{v1beta1.AnnoServiceAccountName: "kube-system:admin"}),
			wantErr: `application team-a/shop: metadata.annotations[app.oam.dev/service-account-name]: "kube-system:admin" is not a ServiceAccount name`,
		},
		{
			reason:  "an empty annotation is refused, not read as absent",
			config:  Config{DefaultServiceAccount: "oamflow-app"},
			app:     app(map[string]string{v1beta1.AnnoServiceAccountName: ""}),
			wantErr: `"" is not a ServiceAccount name`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			got, err := tc.config.IdentityOf(tc.app)
			if tc.wantErr != "" {
				var ie *InvalidIdentityError
				require.ErrorAs(t, err, &ie)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.user, got.UserName())
			assert.Equal(t, tc.user == "", got.IsController())
		})
	}
}

func TestCrossNamespaceDefault(t *testing.T) {
	cases := []struct {
		reason string
		config Config
		want   bool
	}{
		{reason: "single-tenant allows it by default (as before, and KubeVela's default)", want: true},
		{reason: "lockdown refuses it by default", config: Config{DefaultServiceAccount: "sa"}},
		{reason: "the flag wins in lockdown", config: Config{DefaultServiceAccount: "sa", AllowCrossNamespace: ptr.To(true)}, want: true},
		{reason: "the flag wins in single-tenant mode", config: Config{AllowCrossNamespace: ptr.To(false)}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.config.CrossNamespace())
			tn, err := tc.config.TenantOf(app(nil))
			require.NoError(t, err)
			assert.Equal(t, tc.want, tn.AllowCrossNamespace)
		})
	}
}

func topology(props string) common.AppPolicy {
	return common.AppPolicy{Name: "t", Type: "topology", Properties: &runtime.RawExtension{Raw: []byte(props)}}
}

func TestCheck(t *testing.T) {
	tn, err := Config{DefaultServiceAccount: "sa"}.TenantOf(app(nil,
		topology(`{"clusters":["member-1"],"namespace":"prod"}`), topology(`{"clusters":["member-2"]}`),
		common.AppPolicy{Name: "o", Type: "override", Properties: &runtime.RawExtension{Raw: []byte(`{"namespace":"x"}`)}}))
	require.NoError(t, err)
	assert.Equal(t, []string{"prod"}, tn.MemberNamespaces)
	cases := []struct {
		reason string
		obj    Object
		want   string
	}{
		{reason: "its own namespace on the hub", obj: Object{Kind: "ConfigMap", Namespace: "team-a", Name: "c"}},
		{reason: "its own namespace on a member", obj: Object{Cluster: "member-1", Kind: "ConfigMap", Namespace: "team-a", Name: "c"}},
		{reason: "a topology namespace on a member", obj: Object{Cluster: "member-2", Kind: "ConfigMap", Namespace: "prod", Name: "c"}},
		{
			reason: "a topology namespace is not granted on the hub",
			obj:    Object{Cluster: "local", Kind: "ConfigMap", Namespace: "prod", Name: "c"},
			want:   "ConfigMap prod/c is outside the scope of Application team-a/shop: it may only use namespace team-a here (other namespaces need the controller flag --allow-cross-namespace-resources)",
		},
		{
			reason: "another namespace",
			obj:    Object{Kind: "Secret", Namespace: "oamflow-system", Name: "token"},
			want:   "Secret oamflow-system/token is outside the scope of Application team-a/shop",
		},
		{
			reason: "a cluster-scoped object",
			obj:    Object{Cluster: "member-1", Kind: "ClusterRole", Name: "admin"},
			want:   "ClusterRole admin in cluster member-1 is outside the scope of Application team-a/shop: it may only use namespaces team-a, prod here (cluster-scoped objects and other namespaces need",
		},
		{
			reason: "a list across every namespace",
			obj:    Object{Kind: "Secret"},
			want:   "Secret in every namespace is outside the scope",
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			err := tn.Check(tc.obj)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			var se *ScopeError
			require.ErrorAs(t, err, &se)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, IsRefusal(fmt.Errorf("applying: %w", err)))
		})
	}
	tn.AllowCrossNamespace = true
	assert.NoError(t, tn.Check(Object{Kind: "ClusterRole", Name: "admin"}), "the flag lifts the scope")
}

func TestDenied(t *testing.T) {
	sa := Identity{Namespace: "team-a", Name: "deployer", Source: FromAnnotation}
	forbidden := func(msg string) error {
		err := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "c", errors.New("x"))
		err.ErrStatus.Message = msg
		return err
	}
	cases := []struct {
		reason string
		id     Identity
		err    error
		want   string
	}{
		{
			reason: "RBAC's namespaced denial",
			id:     sa,
			err:    forbidden(`configmaps "c" is forbidden: User "system:serviceaccount:team-a:deployer" cannot create resource "configmaps" in API group "" in the namespace "team-b"`),
			want:   "serviceaccount team-a/deployer cannot create configmaps in namespace team-b",
		},
		{
			reason: "RBAC's cluster-scope denial names the group",
			id:     sa,
			err:    forbidden(`clusterroles.rbac.authorization.k8s.io "x" is forbidden: User "system:serviceaccount:team-a:deployer" cannot patch resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope`),
			want:   "serviceaccount team-a/deployer cannot patch clusterroles.rbac.authorization.k8s.io at the cluster scope",
		},
		{
			reason: "another Forbidden (admission) keeps the API server's message",
			id:     sa,
			err:    forbidden(`pods "p" is forbidden: violates PodSecurity "restricted:latest"`),
			want:   `serviceaccount team-a/deployer was refused: pods "p" is forbidden: violates PodSecurity "restricted:latest"`,
		},
		{
			reason: "the default ServiceAccount gets a hint",
			id:     Identity{Namespace: "team-c", Name: "oamflow-app", Source: FromDefault},
			err:    forbidden(`configmaps "c" is forbidden: User "system:serviceaccount:team-c:oamflow-app" cannot get resource "configmaps" in API group "" in the namespace "team-c"`),
			want:   `serviceaccount team-c/oamflow-app cannot get configmaps in namespace team-c (the namespace's default ServiceAccount "oamflow-app": does it exist, and is it bound to a Role that allows this?)`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			err := Denied(tc.id, fmt.Errorf("applying ConfigMap: %w", tc.err))
			var de *DeniedError
			require.ErrorAs(t, err, &de)
			assert.Equal(t, tc.want, err.Error())
			assert.True(t, apierrors.IsForbidden(err), "the API server's error stays visible")
			assert.True(t, IsRefusal(err))
		})
	}
	t.Run("the controller's own Forbidden and other errors are unchanged", func(t *testing.T) {
		err := forbidden("nope")
		assert.Same(t, err, Denied(Identity{}, err))
		nf := apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "c")
		assert.Same(t, nf, Denied(sa, nf))
		assert.NoError(t, Denied(sa, nil))
		assert.False(t, IsRefusal(err))
	})
}
