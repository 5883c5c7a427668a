package manager_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/localcluster"
	"github.com/oamflow/oamflow/pkg/manager"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

// tenant is a namespace with ServiceAccounts bound to cluster roles in it.
type tenant struct {
	ns string
}

// Cluster roles of the tenancy tests (envtest runs no controller
// manager, so the aggregated admin/edit/view roles stay empty): an admin
// of what the tests deploy, and a reader of it.
var tenantRoles = map[string][]string{
	"tenant-admin": {"get", "list", "watch", "create", "update", "patch", "delete"},
	"tenant-view":  {"get", "list", "watch"},
}

func createTenantRoles(t *testing.T) {
	t.Helper()
	for name, verbs := range tenantRoles {
		require.NoError(t, ignoreExists(env.Client.Create(context.Background(), &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets", "services", "serviceaccounts"}, Verbs: verbs},
				{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: verbs},
				{APIGroups: []string{"core.oam.dev"}, Resources: []string{"applications"}, Verbs: verbs},
			},
		})))
	}
}

// newTenant creates namespace ns and, for each ServiceAccount name, the
// ServiceAccount bound to the cluster role (tenant-admin, tenant-view, or
// "" for none) given.
func newTenant(t *testing.T, ns string, sas map[string]string) tenant {
	t.Helper()
	ctx := context.Background()
	c := env.Client
	createTenantRoles(t)
	require.NoError(t, ignoreExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))
	for sa, role := range sas {
		require.NoError(t, ignoreExists(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}})))
		if role == "" {
			continue
		}
		require.NoError(t, ignoreExists(c.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: sa + "-" + role, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
		})))
	}
	return tenant{ns: ns}
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// tenantApp builds an Application in ns from a YAML spec, with annotations.
func tenantApp(t *testing.T, ns, name, spec string, annotations map[string]string) *v1beta1.Application {
	t.Helper()
	app := &v1beta1.Application{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "Application"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
	}
	require.NoError(t, yaml.Unmarshal([]byte(spec), &app.Spec))
	return app
}

// waitPhase waits until app reaches one of phases and returns it.
func waitPhase(t *testing.T, app *v1beta1.Application, phases ...common.ApplicationPhase) *v1beta1.Application {
	t.Helper()
	got := &v1beta1.Application{}
	require.Eventually(t, func() bool {
		if env.Client.Get(context.Background(), client.ObjectKeyFromObject(app), got) != nil {
			return false
		}
		for _, p := range phases {
			if got.Status.Phase == p {
				return true
			}
		}
		return false
	}, 60*time.Second, 200*time.Millisecond, "%s/%s never reached %v", app.Namespace, app.Name, phases)
	return got
}

// conditionMessage is the message of app's condition typ ("" when absent).
func conditionMessage(app *v1beta1.Application, typ string) string {
	if c := meta.FindStatusCondition(app.Status.Conditions, typ); c != nil {
		return c.Message
	}
	return ""
}

// deleteAndWait deletes apps and waits until they are gone.
func deleteAndWait(t *testing.T, apps ...*v1beta1.Application) {
	t.Helper()
	ctx := context.Background()
	for _, app := range apps {
		require.NoError(t, client.IgnoreNotFound(env.Client.Delete(ctx, app)))
	}
	for _, app := range apps {
		require.Eventually(t, func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(app), &v1beta1.Application{}))
		}, 60*time.Second, 200*time.Millisecond, "%s/%s was not deleted", app.Namespace, app.Name)
	}
}

// deleteAllAndWait deletes every Application of namespace and waits until
// they are gone (a controller must be running to finish them): a test
// leaves nothing for the next test's controller to do.
func deleteAllAndWait(t *testing.T, namespace string) {
	t.Helper()
	list := &v1beta1.ApplicationList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(namespace)))
	apps := make([]*v1beta1.Application, 0, len(list.Items))
	for i := range list.Items {
		apps = append(apps, &list.Items[i])
	}
	deleteAndWait(t, apps...)
}

// warningEvents returns the messages of the Warning Events of app with reason.
func warningEvents(t *testing.T, app *v1beta1.Application, reason string) []string {
	t.Helper()
	list := &corev1.EventList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(app.Namespace)))
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == app.Name && e.Type == corev1.EventTypeWarning && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

func chartRoot(t *testing.T) string {
	t.Helper()
	wd, err := filepath.Abs(".")
	require.NoError(t, err)
	root, err := localcluster.FindModuleRoot(wd)
	require.NoError(t, err)
	return filepath.Join(root, "charts", "testdata")
}

// releaseRevisions lists the stored revisions of Helm release name in ns
// (Helm's Secret storage), newest last.
func releaseRevisions(t *testing.T, ns, name string) []corev1.Secret {
	t.Helper()
	list := &corev1.SecretList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": name}))
	return list.Items
}

// lockdownOptions are the controller options of lockdown mode: every
// Application acts as ServiceAccount "deployer" of its namespace unless its
// annotation names another.
func lockdownOptions(t *testing.T) manager.Options {
	o := testOptions()
	o.Tenancy.DefaultServiceAccount = "deployer"
	o.ChartRoot = chartRoot(t)
	o.MaxStepRetries = 2
	return o
}

// TestLockdown plays the attacks of issue 17 against a controller in
// lockdown mode (webhook off): an Application in team-a (lock-a, acting as
// ServiceAccount deployer, admin in lock-a only) tries to reach
// another namespace, the controller's credentials, another team's Secret,
// another Application's object and Helm release. Each attack fails with a
// message saying why, changes nothing outside, and deleting the attacker
// leaves the victims intact.
func TestLockdown(t *testing.T) {
	ctx := context.Background()
	c := env.Client
	a := newTenant(t, "lock-a", map[string]string{"deployer": "tenant-admin", "viewer": "tenant-view", "nobody": ""})
	b := newTenant(t, "lock-b", map[string]string{"deployer": "tenant-admin"})
	newTenant(t, "oamflow-system", map[string]string{"oamflow-controller": ""})
	// lock-c has no ServiceAccount "deployer": nothing it asks for is done.
	noSA := newTenant(t, "lock-c", nil)
	// In lock-d ServiceAccounts may read ServiceAccounts: the missing one
	// is reported as missing.
	noSAReadable := newTenant(t, "lock-d", nil)
	require.NoError(t, ignoreExists(c.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "sa-view", Namespace: noSAReadable.ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "tenant-view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:serviceaccounts:" + noSAReadable.ns}},
	})))
	require.NoError(t, ignoreExists(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-creds", Namespace: b.ns},
		StringData: map[string]string{"password": "hunter2"}})))

	// The controller runs as the chart's ServiceAccount with the chart's
	// lockdown RBAC: nothing on workloads or Secrets outside its namespace.
	for _, obj := range chartRelease(t, "oamflow-lockdown", map[string]any{"tenancy": map[string]any{"lockdown": true}},
		"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding") {
		require.NoError(t, ignoreExists(c.Create(ctx, obj)), "%s %s", obj.GetKind(), obj.GetName())
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:oamflow-system:oamflow-lockdown-controller"}
	startManagerAs(t, cfg, lockdownOptions(t))

	// The victims: an Application of lock-b, and one of lock-a (another
	// team sharing the namespace) with a ConfigMap and a Helm release.
	victimB := tenantApp(t, b.ns, "victim", `
components:
- name: cfg
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: victim-cm}, data: {owner: team-b}}]
`, nil)
	victimA := tenantApp(t, a.ns, "victim", `
components:
- name: cfg
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: shared-cm}, data: {owner: victim}}]
- name: db
  type: helm
  properties:
    chart: {source: simple}
    values: {message: victim}
`, nil)
	require.NoError(t, c.Create(ctx, victimB))
	require.NoError(t, c.Create(ctx, victimA))
	waitPhase(t, victimB, common.ApplicationRunning)
	require.Eventually(t, func() bool { return len(releaseRevisions(t, a.ns, "db")) == 1 }, 60*time.Second, 200*time.Millisecond, "the victim's release is installed")
	victimRelease := releaseRevisions(t, a.ns, "db")[0]
	assert.Equal(t, "victim", victimRelease.Labels[helmspec.LabelOwnerName], "the release records its owner")
	assert.Equal(t, a.ns, victimRelease.Labels[helmspec.LabelOwnerNamespace])
	sharedCM := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: "shared-cm"}, sharedCM))

	attacks := []struct {
		reason string
		name   string
		spec   string
		annos  map[string]string
		want   string
	}{
		{
			reason: "a ConfigMap in another namespace",
			name:   "cross-cm",
			spec: `
components:
- name: cfg
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: stolen, namespace: lock-b}, data: {k: v}}]
`,
			want: "ConfigMap lock-b/stolen is outside the scope of Application lock-a/cross-cm: it may only use namespace lock-a here",
		},
		{
			reason: "a token Secret for the controller's ServiceAccount",
			name:   "token",
			spec: `
components:
- name: tok
  type: k8s-objects
  properties:
    objects:
    - apiVersion: v1
      kind: Secret
      type: kubernetes.io/service-account-token
      metadata: {name: stolen-token, namespace: oamflow-system, annotations: {kubernetes.io/service-account.name: oamflow-controller}}
`,
			want: "Secret oamflow-system/stolen-token is outside the scope of Application lock-a/token",
		},
		{
			reason: "read-object of another namespace's Secret, printed into the status",
			name:   "read-secret",
			spec: `
components:
- name: cfg
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: read-secret}, data: {k: v}}]
workflow:
  steps:
  - name: read
    type: read-object
    properties: {apiVersion: v1, kind: Secret, name: db-creds, namespace: lock-b}
    outputs: [{name: creds, valueFrom: output.value.data.password}]
  - name: show
    type: print-message-in-status
    inputs: [{from: creds, parameterKey: message}]
`,
			want: "reading Secret lock-b/db-creds: Secret lock-b/db-creds is outside the scope of Application lock-a/read-secret",
		},
		{
			reason: "ref-objects of another namespace's Secret",
			name:   "ref-secret",
			spec: `
components:
- name: creds
  type: ref-objects
  properties:
    objects: [{apiVersion: v1, kind: Secret, name: db-creds, namespace: lock-b}]
`,
			want: "Secret lock-b/db-creds is outside the scope of Application lock-a/ref-secret",
		},
		{
			reason: "take-over of another Application's object",
			name:   "thief",
			spec: `
components:
- name: cfg
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: shared-cm}, data: {owner: thief}}]
policies:
- name: grab
  type: take-over
  properties: {rules: [{selector: {resourceTypes: [ConfigMap]}}]}
`,
			want: "ConfigMap lock-a/shared-cm is owned by Application lock-a/victim; take-over adopts only objects that belong to no Application",
		},
		{
			reason: "a Helm upgrade of another Application's release",
			name:   "helm-thief",
			spec: `
components:
- name: db
  type: helm
  properties:
    chart: {source: simple}
    values: {message: stolen}
policies:
- name: grab
  type: take-over
  properties: {rules: [{selector: {componentNames: [db]}}]}
`,
			want: "HelmRelease lock-a/db is owned by Application lock-a/victim",
		},
		{
			reason: "an identity that may read but not write: nothing of the step is written",
			name:   "viewer",
			annos:  map[string]string{v1beta1.AnnoServiceAccountName: "viewer"},
			spec: `
components:
- name: cfg
  type: k8s-objects
  properties:
    objects:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: viewer-1}, data: {k: v}}
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: viewer-2}, data: {k: v}}
`,
			want: "serviceaccount lock-a/viewer cannot patch configmaps in namespace lock-a",
		},
		{
			reason: "an identity bound to nothing",
			name:   "nobody",
			annos:  map[string]string{v1beta1.AnnoServiceAccountName: "nobody"},
			spec: `
components:
- name: cfg
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: nobody}, data: {k: v}}]
`,
			want: "serviceaccount lock-a/nobody cannot get configmaps in namespace lock-a",
		},
	}
	var attackers []*v1beta1.Application
	for _, tc := range attacks {
		t.Run(tc.reason, func(t *testing.T) {
			app := tenantApp(t, a.ns, tc.name, tc.spec, tc.annos)
			require.NoError(t, c.Create(ctx, app))
			attackers = append(attackers, app)
			got := waitPhase(t, app, common.ApplicationWorkflowFailed)
			assert.Contains(t, conditionMessage(got, common.ConditionWorkflow), tc.want, "conditions: %+v", got.Status.Conditions)
			assert.Contains(t, conditionMessage(got, common.ConditionIdentity), "acting as serviceaccount lock-a/")
			raw, err := json.Marshal(got.Status)
			require.NoError(t, err)
			assert.NotContains(t, string(raw), "hunter2")
			assert.NotContains(t, string(raw), "aHVudGVyMg==", "no Secret data in the status")
		})
	}

	t.Run("refusals of the identity are Warning Events", func(t *testing.T) {
		for _, app := range attackers {
			if app.Name == "viewer" || app.Name == "nobody" {
				assert.NotEmpty(t, warningEvents(t, app, common.ReasonAccessDenied), app.Name)
			}
		}
	})

	t.Run("nothing was created, read or changed outside", func(t *testing.T) {
		for _, key := range []client.ObjectKey{{Namespace: b.ns, Name: "stolen"}, {Namespace: a.ns, Name: "viewer-1"}, {Namespace: a.ns, Name: "viewer-2"}, {Namespace: a.ns, Name: "nobody"}} {
			assert.True(t, apierrors.IsNotFound(c.Get(ctx, key, &corev1.ConfigMap{})), "ConfigMap %s", key)
		}
		for _, key := range []client.ObjectKey{{Namespace: "oamflow-system", Name: "stolen-token"}, {Namespace: a.ns, Name: "db-creds"}} {
			assert.True(t, apierrors.IsNotFound(c.Get(ctx, key, &corev1.Secret{})), "Secret %s", key)
		}
		live := &corev1.ConfigMap{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: "shared-cm"}, live))
		assert.Equal(t, sharedCM.ResourceVersion, live.ResourceVersion, "the victim's ConfigMap was not written")
		revs := releaseRevisions(t, a.ns, "db")
		require.Len(t, revs, 1, "the victim's release was not upgraded")
		assert.Equal(t, "victim", revs[0].Labels[helmspec.LabelOwnerName])
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: "db-config"}, live))
		assert.Equal(t, "victim", live.Data["message"], "the release keeps the victim's values")
	})

	t.Run("deleting the attackers leaves the victims intact", func(t *testing.T) {
		deleteAndWait(t, attackers...)
		live := &corev1.ConfigMap{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: "shared-cm"}, live))
		assert.Equal(t, "victim", live.Data["owner"])
		assert.Equal(t, "victim", live.Labels[v1beta1.LabelAppName])
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: "victim-cm"}, live))
		assert.Equal(t, "team-b", live.Data["owner"])
		revs := releaseRevisions(t, a.ns, "db")
		require.Len(t, revs, 1, "the victim's release and its history stay")
		assert.Equal(t, "deployed", revs[0].Labels["status"])
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: "db-config"}, live))
		assert.Equal(t, "victim", live.Data["message"])
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: "db-creds"}, &corev1.Secret{}))
		got := waitPhase(t, victimB, common.ApplicationRunning)
		assert.Equal(t, "victim-cm", got.Status.AppliedResources[0].Name)
	})

	t.Run("an Application deploying into its own namespace as its ServiceAccount runs", func(t *testing.T) {
		app := tenantApp(t, a.ns, "own", `
components:
- name: cfg
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: own-cm}, data: {k: v}}]
`, nil)
		require.NoError(t, c.Create(ctx, app))
		got := waitPhase(t, app, common.ApplicationRunning)
		assert.Equal(t, "acting as serviceaccount lock-a/deployer (the controller's --default-service-account)", conditionMessage(got, common.ConditionIdentity))
		live := &corev1.ConfigMap{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: "own-cm"}, live))
		deleteAndWait(t, app)
		assert.True(t, apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: "own-cm"}, live)), "deleted with its Application")
	})

	t.Run("a namespace without the ServiceAccount deploys nothing", func(t *testing.T) {
		for _, tc := range []struct {
			ns, want, reason string
			// identity is a part of the Identity condition's message.
			identity string
		}{
			{ns: noSA.ns, want: "serviceaccount lock-c/deployer cannot get configmaps in namespace lock-c (the namespace's default ServiceAccount \"deployer\": does it exist", reason: common.ReasonWorkflowFailed,
				identity: "acting as serviceaccount lock-c/deployer (the controller's --default-service-account); not checked that it exists: it may not read ServiceAccounts"},
			{ns: noSAReadable.ns, want: "ServiceAccount lock-d/deployer does not exist: nothing is deployed until it does", reason: common.ReasonServiceAccountNotFound,
				identity: "ServiceAccount lock-d/deployer does not exist"},
		} {
			app := tenantApp(t, tc.ns, "orphan", `
components:
- name: cfg
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: orphan}, data: {k: v}}]
`, nil)
			require.NoError(t, c.Create(ctx, app))
			got := waitPhase(t, app, common.ApplicationWorkflowFailed)
			ready := meta.FindStatusCondition(got.Status.Conditions, common.ConditionReady)
			require.NotNil(t, ready)
			assert.Equal(t, tc.reason, ready.Reason)
			assert.Contains(t, ready.Message, tc.want)
			assert.Contains(t, conditionMessage(got, common.ConditionIdentity), tc.identity)
			assert.True(t, apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: tc.ns, Name: "orphan"}, &corev1.ConfigMap{})))
			deleteAndWait(t, app)
		}
	})
	deleteAndWait(t, victimA, victimB)
}

// TestLockdownCrossNamespaceAllowed: with --allow-cross-namespace-resources
// the scope is lifted and RBAC decides: the ServiceAccount, admin in its
// own namespace only, is refused in another with the API server's reason
// in the controller's words.
func TestLockdownCrossNamespaceAllowed(t *testing.T) {
	ctx := context.Background()
	a := newTenant(t, "lockx-a", map[string]string{"deployer": "tenant-admin"})
	b := newTenant(t, "lockx-b", nil)
	o := lockdownOptions(t)
	o.Tenancy.AllowCrossNamespace = ptr.To(true)
	startManager(t, o)
	app := tenantApp(t, a.ns, "cross", fmt.Sprintf(`
components:
- name: cfg
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: stolen, namespace: %s}, data: {k: v}}]
`, b.ns), nil)
	require.NoError(t, env.Client.Create(ctx, app))
	got := waitPhase(t, app, common.ApplicationWorkflowFailed)
	msg := conditionMessage(got, common.ConditionWorkflow)
	assert.Contains(t, msg, "serviceaccount lockx-a/deployer cannot get configmaps in namespace lockx-b")
	assert.False(t, strings.Contains(msg, "outside the scope"), msg)
	assert.True(t, apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: "stolen"}, &corev1.ConfigMap{})))
	deleteAndWait(t, app)
}

// TestKubeActionsHonourCluster: a read-object step with cluster: member-1
// reads member-1's object, not the hub's namesake (vela/kube's cluster
// parameter); an unknown cluster fails the step saying so.
func TestKubeActionsHonourCluster(t *testing.T) {
	ctx := context.Background()
	c := env.Client
	member := envtest.New(t)
	require.NoError(t, ignoreExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "oamflow-system"}})))
	joinMember(t, "member-1", member, nil)
	ns := "kube-cluster"
	require.NoError(t, ignoreExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))
	require.NoError(t, member.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	for _, cl := range []struct {
		c     client.Client
		where string
	}{{c, "hub"}, {member.Client, "member-1"}} {
		require.NoError(t, cl.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}, Data: map[string]string{"where": cl.where}}))
	}
	startManager(t, testOptions())

	app := tenantApp(t, ns, "probe", `
components:
- name: cfg
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: probe-app}, data: {k: v}}]
workflow:
  steps:
  - name: read
    type: read-object
    properties: {apiVersion: v1, kind: ConfigMap, name: probe, cluster: member-1}
    outputs: [{name: seen, valueFrom: output.value.data.where}]
  - name: write
    type: apply-object
    properties:
      value: {apiVersion: v1, kind: ConfigMap, metadata: {name: seen}, data: {}}
    inputs: [{from: seen, parameterKey: value.data.where}]
`, nil)
	require.NoError(t, c.Create(ctx, app))
	waitPhase(t, app, common.ApplicationRunning)
	seen := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "seen"}, seen))
	assert.Equal(t, "member-1", seen.Data["where"], "read from member-1, not from the hub")

	unknown := tenantApp(t, ns, "unknown", `
components:
- name: cfg
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: unknown-app}, data: {k: v}}]
workflow:
  steps:
  - name: read
    type: read-object
    properties: {apiVersion: v1, kind: ConfigMap, name: probe, cluster: member-9}
`, nil)
	require.NoError(t, c.Create(ctx, unknown))
	got := waitPhase(t, unknown, common.ApplicationWorkflowFailed)
	assert.Contains(t, conditionMessage(got, common.ConditionWorkflow), `reading ConfigMap kube-cluster/probe in cluster member-9: cluster "member-9" not registered`)
	deleteAndWait(t, app, unknown)
}

// TestLockdownAdmission: with the webhook on in lockdown, every target of
// an Application outside its scope is refused at once, in one message;
// targets in scope that its ServiceAccount may not write are admitted
// with a warning in the words of the run-time failure.
func TestLockdownAdmission(t *testing.T) {
	ctx := context.Background()
	w := newTenant(t, "lock-w", map[string]string{"deployer": "tenant-view"})
	o := lockdownOptions(t)
	o.Webhook.Enabled = true
	o.Webhook.Port = freePort(t)
	o.Webhook.FailurePolicy = string(admissionregistrationv1.Fail)
	startManager(t, o)

	collected := &envtest.Warnings{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = collected
	c, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
	require.NoError(t, err)

	outside := tenantApp(t, w.ns, "outside", `
components:
- name: cfg
  type: k8s-objects
  properties:
    objects:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: lock-x}}
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: kube-system}}
`, nil)
	require.Eventually(t, func() bool {
		err := c.Create(ctx, outside.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "denied the request")
	}, 30*time.Second, 200*time.Millisecond, "the webhook refuses targets outside the scope")
	err = c.Create(ctx, outside.DeepCopy(), client.DryRunAll)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "application lock-w/outside (2 targets outside its scope):")
	assert.Contains(t, err.Error(), "ConfigMap lock-x/a is outside the scope")
	assert.Contains(t, err.Error(), "ConfigMap kube-system/b is outside the scope")

	inside := tenantApp(t, w.ns, "inside", `
components:
- name: cfg
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}]
`, nil)
	collected.Take()
	require.NoError(t, c.Create(ctx, inside.DeepCopy(), client.DryRunAll), "a target in scope is admitted")
	assert.Contains(t, collected.Take(),
		`spec.components[0].properties.objects[0] (component "cfg"): serviceaccount lock-w/deployer cannot create configmaps in namespace lock-w `+
			`(the namespace's default ServiceAccount "deployer": does it exist, and is it bound to a Role that allows this?): the workflow will fail there until a RoleBinding allows it`)

	// Once the ServiceAccount may write ConfigMaps there, no warning.
	require.NoError(t, ignoreExists(env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deployer-admin", Namespace: w.ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "tenant-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "deployer", Namespace: w.ns}},
	})))
	require.Eventually(t, func() bool {
		collected.Take()
		return c.Create(ctx, inside.DeepCopy(), client.DryRunAll) == nil && len(collected.Take()) == 0
	}, 10*time.Second, 200*time.Millisecond, "no warning once the RoleBinding allows the writes")
}

// TestLockdownDriftDenied: when the Application's ServiceAccount may no
// longer write what drifted, the Application stops saying it is running:
// Ready says why, and nothing is retried in a storm.
func TestLockdownDriftDenied(t *testing.T) {
	ctx := context.Background()
	c := env.Client
	e := newTenant(t, "lock-e", map[string]string{"deployer": "tenant-admin"})
	o := lockdownOptions(t)
	o.ResyncPeriod = 2 * time.Second
	startManager(t, o)
	app := tenantApp(t, e.ns, "drifty", `
components:
- name: cfg
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: drifty}, data: {k: v}}]
`, nil)
	require.NoError(t, c.Create(ctx, app))
	waitPhase(t, app, common.ApplicationRunning)

	// The namespace admin takes the write rights away (granting view
	// first, so that no health check sees no rights at all), and someone
	// edits the ConfigMap.
	require.NoError(t, c.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deployer-tenant-view", Namespace: e.ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "tenant-view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "deployer", Namespace: e.ns}},
	}))
	require.NoError(t, c.Delete(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "deployer-tenant-admin"}}))
	cm := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "drifty"}, cm))
	cm.Data["k"] = "edited"
	require.NoError(t, c.Update(ctx, cm))

	got := waitPhase(t, app, common.ApplicationUnhealthy)
	ready := meta.FindStatusCondition(got.Status.Conditions, common.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, common.ReasonDriftRepairFailed, ready.Reason)
	assert.Contains(t, ready.Message, "serviceaccount lock-e/deployer cannot patch configmaps in namespace lock-e")
	assert.Equal(t, "drifty-v1", got.Status.LatestRevision.Name, "no new revision, no new run")
	// Given the rights back, it repairs the drift and runs again.
	require.NoError(t, c.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deployer-tenant-admin", Namespace: e.ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "tenant-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "deployer", Namespace: e.ns}},
	}))
	waitPhase(t, app, common.ApplicationRunning)
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "drifty"}, cm))
	assert.Equal(t, "v", cm.Data["k"], "the drift is repaired")
	deleteAndWait(t, app)
}
