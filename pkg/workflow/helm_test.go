package workflow

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	providertypes "github.com/kubevela/workflow/pkg/providers/types"
	wftypes "github.com/kubevela/workflow/pkg/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/errclass"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/render"
)

var updateHelmGolden = flag.Bool("update-helm", false, "rewrite testdata/helm-install/*.golden.yaml from the current output")

// helmStub is a helmspec.Releases recording its calls; status answers Status.
type helmStub struct {
	helmspec.Releases // methods the provider must not call panic on the nil interface
	mu                sync.Mutex
	ensured           []helmspec.Request
	statuses          []helmspec.Request
	uninstalls        []string
	templates         []helmspec.Request
	status            func(n int) helmspec.Health
	ensureErr         error
}

func (s *helmStub) Ensure(_ context.Context, req helmspec.Request) (helmspec.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensured = append(s.ensured, req)
	return helmspec.Result{Action: helmspec.ActionInstalled}, s.ensureErr
}

func (s *helmStub) Uninstall(_ context.Context, cluster, namespace, name string, opts helmspec.Options) (helmspec.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uninstalls = append(s.uninstalls, fmt.Sprintf("%s/%s/%s timeout=%s", cluster, namespace, name, opts.Timeout))
	return helmspec.Result{Action: helmspec.ActionUninstalled}, nil
}

func (s *helmStub) UninstallOwned(ctx context.Context, cluster, namespace, name string, _ helmspec.Owner, opts helmspec.Options) (helmspec.Result, error) {
	return s.Uninstall(ctx, cluster, namespace, name, opts)
}

func (s *helmStub) Status(_ context.Context, req helmspec.Request) (helmspec.Health, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses = append(s.statuses, req)
	if s.status == nil {
		return healthyRelease(req.Spec.Release.Name, 1), nil
	}
	return s.status(len(s.statuses)), nil
}

func (s *helmStub) Template(_ context.Context, req helmspec.Request) ([]*unstructured.Unstructured, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.templates = append(s.templates, req)
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetName(req.Spec.Release.Name + "-config")
	return []*unstructured.Unstructured{cm}, nil
}

func healthyRelease(name string, rev int) helmspec.Health {
	return helmspec.Health{Healthy: true, Reason: helmspec.ReasonReady, Ready: 3, Total: 3,
		Message: fmt.Sprintf("release %s revision %d, chart simple-0.1.0: 3/3 resources ready", name, rev),
		Release: helmspec.ReleaseInfo{Name: name, Namespace: "default", Revision: rev, Status: "deployed", Chart: "simple", ChartVersion: "0.1.0"}}
}

// releaseDeployer is a Deployer recording the objects applied (the
// virtual HelmRelease of a helm-install step) and failing with applyErr.
type releaseDeployer struct {
	DeployerFns
	mu       sync.Mutex
	applied  []*unstructured.Unstructured
	clusters []string
	applyErr error
}

func (d *releaseDeployer) Apply(_ context.Context, cluster string, objs []*unstructured.Unstructured) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.applyErr != nil {
		return d.applyErr
	}
	for _, o := range objs {
		d.applied = append(d.applied, o.DeepCopy())
		d.clusters = append(d.clusters, cluster)
	}
	return nil
}

// helmHarness runs a one-step workflow with the engine serving vela/helm
// from stub (nil: not configured) and d as the Deployer.
func helmHarness(t *testing.T, step *appfile.WorkflowStep, stub helmspec.Releases, d Deployer, extra map[string]string) *harness {
	t.Helper()
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{step}}
	h := newHarness(t, wf, Options{DefaultStepTimeout: time.Minute, Helm: stub})
	h.run.Deployer = d
	tmpls := stepTemplates(t)
	h.run.Templates = func(_ context.Context, typ string) (string, error) {
		if s, ok := extra[typ]; ok {
			return s, nil
		}
		return tmpls[typ], nil
	}
	return h
}

func helmInstallStep(props map[string]any) *appfile.WorkflowStep {
	return &appfile.WorkflowStep{Name: "install", Type: "helm-install", Properties: props}
}

// TestHelmInstallStep runs the built-in helm-install step: the release is
// handed to the Deployer as a virtual HelmRelease (so the Application's
// resource keeper installs and tracks it); the step waits until healthy;
// bad input and charts that do not exist fail it at once.
func TestHelmInstallStep(t *testing.T) {
	simple := map[string]any{"chart": map[string]any{"source": "simple"}, "release": map[string]any{"name": "web"}}
	cases := []struct {
		reason    string
		props     map[string]any
		noHelm    bool
		applyErr  error
		status    func(n int) helmspec.Health
		wantPhase wfv1alpha1.WorkflowStepPhase
		// wantReason, when set, is the step's reason: Action (failed for
		// good) or Execute (failed, to be retried: the run goes on).
		wantReason string
		// wantMessage is contained in the step message.
		wantMessage string
		// golden names testdata/helm-install/<golden>.golden.yaml: the HelmRelease handed to the Deployer.
		golden      string
		wantCluster string
	}{
		{reason: "installs through the Deployer with every field",
			props: map[string]any{
				"chart":        map[string]any{"source": "simple", "repoURL": "https://charts.example/", "version": ">=0.1 <1", "auth": map[string]any{"secretRef": map[string]any{"name": "repo-creds"}}},
				"release":      map[string]any{"name": "web", "namespace": "web-ns"},
				"values":       map[string]any{"replicaCount": 2, "image": nil},
				"valuesFrom":   []any{map[string]any{"kind": "ConfigMap", "name": "web-values"}},
				"healthStatus": []any{map[string]any{"resource": map[string]any{"kind": "Deployment"}, "condition": map[string]any{"type": "Available"}}},
				"options":      map[string]any{"timeout": "2m", "atomic": true},
				"cluster":      "member-1",
			},
			wantPhase: succeeded, golden: "full", wantCluster: "member-1"},
		{reason: "defaults: latest version, the Application's namespace, the hub",
			props: simple, wantPhase: succeeded, golden: "defaults", wantCluster: ""},
		{reason: "waits while the release is not healthy",
			props: simple, status: func(int) helmspec.Health {
				return helmspec.Health{Reason: helmspec.ReasonResourcesNotReady, Message: "release web revision 1, chart simple-0.1.0: 2/3 resources ready",
					Release: helmspec.ReleaseInfo{Name: "web", Namespace: "default", Revision: 1}}
			},
			wantPhase: running, wantMessage: "2/3 resources ready"},
		{reason: "waitHealthy false does not wait",
			props: merge(simple, map[string]any{"waitHealthy": false}), status: func(int) helmspec.Health { return helmspec.Health{Message: "0/3 resources ready"} },
			wantPhase: succeeded},
		{reason: "a spec error fails the step with the field path",
			props:     merge(simple, map[string]any{"chart": map[string]any{"source": "simple", "version": "not a version!"}}),
			wantPhase: failed, wantMessage: "spec.chart.version"},
		{reason: "a chart that does not exist fails the step",
			props: simple, applyErr: fmt.Errorf("HelmRelease default/web: chart %q in repository x: %w", "simpel", helmspec.ErrChartNotFound),
			wantPhase: failed, wantMessage: "chart not found"},
		{reason: "a chart that does not render with the values fails the step at once",
			props: simple, applyErr: fmt.Errorf("HelmRelease default/web: install release default/web: chart simple: %w",
				&helmspec.RenderError{Err: errors.New("execution error at (simple/templates/deployment.yaml:5:14): image.tag is required")}),
			wantPhase: failed, wantReason: wftypes.StatusReasonAction, wantMessage: "execution error at (simple/templates/deployment.yaml:5:14): image.tag is required"},
		{reason: "a repository that does not answer is retried",
			props: simple, applyErr: fmt.Errorf("HelmRelease default/web: %w", &helmspec.ChartError{Err: errors.New("GET https://charts.example/index.yaml: connection refused")}),
			wantPhase: failed, wantReason: wftypes.StatusReasonExecute, wantMessage: "connection refused"},
		{reason: "an operation in progress makes it wait",
			props: simple, applyErr: fmt.Errorf("release default/web is pending-upgrade: %w", helmspec.ErrOperationInProgress),
			wantPhase: running, wantMessage: "another operation on the release is in progress"},
		{reason: "without a Helm client the step fails saying so",
			props: simple, noHelm: true, wantPhase: failed, wantMessage: "no Helm client configured"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			stub := &helmStub{status: tc.status}
			var hc helmspec.Releases = stub
			if tc.noHelm {
				hc = nil
			}
			d := &releaseDeployer{applyErr: tc.applyErr}
			h := helmHarness(t, helmInstallStep(tc.props), hc, d, nil)
			res := h.pass()
			if tc.wantPhase != running {
				res = h.until(20*time.Second, func(r Result) bool { return phaseOf(r.Status)["install"] == tc.wantPhase })
			}
			st := res.Status.Steps[0]
			assert.Equal(t, tc.wantPhase, st.Phase, st.Message)
			assert.Contains(t, st.Message, tc.wantMessage)
			if tc.wantReason != "" {
				assert.Equal(t, tc.wantReason, st.Reason)
				assert.Equal(t, tc.wantReason == wftypes.StatusReasonAction, res.Status.Finished, "only a failure for good ends the run")
			}
			if tc.golden == "" {
				return
			}
			require.Len(t, d.applied, 1)
			assert.Equal(t, []string{tc.wantCluster}, d.clusters)
			assert.Empty(t, stub.ensured, "inside an Application the keeper ensures the release, not the provider")
			got, err := yaml.Marshal(d.applied[0].Object)
			require.NoError(t, err)
			assertHelmGolden(t, tc.golden, got)
			_, err = helmspec.SpecFromObject(d.applied[0], helmspec.Defaults{Namespace: "default"})
			assert.NoError(t, err, "the object is a valid HelmRelease")
		})
	}
}

// TestHelmPackage drives #Status, #Template and #Uninstall of vela/helm
// from a user-written step, and #Install outside an Application's
// Deployer (Ensure is called directly).
func TestHelmPackage(t *testing.T) {
	const custom = `import "vela/helm"

st: helm.#Status & {$params: {release: name: "web", chart: source: "simple"}}
tp: helm.#Template & {$params: {release: name: "web", chart: source: "simple"}}
un: helm.#Uninstall & {$params: {release: {name: "old", namespace: "legacy"}, options: timeout: "30s"}}
parameter: {}
`
	stub := &helmStub{}
	h := helmHarness(t, &appfile.WorkflowStep{Name: "ops", Type: "helm-ops"}, stub, &releaseDeployer{}, map[string]string{"helm-ops": custom})
	res := h.until(20*time.Second, finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, res.Status.Message)
	require.Len(t, stub.statuses, 1)
	assert.Equal(t, "default", stub.statuses[0].Namespace, "Secrets and values are read in the Application's namespace")
	assert.Equal(t, "default", stub.statuses[0].Spec.Release.Namespace, "the release namespace defaults to the Application's")
	require.Len(t, stub.templates, 1)
	assert.Equal(t, []string{"/legacy/old timeout=30s"}, stub.uninstalls)

	t.Run("InstallWithoutDeployerEnsures", func(t *testing.T) {
		stub := &helmStub{}
		p := helmProvider{c: stub}
		rt := testRuntimeParams()
		out, err := p.install(context.Background(), map[string]any{"release": map[string]any{"name": "web"}, "chart": map[string]any{"source": "simple"}, "cluster": "local"}, rt)
		require.NoError(t, err)
		require.Len(t, stub.ensured, 1)
		assert.Equal(t, "local", stub.ensured[0].Cluster)
		assert.Equal(t, 1, out.Release.Revision)
		assert.True(t, out.Healthy)
	})

	t.Run("InstallWithoutDeployerRenderErrorFails", func(t *testing.T) {
		stub := &helmStub{ensureErr: fmt.Errorf("install release shop/web: %w", &helmspec.RenderError{Err: errors.New("execution error at (x): db.host is required")})}
		rt := testRuntimeParams()
		_, err := helmProvider{c: stub}.install(context.Background(), map[string]any{"release": map[string]any{"name": "web"}, "chart": map[string]any{"source": "required"}}, rt)
		require.Error(t, err)
		assert.Contains(t, rt.Action.(*helmTestAction).failed, "db.host is required")
	})

	t.Run("InstallWithoutDeployerChartNotFoundFails", func(t *testing.T) {
		stub := &helmStub{ensureErr: fmt.Errorf("x: %w", helmspec.ErrChartNotFound)}
		rt := testRuntimeParams()
		_, err := helmProvider{c: stub}.install(context.Background(), map[string]any{"release": map[string]any{"name": "web"}, "chart": map[string]any{"source": "simpel"}}, rt)
		require.Error(t, err)
		assert.Contains(t, rt.Action.(*helmTestAction).failed, "chart not found")
	})
}

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func assertHelmGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", "helm-install", name+".golden.yaml")
	if *updateHelmGolden {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, got, 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run go test ./pkg/workflow -run TestHelmInstallStep -update-helm to create it")
	assert.Equal(t, string(want), string(got))
}

// helmTestAction is a workflow Action recording Fail and Wait.
type helmTestAction struct{ failed, waited string }

func (a *helmTestAction) Suspend(string)   {}
func (a *helmTestAction) Resume(string)    {}
func (a *helmTestAction) Terminate(string) {}
func (a *helmTestAction) Wait(msg string)  { a.waited = msg }
func (a *helmTestAction) Fail(msg string)  { a.failed = msg }
func (a *helmTestAction) Message(string)   {}
func (a *helmTestAction) GetStatus() wfv1alpha1.StepStatus {
	return wfv1alpha1.StepStatus{}
}

func testRuntimeParams() providertypes.RuntimeParams {
	return providertypes.RuntimeParams{Action: &helmTestAction{}, Labels: map[string]string{v1beta1.LabelAppNamespace: "shop"}}
}

// TestFailedApplyMarksComponentUnhealthy: a component whose apply fails
// (a Helm chart that does not exist) is reported in status.services as
// unhealthy with its health checker's message, not only in the step.
func TestFailedApplyMarksComponentUnhealthy(t *testing.T) {
	cases := []struct {
		reason      string
		health      common.ApplicationComponentStatus
		wantMessage string
	}{
		{reason: "the health checker's message", health: common.ApplicationComponentStatus{Namespace: "default", Message: "chart \"simpel\": chart not found"},
			wantMessage: "chart \"simpel\": chart not found"},
		{reason: "a component still healthy from before is not healthy now", health: common.ApplicationComponentStatus{Namespace: "default", Healthy: true, Message: "ready"},
			wantMessage: "apply failed: HelmRelease default/typo: chart not found"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			obj.SetAPIVersion(helmspec.APIVersion)
			obj.SetKind(helmspec.Kind)
			obj.SetName("typo")
			d := DeployerFns{
				ComponentFn: func(name string) (Component, bool) { return Component{Name: name}, name == "typo" },
				RenderFn: func(context.Context, ComponentRequest) ([]render.Resource, error) {
					return []render.Resource{{Component: "typo", Object: obj}}, nil
				},
				ApplyFn: func(context.Context, string, []*unstructured.Unstructured) error {
					return errclass.Terminal(fmt.Errorf("HelmRelease default/typo: %w", helmspec.ErrChartNotFound))
				},
				HealthFn: func(context.Context, ComponentRequest, []render.Resource) (ComponentHealth, error) {
					return ComponentHealth{Status: tc.health}, nil
				},
			}
			h := helmHarness(t, applyStep("typo", "typo"), nil, d, nil)
			res := h.until(20*time.Second, finished)
			assert.Equal(t, failed, phaseOf(res.Status)["typo"])
			require.Len(t, res.Services, 1)
			assert.Equal(t, "typo", res.Services[0].Name)
			assert.False(t, res.Services[0].Healthy)
			assert.Equal(t, tc.wantMessage, res.Services[0].Message)
		})
	}
}
