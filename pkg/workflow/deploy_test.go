package workflow

import (
	"context"
	"errors"
	"fmt"
	"github.com/oamflow/oamflow/pkg/errclass"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/render"
)

// clustersDeployer deploys every component to each of clusters (all
// backed by the test API server); a cluster marked down refuses
// connections.
type clustersDeployer struct {
	*fakeDeployer
	clusters []string

	mu      sync.Mutex
	down    map[string]bool
	applies map[string]int
}

func (d *clustersDeployer) setDown(cluster string, down bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down[cluster] = down
}

func (d *clustersDeployer) appliesTo(cluster string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.applies[cluster]
}

func (d *clustersDeployer) PlanDeploy(context.Context, []string) ([]DeployTarget, error) {
	var names []string
	for n := range d.components {
		names = append(names, n)
	}
	var out []DeployTarget
	for _, c := range d.clusters {
		out = append(out, DeployTarget{Cluster: c, Components: names, Deployer: &clusterTarget{d}})
	}
	return out, nil
}

// clusterTarget is the Deployer of one target of clustersDeployer.
type clusterTarget struct{ d *clustersDeployer }

func (t *clusterTarget) Component(name string) (Component, bool) { return t.d.Component(name) }
func (t *clusterTarget) Render(ctx context.Context, req ComponentRequest) ([]render.Resource, error) {
	res, err := t.d.Render(ctx, req)
	for i := range res {
		res[i].Cluster = req.Cluster
	}
	return res, err
}

func (t *clusterTarget) Apply(ctx context.Context, cluster string, objs []*unstructured.Unstructured) error {
	t.d.mu.Lock()
	down := t.d.down[cluster]
	t.d.mu.Unlock()
	if down {
		// What a client sees when the cluster's API server is stopped.
		return fmt.Errorf("reading ConfigMap %s: %w", objs[0].GetName(),
			&url.Error{Op: "Get", URL: "https://127.0.0.1:1/api/v1", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}})
	}
	if err := t.d.fakeDeployer.Apply(ctx, cluster, objs); err != nil {
		return err
	}
	t.d.mu.Lock()
	t.d.applies[cluster]++
	t.d.mu.Unlock()
	return nil
}

func (t *clusterTarget) Health(ctx context.Context, req ComponentRequest, res []render.Resource) (ComponentHealth, error) {
	h, err := t.d.Health(ctx, req, res)
	h.Status.Cluster = req.Cluster
	return h, err
}

func service(list []common.ApplicationComponentStatus, name, cluster string) *common.ApplicationComponentStatus {
	for i := range list {
		if list[i].Name == name && list[i].Cluster == cluster {
			return &list[i]
		}
	}
	return nil
}

// TestDeployUnreachableClusterWaitsAndConverges: with one member down, the
// deploy step keeps going for the other, names the failing cluster in the
// services, waits past the retry limit instead of failing, and succeeds
// once the member answers again.
func TestDeployUnreachableClusterWaitsAndConverges(t *testing.T) {
	step := &appfile.WorkflowStep{Name: "deploy", Type: "deploy", Properties: map[string]any{"policies": []any{}}}
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{step}}
	h := newHarness(t, wf, Options{}, comps("web", "db")...)
	d := &clustersDeployer{fakeDeployer: h.deployer, clusters: []string{"east", "west"}, down: map[string]bool{"west": true}, applies: map[string]int{}}
	h.run.Deployer = d

	var res Result
	for i := 0; i < testMaxRetries+3; i++ {
		res = h.pass()
		require.False(t, res.Status.Finished, "pass %d: the step waits for west instead of failing: %+v", i, res.Status)
	}
	assert.Equal(t, wfv1alpha1.WorkflowStepPhaseRunning, res.Status.Steps[0].Phase)
	assert.Contains(t, res.Status.Steps[0].Message, "cluster west cannot be reached")
	assert.Positive(t, d.appliesTo("east"), "east is deployed while west is down")
	for _, comp := range []string{"web", "db"} {
		east := service(res.Services, comp, "east")
		if assert.NotNil(t, east, comp) {
			assert.True(t, east.Healthy)
		}
		west := service(res.Services, comp, "west")
		if assert.NotNil(t, west, "%s at west is reported: %+v", comp, res.Services) {
			assert.False(t, west.Healthy)
			assert.Contains(t, west.Message, "cluster west cannot be reached")
			assert.Contains(t, west.Message, "connection refused")
			assert.Equal(t, h.app.Namespace, west.Namespace, "the same entry as the healthy one will be")
		}
	}

	d.setDown("west", false)
	res = h.until(30*time.Second, finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status)
	for _, comp := range []string{"web", "db"} {
		west := service(res.Services, comp, "west")
		if assert.NotNil(t, west) {
			assert.True(t, west.Healthy, west.Message)
		}
	}
}

// TestDeployTerminalErrorInOneClusterFails: a terminal error fails the
// step, naming the cluster, after the other clusters were deployed.
func TestDeployTerminalErrorInOneClusterFails(t *testing.T) {
	step := &appfile.WorkflowStep{Name: "deploy", Type: "deploy", Properties: map[string]any{"policies": []any{}}}
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{step}}
	h := newHarness(t, wf, Options{}, comps("web")...)
	d := &clustersDeployer{fakeDeployer: h.deployer, clusters: []string{"east", "west"}, down: map[string]bool{}, applies: map[string]int{}}
	h.run.Deployer = d
	var owned atomic.Int32
	h.deployer.applyErr = func(string) error {
		if owned.Add(1) == 2 {
			return errclass.Terminal(errors.New("ConfigMap x belongs to Application default/other"))
		}
		return nil
	}
	res := h.pass()
	assert.True(t, res.Status.Finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status)
	assert.Contains(t, res.Status.Message, "belongs to Application default/other")
	assert.Equal(t, 1, d.appliesTo("east")+d.appliesTo("west"), "the other cluster was deployed")
}

func TestUnreachable(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:1", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	cases := []struct {
		reason string
		err    error
		want   bool
	}{
		{"nil", nil, false},
		{"connection refused, wrapped", fmt.Errorf("applying: %w", refused), true},
		{"only the text survives (discovery)", errors.New(`failed to get API group resources: Get "https://127.0.0.1:1/apis": dial tcp 127.0.0.1:1: connect: connection refused`), true},
		{"request timeout", fmt.Errorf("x: %w", context.DeadlineExceeded), true},
		{"API server starting", apierrors.NewServiceUnavailable("starting"), true},
		{"conflict is not about reachability", apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("changed")), false},
		{"invalid object", errors.New("spec.replicas: Invalid value"), false},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			assert.Equal(t, c.want, Unreachable(c.err))
		})
	}
}
