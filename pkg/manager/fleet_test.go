package manager_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/revision"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

// TestPlacementFollowsTheFleet: an Application selecting clusters by
// labels follows the registry without any edit of the Application. A
// member gaining the labels gets the app (a new revision, an Event
// naming the cluster); a member losing them has the app's objects
// deleted there and nowhere else; a member whose endpoint breaks (so it
// is unreachable) but keeps its labels is still selected: no new
// revision, nothing deleted.
func TestPlacementFollowsTheFleet(t *testing.T) {
	ctx := context.Background()
	c := env.Client
	east, west := envtest.New(t), envtest.New(t)
	require.NoError(t, ignoreExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "oamflow-system"}})))
	ns := "fleet"
	require.NoError(t, ignoreExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))
	eastSecret := joinMember(t, "fleet-east", east, map[string]string{"fleet-test": "yes"})
	westSecret := joinMember(t, "fleet-west", west, nil)
	relabel := func(s *corev1.Secret, mod func(*corev1.Secret)) {
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(s), s))
		base := s.DeepCopy()
		mod(s)
		require.NoError(t, c.Patch(ctx, s, client.MergeFrom(base)))
	}
	startManager(t, testOptions())

	app := tenantApp(t, ns, "spread", `
components:
- name: cfg
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: spread-cfg}, data: {k: v}}]
policies:
- name: tagged
  type: topology
  properties: {clusterLabelSelector: {fleet-test: "yes"}}
workflow:
  steps:
  - name: deploy
    type: deploy
    properties: {policies: [tagged]}
`, nil)
	require.NoError(t, c.Create(ctx, app))
	waitPhase(t, app, common.ApplicationRunning)
	has := func(m *envtest.Environment) bool {
		err := m.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "spread-cfg"}, &corev1.ConfigMap{})
		return err == nil
	}
	require.True(t, has(east), "deployed on the labelled member")
	require.False(t, has(west), "not on the unlabelled one")
	revs := func() []string {
		list := &v1beta1.ApplicationRevisionList{}
		require.NoError(t, c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{v1beta1.LabelAppName: "spread"}))
		var out []string
		for _, r := range list.Items {
			out = append(out, r.Name+"="+r.Annotations[revision.AnnoPlacement])
		}
		return out
	}
	assert.Equal(t, []string{`spread-v1={"tagged":["fleet-east"]}`}, revs())
	assert.Equal(t, []common.PlacementStatus{{Cluster: "fleet-east", Namespace: ns, Policy: "tagged", Reason: "labels match policy tagged {fleet-test=yes}"}},
		waitPhase(t, app, common.ApplicationRunning).Status.Placement, "status.placement says where and why")

	// A member gains the labels: it gets the app, no edit.
	relabel(westSecret, func(s *corev1.Secret) { s.Labels["fleet-test"] = "yes" })
	require.Eventually(t, func() bool { return has(west) }, 60*time.Second, 200*time.Millisecond, "the member that joined the selection never got the app")
	waitRevision(t, app, "spread-v2")
	assert.Contains(t, events(t, app, revision.ReasonPlacementChanged), `placement changed: policy "tagged": cluster fleet-west joined`)
	assert.Equal(t, []string{"fleet-east", "fleet-west"}, placedOn(t, app), "status.placement follows the fleet")

	// A member loses them: its objects go, the other member's stay.
	relabel(eastSecret, func(s *corev1.Secret) { delete(s.Labels, "fleet-test") })
	require.Eventually(t, func() bool { return !has(east) }, 60*time.Second, 200*time.Millisecond, "the member that left the selection kept the app's objects")
	waitRevision(t, app, "spread-v3")
	assert.True(t, has(west), "nothing deleted on the member still selected")
	assert.Equal(t, []string{"fleet-west"}, placedOn(t, app))
	assert.Contains(t, events(t, app, revision.ReasonPlacementChanged), `placement changed: policy "tagged": cluster fleet-east left`)
	assert.Len(t, revs(), 3)

	// A selected member becomes unreachable (its endpoint breaks, its
	// labels stay) while another joins: the unreachable one is still in
	// the new revision's placement, and nothing is deleted there.
	endpoint := string(westSecret.Data[multicluster.KeyEndpoint])
	relabel(westSecret, func(s *corev1.Secret) { s.Data[multicluster.KeyEndpoint] = []byte("https://127.0.0.1:1") })
	relabel(eastSecret, func(s *corev1.Secret) { s.Labels["fleet-test"] = "yes" })
	require.Eventually(t, func() bool { return has(east) }, 60*time.Second, 200*time.Millisecond, "the member that joined again never got the app")
	assert.Contains(t, revs(), `spread-v4={"tagged":["fleet-east","fleet-west"]}`, "an unreachable member is not an unselected one")
	time.Sleep(2 * time.Second) // a wrong deletion would have its chance here
	assert.True(t, has(west), "nothing deleted on an unreachable member")
	relabel(westSecret, func(s *corev1.Secret) { s.Data[multicluster.KeyEndpoint] = []byte(endpoint) })
	assert.True(t, has(east) && has(west))

	require.NoError(t, c.Delete(ctx, app))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(app), &v1beta1.Application{}))
	}, 60*time.Second, 200*time.Millisecond)
}

// joinMember registers m as member cluster name (a cluster Secret in
// oamflow-system, removed when the test ends) and returns the Secret.
func joinMember(t *testing.T, name string, m *envtest.Environment, labels map[string]string) *corev1.Secret {
	t.Helper()
	ctx := context.Background()
	s, err := multicluster.NewClusterSecret("oamflow-system", name, multicluster.Credentials{
		Endpoint: m.Config.Host, CAData: m.Config.CAData, CertData: m.Config.CertData, KeyData: m.Config.KeyData,
	}, labels, multicluster.ClientSettings{})
	require.NoError(t, err)
	require.NoError(t, env.Client.Create(ctx, s))
	t.Cleanup(func() { _ = env.Client.Delete(ctx, s) })
	return s
}

// waitRevision waits until app runs revision rev.
func waitRevision(t *testing.T, app *v1beta1.Application, rev string) {
	t.Helper()
	got := &v1beta1.Application{}
	require.Eventually(t, func() bool {
		return env.Client.Get(context.Background(), client.ObjectKeyFromObject(app), got) == nil &&
			got.Status.LatestRevision != nil && got.Status.LatestRevision.Name == rev && got.Status.Phase == common.ApplicationRunning
	}, 60*time.Second, 200*time.Millisecond, "%s/%s never ran %s", app.Namespace, app.Name, rev)
}

// events returns the messages of app's Events with reason.
func events(t *testing.T, app *v1beta1.Application, reason string) []string {
	t.Helper()
	list := &corev1.EventList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(app.Namespace)))
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == app.Name && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

// placedOn is the clusters of app's status.placement.
func placedOn(t *testing.T, app *v1beta1.Application) []string {
	t.Helper()
	got := &v1beta1.Application{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(app), got))
	var out []string
	for _, p := range got.Status.Placement {
		out = append(out, p.Cluster)
	}
	return out
}
