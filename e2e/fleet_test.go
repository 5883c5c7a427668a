//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/e2e/framework"
	"github.com/oamflow/oamflow/pkg/localcluster"
	"github.com/oamflow/oamflow/pkg/manager"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
	"github.com/oamflow/oamflow/pkg/revision"
)

// fleetShopApp lives in namespace team-x, which exists on the hub only: a
// webservice placed on every member labelled region=eu, with an override
// of its replicas.
const fleetShopApp = `
apiVersion: core.oam.dev/v1beta1
kind: Application
metadata:
  name: shop
  namespace: team-x
spec:
  components:
    - name: web
      type: webservice
      properties:
        image: registry.invalid/shop:1
      traits:
        - type: scaler
          properties: {replicas: 1}
  policies:
    - name: eu
      type: topology
      properties:
        clusterLabelSelector: {region: eu}
    - name: two
      type: override
      properties:
        components:
          - name: web
            traits:
              - type: scaler
                properties: {replicas: 2}
  workflow:
    steps:
      - name: deploy-eu
        type: deploy
        properties:
          policies: [eu, two]
`

// fleetStrictApp targets namespace team-y on member-1 with
// createNamespace: false.
const fleetStrictApp = `
apiVersion: core.oam.dev/v1beta1
kind: Application
metadata:
  name: strict
  namespace: default
spec:
  components:
    - name: cfg
      type: k8s-objects
      properties:
        objects:
          - {apiVersion: v1, kind: ConfigMap, metadata: {name: strict-cfg}, data: {a: b}}
  policies:
    - name: m1
      type: topology
      properties:
        clusters: [member-1]
        namespace: team-y
        createNamespace: false
`

// TestFleetAcceptance is the acceptance test of issue 19 on local clusters
// (a hub and three members): an Application whose namespace exists on no
// member runs on both members its labels select, the namespace created
// and labelled there; with createNamespace: false a missing namespace is
// awaited, named, and the app proceeds once it is created by hand; a
// third member joined later with matching labels gets the app without an
// edit, and loses it (there only) when its label goes; a member whose
// kube-apiserver stops has nothing deleted anywhere, its component turns
// unhealthy (ClusterUnreachable) after the threshold and recovers when it
// is back; deleting the app removes its objects and leaves the namespaces.
func TestFleetAcceptance(t *testing.T) {
	const unreachableAfter = 20 * time.Second
	env := framework.Start(t, 4)
	hub := env.Cluster(t, "local")
	m1, m2, m3 := env.Cluster(t, "member-1"), env.Cluster(t, "member-2"), env.Cluster(t, "member-3")
	for _, name := range []string{"member-1", "member-2"} {
		_, err := framework.Oamflow(t, hub.Kubeconfig, "cluster", "join", env.Cluster(t, name).Kubeconfig, "--name", name, "--labels", "region=eu")
		require.NoError(t, err)
	}
	framework.StartController(t, hub, fleetUnreachableAfter(unreachableAfter))

	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1beta1.AddToScheme(s))
	hubClient, err := client.New(hub.Config, client.Options{Scheme: s})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-x"}}))

	shop := &v1beta1.Application{}
	require.NoError(t, yaml.Unmarshal([]byte(fleetShopApp), shop))
	key := client.ObjectKeyFromObject(shop)
	require.NoError(t, hubClient.Create(ctx, shop))

	uids := map[string]types.UID{}
	ok := t.Run("NamespaceCreatedOnEveryMember", func(t *testing.T) {
		mcWaitRunning(t, hubClient, key, 5*time.Minute)
		for _, c := range []*framework.Cluster{m1, m2} {
			ns, err := c.Kube.CoreV1().Namespaces().Get(ctx, "team-x", metav1.GetOptions{})
			require.NoError(t, err, c)
			assert.Equal(t, "oamflow", ns.Labels[resourcekeeper.LabelCreatedBy], "%s: team-x labelled as created by oamflow", c)
			assert.Equal(t, "shop", ns.Labels[resourcekeeper.LabelCreatedForApp], c)
			assert.Equal(t, "team-x", ns.Labels[resourcekeeper.LabelCreatedForNamespace], c)
			d := fleetWeb(t, c)
			assert.Equal(t, int32(2), *d.Spec.Replicas, "%s: the override's replicas", c)
			uids[c.Name] = d.UID
		}
		fleetAssertNoWeb(t, m3)
		fleetAssertNoWeb(t, hub)
	})
	if !ok {
		return
	}

	t.Run("CreateNamespaceFalseWaitsForIt", func(t *testing.T) {
		strict := &v1beta1.Application{}
		require.NoError(t, yaml.Unmarshal([]byte(fleetStrictApp), strict))
		skey := client.ObjectKeyFromObject(strict)
		require.NoError(t, hubClient.Create(ctx, strict))
		framework.WaitFor(t, 2*time.Minute, "the step waits naming cluster and namespace", func(ctx context.Context) (bool, error) {
			a := &v1beta1.Application{}
			if err := hubClient.Get(ctx, skey, a); err != nil {
				return false, err
			}
			summary := mcWorkflowSummary(a)
			return strings.Contains(summary, `namespace "team-y" does not exist in cluster member-1`), fmt.Errorf("phase %q, workflow %s", a.Status.Phase, summary)
		})
		a := mcGetApp(t, hubClient, skey)
		assert.NotEqual(t, common.ApplicationWorkflowFailed, a.Status.Phase, "a missing namespace is awaited, not a failure")
		_, err := m1.Kube.CoreV1().Namespaces().Get(ctx, "team-y", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "oamflow did not create team-y: %v", err)

		_, err = m1.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-y"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		mcWaitRunning(t, hubClient, skey, 3*time.Minute)
		_, err = m1.Kube.CoreV1().ConfigMaps("team-y").Get(ctx, "strict-cfg", metav1.GetOptions{})
		require.NoError(t, err, "the app proceeded without an edit")
		require.NoError(t, hubClient.Delete(ctx, strict))
	})

	ok = t.Run("JoinedMemberGetsTheApp", func(t *testing.T) {
		_, err := framework.Oamflow(t, hub.Kubeconfig, "cluster", "join", m3.Kubeconfig, "--name", "member-3", "--labels", "region=eu")
		require.NoError(t, err)
		framework.WaitFor(t, 3*time.Minute, "member-3 runs web", func(ctx context.Context) (bool, error) {
			d := &appsv1.Deployment{}
			if err := m3.Client.Get(ctx, types.NamespacedName{Namespace: "team-x", Name: "web"}, d); err != nil {
				return false, err
			}
			return framework.DeploymentAvailable(d), fmt.Errorf("web in member-3: %d available", d.Status.AvailableReplicas)
		})
		mcWaitRunning(t, hubClient, key, 3*time.Minute)
		a := mcGetApp(t, hubClient, key)
		assert.NotNil(t, mcFindService(a.Status.Services, "web", "member-3"), "status.services lists web in member-3: %+v", a.Status.Services)
		fleetAssertEvent(t, hubClient, shop, revision.ReasonPlacementChanged, "member-3")
		fleetAssertUIDs(t, uids, m1, m2)
	})
	if !ok {
		return
	}

	ok = t.Run("UnlabelledMemberLosesTheApp", func(t *testing.T) {
		_, err := framework.Oamflow(t, hub.Kubeconfig, "cluster", "labels", "del", "member-3", "region")
		require.NoError(t, err)
		framework.WaitFor(t, 3*time.Minute, "web is gone from member-3", func(ctx context.Context) (bool, error) {
			err := m3.Client.Get(ctx, types.NamespacedName{Namespace: "team-x", Name: "web"}, &appsv1.Deployment{})
			return apierrors.IsNotFound(err), err
		})
		mcWaitRunning(t, hubClient, key, 3*time.Minute)
		fleetAssertUIDs(t, uids, m1, m2)
		_, err = m3.Kube.CoreV1().Namespaces().Get(ctx, "team-x", metav1.GetOptions{})
		assert.NoError(t, err, "the namespace oamflow created on member-3 stays")
	})
	if !ok {
		return
	}

	ok = t.Run("UnreachableMemberTurnsUnhealthyNothingDeleted", func(t *testing.T) {
		stopped := time.Now() // before the kill: the controller cannot see it fail earlier
		apiserver, err := env.Stop(ctx, "member-2", localcluster.CompKubeAPIServer)
		require.NoError(t, err)
		t.Logf("stopped %s", apiserver.Name())
		framework.WaitFor(t, 3*time.Minute, "web in member-2 is unhealthy: ClusterUnreachable", func(ctx context.Context) (bool, error) {
			a := &v1beta1.Application{}
			if err := hubClient.Get(ctx, key, a); err != nil {
				return false, err
			}
			svc := mcFindService(a.Status.Services, "web", "member-2")
			if svc == nil {
				return false, fmt.Errorf("no web in member-2 in %+v", a.Status.Services)
			}
			return !svc.Healthy && svc.Details["reason"] == common.ReasonClusterUnreachable && strings.Contains(svc.Message, "cluster member-2 has been unreachable since") &&
					a.Status.Phase == common.ApplicationUnhealthy,
				fmt.Errorf("phase %q, web in member-2: healthy %v %q", a.Status.Phase, svc.Healthy, svc.Message)
		})
		assert.GreaterOrEqual(t, time.Since(stopped), unreachableAfter, "not unhealthy before the threshold")
		fleetAssertUIDs(t, uids, m1)
		a := mcGetApp(t, hubClient, key)
		if svc := mcFindService(a.Status.Services, "web", "member-1"); assert.NotNil(t, svc) {
			assert.True(t, svc.Healthy, "member-1 is not affected: %s", svc.Message)
		}

		require.NoError(t, apiserver.Restart(m2, t.Logf))
		mcWaitRunning(t, hubClient, key, 3*time.Minute)
		fleetAssertUIDs(t, uids, m1, m2)
	})
	if !ok {
		return
	}

	t.Run("DeleteLeavesNamespaces", func(t *testing.T) {
		require.NoError(t, hubClient.Delete(ctx, shop))
		framework.WaitFor(t, 3*time.Minute, "the Application is gone", func(ctx context.Context) (bool, error) {
			err := hubClient.Get(ctx, key, &v1beta1.Application{})
			return apierrors.IsNotFound(err), err
		})
		for _, c := range []*framework.Cluster{m1, m2, m3} {
			fleetAssertNoWeb(t, c)
			_, err := c.Kube.CoreV1().Namespaces().Get(ctx, "team-x", metav1.GetOptions{})
			assert.NoError(t, err, "%s: team-x is left in place", c)
		}
	})
}

// fleetWeb is the web Deployment of shop in c.
func fleetWeb(t *testing.T, c *framework.Cluster) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	require.NoError(t, c.Client.Get(context.Background(), types.NamespacedName{Namespace: "team-x", Name: "web"}, d), c)
	return d
}

func fleetAssertNoWeb(t *testing.T, c *framework.Cluster) {
	t.Helper()
	err := c.Client.Get(context.Background(), types.NamespacedName{Namespace: "team-x", Name: "web"}, &appsv1.Deployment{})
	assert.True(t, apierrors.IsNotFound(err), "%s holds no web Deployment: %v", c, err)
}

// fleetAssertUIDs asserts that web in each cluster is the object first
// seen (not deleted and created again).
func fleetAssertUIDs(t *testing.T, uids map[string]types.UID, clusters ...*framework.Cluster) {
	t.Helper()
	for _, c := range clusters {
		assert.Equal(t, uids[c.Name], fleetWeb(t, c).UID, "%s: web was not recreated", c)
	}
}

// fleetAssertEvent asserts the Application has an Event of reason whose
// message contains want.
func fleetAssertEvent(t *testing.T, c client.Client, app *v1beta1.Application, reason, want string) {
	t.Helper()
	framework.WaitFor(t, time.Minute, fmt.Sprintf("a %s Event naming %s", reason, want), func(ctx context.Context) (bool, error) {
		events := &corev1.EventList{}
		if err := c.List(ctx, events, client.InNamespace(app.Namespace)); err != nil {
			return false, err
		}
		var seen []string
		for _, e := range events.Items {
			if e.InvolvedObject.Name == app.Name && e.Reason == reason {
				if strings.Contains(e.Message, want) {
					return true, nil
				}
				seen = append(seen, e.Message)
			}
		}
		return false, fmt.Errorf("%s Events: %q", reason, seen)
	})
}

// fleetUnreachableAfter sets the controller's cluster-unreachable threshold.
func fleetUnreachableAfter(d time.Duration) framework.ControllerOption {
	return func(o *manager.Options) { o.ClusterUnreachableAfter = d }
}
