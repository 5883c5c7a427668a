//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/e2e/framework"
)

// examplesDir is the examples folder, relative to this package.
const examplesDir = "../examples"

// exampleChecks runs each folder of examples/ the way its README says and
// asserts what the README promises. Every folder must have an entry
// (TestExampleFoldersCovered).
var exampleChecks = map[string]func(t *testing.T, x *examplesEnv){
	"basic-webservice":      checkBasicWebservice,
	"traits-on-lists":       checkTraitsOnLists,
	"workflow":              checkWorkflow,
	"helm-repo":             checkHelmRepo,
	"multicluster-override": checkMulticlusterOverride,
	"custom-definition":     checkCustomDefinition,
	"demo":                  checkDemo,
}

// examplesEnv is what the example checks share: three local clusters set
// up as hack/demo.sh does (the controller on the hub with the vela-workflow
// chart root, member-1 labelled region=east and member-2 region=west) and a
// Helm repository serving charts/testdata.
type examplesEnv struct {
	env *framework.Env
	hub *framework.Cluster
	// oam reads Applications on the hub.
	oam client.Client
	// repoURL is the Helm repository serving charts/testdata/*.
	repoURL string
}

// TestExamples runs every example folder on one set of three clusters with
// one in-process controller, sub-test per folder, in name order.
func TestExamples(t *testing.T) {
	chartRoot := exVelaWorkflowChartRoot(t)
	env := framework.Start(t, 3)
	hub := env.Cluster(t, "local")
	framework.StartController(t, hub, framework.WithChartRoot(chartRoot))
	for name, region := range map[string]string{"member-1": "east", "member-2": "west"} {
		_, err := framework.Oamflow(t, hub.Kubeconfig, "cluster", "join", env.Cluster(t, name).Kubeconfig, "--name", name, "--labels", "region="+region)
		require.NoError(t, err)
	}
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1beta1.AddToScheme(s))
	oam, err := client.New(hub.Config, client.Options{Scheme: s})
	require.NoError(t, err)
	x := &examplesEnv{env: env, hub: hub, oam: oam, repoURL: exServeChartRepo(t, "../charts/testdata/simple")}

	names := make([]string, 0, len(exampleChecks))
	for name := range exampleChecks {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			exampleChecks[name](t, x)
			t.Logf("example %s took %s", name, time.Since(start).Round(100*time.Millisecond))
		})
	}
}

// TestExampleFoldersCovered fails when a folder of examples/ has no
// README.md or app.yaml, its README does not say how to apply it, or
// TestExamples does not run it (and when a check names a folder that is
// gone), so that a new example cannot be forgotten.
func TestExampleFoldersCovered(t *testing.T) {
	entries, err := os.ReadDir(examplesDir)
	require.NoError(t, err)
	folders := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		folders[name] = true
		t.Run(name, func(t *testing.T) {
			readme, err := os.ReadFile(filepath.Join(examplesDir, name, "README.md"))
			require.NoError(t, err, "every example needs a README.md saying what it shows, how to run it and what to expect")
			_, err = os.Stat(filepath.Join(examplesDir, name, "app.yaml"))
			require.NoError(t, err, "every example needs an app.yaml")
			assert.Contains(t, string(readme), "examples/"+name+"/app.yaml", "the README says how to apply the example")
			assert.Contains(t, exampleChecks, name, "add a check for examples/%s to exampleChecks in e2e/examples_test.go", name)
		})
	}
	for name := range exampleChecks {
		assert.True(t, folders[name], "exampleChecks has %q but examples/%s does not exist", name, name)
	}
}

// --- the examples ---

func checkBasicWebservice(t *testing.T, x *examplesEnv) {
	x.up(t, "basic-webservice")
	x.requireRunning(t, "basic-webservice")

	d := &appsv1.Deployment{}
	x.get(t, x.hub, "hello", d)
	require.NotNil(t, d.Spec.Replicas)
	assert.Equal(t, int32(3), *d.Spec.Replicas, "the scaler trait sets the replicas")
	assert.Equal(t, int32(3), d.Status.AvailableReplicas)
	svc := &corev1.Service{}
	x.get(t, x.hub, "hello", svc)
	require.Len(t, svc.Spec.Ports, 1)
	assert.Equal(t, int32(8080), svc.Spec.Ports[0].Port, "the expose trait makes the Service")
	assert.Equal(t, 80, svc.Spec.Ports[0].TargetPort.IntValue())
	assert.Equal(t, map[string]string{"app.oam.dev/component": "hello"}, svc.Spec.Selector)

	out, err := framework.Oamflow(t, x.hub.Kubeconfig, "status", "basic-webservice")
	require.NoError(t, err)
	assert.Contains(t, out, "running")
	assert.Regexp(t, `hello\s+local\s+default\s+yes\s+Ready:3/3`, out, "the service line")
	out, err = framework.Oamflow(t, x.hub.Kubeconfig, "status", "basic-webservice", "--tree")
	require.NoError(t, err)
	assert.Contains(t, out, "(trait expose)")
	assert.NotContains(t, out, "MISSING")

	_, err = framework.Oamflow(t, x.hub.Kubeconfig, "delete", "basic-webservice", "--wait")
	require.NoError(t, err)
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
		err := x.hub.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "hello"}, obj)
		assert.True(t, apierrors.IsNotFound(err), "%T hello is deleted with the Application: %v", obj, err)
	}
}

func checkTraitsOnLists(t *testing.T, x *examplesEnv) {
	x.defApply(t, "traits-on-lists")
	x.up(t, "traits-on-lists")
	x.requireRunning(t, "traits-on-lists")

	d := &appsv1.Deployment{}
	x.get(t, x.hub, "api", d)
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	c := d.Spec.Template.Spec.Containers[0]
	env := map[string]corev1.EnvVar{}
	var names []string
	for _, e := range c.Env {
		env[e.Name] = e
		names = append(names, e.Name)
	}
	assert.Equal(t, []string{"LOG_LEVEL", "PORT", "FEATURE_FLAGS", "DB_PASSWORD"}, names, "component env, then the env trait's, then storage's")
	assert.Equal(t, "debug", env["LOG_LEVEL"].Value, "the env trait overrides the component's value")
	assert.Equal(t, "80", env["PORT"].Value, "the component's other variables are kept")
	assert.Equal(t, "search,export", env["FEATURE_FLAGS"].Value)
	if ref := env["DB_PASSWORD"].ValueFrom; assert.NotNil(t, ref) && assert.NotNil(t, ref.SecretKeyRef) {
		assert.Equal(t, "api-credentials", ref.SecretKeyRef.Name)
		assert.Equal(t, "password", ref.SecretKeyRef.Key)
	}
	require.Len(t, c.EnvFrom, 2, "each envFrom trait adds its entry")
	if assert.NotNil(t, c.EnvFrom[0].ConfigMapRef) {
		assert.Equal(t, "api-settings", c.EnvFrom[0].ConfigMapRef.Name)
		assert.Equal(t, "SETTINGS_", c.EnvFrom[0].Prefix)
	}
	if assert.NotNil(t, c.EnvFrom[1].SecretRef) {
		assert.Equal(t, "api-credentials", c.EnvFrom[1].SecretRef.Name)
	}
	require.Len(t, c.VolumeMounts, 1)
	assert.Equal(t, "/etc/api", c.VolumeMounts[0].MountPath)
	for _, labels := range []map[string]string{d.Labels, d.Spec.Template.Labels} {
		assert.Equal(t, "backend", labels["tier"])
		assert.Equal(t, "payments", labels["team"])
	}
	assert.Equal(t, "api", d.Spec.Template.Labels["app.oam.dev/component"], "the labels trait keeps the component's pod labels")

	secret := &corev1.Secret{}
	x.get(t, x.hub, "api-credentials", secret)
	assert.Equal(t, "s3cr3t", string(secret.Data["password"]))
	cm := &corev1.ConfigMap{}
	x.get(t, x.hub, "api-settings", cm)
	assert.Equal(t, map[string]string{"timeout": "30s", "retries": "3"}, cm.Data)
}

func checkWorkflow(t *testing.T, x *examplesEnv) {
	// As the README says: `up --wait` follows the workflow and returns once
	// someone else resumes it.
	// The approve step's message says how to approve (app.yaml).
	const approveMsg = "approve the frontend with: oamflow workflow resume workflow"
	type upResult struct {
		out string
		err error
	}
	upDone := make(chan upResult, 1)
	go func() {
		out, err := framework.Oamflow(t, x.hub.Kubeconfig, "up", "-f", x.appFile(t, "workflow"), "--wait", "--timeout", "5m")
		upDone <- upResult{out, err}
	}()

	framework.WaitFor(t, 2*time.Minute, "workflow waits at the approve step", func(ctx context.Context) (bool, error) {
		app, err := x.app(ctx, "workflow")
		if err != nil {
			return false, err
		}
		return app.Status.Phase == common.ApplicationWorkflowSuspending && exStepPhase(app, "approve") == "suspending", nil
	})
	app, err := x.app(context.Background(), "workflow")
	require.NoError(t, err)
	assert.Equal(t, "succeeded", exStepPhase(app, "deploy-backend"))
	assert.Equal(t, "succeeded", exStepPhase(app, "warm-up"), "the timed suspend resumed by itself")
	if approve := exStep(app, "approve"); assert.NotNil(t, approve) {
		assert.Equal(t, approveMsg, approve.Message, "a suspended step shows its message")
	}
	if warm := exStep(app, "warm-up"); assert.NotNil(t, warm) {
		assert.GreaterOrEqual(t, warm.LastExecuteTime.Sub(warm.FirstExecuteTime.Time), 9*time.Second, "warm-up waited its 10s")
	}
	assert.True(t, apierrors.IsNotFound(x.hub.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "frontend"}, &appsv1.Deployment{})),
		"the frontend is not deployed before the approval")
	select {
	case res := <-upDone:
		t.Fatalf("up --wait returned while the workflow was suspended: %v\n%s", res.err, res.out)
	default:
	}

	// up --wait reads the Application every 500 ms: give it time to show the
	// suspended step before approving (a user reads it before resuming).
	time.Sleep(2 * time.Second)
	_, err = framework.Oamflow(t, x.hub.Kubeconfig, "workflow", "resume", "workflow")
	require.NoError(t, err)
	select {
	case res := <-upDone:
		require.NoError(t, res.err, "up --wait ends with the workflow running")
		assert.Contains(t, res.out, "step warm-up suspended: letting the backend warm up for 10s")
		// Polling may see the step first running (with its message) and
		// then suspended; either line carries the message.
		assert.Regexp(t, `step approve (suspended|\(suspend\) started): `+regexp.QuoteMeta(approveMsg), res.out, "up --wait shows how to approve")
	case <-time.After(3 * time.Minute):
		t.Fatal("up --wait did not return within 3 minutes of the resume")
	}
	x.requireRunning(t, "workflow")

	svc := &corev1.Service{}
	x.get(t, x.hub, "backend", svc)
	require.NotEmpty(t, svc.Spec.ClusterIP)
	d := &appsv1.Deployment{}
	x.get(t, x.hub, "frontend", d)
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	assert.Equal(t, []corev1.EnvVar{{Name: "BACKEND_URL", Value: "http://" + svc.Spec.ClusterIP + ":5678"}}, d.Spec.Template.Spec.Containers[0].Env,
		"deploy-backend's output reached deploy-frontend's properties")

	// Applying the same file again changes nothing: no new revision, and
	// the workflow (with its approval) does not run again.
	_, err = framework.Oamflow(t, x.hub.Kubeconfig, "up", "-f", x.appFile(t, "workflow"), "--wait", "--timeout", "1m")
	require.NoError(t, err)
	app = x.requireRunning(t, "workflow")
	require.NotNil(t, app.Status.LatestRevision)
	assert.Equal(t, "workflow-v1", app.Status.LatestRevision.Name)
	assert.Equal(t, "succeeded", exStepPhase(app, "approve"))
}

func checkHelmRepo(t *testing.T, x *examplesEnv) {
	x.up(t, "helm-repo")
	x.requireRunning(t, "helm-repo")

	d := &appsv1.Deployment{}
	x.get(t, x.hub, "hello-chart-web", d)
	require.NotNil(t, d.Spec.Replicas)
	assert.Equal(t, int32(2), *d.Spec.Replicas, "values.replicaCount")
	assert.Equal(t, "hello-chart", d.Labels["app.kubernetes.io/instance"])
	cm := &corev1.ConfigMap{}
	x.get(t, x.hub, "hello-chart-config", cm)
	assert.Equal(t, "hello from oamflow", cm.Data["message"], "values.message")
	x.get(t, x.hub, "hello-chart-web", &corev1.Service{})
	x.get(t, x.hub, "sh.helm.release.v1.hello-chart.v1", &corev1.Secret{}) // Helm's release record

	// --tree shows the release with the controller's verdict on its
	// resources, not the resources themselves.
	out, err := framework.Oamflow(t, x.hub.Kubeconfig, "status", "helm-repo", "--tree")
	require.NoError(t, err)
	assert.Contains(t, out, "HelmRelease")
	assert.Contains(t, out, "chart simple-0.1.0: 3/3 resources ready")
	assert.NotContains(t, out, "MISSING")
}

func checkMulticlusterOverride(t *testing.T, x *examplesEnv) {
	x.up(t, "multicluster-override")
	app := x.requireRunning(t, "multicluster-override")
	assert.ElementsMatch(t, []string{"member-1", "member-2"}, exServiceClusters(app, "shop"))

	east, west := x.env.Cluster(t, "member-1"), x.env.Cluster(t, "member-2")
	d := &appsv1.Deployment{}
	x.get(t, east, "shop", d)
	assert.Equal(t, int32(1), *d.Spec.Replicas)
	assert.Equal(t, "nginx:1.27", d.Spec.Template.Spec.Containers[0].Image)
	assert.Equal(t, []corev1.EnvVar{{Name: "REGION", Value: "east"}}, d.Spec.Template.Spec.Containers[0].Env)
	x.get(t, east, "shop", &corev1.Service{})

	d = &appsv1.Deployment{}
	x.get(t, west, "shop", d)
	assert.Equal(t, int32(3), *d.Spec.Replicas, "west-ha overrides the scaler")
	assert.Equal(t, "nginx:1.27-alpine", d.Spec.Template.Spec.Containers[0].Image, "west-ha overrides the image")
	assert.Equal(t, []corev1.EnvVar{{Name: "REGION", Value: "west"}}, d.Spec.Template.Spec.Containers[0].Env)
	assert.True(t, apierrors.IsNotFound(west.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "shop"}, &corev1.Service{})),
		"west-ha disables expose: no Service in west")
	assert.True(t, apierrors.IsNotFound(x.hub.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "shop"}, &appsv1.Deployment{})),
		"nothing is deployed to the hub")

	out, err := framework.Oamflow(t, x.hub.Kubeconfig, "status", "multicluster-override", "--tree")
	require.NoError(t, err)
	assert.Contains(t, out, "member-1")
	assert.Contains(t, out, "member-2")
	assert.NotContains(t, out, "MISSING")
}

func checkCustomDefinition(t *testing.T, x *examplesEnv) {
	x.defApply(t, "custom-definition")
	out, err := framework.Oamflow(t, x.hub.Kubeconfig, "def", "list")
	require.NoError(t, err)
	assert.Contains(t, out, "disruption-budget")
	assert.Contains(t, out, "release-note")

	x.up(t, "custom-definition")
	app := x.requireRunning(t, "custom-definition")
	assert.Equal(t, "succeeded", exStepPhase(app, "note"))
	var budget string
	for _, tr := range app.Status.Services[0].Traits {
		if tr.Type == "disruption-budget" {
			budget = tr.Message
		}
	}
	assert.Regexp(t, `^disruptions allowed: \d+$`, budget, "the trait's customStatus")
	out, err = framework.Oamflow(t, x.hub.Kubeconfig, "status", "custom-definition", "--detail")
	require.NoError(t, err)
	assert.Contains(t, out, "disruption-budget")
	assert.Contains(t, out, "disruptions allowed: ")

	pdb := &policyv1.PodDisruptionBudget{}
	x.get(t, x.hub, "catalog", pdb)
	require.NotNil(t, pdb.Spec.MinAvailable)
	assert.Equal(t, 1, pdb.Spec.MinAvailable.IntValue())
	assert.Equal(t, map[string]string{"app.oam.dev/component": "catalog"}, pdb.Spec.Selector.MatchLabels)
	assert.Equal(t, "disruption-budget", pdb.Labels["trait.oam.dev/type"])

	cm := &corev1.ConfigMap{}
	x.get(t, x.hub, "custom-definition-release-note", cm)
	assert.Equal(t, map[string]string{
		"revision": "custom-definition-v1",
		"image":    "nginx:1.27",
		"replicas": "2",
		"note":     "first release of the catalog",
	}, cm.Data)

	// As the README says: a changed app is a new revision, and the step
	// records it.
	data, err := os.ReadFile(filepath.Join(examplesDir, "custom-definition", "app.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(data), "image: nginx:1.27\n")
	changed := filepath.Join(t.TempDir(), "app.yaml")
	require.NoError(t, os.WriteFile(changed, []byte(strings.Replace(string(data), "image: nginx:1.27\n", "image: nginx:1.28\n", 1)), 0o600))
	_, err = framework.Oamflow(t, x.hub.Kubeconfig, "up", "-f", changed, "--wait", "--timeout", "5m")
	require.NoError(t, err)
	x.requireRunning(t, "custom-definition")
	cm = &corev1.ConfigMap{}
	x.get(t, x.hub, "custom-definition-release-note", cm)
	assert.Equal(t, "custom-definition-v2", cm.Data["revision"])
	assert.Equal(t, "nginx:1.28", cm.Data["image"])
}

// --- helpers ---

// appFile is the path of examples/<name>/app.yaml to apply. For helm-repo
// it is a copy whose repoURL is the test's chart repository.
func (x *examplesEnv) appFile(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(examplesDir, name, "app.yaml")
	if name != "helm-repo" {
		return path
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	const placeholder = "repoURL: http://127.0.0.1:8879"
	require.Contains(t, string(data), placeholder, "examples/helm-repo/app.yaml changed; update this test")
	out := filepath.Join(t.TempDir(), "app.yaml")
	require.NoError(t, os.WriteFile(out, []byte(strings.Replace(string(data), placeholder, "repoURL: "+x.repoURL, 1)), 0o600))
	return out
}

// up runs `oamflow up -f examples/<name>/app.yaml --wait`, as the READMEs do.
func (x *examplesEnv) up(t *testing.T, name string) {
	t.Helper()
	_, err := framework.Oamflow(t, x.hub.Kubeconfig, "up", "-f", x.appFile(t, name), "--wait", "--timeout", "5m")
	require.NoError(t, err)
}

// defApply runs `oamflow def apply examples/<name>/defs/*.cue`.
func (x *examplesEnv) defApply(t *testing.T, name string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(examplesDir, name, "defs", "*.cue"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	_, err = framework.Oamflow(t, x.hub.Kubeconfig, append([]string{"def", "apply"}, files...)...)
	require.NoError(t, err)
}

// app reads the Application default/name on the hub.
func (x *examplesEnv) app(ctx context.Context, name string) (*v1beta1.Application, error) {
	app := &v1beta1.Application{}
	return app, x.oam.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, app)
}

// requireRunning fails t unless Application name is running with every
// service healthy, and returns it.
func (x *examplesEnv) requireRunning(t *testing.T, name string) *v1beta1.Application {
	t.Helper()
	app, err := x.app(context.Background(), name)
	require.NoError(t, err)
	require.Equal(t, common.ApplicationRunning, app.Status.Phase)
	require.NotEmpty(t, app.Status.Services)
	for _, s := range app.Status.Services {
		assert.True(t, s.Healthy, "service %s in cluster %q: %s", s.Name, s.Cluster, s.Message)
	}
	return app
}

// get reads the object name of obj's kind from namespace default of c.
func (x *examplesEnv) get(t *testing.T, c *framework.Cluster, name string, obj client.Object) {
	t.Helper()
	require.NoError(t, c.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, obj), "%T %s in %s", obj, name, c)
}

// exStep returns the status of the workflow step called name, or nil.
func exStep(app *v1beta1.Application, name string) *wfv1alpha1.WorkflowStepStatus {
	if app.Status.Workflow == nil {
		return nil
	}
	for i := range app.Status.Workflow.Steps {
		if s := &app.Status.Workflow.Steps[i]; s.Name == name {
			return s
		}
	}
	return nil
}

// exStepPhase is the phase of step name, "" when it has not started.
func exStepPhase(app *v1beta1.Application, name string) string {
	if s := exStep(app, name); s != nil {
		return string(s.Phase)
	}
	return ""
}

// exServiceClusters lists the clusters of component's services.
func exServiceClusters(app *v1beta1.Application, component string) []string {
	var out []string
	for _, s := range app.Status.Services {
		if s.Name == component {
			out = append(out, s.Cluster)
		}
	}
	return out
}

// exServeChartRepo packages the charts of dirs into a Helm repository
// (index.yaml + .tgz) served over HTTP until t ends, and returns its URL.
func exServeChartRepo(t *testing.T, dirs ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, dir := range dirs {
		ch, err := loader.LoadDir(dir)
		require.NoError(t, err)
		_, err = chartutil.Save(ch, root)
		require.NoError(t, err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(root)))
	t.Cleanup(srv.Close)
	idx, err := repo.IndexDirectory(root, srv.URL)
	require.NoError(t, err)
	require.NoError(t, idx.WriteFile(filepath.Join(root, "index.yaml"), 0o600))
	return srv.URL
}

// exVelaWorkflowChartRoot is the charts/ folder of the kubevela/workflow
// module in the Go module cache, as hack/demo.sh finds it.
func exVelaWorkflowChartRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/kubevela/workflow@v0.7.2").Output()
	require.NoError(t, err, "go mod download github.com/kubevela/workflow@v0.7.2")
	var mod struct{ Dir string }
	require.NoError(t, json.Unmarshal(out, &mod))
	root := filepath.Join(mod.Dir, "charts")
	_, err = os.Stat(filepath.Join(root, "vela-workflow", "Chart.yaml"))
	require.NoError(t, err)
	return root
}
