//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	helmregistry "helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/repo"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/e2e/framework"
	"github.com/oamflow/oamflow/pkg/helm"
	"github.com/oamflow/oamflow/pkg/manager"
)

// TestHelmApplication is the acceptance test of Helm components through an
// Application on a local cluster with the controller running in-process:
// charts from an httptest Helm repository and an in-process OCI registry
// (both packaged in the test from charts/testdata), upgrades only when
// values change, a typo'd chart, a first install that fails and is fixed,
// a failed first release that recovers, removal of a component, and a real
// third-party chart from the Go module cache.
func TestHelmApplication(t *testing.T) {
	env := framework.Start(t, 1)
	hub := env.Clusters[0]
	framework.StartController(t, hub, framework.WithChartRoot(hmModuleCharts(t, "github.com/kubevela/workflow@v0.7.2")))
	c := hmAppClient(t, hub)
	helms := helm.NewFactory(helm.SingleCluster(hub.Config))

	repoSrv := hmNewChartRepo(t, "simple", "required")
	oci := hmNewOCIRegistry(t)
	ociSrc := oci.push(t, "simple")

	const ns = "helm-e2e"
	ctx := context.Background()
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))

	repoChart := func(name string) map[string]any {
		return map[string]any{"source": name, "repoURL": repoSrv.URL, "version": "0.1.0"}
	}
	web := helmComponent("web", map[string]any{"chart": repoChart("simple"), "values": map[string]any{"replicaCount": 1}})
	// A version constraint makes the controller list the registry's tags.
	cache := helmComponent("cache", map[string]any{"chart": map[string]any{"source": ociSrc, "version": "~0.1"}, "values": map[string]any{"message": "from oci"}})

	// Independent Applications run meanwhile; their subtests come later.
	typo := hmApplication(ns, "typo", helmComponent("typo", map[string]any{"chart": repoChart("simpel")}))
	required := hmApplication(ns, "required", helmComponent("db", map[string]any{"chart": repoChart("required")}))
	badPort := hmApplication(ns, "badport", helmComponent("edge", map[string]any{"chart": repoChart("simple"), "values": map[string]any{"service": map[string]any{"port": 0}}}))
	engine := hmApplication(ns, "engine", helmComponent("workflow-engine", map[string]any{"chart": map[string]any{"source": "vela-workflow"}, "values": map[string]any{"replicaCount": 1}}))
	for _, app := range []*v1beta1.Application{typo, required, badPort, engine} {
		require.NoError(t, c.Create(ctx, app))
	}
	stepApp := &v1beta1.Application{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(fmt.Sprintf(`
metadata: {name: tools, namespace: %s}
spec:
  components:
    - name: settings
      type: k8s-objects
      properties:
        objects:
          - {apiVersion: v1, kind: ConfigMap, metadata: {name: settings}, data: {a: b}}
  workflow:
    steps:
      - name: settings
        type: apply-component
        properties: {component: settings}
      - name: install-tool
        type: helm-install
        properties:
          chart: {source: simple, repoURL: %q, version: "0.1.0"}
          release: {name: tool}
          values: {message: from a step}
`, ns, repoSrv.URL)), stepApp))
	require.NoError(t, c.Create(ctx, stepApp))
	shop := hmApplication(ns, "shop", web, cache)
	require.NoError(t, c.Create(ctx, shop))

	t.Run("RepoAndOCIRunning", func(t *testing.T) {
		app := hmWaitPhase(t, c, ns, "shop", common.ApplicationRunning, 3*time.Minute)
		for _, name := range []string{"web", "cache"} {
			svc := hmService(t, app, name)
			assert.True(t, svc.Healthy, svc.Message)
			assert.Equal(t, fmt.Sprintf("release %s revision 1, chart simple-0.1.0: 3/3 resources ready", name), svc.Message)
			assert.Equal(t, []int{1}, hmRevisions(t, helms, ns, name))
		}
		var cm corev1.ConfigMap
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cache-config"}, &cm))
		assert.Equal(t, "from oci", cm.Data["message"], "the OCI chart was installed with the component's values")
	})

	t.Run("StatusTree", func(t *testing.T) {
		out, err := framework.Oamflow(t, hub.Kubeconfig, "status", "shop", "-n", ns, "--tree")
		require.NoError(t, err)
		assert.Contains(t, out, "release web revision 1, chart simple-0.1.0: 3/3 resources ready")
		assert.Regexp(t, `(?m)^[├└]── web\s*$`, out, "the tree groups by component")
		assert.Contains(t, out, "HelmRelease", "the tree groups by kind")
	})

	t.Run("ChangedValuesUpgrade", func(t *testing.T) {
		hmUpdateApp(t, c, ns, "shop", func(app *v1beta1.Application) {
			app.Spec.Components[0] = helmComponent("web", map[string]any{"chart": repoChart("simple"), "values": map[string]any{"replicaCount": 2}})
		})
		framework.WaitFor(t, 2*time.Minute, "release web at revision 2", func(context.Context) (bool, error) {
			return hmEqualInts(hmRevisions(t, helms, ns, "web"), []int{1, 2}), nil
		})
		app := hmWaitRunningAt(t, c, ns, "shop", 2*time.Minute)
		assert.Equal(t, "release web revision 2, chart simple-0.1.0: 3/3 resources ready", hmService(t, app, "web").Message)
		assert.Equal(t, []int{1}, hmRevisions(t, helms, ns, "cache"), "cache's values did not change")
	})

	t.Run("SameValuesNoNewRevision", func(t *testing.T) {
		before := hmLatestRunStart(t, c, ns, "shop")
		// Start times are kept in whole seconds: a restart within the
		// second the last run started in would not show as later.
		time.Sleep(time.Until(before.Add(time.Second)))
		hmUpdateApp(t, c, ns, "shop", func(app *v1beta1.Application) {
			if app.Annotations == nil {
				app.Annotations = map[string]string{}
			}
			app.Annotations[v1beta1.AnnoRestartWorkflow] = "true"
		})
		framework.WaitFor(t, 2*time.Minute, "the workflow ran again", func(ctx context.Context) (bool, error) {
			var app v1beta1.Application
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, &app); err != nil {
				return false, err
			}
			wf := app.Status.Workflow
			return wf != nil && wf.Finished && wf.StartTime.After(before.Time) && app.Status.Phase == common.ApplicationRunning, nil
		})
		assert.Equal(t, []int{1, 2}, hmRevisions(t, helms, ns, "web"), "same values: no new Helm revision")
		assert.Equal(t, []int{1}, hmRevisions(t, helms, ns, "cache"))
	})

	t.Run("TypoInChartName", func(t *testing.T) {
		var app v1beta1.Application
		framework.WaitFor(t, 2*time.Minute, "typo: unhealthy with chart not found", func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "typo"}, &app); err != nil {
				return false, err
			}
			return app.Status.Phase != "" && app.Status.Phase != common.ApplicationRunning &&
				strings.Contains(hmAppMessages(&app), "chart not found"), nil
		})
		t.Logf("typo: phase %s: %s", app.Status.Phase, hmAppMessages(&app))
		assert.NotEqual(t, common.ApplicationRunning, app.Status.Phase)
		assert.Contains(t, hmAppMessages(&app), `chart "simpel"`)
		svc := hmService(t, &app, "typo")
		assert.False(t, svc.Healthy, "a chart that does not exist is never healthy")
		assert.Contains(t, svc.Message, "chart not found", "the component says why")
		assert.Empty(t, hmRevisions(t, helms, ns, "typo"))
	})

	t.Run("FirstInstallFailsThenFixed", func(t *testing.T) {
		var app v1beta1.Application
		framework.WaitFor(t, 3*time.Minute, "required: failed saying which value is missing", func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "required"}, &app); err != nil {
				return false, err
			}
			return strings.Contains(hmAppMessages(&app), "db.host is required"), nil
		})
		assert.NotEqual(t, common.ApplicationRunning, app.Status.Phase)
		hmUpdateApp(t, c, ns, "required", func(app *v1beta1.Application) {
			app.Spec.Components[0] = helmComponent("db", map[string]any{"chart": repoChart("required"), "values": map[string]any{"db": map[string]any{"host": "db.example"}}})
		})
		hmWaitRunningAt(t, c, ns, "required", 3*time.Minute)
		var cm corev1.ConfigMap
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-db"}, &cm))
		assert.Equal(t, "db.example", cm.Data["host"])
	})

	t.Run("FailedFirstReleaseRecovers", func(t *testing.T) {
		framework.WaitFor(t, 3*time.Minute, "edge: revision 1 failed", func(context.Context) (bool, error) {
			h := hmHistory(t, helms, ns, "edge")
			return len(h) == 1 && h[0].Info.Status == release.StatusFailed, nil
		})
		var app v1beta1.Application
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "badport"}, &app))
		assert.NotEqual(t, common.ApplicationRunning, app.Status.Phase)
		hmUpdateApp(t, c, ns, "badport", func(app *v1beta1.Application) {
			app.Spec.Components[0] = helmComponent("edge", map[string]any{"chart": repoChart("simple"), "values": map[string]any{"service": map[string]any{"port": 8080}}})
		})
		got := hmWaitRunningAt(t, c, ns, "badport", 3*time.Minute)
		h := hmHistory(t, helms, ns, "edge")
		require.Len(t, h, 2)
		assert.Equal(t, release.StatusSuperseded, h[0].Info.Status, "Helm supersedes the failed revision")
		assert.Equal(t, release.StatusDeployed, h[1].Info.Status, "the upgrade over the failed first release succeeded")
		assert.Equal(t, "release edge revision 2, chart simple-0.1.0: 3/3 resources ready", hmService(t, got, "edge").Message)
		framework.WaitFor(t, 30*time.Second, "Events about the failure and the recovery", func(ctx context.Context) (bool, error) {
			ev := hmEvents(t, c, ns, "badport")
			return ev["Warning/HelmReleaseFailed"] != "" && ev["Normal/HelmReleaseRecovered"] != "", nil
		})
		ev := hmEvents(t, c, ns, "badport")
		assert.Contains(t, ev["Normal/HelmReleaseRecovered"], "revision 1")
	})

	t.Run("RemoveComponentUninstalls", func(t *testing.T) {
		hmUpdateApp(t, c, ns, "shop", func(app *v1beta1.Application) { app.Spec.Components = app.Spec.Components[:1] })
		framework.WaitFor(t, 2*time.Minute, "release cache and its resources gone", func(ctx context.Context) (bool, error) {
			if len(hmHistory(t, helms, ns, "cache")) > 0 {
				return false, fmt.Errorf("release cache still has revisions")
			}
			for _, obj := range []client.Object{&corev1.ConfigMap{}, &corev1.Service{}} {
				name := "cache-config"
				if _, ok := obj.(*corev1.Service); ok {
					name = "cache-web"
				}
				err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
				if !apierrors.IsNotFound(err) {
					return false, fmt.Errorf("%s still there (%w)", name, err)
				}
			}
			return true, nil
		})
		app := hmWaitRunningAt(t, c, ns, "shop", time.Minute)
		assert.Len(t, app.Status.Services, 1)
		assert.Equal(t, []int{1, 2}, hmRevisions(t, helms, ns, "web"), "web untouched")
	})

	t.Run("ThirdPartyChart", func(t *testing.T) {
		app := hmWaitPhase(t, c, ns, "engine", common.ApplicationRunning, 5*time.Minute)
		svc := hmService(t, app, "workflow-engine")
		assert.True(t, svc.Healthy, svc.Message)
		assert.Contains(t, svc.Message, "release workflow-engine revision 1, chart vela-workflow-")
	})

	t.Run("HelmInstallStep", func(t *testing.T) {
		app := hmWaitPhase(t, c, ns, "tools", common.ApplicationRunning, 2*time.Minute)
		require.NotNil(t, app.Status.Workflow)
		require.Len(t, app.Status.Workflow.Steps, 2)
		assert.Equal(t, "succeeded", string(app.Status.Workflow.Steps[1].Phase))
		assert.Equal(t, []int{1}, hmRevisions(t, helms, ns, "tool"))
		var cm corev1.ConfigMap
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tool-config"}, &cm))
		assert.Equal(t, "from a step", cm.Data["message"])

		require.NoError(t, c.Delete(ctx, app))
		framework.WaitFor(t, 2*time.Minute, "the step's release uninstalled with its app", func(ctx context.Context) (bool, error) {
			return len(hmHistory(t, helms, ns, "tool")) == 0, nil
		})
	})

	t.Run("DeleteAppUninstalls", func(t *testing.T) {
		require.NoError(t, c.Delete(ctx, shop))
		framework.WaitFor(t, 2*time.Minute, "release web uninstalled with its app", func(ctx context.Context) (bool, error) {
			return len(hmHistory(t, helms, ns, "web")) == 0, nil
		})
	})
}

// hmModuleCharts returns the charts/ folder of a Go module version from the
// module cache (downloaded through the module proxy if needed).
func hmModuleCharts(t *testing.T, mod string) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", mod).Output()
	require.NoError(t, err, "go mod download %s", mod)
	var info struct{ Dir string }
	require.NoError(t, json.Unmarshal(out, &info))
	dir := filepath.Join(info.Dir, "charts")
	_, err = os.Stat(dir)
	require.NoError(t, err)
	return dir
}

// hmModuleRoot walks up from the working directory to oamflow's go.mod.
func hmModuleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "go.mod not found above the working directory")
		dir = parent
	}
}

func hmAppClient(t *testing.T, hub *framework.Cluster) client.Client {
	t.Helper()
	scheme, err := manager.Scheme()
	require.NoError(t, err)
	c, err := client.New(hub.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return c
}

func helmComponent(name string, props map[string]any) common.ApplicationComponent {
	raw, err := json.Marshal(props)
	if err != nil {
		panic(err)
	}
	return common.ApplicationComponent{Name: name, Type: "helm", Properties: &runtime.RawExtension{Raw: raw}}
}

func hmApplication(ns, name string, comps ...common.ApplicationComponent) *v1beta1.Application {
	return &v1beta1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1beta1.ApplicationSpec{Components: comps},
	}
}

func hmUpdateApp(t *testing.T, c client.Client, ns, name string, mutate func(*v1beta1.Application)) {
	t.Helper()
	framework.WaitFor(t, 30*time.Second, "update "+name, func(ctx context.Context) (bool, error) {
		var app v1beta1.Application
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &app); err != nil {
			return false, err
		}
		mutate(&app)
		if err := c.Update(ctx, &app); err != nil {
			return false, err
		}
		return true, nil
	})
}

// hmWaitPhase waits until the Application is in phase and returns it.
func hmWaitPhase(t *testing.T, c client.Client, ns, name string, phase common.ApplicationPhase, timeout time.Duration) *v1beta1.Application {
	t.Helper()
	var app v1beta1.Application
	framework.WaitFor(t, timeout, fmt.Sprintf("%s/%s %s", ns, name, phase), func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &app); err != nil {
			return false, err
		}
		if app.Status.Phase != phase {
			return false, fmt.Errorf("phase %q: %s", app.Status.Phase, hmAppMessages(&app))
		}
		return true, nil
	})
	return &app
}

// hmWaitRunningAt waits until the Application runs its current generation.
func hmWaitRunningAt(t *testing.T, c client.Client, ns, name string, timeout time.Duration) *v1beta1.Application {
	t.Helper()
	var app v1beta1.Application
	framework.WaitFor(t, timeout, fmt.Sprintf("%s/%s running its latest spec", ns, name), func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &app); err != nil {
			return false, err
		}
		wf := app.Status.Workflow
		if app.Status.ObservedGeneration != app.Generation || app.Status.Phase != common.ApplicationRunning ||
			wf == nil || !wf.Finished || app.Status.LatestRevision == nil || wf.AppRevision != app.Status.LatestRevision.Name {
			return false, fmt.Errorf("generation %d observed %d phase %q: %s", app.Generation, app.Status.ObservedGeneration, app.Status.Phase, hmAppMessages(&app))
		}
		for _, s := range app.Status.Services {
			if !s.Healthy {
				return false, fmt.Errorf("%s: %s", s.Name, s.Message)
			}
		}
		return true, nil
	})
	return &app
}

func hmLatestRunStart(t *testing.T, c client.Client, ns, name string) metav1.Time {
	t.Helper()
	var app v1beta1.Application
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &app))
	require.NotNil(t, app.Status.Workflow)
	return app.Status.Workflow.StartTime
}

// hmAppMessages joins every message of the status: conditions, workflow,
// steps and services.
func hmAppMessages(app *v1beta1.Application) string {
	var parts []string
	for _, cond := range app.Status.Conditions {
		parts = append(parts, cond.Message)
	}
	if wf := app.Status.Workflow; wf != nil {
		parts = append(parts, wf.Message)
		for _, s := range wf.Steps {
			parts = append(parts, s.Message)
		}
	}
	for _, s := range app.Status.Services {
		parts = append(parts, s.Name+": "+s.Message)
	}
	return strings.Join(parts, " | ")
}

func hmService(t *testing.T, app *v1beta1.Application, name string) common.ApplicationComponentStatus {
	t.Helper()
	for _, s := range app.Status.Services {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no service %q in %s/%s status: %+v", name, app.Namespace, app.Name, app.Status.Services)
	return common.ApplicationComponentStatus{}
}

// hmHistory returns the stored revisions of a release, oldest first.
func hmHistory(t *testing.T, f helm.Factory, ns, name string) []*release.Release {
	t.Helper()
	cfg, err := f.For(context.Background(), "", ns)
	require.NoError(t, err)
	h, err := cfg.Releases.History(name)
	if err != nil {
		return nil
	}
	sort.Slice(h, func(i, j int) bool { return h[i].Version < h[j].Version })
	return h
}

func hmRevisions(t *testing.T, f helm.Factory, ns, name string) []int {
	t.Helper()
	var out []int
	for _, r := range hmHistory(t, f, ns, name) {
		out = append(out, r.Version)
	}
	return out
}

func hmEqualInts(a, b []int) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// hmEvents returns the Events of an Application by "type/reason" (messages
// joined).
func hmEvents(t *testing.T, c client.Client, ns, app string) map[string]string {
	t.Helper()
	var list corev1.EventList
	require.NoError(t, c.List(context.Background(), &list, client.InNamespace(ns)))
	out := map[string]string{}
	for _, e := range list.Items {
		if e.InvolvedObject.Kind != "Application" || e.InvolvedObject.Name != app {
			continue
		}
		k := e.Type + "/" + e.Reason
		out[k] = strings.TrimPrefix(out[k]+" | "+e.Message, " | ")
	}
	return out
}

// hmChartRepo is a Helm repository served by httptest with charts packaged
// from charts/testdata.
type hmChartRepo struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
	index []byte
}

// hmPackageTestChart packages charts/testdata/<name> as a .tgz.
func hmPackageTestChart(t *testing.T, name string) []byte {
	t.Helper()
	ch, err := loader.LoadDir(filepath.Join(hmModuleRoot(t), "charts", "testdata", name))
	require.NoError(t, err)
	p, err := chartutil.Save(ch, t.TempDir())
	require.NoError(t, err)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	return data
}

func hmNewChartRepo(t *testing.T, charts ...string) *hmChartRepo {
	t.Helper()
	r := &hmChartRepo{files: map[string][]byte{}}
	idx := repo.NewIndexFile()
	for _, name := range charts {
		data := hmPackageTestChart(t, name)
		ch, err := loader.LoadArchive(strings.NewReader(string(data)))
		require.NoError(t, err)
		file := fmt.Sprintf("%s-%s.tgz", ch.Name(), ch.Metadata.Version)
		r.files[file] = data
		require.NoError(t, idx.MustAdd(ch.Metadata, "charts/"+file, "", ""))
	}
	idx.SortEntries()
	var err error
	r.index, err = yaml.Marshal(idx)
	require.NoError(t, err)
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		defer r.mu.Unlock()
		switch {
		case req.URL.Path == "/index.yaml":
			_, _ = w.Write(r.index)
		case strings.HasPrefix(req.URL.Path, "/charts/") && r.files[strings.TrimPrefix(req.URL.Path, "/charts/")] != nil:
			_, _ = w.Write(r.files[strings.TrimPrefix(req.URL.Path, "/charts/")])
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(r.Close)
	return r
}

// hmOciRegistry is an in-process OCI registry (go-containerregistry's
// pkg/registry) on plain HTTP at 127.0.0.1.
type hmOciRegistry struct {
	*httptest.Server
	host string
}

func hmNewOCIRegistry(t *testing.T) *hmOciRegistry {
	t.Helper()
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(s.Close)
	return &hmOciRegistry{Server: s, host: strings.TrimPrefix(s.URL, "http://")}
}

// push packages charts/testdata/<name>, pushes it with Helm's registry
// client as <host>/charts/<name>:<version> and returns its oci:// source.
func (o *hmOciRegistry) push(t *testing.T, name string) string {
	t.Helper()
	data := hmPackageTestChart(t, name)
	ch, err := loader.LoadArchive(strings.NewReader(string(data)))
	require.NoError(t, err)
	rc, err := helmregistry.NewClient(helmregistry.ClientOptPlainHTTP(), helmregistry.ClientOptWriter(io.Discard),
		helmregistry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")))
	require.NoError(t, err)
	_, err = rc.Push(data, fmt.Sprintf("%s/charts/%s:%s", o.host, ch.Name(), ch.Metadata.Version))
	require.NoError(t, err)
	return "oci://" + o.host + "/charts/" + ch.Name()
}
