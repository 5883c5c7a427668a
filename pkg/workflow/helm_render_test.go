package workflow

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/helm"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/render"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
)

// countingReleases counts the Helm operations the resource keeper asks for.
type countingReleases struct {
	helmspec.Releases
	ensures atomic.Int32
}

func (c *countingReleases) Ensure(ctx context.Context, req helmspec.Request) (helmspec.Result, error) {
	c.ensures.Add(1)
	return c.Releases.Ensure(ctx, req)
}

// helmComponentDeployer deploys one `helm` component the way the
// controller does: the component renders to a virtual HelmRelease, the
// Application's resource keeper (with a real Helm client on the test API
// server) installs and tracks it, and health is the release's.
type helmComponentDeployer struct {
	DeployerFns
	mu     sync.Mutex
	props  map[string]any
	keeper *resourcekeeper.Keeper
}

func newHelmComponentDeployer(hc *helm.Client, name, ns string) *helmComponentDeployer {
	d := &helmComponentDeployer{}
	d.ComponentFn = func(n string) (Component, bool) {
		d.mu.Lock()
		defer d.mu.Unlock()
		return Component{Name: name, Properties: d.props}, n == name
	}
	d.RenderFn = func(_ context.Context, req ComponentRequest) ([]render.Resource, error) {
		obj := &unstructured.Unstructured{Object: map[string]any{"spec": deepCopyMap(req.Properties)}}
		obj.SetAPIVersion(helmspec.APIVersion)
		obj.SetKind(helmspec.Kind)
		obj.SetName(req.Name)
		obj.SetNamespace(ns)
		obj.SetLabels(map[string]string{v1beta1.LabelAppComponent: req.Name})
		return []render.Resource{{Component: req.Name, Namespace: ns, Object: obj}}, nil
	}
	d.ApplyFn = func(ctx context.Context, cluster string, objs []*unstructured.Unstructured) error {
		d.mu.Lock()
		k := d.keeper
		d.mu.Unlock()
		return k.Apply(ctx, cluster, objs)
	}
	d.HealthFn = func(ctx context.Context, req ComponentRequest, res []render.Resource) (ComponentHealth, error) {
		spec, err := helmspec.SpecFromObject(res[0].Object, helmspec.Defaults{Name: req.Name, Namespace: ns})
		if err != nil {
			return ComponentHealth{}, err
		}
		h, err := hc.Status(ctx, helmspec.Request{Namespace: ns, Spec: spec})
		if err != nil {
			return ComponentHealth{}, err
		}
		return ComponentHealth{Status: common.ApplicationComponentStatus{Name: req.Name, Namespace: ns, Healthy: h.Healthy, Message: h.Message}}, nil
	}
	return d
}

// TestHelmComponentThatDoesNotRenderFailsAtOnce: an Application whose
// `helm` component misses a value the chart `required`s ends
// workflowFailed in the first pass, after one Helm operation instead of
// one per retry up to the retry limit, with a message naming the
// component, the chart and Helm's own words, one Warning Event, and
// nothing installed. With the value set (a new revision), it installs.
func TestHelmComponentThatDoesNotRenderFailsAtOnce(t *testing.T) {
	e := env(t)
	ctx := context.Background()
	const ns = "default"
	root, err := filepath.Abs(filepath.Join("..", "..", "charts", "testdata"))
	require.NoError(t, err)
	hc := helm.NewClient(helm.NewFactory(helm.SingleCluster(e.Config)), helm.NewFetcher(e.Client, helm.WithChartRoot(root)), e.Client)
	counted := &countingReleases{Releases: hc}
	events := record.NewFakeRecorder(10)
	releases := resourcekeeper.NewHelmReleases(counted, resourcekeeper.WithReleaseEvents(events, e.Client))

	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{applyStep("db", "db")}}
	h := newHarness(t, wf, Options{DefaultStepTimeout: time.Minute})
	d := newHelmComponentDeployer(hc, "db", ns)
	h.run.Deployer = d
	useRevision := func(n int64, values map[string]any) {
		t.Helper()
		k, err := resourcekeeper.New(h.app, n, resourcekeeper.Options{
			Clients:  multicluster.ClusterClientsFn(func(context.Context, string) (client.Client, error) { return e.Client, nil }),
			Releases: releases,
		})
		require.NoError(t, err)
		d.mu.Lock()
		d.keeper = k
		d.props = map[string]any{"chart": map[string]any{"source": "required"}, "values": values}
		d.mu.Unlock()
	}
	t.Cleanup(func() { _, _ = hc.Uninstall(context.Background(), "", ns, "db", helmspec.Options{}) })

	useRevision(1, nil)
	res := h.pass()
	require.True(t, res.Status.Finished, "a chart that does not render fails in the first pass, not after the retries: %+v", res.Status)
	assert.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status)
	assert.EqualValues(t, 1, counted.ensures.Load(), "one Helm install, no retries")
	require.Len(t, res.Status.Steps, 1)
	st := res.Status.Steps[0]
	assert.Equal(t, failed, st.Phase)
	for _, want := range []string{
		`applying component "db"`,
		"chart bundled:required",
		"does not render with these values",
		"execution error at (required/templates/configmap.yaml:6:",
		"db.host is required: set values.db.host",
	} {
		assert.Contains(t, st.Message, want)
		assert.Contains(t, res.Status.Message, want, "the Application's workflow message")
	}
	require.Len(t, res.Services, 1)
	assert.Equal(t, "db", res.Services[0].Name)
	assert.False(t, res.Services[0].Healthy)
	assert.Contains(t, res.Services[0].Message, "db.host is required", "the component says why, not only the step")

	require.Len(t, events.Events, 1, "one Warning Event")
	ev := <-events.Events
	assert.True(t, strings.HasPrefix(ev, "Warning "+resourcekeeper.EventReasonReleaseFailed+" "), ev)
	assert.Contains(t, ev, "db.host is required")

	cfgMap := &corev1.ConfigMap{}
	assert.True(t, apierrors.IsNotFound(e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-db"}, cfgMap)), "nothing applied")
	hh, err := hc.StatusRelease(ctx, "", ns, "db", nil)
	require.NoError(t, err)
	assert.Equal(t, helmspec.ReasonReleaseNotFound, hh.Reason, "no release stored")

	// The user sets the value: a new revision, a new run.
	require.NoError(t, h.engine.Reset(ctx, h.app))
	useRevision(2, map[string]any{"db": map[string]any{"host": "db.example"}})
	h.run.Revision = h.app.Name + "-v2"
	h.run.Status = &common.WorkflowStatus{AppRevision: h.run.Revision}
	res = h.until(60*time.Second, finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, res.Status.Message)
	require.NoError(t, e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-db"}, cfgMap))
	assert.Equal(t, "db.example", cfgMap.Data["host"])
	assert.Empty(t, events.Events, "no failure Event for the fixed revision")
}
