//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/e2e/framework"
	"github.com/oamflow/oamflow/pkg/localcluster"
)

// mcClusterInfoDefinition renders a ConfigMap saying which cluster and
// Kubernetes version the template saw (context.cluster,
// context.clusterVersion).
const mcClusterInfoDefinition = `
apiVersion: core.oam.dev/v1beta1
kind: ComponentDefinition
metadata:
  name: cluster-info
  namespace: oamflow-system
spec:
  workload:
    definition:
      apiVersion: v1
      kind: ConfigMap
  schematic:
    cue:
      template: |
        output: {
          apiVersion: "v1"
          kind:       "ConfigMap"
          metadata: name: context.name
          data: {
            cluster:    context.cluster
            gitVersion: context.clusterVersion.gitVersion
            minor:      "\(context.clusterVersion.minor)"
          }
        }
        parameter: {}
`

// mcRegionsApp is the Application of the acceptance test: a webservice with
// a scaler, a cluster-info ConfigMap and the Helm chart "simple", deployed
// to the clusters labelled region=east and region=west with per-region
// replicas, env var and chart values.
const mcRegionsApp = `
apiVersion: core.oam.dev/v1beta1
kind: Application
metadata:
  name: regions
  namespace: default
spec:
  components:
    - name: web
      type: webservice
      properties:
        image: registry.invalid/web:1
        env:
          - {name: REGION, value: unknown}
      traits:
        - type: scaler
          properties: {replicas: 1}
    - name: info
      type: cluster-info
      properties: {}
    - name: chart
      type: helm
      properties:
        chart: {source: simple}
        release: {name: chart}
        values: {replicaCount: 1, message: default}
  policies:
    - name: east
      type: topology
      properties:
        clusterLabelSelector: {region: east}
    - name: west
      type: topology
      properties:
        clusterLabelSelector: {region: west}
    - name: east-values
      type: override
      properties:
        components:
          - name: web
            properties:
              env:
                - {name: REGION, value: east}
            traits:
              - type: scaler
                properties: {replicas: 2}
          - name: chart
            properties:
              values: {message: hello-east}
    - name: west-values
      type: override
      properties:
        components:
          - name: web
            properties:
              env:
                - {name: REGION, value: west}
            traits:
              - type: scaler
                properties: {replicas: 3}
          - name: chart
            properties:
              values: {message: hello-west}
  workflow:
    steps:
      - name: deploy-east
        type: deploy
        properties:
          policies: [east, east-values]
      - name: deploy-west
        type: deploy
        properties:
          policies: [west, west-values]
`

// mcExpected is what one member must hold in namespace default.
type mcExpected struct {
	region   string
	replicas int32
}

// TestMultiClusterApplication is the acceptance test of multi-cluster
// delivery (issue 7): an Application placed by clusterLabelSelector with
// per-region overrides and a Helm component reaches running with exactly
// the expected objects in each member and none on the hub; narrowing the
// placement to east removes west's objects and leaves east's alone; a
// member whose kube-apiserver stops mid-deploy is reported per cluster
// while the other finishes, and the app converges once it is back;
// deleting the app cleans every cluster.
func TestMultiClusterApplication(t *testing.T) {
	env := framework.Start(t, 3)
	hub := env.Cluster(t, "local")
	east, west := env.Cluster(t, "member-1"), env.Cluster(t, "member-2")
	for name, region := range map[string]string{"member-1": "east", "member-2": "west"} {
		_, err := framework.Oamflow(t, hub.Kubeconfig, "cluster", "join", env.Cluster(t, name).Kubeconfig, "--name", name, "--labels", "region="+region)
		require.NoError(t, err)
	}
	framework.StartController(t, hub, framework.WithChartRoot(filepath.Join(mcModuleRoot(t), "charts", "testdata")))

	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1beta1.AddToScheme(s))
	hubClient, err := client.New(hub.Config, client.Options{Scheme: s})
	require.NoError(t, err)
	ctx := context.Background()

	def := &v1beta1.ComponentDefinition{}
	require.NoError(t, yaml.Unmarshal([]byte(mcClusterInfoDefinition), def))
	require.NoError(t, hubClient.Create(ctx, def))

	app := &v1beta1.Application{}
	require.NoError(t, yaml.Unmarshal([]byte(mcRegionsApp), app))
	key := client.ObjectKeyFromObject(app)
	start := time.Now()
	require.NoError(t, hubClient.Create(ctx, app))

	var eastObjects map[string]mcObjectID
	ok := t.Run("RunningInBothRegions", func(t *testing.T) {
		mcWaitRunning(t, hubClient, key, 5*time.Minute)
		t.Logf("running in both regions %s after create", time.Since(start).Round(time.Millisecond))
		mcCheckMember(t, east, mcExpected{region: "east", replicas: 2}, "v1.34.2")
		mcCheckMember(t, west, mcExpected{region: "west", replicas: 3}, "v1.34.2")
		mcCheckEmpty(t, hub)
		got := mcGetApp(t, hubClient, key)
		for _, member := range []string{"member-1", "member-2"} {
			for _, comp := range []string{"web", "info", "chart"} {
				svc := mcFindService(got.Status.Services, comp, member)
				if assert.NotNil(t, svc, "status.services has %s in %s: %+v", comp, member, got.Status.Services) {
					assert.True(t, svc.Healthy, "%s in %s: %s", comp, member, svc.Message)
				}
			}
		}
		eastObjects = mcObjectIDs(t, east)
	})
	if !ok {
		return
	}

	ok = t.Run("NarrowToEastRemovesWest", func(t *testing.T) {
		mcUpdateApp(t, hubClient, key, func(a *v1beta1.Application) {
			a.Spec.Workflow.Steps = a.Spec.Workflow.Steps[:1]
			a.Spec.Policies = mcDropPolicies(a.Spec.Policies, "west", "west-values")
		})
		mcWaitRunningGeneration(t, hubClient, key, 3*time.Minute)
		framework.WaitFor(t, 2*time.Minute, "member-2 holds nothing of the app", func(ctx context.Context) (bool, error) {
			left := mcAppObjects(ctx, west)
			return len(left) == 0, fmt.Errorf("left: %v", left)
		})
		mcCheckEmpty(t, west)
		mcCheckMember(t, east, mcExpected{region: "east", replicas: 2}, "v1.34.2")
		mcAssertNotRecreated(t, eastObjects, mcObjectIDs(t, east))
		mcCheckEmpty(t, hub)
	})
	if !ok {
		return
	}

	ok = t.Run("WestDownMidDeploy", func(t *testing.T) {
		// West comes back into the placement with a new image everywhere;
		// its kube-apiserver stops as the deploy starts.
		mcUpdateApp(t, hubClient, key, func(a *v1beta1.Application) {
			fresh := &v1beta1.Application{}
			require.NoError(t, yaml.Unmarshal([]byte(mcRegionsApp), fresh))
			a.Spec = fresh.Spec
			a.Spec.Components[0].Properties.Raw = []byte(`{"image":"registry.invalid/web:2","env":[{"name":"REGION","value":"unknown"}]}`)
		})
		apiserver, err := env.Stop(context.Background(), "member-2", localcluster.CompKubeAPIServer)
		require.NoError(t, err)
		t.Logf("stopped %s", apiserver.Name())

		framework.WaitFor(t, 3*time.Minute, "east updated and west reported failing", func(ctx context.Context) (bool, error) {
			a := &v1beta1.Application{}
			if err := hubClient.Get(ctx, key, a); err != nil {
				return false, err
			}
			d := &appsv1.Deployment{}
			if err := east.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "web"}, d); err != nil {
				return false, err
			}
			if d.Spec.Template.Spec.Containers[0].Image != "registry.invalid/web:2" {
				return false, fmt.Errorf("east still runs %s", d.Spec.Template.Spec.Containers[0].Image)
			}
			svc := mcFindService(a.Status.Services, "web", "member-2")
			if svc == nil || svc.Healthy {
				return false, fmt.Errorf("phase %s, services %+v", a.Status.Phase, a.Status.Services)
			}
			return a.Status.Phase != common.ApplicationRunning, fmt.Errorf("phase %s", a.Status.Phase)
		})
		a := mcGetApp(t, hubClient, key)
		t.Logf("while west is down: phase %s, services %+v", a.Status.Phase, a.Status.Services)
		svc := mcFindService(a.Status.Services, "web", "member-2")
		require.NotNil(t, svc)
		assert.Contains(t, svc.Message, "member-2", "the failing entry names the cluster")
		for _, comp := range []string{"web", "info", "chart"} {
			svc := mcFindService(a.Status.Services, comp, "member-1")
			if assert.NotNil(t, svc, "east's %s is in status.services", comp) {
				assert.True(t, svc.Healthy, "east's %s: %s", comp, svc.Message)
			}
		}
		mcAssertNotRecreated(t, eastObjects, mcObjectIDs(t, east))

		require.NoError(t, apiserver.Restart(west, t.Logf))
		mcWaitRunningGeneration(t, hubClient, key, 4*time.Minute)
		mcCheckMember(t, east, mcExpected{region: "east", replicas: 2}, "v1.34.2")
		mcCheckMember(t, west, mcExpected{region: "west", replicas: 3}, "v1.34.2")
		for _, c := range []*framework.Cluster{east, west} {
			d := &appsv1.Deployment{}
			require.NoError(t, c.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "web"}, d))
			assert.Equal(t, "registry.invalid/web:2", d.Spec.Template.Spec.Containers[0].Image, c.Name)
		}
		mcAssertNotRecreated(t, eastObjects, mcObjectIDs(t, east))
		mcCheckEmpty(t, hub)
	})
	if !ok {
		return
	}

	t.Run("DeleteCleansEveryCluster", func(t *testing.T) {
		require.NoError(t, hubClient.Delete(ctx, app))
		framework.WaitFor(t, 3*time.Minute, "the Application is gone", func(ctx context.Context) (bool, error) {
			err := hubClient.Get(ctx, key, &v1beta1.Application{})
			return apierrors.IsNotFound(err), err
		})
		for _, c := range env.Clusters {
			mcCheckEmpty(t, c)
		}
		rts := &v1beta1.ResourceTrackerList{}
		require.NoError(t, hubClient.List(ctx, rts))
		assert.Empty(t, rts.Items, "no ResourceTracker is left")
	})

	t.Run("UnknownClusterIsRefused", func(t *testing.T) {
		lost := &v1beta1.Application{}
		require.NoError(t, yaml.Unmarshal([]byte(mcRegionsApp), lost))
		lost.Name = "lost"
		lost.Spec.Policies[0].Properties.Raw = []byte(`{"clusters":["member-1","member-9"]}`)
		require.NoError(t, hubClient.Create(ctx, lost))
		framework.WaitFor(t, time.Minute, "the Application is refused naming the field", func(ctx context.Context) (bool, error) {
			a := &v1beta1.Application{}
			if err := hubClient.Get(ctx, client.ObjectKeyFromObject(lost), a); err != nil {
				return false, err
			}
			for _, c := range a.Status.Conditions {
				if c.Type == "Parsed" && c.Status == metav1.ConditionFalse {
					return strings.Contains(c.Message, `spec.policies[0].properties.clusters[1]: cluster "member-9" not registered`), fmt.Errorf("Parsed: %s", c.Message)
				}
			}
			return false, fmt.Errorf("phase %q, conditions %+v", a.Status.Phase, a.Status.Conditions)
		})
		for _, c := range env.Clusters {
			mcCheckEmpty(t, c)
		}
		require.NoError(t, hubClient.Delete(ctx, lost))
	})

	// An empty clusterLabelSelector selects every cluster, whatever its
	// labels, the hub included, as in KubeVela (issue 15).
	t.Run("EmptySelectorDeploysToHubAndAllMembers", func(t *testing.T) {
		everywhere := &v1beta1.Application{}
		require.NoError(t, yaml.Unmarshal([]byte(`
apiVersion: core.oam.dev/v1beta1
kind: Application
metadata: {name: everywhere, namespace: default}
spec:
  components:
    - name: cfg
      type: k8s-objects
      properties:
        objects:
          - {apiVersion: v1, kind: ConfigMap, metadata: {name: everywhere-cfg}, data: {a: b}}
  policies:
    - name: all
      type: topology
      properties: {clusterLabelSelector: {}}
`), everywhere))
		key := client.ObjectKeyFromObject(everywhere)
		require.NoError(t, hubClient.Create(ctx, everywhere))
		mcWaitRunning(t, hubClient, key, 3*time.Minute)
		require.Len(t, env.Clusters, 3)
		for _, c := range env.Clusters {
			assert.NoError(t, c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "everywhere-cfg"}, &corev1.ConfigMap{}), "deployed to %s", c.Name)
		}
		require.NoError(t, hubClient.Delete(ctx, everywhere))
		framework.WaitFor(t, 3*time.Minute, "everywhere-cfg is gone from every cluster", func(ctx context.Context) (bool, error) {
			for _, c := range env.Clusters {
				if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "everywhere-cfg"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
					return false, fmt.Errorf("%s: %w", c.Name, err)
				}
			}
			return true, nil
		})
	})
}

// mcModuleRoot is the repository root (e2e/..).
func mcModuleRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	root, err := localcluster.FindModuleRoot(wd)
	require.NoError(t, err)
	return root
}

func mcGetApp(t *testing.T, c client.Client, key client.ObjectKey) *v1beta1.Application {
	t.Helper()
	a := &v1beta1.Application{}
	require.NoError(t, c.Get(context.Background(), key, a))
	return a
}

// mcUpdateApp changes the Application, retrying on conflicts.
func mcUpdateApp(t *testing.T, c client.Client, key client.ObjectKey, change func(*v1beta1.Application)) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		a := &v1beta1.Application{}
		if err := c.Get(context.Background(), key, a); err != nil {
			return err
		}
		change(a)
		return c.Update(context.Background(), a)
	}))
}

func mcDropPolicies(list []common.AppPolicy, names ...string) []common.AppPolicy {
	var out []common.AppPolicy
	for _, p := range list {
		drop := false
		for _, n := range names {
			drop = drop || p.Name == n
		}
		if !drop {
			out = append(out, p)
		}
	}
	return out
}

// mcWaitRunning waits until the Application's phase is running.
func mcWaitRunning(t *testing.T, c client.Client, key client.ObjectKey, timeout time.Duration) {
	t.Helper()
	framework.WaitFor(t, timeout, fmt.Sprintf("Application %s running", key), func(ctx context.Context) (bool, error) {
		a := &v1beta1.Application{}
		if err := c.Get(ctx, key, a); err != nil {
			return false, err
		}
		return a.Status.Phase == common.ApplicationRunning, fmt.Errorf("phase %q, workflow %s", a.Status.Phase, mcWorkflowSummary(a))
	})
}

// mcWaitRunningGeneration waits until the Application's current generation
// was observed and its phase is running.
func mcWaitRunningGeneration(t *testing.T, c client.Client, key client.ObjectKey, timeout time.Duration) {
	t.Helper()
	var last error
	framework.WaitFor(t, timeout, fmt.Sprintf("Application %s running its latest spec", key), func(ctx context.Context) (bool, error) {
		a := &v1beta1.Application{}
		if err := c.Get(ctx, key, a); err != nil {
			return false, fmt.Errorf("%w (before: %w)", err, last)
		}
		ok := a.Status.ObservedGeneration == a.Generation && a.Status.Phase == common.ApplicationRunning
		last = fmt.Errorf("generation %d observed %d, phase %q, workflow %s", a.Generation, a.Status.ObservedGeneration, a.Status.Phase, mcWorkflowSummary(a))
		return ok, last
	})
}

func mcWorkflowSummary(a *v1beta1.Application) string {
	if a.Status.Workflow == nil {
		return "none"
	}
	var steps []string
	for _, s := range a.Status.Workflow.Steps {
		steps = append(steps, fmt.Sprintf("%s=%s(%s)", s.Name, s.Phase, s.Message))
	}
	return fmt.Sprintf("%s %s [%s]", a.Status.Workflow.AppRevision, a.Status.Workflow.Message, strings.Join(steps, "; "))
}

func mcFindService(list []common.ApplicationComponentStatus, name, cluster string) *common.ApplicationComponentStatus {
	for i := range list {
		if list[i].Name == name && list[i].Cluster == cluster {
			return &list[i]
		}
	}
	return nil
}

// mcCheckMember asserts that c holds exactly the app's objects for region in
// namespace default: Deployments web and chart-web, Service chart-web,
// ConfigMaps info and chart-config, one Helm release.
func mcCheckMember(t *testing.T, c *framework.Cluster, want mcExpected, version string) {
	t.Helper()
	ctx := context.Background()
	assert.Equal(t, []string{"Deployment/chart-web", "Deployment/web", "Secret/sh.helm.release.v1.chart", "Service/chart-web", "ConfigMap/chart-config", "ConfigMap/info"},
		mcSortedKinds(mcAppObjects(ctx, c)), "%s holds exactly the app's objects", c)

	web := &appsv1.Deployment{}
	require.NoError(t, c.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "web"}, web), c)
	assert.Equal(t, want.replicas, *web.Spec.Replicas, "%s: web replicas", c)
	assert.Contains(t, web.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "REGION", Value: want.region}, c)
	assert.Equal(t, c.Name, web.Labels[v1beta1.LabelAppCluster], "%s: cluster label", c)

	info := &corev1.ConfigMap{}
	require.NoError(t, c.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "info"}, info), c)
	assert.Equal(t, c.Name, info.Data["cluster"], "%s: context.cluster", c)
	assert.Equal(t, version, info.Data["gitVersion"], "%s: context.clusterVersion is the member's", c)
	assert.Equal(t, "34", info.Data["minor"], c)

	cfg := &corev1.ConfigMap{}
	require.NoError(t, c.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "chart-config"}, cfg), c)
	assert.Equal(t, "hello-"+want.region, cfg.Data["message"], "%s: chart values overridden per region", c)
}

// mcCheckEmpty asserts that c holds nothing of the app in namespace default.
func mcCheckEmpty(t *testing.T, c *framework.Cluster) {
	t.Helper()
	assert.Empty(t, mcAppObjects(context.Background(), c), "%s holds nothing of the app", c)
}

// mcAppObjects lists the Deployments, Services (but kubernetes), ConfigMaps
// the app renders and Helm release Secrets of namespace default in c, as
// "Kind/name" (Helm Secrets without their .vN suffix).
func mcAppObjects(ctx context.Context, c *framework.Cluster) []string {
	var out []string
	ds, err := c.Kube.AppsV1().Deployments("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	for _, d := range ds.Items {
		out = append(out, "Deployment/"+d.Name)
	}
	svcs, err := c.Kube.CoreV1().Services("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	for _, s := range svcs.Items {
		if s.Name != "kubernetes" {
			out = append(out, "Service/"+s.Name)
		}
	}
	cms, err := c.Kube.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	for _, cm := range cms.Items {
		if cm.Name == "info" || cm.Name == "chart-config" {
			out = append(out, "ConfigMap/"+cm.Name)
		}
	}
	secrets, err := c.Kube.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	seen := map[string]bool{}
	for _, s := range secrets.Items {
		name := s.Name
		if i := strings.LastIndex(name, ".v"); i > 0 {
			name = name[:i]
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, "Secret/"+name)
		}
	}
	return out
}

func mcSortedKinds(list []string) []string {
	order := map[string]int{"Deployment": 0, "Secret": 1, "Service": 2, "ConfigMap": 3}
	sort.Slice(list, func(i, j int) bool {
		ki, _, _ := strings.Cut(list[i], "/")
		kj, _, _ := strings.Cut(list[j], "/")
		if order[ki] != order[kj] {
			return order[ki] < order[kj]
		}
		return list[i] < list[j]
	})
	return list
}

// mcObjectID identifies one live object and its spec version.
type mcObjectID struct {
	UID        types.UID
	Generation int64
}

// mcObjectIDs returns the UID and generation of the app's Deployments,
// Service and ConfigMaps in c, by "Kind/name".
func mcObjectIDs(t *testing.T, c *framework.Cluster) map[string]mcObjectID {
	t.Helper()
	ctx := context.Background()
	out := map[string]mcObjectID{}
	for _, name := range []string{"web", "chart-web"} {
		d := &appsv1.Deployment{}
		require.NoError(t, c.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: name}, d), c)
		out["Deployment/"+name] = mcObjectID{UID: d.UID, Generation: d.Generation}
	}
	svc := &corev1.Service{}
	require.NoError(t, c.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "chart-web"}, svc), c)
	out["Service/chart-web"] = mcObjectID{UID: svc.UID}
	for _, name := range []string{"info", "chart-config"} {
		cm := &corev1.ConfigMap{}
		require.NoError(t, c.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: name}, cm), c)
		out["ConfigMap/"+name] = mcObjectID{UID: cm.UID}
	}
	return out
}

// mcAssertNotRecreated checks that every object of before still exists with
// the same UID (never deleted and created again).
func mcAssertNotRecreated(t *testing.T, before, now map[string]mcObjectID) {
	t.Helper()
	for k, b := range before {
		assert.Equal(t, b.UID, now[k].UID, "%s kept its UID (never deleted)", k)
	}
}
