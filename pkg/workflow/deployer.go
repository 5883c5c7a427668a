package workflow

import (
	"context"
	"sync"

	oamv1alpha1 "github.com/kubevela/pkg/apis/oam/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/pkg/render"
)

// Component is what the oam provider needs to know about one component of
// the Application: its properties (JSON data) and its component-level
// inputs and outputs.
type Component struct {
	Name       string
	Properties map[string]any
	// DependsOn are the components deployed (and healthy) before this one
	// by a deploy step.
	DependsOn []string
	Inputs    oamv1alpha1.StepInputs
	Outputs   oamv1alpha1.StepOutputs
}

// ComponentRequest asks to render, apply or check one component for one
// target.
type ComponentRequest struct {
	// Name of the component.
	Name string
	// Properties replace the component's own properties when non-nil (the
	// oam provider fills component inputs and step overrides into them).
	Properties map[string]any
	// Cluster is the target cluster ("" or "local": the hub).
	Cluster string
	// Namespace overrides the target namespace ("" : the Application's).
	Namespace string
}

// ComponentHealth is the health of one applied component plus the live
// objects its outputs may read.
type ComponentHealth struct {
	// Status is the entry for status.services.
	Status common.ApplicationComponentStatus
	// Output is the live main workload (nil when missing).
	Output map[string]any
	// Outputs are the live auxiliary objects by output name.
	Outputs map[string]any
}

// Deployer renders, applies and checks the components of one Application
// revision. The controller builds one per reconcile from the parsed
// Application, the resource keeper and the health checker; tests use
// DeployerFns.
type Deployer interface {
	// Component returns the named component, or false.
	Component(name string) (Component, bool)
	// Render renders a component with its traits.
	Render(ctx context.Context, req ComponentRequest) ([]render.Resource, error)
	// Apply writes objects to cluster and records them for the revision.
	// Errors that retrying cannot fix should be wrapped with Terminal.
	Apply(ctx context.Context, cluster string, objs []*unstructured.Unstructured) error
	// Health checks a component from its rendered resources.
	Health(ctx context.Context, req ComponentRequest, resources []render.Resource) (ComponentHealth, error)
}

// DeployTarget is one placement of a deploy step: where to deploy, which
// components, and a Deployer that renders them with the placement's
// override policies applied.
type DeployTarget struct {
	Cluster, Namespace string
	// Components to deploy there, in spec order.
	Components []string
	Deployer   Deployer
}

// DeployPlanner is implemented by Deployers that can run deploy steps.
type DeployPlanner interface {
	// PlanDeploy works out the targets of a deploy step from the named
	// topology and override policies. Errors about the policies should be
	// wrapped with Terminal.
	PlanDeploy(ctx context.Context, policies []string) ([]DeployTarget, error)
}

// DeployerFns adapts functions to Deployer; a nil function does nothing
// (Component finds nothing, Render renders nothing, Health reports healthy).
type DeployerFns struct {
	ComponentFn func(name string) (Component, bool)
	RenderFn    func(ctx context.Context, req ComponentRequest) ([]render.Resource, error)
	ApplyFn     func(ctx context.Context, cluster string, objs []*unstructured.Unstructured) error
	HealthFn    func(ctx context.Context, req ComponentRequest, resources []render.Resource) (ComponentHealth, error)
}

// Component calls ComponentFn.
func (d DeployerFns) Component(name string) (Component, bool) {
	if d.ComponentFn == nil {
		return Component{}, false
	}
	return d.ComponentFn(name)
}

// Render calls RenderFn.
func (d DeployerFns) Render(ctx context.Context, req ComponentRequest) ([]render.Resource, error) {
	if d.RenderFn == nil {
		return nil, nil
	}
	return d.RenderFn(ctx, req)
}

// Apply calls ApplyFn.
func (d DeployerFns) Apply(ctx context.Context, cluster string, objs []*unstructured.Unstructured) error {
	if d.ApplyFn == nil {
		return nil
	}
	return d.ApplyFn(ctx, cluster, objs)
}

// Health calls HealthFn.
func (d DeployerFns) Health(ctx context.Context, req ComponentRequest, resources []render.Resource) (ComponentHealth, error) {
	if d.HealthFn == nil {
		return ComponentHealth{Status: common.ApplicationComponentStatus{Name: req.Name, Namespace: req.Namespace, Cluster: req.Cluster, Healthy: true}}, nil
	}
	return d.HealthFn(ctx, req, resources)
}

// serviceCollector gathers the component health the oam provider saw
// during one Execute.
type serviceCollector struct {
	mu       sync.Mutex
	services []common.ApplicationComponentStatus
}

func (c *serviceCollector) add(s common.ApplicationComponentStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.services {
		if sameService(c.services[i], s) {
			c.services[i] = s
			return
		}
	}
	c.services = append(c.services, s)
}

func (c *serviceCollector) list() []common.ApplicationComponentStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]common.ApplicationComponentStatus(nil), c.services...)
}

func sameService(a, b common.ApplicationComponentStatus) bool {
	return a.Name == b.Name && a.Namespace == b.Namespace && normCluster(a.Cluster) == normCluster(b.Cluster)
}

func normCluster(c string) string {
	if c == "local" {
		return ""
	}
	return c
}

// MergeServices returns current with every entry of update replacing the
// entry for the same component, namespace and cluster (or appended), so
// that status.services keeps components a pass did not touch. The order of
// current is kept; new entries follow in update order.
func MergeServices(current, update []common.ApplicationComponentStatus) []common.ApplicationComponentStatus {
	out := append([]common.ApplicationComponentStatus(nil), current...)
	for _, u := range update {
		found := false
		for i := range out {
			if sameService(out[i], u) {
				out[i] = u
				found = true
				break
			}
		}
		if !found {
			out = append(out, u)
		}
	}
	return out
}

type runKey struct{}

// runValues are what the providers of one Execute read from the context.
type runValues struct {
	deployer Deployer
	services *serviceCollector
	// flow is the run's component-level data flow (nil: none).
	flow *dataFlow
	// earlier is the component health earlier passes of the run reported.
	earlier []common.ApplicationComponentStatus
	// liveReturns: a step may read the live objects apply-component
	// returns (readsLiveReturns); else they are left out of its returns.
	liveReturns bool

	mu sync.Mutex
	// failures are the messages steps failed with (fail), by step ID.
	failures map[string]string
}

// healthy reports whether component name is healthy everywhere this run
// has reported it (in this pass or an earlier one), and was reported.
func (r *runValues) healthy(name string) bool {
	seen := false
	for _, s := range MergeServices(r.earlier, r.services.list()) {
		if s.Name != name {
			continue
		}
		if !s.Healthy {
			return false
		}
		seen = true
	}
	return seen
}

func (r *runValues) failed(stepID, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failures == nil {
		r.failures = map[string]string{}
	}
	r.failures[stepID] = msg
}

func (r *runValues) failure(stepID string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	msg, ok := r.failures[stepID]
	return msg, ok
}

func withRun(ctx context.Context, v *runValues) context.Context {
	return context.WithValue(ctx, runKey{}, v)
}

func runFrom(ctx context.Context) (*runValues, bool) {
	v, ok := ctx.Value(runKey{}).(*runValues)
	return v, ok && v != nil && v.deployer != nil
}
