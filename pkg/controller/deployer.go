package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/errclass"
	"github.com/oamflow/oamflow/pkg/health"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/placement"
	"github.com/oamflow/oamflow/pkg/render"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
	"github.com/oamflow/oamflow/pkg/tenancy"
	"github.com/oamflow/oamflow/pkg/workflow"
)

// appDeployer is the workflow.Deployer of one reconcile: it renders from
// the parsed revision, applies through the revision's Keeper and checks
// health with the HealthChecker.
type appDeployer struct {
	af       *appfile.AppFile
	revision string
	renderer Renderer
	keeper   Keeper
	health   HealthChecker
	// resolver selects clusters by label for topology policies (nil:
	// selectors cannot be resolved).
	resolver placement.Resolver
	// clients read the objects ref-objects components reference.
	clients multicluster.ClusterClients
	// prerendered holds the render phase's results for the run's first
	// pass (nil: none).
	prerendered *renderCache
	// app and recorder report refusals of the Application's identity as
	// Warning Events (nil recorder: none).
	app      *v1beta1.Application
	recorder record.EventRecorder
	// keepNamespaces: the deploy target's topology sets createNamespace:
	// false; a missing namespace is waited for instead of created.
	keepNamespaces bool
}

// renderCache holds components rendered by the render phase with their
// own properties for the hub and the Application's namespace; each is
// handed out once, to the step that applies it in the same reconcile.
type renderCache struct {
	mu  sync.Mutex
	af  *appfile.AppFile
	res map[string][]render.Resource
}

func newRenderCache(af *appfile.AppFile) *renderCache {
	return &renderCache{af: af, res: map[string][]render.Resource{}}
}

func (c *renderCache) put(component string, res []render.Resource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.res[component] = res
}

// take returns (and forgets) the rendering of req when it was made for the
// same AppFile, placement and properties.
func (c *renderCache) take(af *appfile.AppFile, req workflow.ComponentRequest) ([]render.Resource, bool) {
	if c == nil || af != c.af || req.Cluster != "" || req.Namespace != "" {
		return nil, false
	}
	comp := af.Component(req.Name)
	if comp == nil {
		return nil, false
	}
	if len(req.Properties) > 0 || len(comp.Properties) > 0 {
		if !equality.Semantic.DeepEqual(req.Properties, comp.Properties) {
			return nil, false
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	res, ok := c.res[req.Name]
	delete(c.res, req.Name)
	return res, ok
}

var (
	_ workflow.Deployer        = (*appDeployer)(nil)
	_ workflow.DeployPlanner   = (*appDeployer)(nil)
	_ workflow.ComponentLister = (*appDeployer)(nil)
)

// ComponentNames implements workflow.ComponentLister.
func (d *appDeployer) ComponentNames() []string {
	names := make([]string, 0, len(d.af.Components))
	for _, c := range d.af.Components {
		names = append(names, c.Name)
	}
	return names
}

func (d *appDeployer) Component(name string) (workflow.Component, bool) {
	c := d.af.Component(name)
	if c == nil {
		return workflow.Component{}, false
	}
	return workflow.Component{Name: c.Name, Properties: c.Properties, DependsOn: c.DependsOn, Inputs: c.Inputs, Outputs: c.Outputs}, true
}

// PlanDeploy implements workflow.DeployPlanner with render.PlanDeploy;
// each target's Deployer renders the target's (overridden) AppFile.
func (d *appDeployer) PlanDeploy(ctx context.Context, policies []string) ([]workflow.DeployTarget, error) {
	plan, err := render.PlanDeploy(ctx, d.af, policies, d.resolver)
	if err != nil {
		return nil, errclass.Terminal(err)
	}
	out := make([]workflow.DeployTarget, 0, len(plan.Targets))
	for _, t := range plan.Targets {
		if t.Placeholder {
			return nil, errclass.Terminal(fmt.Errorf("cannot resolve the clusters of %s: no cluster registry", t.Cluster))
		}
		td := *d
		td.af = t.AppFile
		td.keepNamespaces = !t.CreateNamespace
		names := make([]string, 0, len(t.AppFile.Components))
		for _, c := range t.AppFile.Components {
			names = append(names, c.Name)
		}
		out = append(out, workflow.DeployTarget{Cluster: t.Cluster, Namespace: t.Namespace, Components: names, Deployer: &td})
	}
	return out, nil
}

// clusterVersions reads the Kubernetes version of a target cluster
// (multicluster.Registry implements it next to placement.Resolver).
type clusterVersions interface {
	ClusterVersion(ctx context.Context, cluster string) (render.ClusterVersion, error)
}

// options are the render options of req. context.clusterVersion is the
// target cluster's version when the resolver can read it; when the
// cluster cannot be asked (unreachable) the render default stands, and
// applying there fails anyway.
func (d *appDeployer) options(ctx context.Context, req workflow.ComponentRequest) render.Options {
	o := render.Options{AppRevision: d.revision, Cluster: req.Cluster, Namespace: req.Namespace}
	if v, ok := d.resolver.(clusterVersions); ok {
		cv, err := v.ClusterVersion(ctx, req.Cluster)
		if err != nil {
			ctrl.LoggerFrom(ctx).V(1).Info("cluster version unknown; rendering with the default", "cluster", req.Cluster, "reason", err.Error())
		} else {
			o.ClusterVersion = cv
		}
	}
	return o
}

// withProperties returns af with component name's properties replaced
// (af itself is not modified).
func withProperties(af *appfile.AppFile, name string, props map[string]any) *appfile.AppFile {
	if props == nil {
		return af
	}
	cp := *af
	cp.Components = make([]*appfile.Component, len(af.Components))
	for i, c := range af.Components {
		if c.Name == name {
			cc := *c
			cc.Properties = props
			c = &cc
		}
		cp.Components[i] = c
	}
	return &cp
}

// Render renders the component of req (reusing the render phase's
// result when it fits) and resolves the references of ref-objects
// components into the objects to apply.
func (d *appDeployer) Render(ctx context.Context, req workflow.ComponentRequest) ([]render.Resource, error) {
	res, ok := d.prerendered.take(d.af, req)
	opts := d.options(ctx, req)
	if !ok {
		var err error
		res, err = d.renderer.RenderComponent(ctx, withProperties(d.af, req.Name, req.Properties), req.Name, opts)
		if err != nil {
			return nil, err
		}
	}
	for _, r := range res {
		if r.Reference {
			return resolveReferences(ctx, d.clients, d.af, d.af.Component(req.Name), opts, res)
		}
	}
	return res, nil
}

// clusterLabel names cluster in messages ("local" for the hub).
func clusterLabel(cluster string) string {
	if cluster == "" {
		return v1beta1.ClusterLocal
	}
	return cluster
}

// Apply creates the missing target namespaces (unless the target's
// topology says createNamespace: false; a Normal Event names each one
// created) and applies through the Keeper. Objects owned by someone else,
// missing read-only objects, and what the Application's identity or scope
// does not allow (package tenancy: nothing of the call was written) fail
// the step at once; a refusal is also a Warning Event on the Application.
func (d *appDeployer) Apply(ctx context.Context, cluster string, objs []*unstructured.Unstructured) error {
	created, err := d.keeper.EnsureNamespaces(ctx, cluster, objs, !d.keepNamespaces)
	for _, ns := range created {
		if d.recorder != nil && d.app != nil {
			d.recorder.Eventf(d.app, corev1.EventTypeNormal, common.ReasonNamespaceCreated,
				"created namespace %s in cluster %s for the application (it is kept when the application is deleted)", ns, clusterLabel(cluster))
		}
	}
	if err == nil {
		err = d.keeper.Apply(ctx, cluster, objs)
	}
	var own *resourcekeeper.OwnershipError
	var ro *resourcekeeper.ReadOnlyMissingError
	switch {
	case tenancy.IsRefusal(err):
		if d.recorder != nil && d.app != nil {
			d.recorder.Event(d.app, corev1.EventTypeWarning, common.ReasonAccessDenied, err.Error())
		}
		return errclass.Terminal(err)
	case errors.As(err, &own) || errors.As(err, &ro):
		return errclass.Terminal(err)
	}
	return err
}

func (d *appDeployer) Health(ctx context.Context, req workflow.ComponentRequest, res []render.Resource) (workflow.ComponentHealth, error) {
	// What the step just applied (or found in sync) is judged as the
	// apply saw it, without reading it again.
	ctx = withSeen(ctx, d.keeper)
	return d.health.ComponentHealth(ctx, withProperties(d.af, req.Name, req.Properties), req, d.options(ctx, req), res)
}

type seenKey struct{}

// seenBy is what Keeper.Reader offers: the objects a Keeper saw.
type seenBy interface {
	Reader(cluster string, r client.Reader) client.Reader
}

// withSeen lets health checks under ctx read the objects k saw.
func withSeen(ctx context.Context, k seenBy) context.Context {
	if k == nil {
		return ctx
	}
	return context.WithValue(ctx, seenKey{}, k)
}

// seenReader wraps r with the Keeper of ctx (withSeen), if any.
func seenReader(ctx context.Context, cluster string, r client.Reader) client.Reader {
	if k, ok := ctx.Value(seenKey{}).(seenBy); ok {
		return k.Reader(cluster, r)
	}
	return r
}

// defaultHealth judges components with package health: the definition's
// CUE status (evaluated by render.EvalStatus) when it has a healthPolicy,
// else kstatus on every live object; traits likewise, a component being
// healthy only when its traits are.
type defaultHealth struct {
	clients  multicluster.ClusterClients
	releases health.ReleaseChecker // nil: Helm components are unhealthy (not configured)
}

func evalStatus(ctx context.Context, st *common.Status, parameter map[string]any, liveOutput map[string]any,
	liveOutputs map[string]map[string]any, cctx map[string]any) (health.EvalResult, error) {
	r, err := render.EvalStatus(ctx, st, parameter, liveOutput, liveOutputs, cctx)
	return health.EvalResult{Healthy: r.Healthy, Message: r.Message, Details: r.Details}, err
}

func (h defaultHealth) ComponentHealth(ctx context.Context, af *appfile.AppFile, req workflow.ComponentRequest, opts render.Options, res []render.Resource) (workflow.ComponentHealth, error) {
	comp := af.Component(req.Name)
	if comp == nil {
		return workflow.ComponentHealth{}, fmt.Errorf("component %q is not in the Application", req.Name)
	}
	c, err := h.clients.Client(ctx, req.Cluster)
	if err != nil {
		return workflow.ComponentHealth{}, err
	}
	ns := req.Namespace
	if ns == "" {
		ns = af.Namespace
	}
	out := workflow.ComponentHealth{Status: common.ApplicationComponentStatus{Name: req.Name, Namespace: ns, Cluster: req.Cluster}}
	var output *health.Object
	outputs := map[string]health.Object{}
	traitOutputs := map[string]map[string]health.Object{}
	fetcher := health.Fetcher{Releases: h.releases, Cluster: req.Cluster, AppNamespace: af.Namespace}
	reader := seenReader(ctx, req.Cluster, c)
	for _, r := range res {
		if r.Reference {
			continue
		}
		o, err := fetcher.Fetch(ctx, reader, r.Object)
		if err != nil {
			return out, err
		}
		switch {
		case r.Trait != "":
			if traitOutputs[r.Trait] == nil {
				traitOutputs[r.Trait] = map[string]health.Object{}
			}
			traitOutputs[r.Trait][r.Output] = o
		case r.IsWorkload():
			oc := o
			output = &oc
			if o.Live != nil {
				out.Output = o.Live.Object
			}
			out.Status.WorkloadDefinition = common.WorkloadGVK{APIVersion: r.Object.GetAPIVersion(), Kind: r.Object.GetKind()}
		default:
			outputs[r.Output] = o
			if o.Live != nil {
				if out.Outputs == nil {
					out.Outputs = map[string]any{}
				}
				out.Outputs[r.Output] = o.Live.Object
			}
		}
	}
	cctx := render.Context(af, req.Name, opts)
	ev := health.StatusEvaluatorFn(evalStatus)
	var st *common.Status
	if comp.Definition != nil {
		st = comp.Definition.Status()
	}
	oc, err := health.Evaluate(ctx, ev, health.Subject{Status: st, Parameter: comp.Properties, Context: cctx, Output: output, Outputs: outputs})
	if err != nil {
		oc.Healthy = false
	}
	out.Status.Healthy, out.Status.Message, out.Status.Details = oc.Healthy, oc.Message, oc.Details
	for _, t := range comp.Traits {
		var tst *common.Status
		if t.Definition != nil {
			tst = t.Definition.Status()
		}
		// The trait's status CUE reads the workload as context.output and
		// its own objects as context.outputs (KubeVela's context); with a
		// health policy a missing workload makes it unhealthy, without one
		// only the trait's own objects are judged.
		subj := health.Subject{Status: tst, Parameter: t.Properties, Context: cctx, Outputs: traitOutputs[t.Type], Workload: output}
		if tst != nil && tst.HealthPolicy != "" {
			subj.Output = output
		}
		if len(subj.Outputs) == 0 && (tst == nil || (tst.HealthPolicy == "" && tst.CustomStatus == "")) {
			out.Status.Traits = append(out.Status.Traits, common.ApplicationTraitStatus{Type: t.Type, Healthy: true})
			continue
		}
		to, err := health.Evaluate(ctx, ev, subj)
		if err != nil {
			to.Healthy = false
		}
		out.Status.Traits = append(out.Status.Traits, common.ApplicationTraitStatus{Type: t.Type, Healthy: to.Healthy, Message: to.Message, Details: to.Details})
		if !to.Healthy {
			out.Status.Healthy = false
			if out.Status.Message == "" || oc.Healthy {
				out.Status.Message = fmt.Sprintf("trait %s: %s", t.Type, to.Message)
			}
		}
	}
	return out, nil
}
