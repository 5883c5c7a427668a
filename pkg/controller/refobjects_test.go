package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

func TestParseRef(t *testing.T) {
	cases := []struct {
		reason string
		in     map[string]any
		want   objectRef
		err    string
	}{
		{reason: "by resource and name", in: map[string]any{"resource": "deployments", "group": "apps", "name": "web"},
			want: objectRef{Resource: "deployments", Group: "apps", Name: "web", hasName: true}},
		{reason: "by apiVersion, kind and labels in another namespace", in: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "src", "labelSelector": map[string]any{"tier": "config"}},
			want: objectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "src", LabelSelector: map[string]string{"tier": "config"}, hasLabels: true}},
		{reason: "name and labels are exclusive", in: map[string]any{"resource": "configmaps", "name": "a", "labelSelector": map[string]any{"x": "y"}}, err: "exclusive"},
		{reason: "a type is needed", in: map[string]any{"name": "a"}, err: "set resource"},
		{reason: "label values are strings", in: map[string]any{"resource": "configmaps", "labelSelector": map[string]any{"x": 1}}, err: "labelSelector.x"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			got, err := parseRef(tc.in)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestClearServerFields(t *testing.T) {
	cases := []struct {
		reason string
		in     string
		want   string
	}{
		{"bookkeeping, status and controller annotations go",
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"w","namespace":"n","uid":"u","resourceVersion":"7","generation":3,"creationTimestamp":"2026-01-01T00:00:00Z","managedFields":[{"manager":"x"}],"ownerReferences":[{"name":"o"}],"finalizers":["f"],"annotations":{"deployment.kubernetes.io/revision":"2","kubectl.kubernetes.io/last-applied-configuration":"{}","team":"a"}},"spec":{"replicas":2},"status":{"readyReplicas":2}}`,
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"w","namespace":"n","annotations":{"team":"a"}},"spec":{"replicas":2}}`},
		{"a Service loses its allocated cluster IPs",
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"clusterIP":"10.0.0.3","clusterIPs":["10.0.0.3"],"ports":[{"port":80}]}}`,
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"ports":[{"port":80}]}}`},
		{"a headless Service keeps None",
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"clusterIP":"None","clusterIPs":["None"]}}`,
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"clusterIP":"None","clusterIPs":["None"]}}`},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			o := &unstructured.Unstructured{}
			require.NoError(t, o.UnmarshalJSON([]byte(tc.in)))
			clearServerFields(o)
			b, err := o.MarshalJSON()
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(b))
		})
	}
}

// legacyDeployment is a Deployment created outside oamflow.
func legacyDeployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
		},
	}
}

func TestRefObjectsReadOnlyIsHealthCheckedNeverWritten(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	ctx := context.Background()
	require.NoError(t, env(t).Client.Create(ctx, legacyDeployment(h.ns, "legacy")))
	app := h.app("adopt", `
components:
- name: legacy
  type: ref-objects
  properties:
    objects:
    - {resource: deployments, group: apps, name: legacy}
policies:
- name: hands-off
  type: read-only
  properties:
    rules:
    - selector: {componentNames: [legacy]}
`)
	// Not ready yet: the step waits on the referenced Deployment's health.
	got := h.until(app, false, 30*time.Second, func(a *v1beta1.Application) bool { return len(a.Status.Services) == 1 })
	assert.Equal(t, common.ApplicationRunningWorkflow, got.Status.Phase)
	assert.False(t, got.Status.Services[0].Healthy)
	assert.Contains(t, got.Status.Services[0].Message, "Deployment/legacy not ready")

	got = h.until(app, true, 60*time.Second, phaseIs(common.ApplicationRunning))
	require.Len(t, got.Status.Services, 1)
	assert.True(t, got.Status.Services[0].Healthy)
	assert.Equal(t, "1/1 objects ready", got.Status.Services[0].Message)
	d, _ := h.deployment("legacy")
	assert.NotContains(t, d.Labels, v1beta1.LabelAppName, "a read-only object is never written")
	for _, mf := range d.ManagedFields {
		assert.NotEqual(t, "oamflow", mf.Manager, "a read-only object is never applied")
	}

	// Health follows the live object: not ready again → unhealthy.
	d.Status.ReadyReplicas, d.Status.AvailableReplicas = 0, 0
	require.NoError(t, env(t).Client.Status().Update(ctx, d))
	h.until(app, false, 10*time.Second, phaseIs(common.ApplicationUnhealthy))
}

func TestRefObjectsTakeOverInPlace(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: h.ns, Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
		Data: map[string]string{"mode": "fast"}}
	require.NoError(t, env(t).Client.Create(ctx, cm))

	// Without take-over the object is refused, naming no owner.
	refused := h.app("grab", `
components:
- name: settings
  type: ref-objects
  properties:
    objects:
    - {resource: configmaps, name: settings}
`)
	got := h.until(refused, false, 30*time.Second, phaseIs(common.ApplicationWorkflowFailed))
	assert.Contains(t, meta.FindStatusCondition(got.Status.Conditions, common.ConditionWorkflow).Message, "settings")

	app := h.app("owner", `
components:
- name: settings
  type: ref-objects
  properties:
    objects:
    - {resource: configmaps, name: settings}
policies:
- name: adopt
  type: take-over
  properties:
    rules:
    - selector: {componentNames: [settings]}
`)
	got = h.until(app, false, 30*time.Second, phaseIs(common.ApplicationRunning))
	live := &corev1.ConfigMap{}
	require.NoError(t, env(t).Client.Get(ctx, client.ObjectKeyFromObject(cm), live))
	assert.Equal(t, "owner", live.Labels[v1beta1.LabelAppName], "taken over: stamped with the Application's labels")
	assert.Equal(t, "settings", live.Labels[v1beta1.LabelAppComponent])
	assert.Equal(t, "fast", live.Data["mode"], "the content is kept")
	tracked := false
	for _, r := range got.Status.AppliedResources {
		tracked = tracked || (r.Kind == "ConfigMap" && r.Namespace == h.ns && r.Name == "settings")
	}
	assert.True(t, tracked, "the taken-over object is tracked: %+v", got.Status.AppliedResources)
	require.Len(t, got.Status.Services, 1)
	assert.True(t, got.Status.Services[0].Healthy)

	// Taken over means owned: deleting the Application deletes it.
	h.deleteUntilGone(app)
	assert.True(t, apierrors.IsNotFound(env(t).Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})))
}

func TestRefObjectsCopiedToTheTopologyNamespace(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	ctx := context.Background()
	src, target := h.ns+"-src", h.ns+"-dst"
	for _, ns := range []string{src, target} {
		require.NoError(t, env(t).Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	for _, name := range []string{"b", "a"} {
		require.NoError(t, env(t).Client.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: src, Labels: map[string]string{"tier": "config"}},
			Data:       map[string]string{"name": name},
		}))
	}
	require.NoError(t, env(t).Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: src}}))
	app := h.app("copy", fmt.Sprintf(`
components:
- name: config
  type: ref-objects
  properties:
    objects:
    - {resource: configmaps, namespace: %s, labelSelector: {tier: config}}
policies:
- name: there
  type: topology
  properties: {clusters: [local], namespace: %s}
`, src, target))
	got := h.until(app, false, 30*time.Second, phaseIs(common.ApplicationRunning))
	for _, name := range []string{"a", "b"} {
		cp := &corev1.ConfigMap{}
		require.NoError(t, env(t).Client.Get(ctx, client.ObjectKey{Namespace: target, Name: name}, cp), "copy of %s", name)
		assert.Equal(t, name, cp.Data["name"])
		assert.Equal(t, "config", cp.Labels["tier"])
		assert.Equal(t, "copy", cp.Labels[v1beta1.LabelAppName])
		orig := &corev1.ConfigMap{}
		require.NoError(t, env(t).Client.Get(ctx, client.ObjectKey{Namespace: src, Name: name}, orig))
		assert.NotContains(t, orig.Labels, v1beta1.LabelAppName, "the source is only read")
	}
	assert.True(t, apierrors.IsNotFound(env(t).Client.Get(ctx, client.ObjectKey{Namespace: target, Name: "other"}, &corev1.ConfigMap{})), "only selected objects are copied")
	require.Len(t, got.Status.Services, 1)
	assert.True(t, got.Status.Services[0].Healthy, got.Status.Services[0].Message)
	assert.Equal(t, "2/2 objects ready", got.Status.Services[0].Message)
}
