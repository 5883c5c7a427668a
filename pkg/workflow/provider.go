package workflow

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"github.com/kubevela/pkg/cue/cuex"
	cuexruntime "github.com/kubevela/pkg/cue/cuex/runtime"
	wfContext "github.com/kubevela/workflow/pkg/context"
	"github.com/kubevela/workflow/pkg/cue/model"
	"github.com/kubevela/workflow/pkg/cue/model/value"
	wferrors "github.com/kubevela/workflow/pkg/errors"
	"github.com/kubevela/workflow/pkg/providers/builtin"
	"github.com/kubevela/workflow/pkg/providers/config"
	"github.com/kubevela/workflow/pkg/providers/email"
	"github.com/kubevela/workflow/pkg/providers/legacy"
	"github.com/kubevela/workflow/pkg/providers/metrics"
	wftime "github.com/kubevela/workflow/pkg/providers/time"
	providertypes "github.com/kubevela/workflow/pkg/providers/types"
	"github.com/kubevela/workflow/pkg/providers/util"
	wftypes "github.com/kubevela/workflow/pkg/types"

	"github.com/oamflow/oamflow/pkg/cuepkg"
	"github.com/oamflow/oamflow/pkg/errclass"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/render"
)

// NewCompiler returns the CUE compiler workflow steps are evaluated with.
// It serves the step packages of pkg/cuepkg (KubeVela v1.11's: the legacy
// flat vela/op and vela/ql, kubevela/workflow's vela/kube, vela/builtin,
// vela/http, vela/util, vela/time, vela/email, vela/metrics, vela/config,
// and vela/oam, vela/multicluster, vela/query, vela/helm, vela/terraform)
// with these provider functions:
//   - kubevela/workflow's for its packages and for the legacy vela/op;
//   - oamflow's component actions (#ApplyComponent, #RenderComponent,
//     #Deploy) in vela/oam, vela/op and vela/multicluster, and vela/helm's
//     #Install, #Uninstall, #Status and #Template (see WithHelm);
//   - builtin.#Suspend and op.#Suspend, which report their message
//     parameter as the step's message (suspend.go; the library drops it);
//   - vela/http's #Do and op.#HTTPDo, oamflow's own requests under the
//     outbound policy (http.go, WithHTTPPolicy).
//
// Actions with side effects (HTTP, e-mail) are performed once per step
// execution (once.go).
// Every other action of those schemas (vela/query, vela/terraform,
// op.#LoadComponets, helm.#Render, …) compiles and fails the step when it
// runs, saying oamflow does not support it.
func NewCompiler(opts ...CompilerOption) (*cuex.Compiler, error) {
	var co compilerOptions
	for _, o := range opts {
		o(&co)
	}
	opProviders := legacy.GetLegacyProviders()
	for k, v := range legacyOAMProviders() {
		opProviders[k] = v
	}
	opProviders["suspend"] = legacySuspendProvider()
	doer := newHTTPDoer(co.http)
	opProviders["do"] = doer.legacyProvider()
	opProviders["deploy"] = legacyDeployProvider()
	builtinProviders := builtin.GetProviders()
	builtinProviders["suspend"] = suspendProvider()
	fns := map[string]map[string]cuexruntime.ProviderFn{
		"op":           opProviders,
		"oam":          oamProviders(),
		"helm":         helmProviders(co.helm),
		"kube":         kubeProviders(),
		"builtin":      builtinProviders,
		"http":         {"do": doer.provider()},
		"util":         util.GetProviders(),
		"time":         wftime.GetProviders(),
		"email":        email.GetProviders(),
		"metrics":      metrics.GetProviders(),
		"config":       config.GetProviders(),
		"multicluster": {"deploy": deployProvider()},
	}
	var packages []cuexruntime.Package
	for _, p := range cuepkg.Packages(cuepkg.Step) {
		pfns := map[string]cuexruntime.ProviderFn{}
		for k, v := range fns[p.Name] {
			pfns[k] = v
		}
		actions, err := cuepkg.Actions(p)
		if err != nil {
			return nil, fmt.Errorf("reading the actions of %s: %w", p.Path(), err)
		}
		for _, a := range actions {
			if pfns[a.Do] == nil {
				pfns[a.Do] = unsupported(p.Name + "." + a.Name)
			}
		}
		cp, err := cuexruntime.NewInternalPackage(p.Name, p.Template, withSideEffectsOnce(p.Name, pfns))
		if err != nil {
			return nil, fmt.Errorf("building CUE package %s: %w", p.Path(), err)
		}
		packages = append(packages, cp)
	}
	return cuex.NewCompilerWithInternalPackages(packages...), nil
}

// unsupported is the provider function of an action oamflow does not run:
// it fails the step naming the action.
type unsupported string

func (u unsupported) Call(ctx context.Context, v cue.Value) (cue.Value, error) {
	msg := string(u) + " is not supported by oamflow"
	// (Not RuntimeParamsFrom: outside a workflow run it loads a kubeconfig
	// and exits the process when there is none.)
	if act, ok := ctx.Value(providertypes.ActionKey).(wftypes.Action); ok && act != nil {
		return v, fail(ctx, providertypes.RuntimeParams{Action: act}, msg)
	}
	return v, errors.New(msg)
}

// componentParams are the $params of oam.#ApplyComponent and
// oam.#RenderComponent (and the fields of their op.* forms).
type componentParams struct {
	Component   string         `json:"component"`
	Cluster     string         `json:"cluster,omitempty"`
	Namespace   string         `json:"namespace,omitempty"`
	WaitHealthy *bool          `json:"waitHealthy,omitempty"`
	Properties  map[string]any `json:"properties,omitempty"`
	// Value is the component as KubeVela's #LoadComponets returns it
	// (KubeVela names the component this way): its name picks the
	// component when Component is empty, and its properties are used
	// when Properties is empty.
	Value map[string]any `json:"value,omitempty"`
	// Patch (KubeVela: a patch for the rendered workload) is not supported.
	Patch map[string]any `json:"patch,omitempty"`
}

// resolve fills Component and Properties from Value.
func (p componentParams) resolve() componentParams {
	if p.Component == "" {
		p.Component, _ = p.Value["name"].(string)
	}
	if len(p.Properties) == 0 {
		if props, ok := p.Value["properties"].(map[string]any); ok {
			p.Properties = props
		}
	}
	return p
}

// componentReturns are the $returns of oam.#ApplyComponent and
// oam.#RenderComponent.
type componentReturns struct {
	Output  map[string]any `json:"output,omitempty"`
	Outputs map[string]any `json:"outputs,omitempty"`
	Healthy *bool          `json:"healthy,omitempty"`
	Message string         `json:"message,omitempty"`
}

func oamProviders() map[string]cuexruntime.ProviderFn {
	return map[string]cuexruntime.ProviderFn{
		"component-apply": providertypes.GenericProviderFn[componentParams, providertypes.Returns[componentReturns]](
			func(ctx context.Context, p *providertypes.Params[componentParams]) (*providertypes.Returns[componentReturns], error) {
				r, err := applyComponent(ctx, p.Params.resolve(), p.RuntimeParams)
				if err != nil {
					return nil, err
				}
				return &providertypes.Returns[componentReturns]{Returns: *r}, nil
			}),
		"component-render": providertypes.GenericProviderFn[componentParams, providertypes.Returns[componentReturns]](
			func(ctx context.Context, p *providertypes.Params[componentParams]) (*providertypes.Returns[componentReturns], error) {
				r, err := renderComponent(ctx, p.Params.resolve(), p.RuntimeParams)
				if err != nil {
					return nil, err
				}
				return &providertypes.Returns[componentReturns]{Returns: *r}, nil
			}),
		"deploy": deployProvider(),
	}
}

func legacyOAMProviders() map[string]cuexruntime.ProviderFn {
	return map[string]cuexruntime.ProviderFn{
		"component-apply": providertypes.LegacyGenericProviderFn[componentParams, componentReturns](
			func(ctx context.Context, p *providertypes.LegacyParams[componentParams]) (*componentReturns, error) {
				return applyComponent(ctx, p.Params.resolve(), p.RuntimeParams)
			}),
		"component-render": providertypes.LegacyGenericProviderFn[componentParams, componentReturns](
			func(ctx context.Context, p *providertypes.LegacyParams[componentParams]) (*componentReturns, error) {
				return renderComponent(ctx, p.Params.resolve(), p.RuntimeParams)
			}),
	}
}

// fail ends the step as failed (reason Action) with msg; the workflow then
// fails instead of retrying. The message is kept for the step's status:
// kubevela/workflow replaces it with its own when the failed step has
// outputs (which it cannot read), and Execute puts it back.
func fail(ctx context.Context, rt providertypes.RuntimeParams, msg string) error {
	if run, ok := runFrom(ctx); ok && rt.ProcessContext != nil {
		if id, ok := rt.ProcessContext.GetData(model.ContextStepSessionID).(string); ok && id != "" {
			run.failed(id, msg)
		}
	}
	rt.Action.Fail(msg)
	return wferrors.GenericActionError(wferrors.ActionTerminate)
}

// wait keeps the step running (reason Wait) with msg; it is tried again
// after a backoff.
func wait(rt providertypes.RuntimeParams, msg string) error {
	rt.Action.Wait(msg)
	return wferrors.GenericActionError(wferrors.ActionWait)
}

// prepare fills the component-level inputs of comp from the workflow
// context and merges p.Properties over its properties. A missing input is
// returned as a wait message; a bad parameterKey fails the step.
func prepare(ctx context.Context, comp Component, p componentParams, rt providertypes.RuntimeParams) (ComponentRequest, string, error) {
	props := deepCopyMap(comp.Properties)
	for _, in := range comp.Inputs {
		v, err := readVar(rt.WorkflowContext, in.From)
		if err != nil {
			var source string
			if run, ok := runFrom(ctx); ok {
				source = run.flow.source(in.From)
			}
			return ComponentRequest{}, fmt.Sprintf("component %q waits for input %q%s", comp.Name, in.From, source), nil
		}
		if in.ParameterKey == "" {
			continue
		}
		if err := setPath(props, in.ParameterKey, v); err != nil {
			return ComponentRequest{}, "", fail(ctx, rt, fmt.Sprintf("component %q input %q: parameterKey %q: %v", comp.Name, in.From, in.ParameterKey, err))
		}
	}
	for k, v := range p.Properties {
		props[k] = v
	}
	return ComponentRequest{Name: comp.Name, Properties: props, Cluster: p.Cluster, Namespace: p.Namespace}, "", nil
}

// awaitDependencies returns why comp must wait for a component it
// dependsOn that is deployed elsewhere (dataflow.go) — by another step,
// or by this deploy step to another target — and is not healthy in this
// run yet; "" when none. here reports the components deployed with comp
// (one deploy target: ordered there by the deploy step); nil: comp alone.
// A dependency no step is known to deploy is not waited for, and a step
// with `if` waits for none (the guard leaves such steps alone too).
func awaitDependencies(ctx context.Context, comp Component, rt providertypes.RuntimeParams, here func(string) bool) string {
	run, ok := runFrom(ctx)
	if !ok || run.flow.isConditional(stepName(rt)) {
		return ""
	}
	for _, dep := range comp.DependsOn {
		if dep == comp.Name || (here != nil && here(dep)) {
			continue
		}
		steps := run.flow.deployers(dep)
		if len(steps) == 0 || run.healthy(dep) {
			continue
		}
		return fmt.Sprintf("component %q waits for component %q, which it depends on (deployed by %s)", comp.Name, dep, quoteSteps(steps))
	}
	return ""
}

// lookup returns the run and the component p names.
func lookup(ctx context.Context, p componentParams, rt providertypes.RuntimeParams) (*runValues, Component, error) {
	run, ok := runFrom(ctx)
	if !ok {
		return nil, Component{}, fmt.Errorf("vela/oam: no Application deployer in this workflow run")
	}
	if len(p.Patch) > 0 {
		return nil, Component{}, fail(ctx, rt, fmt.Sprintf("component %q: patch is not supported by oamflow; use a trait or properties", p.Component))
	}
	if p.Component == "" {
		return nil, Component{}, fail(ctx, rt, "no component named: set component (or value, as op.#Load returns it)")
	}
	comp, ok := run.deployer.Component(p.Component)
	if !ok {
		return nil, Component{}, fail(ctx, rt, fmt.Sprintf("component %q is not in spec.components", p.Component))
	}
	return run, comp, nil
}

func renderComponent(ctx context.Context, p componentParams, rt providertypes.RuntimeParams) (*componentReturns, error) {
	run, comp, err := lookup(ctx, p, rt)
	if err != nil {
		return nil, err
	}
	req, waiting, err := prepare(ctx, comp, p, rt)
	if err != nil {
		return nil, err
	}
	if waiting != "" {
		return nil, wait(rt, waiting)
	}
	res, err := run.deployer.Render(ctx, req)
	if err != nil {
		return nil, fail(ctx, rt, fmt.Sprintf("rendering component %q: %v", req.Name, err))
	}
	out := &componentReturns{}
	out.Output, out.Outputs = split(res)
	return out, nil
}

func applyComponent(ctx context.Context, p componentParams, rt providertypes.RuntimeParams) (*componentReturns, error) {
	run, comp, err := lookup(ctx, p, rt)
	if err != nil {
		return nil, err
	}
	res, err := applyOne(ctx, run, comp, p, rt, nil)
	if err != nil {
		return nil, err
	}
	if res.waiting != "" {
		return nil, wait(rt, res.waiting)
	}
	return &res.returns, nil
}

// applied is the outcome of applyOne: the returns, or why the component
// is not done yet.
type applied struct {
	returns componentReturns
	waiting string
}

// applyOne renders comp, applies it, checks its health and exports its
// outputs. Render failures and terminal apply errors fail the step; other
// apply errors are returned (the step is retried); a missing input, an
// unhealthy component (when waiting for health) or an output not yet
// available is returned as a wait message.
func applyOne(ctx context.Context, run *runValues, comp Component, p componentParams, rt providertypes.RuntimeParams, here func(string) bool) (applied, error) {
	if waiting := awaitDependencies(ctx, comp, rt, here); waiting != "" {
		return applied{waiting: waiting}, nil
	}
	req, waiting, err := prepare(ctx, comp, p, rt)
	if err != nil || waiting != "" {
		return applied{waiting: waiting}, err
	}
	res, err := run.deployer.Render(ctx, req)
	if err != nil {
		return applied{}, fail(ctx, rt, fmt.Sprintf("rendering component %q: %v", req.Name, err))
	}
	for _, b := range render.Batches(res) {
		if err := run.deployer.Apply(ctx, b.Cluster, b.Objects); err != nil {
			if errors.Is(err, helmspec.ErrOperationInProgress) {
				// A Helm release held by another operation (or by a
				// controller that died during one, until package helm
				// recovers it): wait, as the helm-install step does,
				// rather than spend the step's retries.
				return applied{waiting: fmt.Sprintf("applying component %q: %v", req.Name, err)}, nil
			}
			noteFailedApply(ctx, run, req, res, err)
			if errclass.IsTerminal(err) {
				return applied{}, fail(ctx, rt, fmt.Sprintf("applying component %q: %v", req.Name, err))
			}
			return applied{}, fmt.Errorf("applying component %q: %w", req.Name, err)
		}
	}
	h, err := run.deployer.Health(ctx, req, res)
	if err != nil {
		return applied{}, fmt.Errorf("checking the health of component %q: %w", req.Name, err)
	}
	h.Status.Name = req.Name
	run.services.add(h.Status)
	waitHealthy := p.WaitHealthy == nil || *p.WaitHealthy
	if waitHealthy && !h.Status.Healthy {
		msg := fmt.Sprintf("component %q is not healthy yet", req.Name)
		if h.Status.Message != "" {
			msg += ": " + h.Status.Message
		}
		return applied{waiting: msg}, nil
	}
	if err := exportOutputs(rt.WorkflowContext, comp, h); err != nil {
		return applied{waiting: err.Error()}, nil
	}
	healthy := h.Status.Healthy
	ret := componentReturns{Healthy: &healthy, Message: h.Status.Message}
	if run.liveReturns {
		ret.Output, ret.Outputs = h.Output, h.Outputs
	}
	return applied{returns: ret}, nil
}

// noteFailedApply records the component as unhealthy in status.services
// after a failed apply, with its health checker's message (e.g. a Helm
// chart that does not exist) or else the apply error, so that the
// component says what is wrong and not only the step. A Helm chart that
// does not render with the values (*helm.RenderError) always gets the
// apply error: the health checker reads the stored release, which knows
// nothing of it ("not found", or the previous revision). A failing health
// check records nothing.
func noteFailedApply(ctx context.Context, run *runValues, req ComponentRequest, res []render.Resource, applyErr error) {
	h, err := run.deployer.Health(ctx, req, res)
	if err != nil {
		return
	}
	h.Status.Name = req.Name
	var renderErr *helmspec.RenderError
	if h.Status.Healthy || h.Status.Message == "" || errors.As(applyErr, &renderErr) {
		h.Status.Healthy = false
		h.Status.Message = "apply failed: " + applyErr.Error()
	}
	run.services.add(h.Status)
}

// exportOutputs evaluates the component's outputs[].valueFrom against
// {output, outputs} (the live objects) and stores each as a workflow
// variable. A value that does not exist yet is an error (the step waits).
func exportOutputs(wfCtx wfContext.Context, comp Component, h ComponentHealth) error {
	if len(comp.Outputs) == 0 {
		return nil
	}
	data := map[string]any{"output": h.Output, "outputs": h.Outputs}
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("component %q outputs: %w", comp.Name, err)
	}
	base := cuecontext.New().CompileBytes(b)
	for _, o := range comp.Outputs {
		v, err := value.LookupValueByScript(base, o.ValueFrom)
		if err != nil || !v.Exists() || v.Err() != nil {
			return fmt.Errorf("component %q waits for output %q: valueFrom %q has no value yet", comp.Name, o.Name, o.ValueFrom)
		}
		if err := wfCtx.SetVar(v, strings.Split(o.Name, ".")...); err != nil {
			return fmt.Errorf("component %q output %q: %w", comp.Name, o.Name, err)
		}
	}
	return nil
}

// readVar reads a workflow variable as JSON data.
func readVar(wfCtx wfContext.Context, path string) (any, error) {
	if wfCtx == nil {
		return nil, fmt.Errorf("no workflow context")
	}
	v, err := wfCtx.GetVar(strings.Split(path, ".")...)
	if err != nil {
		return nil, err
	}
	b, err := v.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// setPath sets m[a][b]... = v for the dotted path "a.b...", creating
// objects on the way; an existing non-object on the way is an error.
func setPath(m map[string]any, path string, v any) error {
	parts := strings.Split(path, ".")
	cur := m
	for i, p := range parts {
		if p == "" {
			return fmt.Errorf("empty segment")
		}
		if i == len(parts)-1 {
			cur[p] = v
			return nil
		}
		next, ok := cur[p]
		if !ok || next == nil {
			nm := map[string]any{}
			cur[p] = nm
			cur = nm
			continue
		}
		nm, ok := next.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is not an object", strings.Join(parts[:i+1], "."))
		}
		cur = nm
	}
	return nil
}

func deepCopyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return deepCopyMap(t)
	case []any:
		out := make([]any, len(t))
		for i := range t {
			out[i] = deepCopyValue(t[i])
		}
		return out
	}
	return v
}

// split returns the main workload and the auxiliary objects by output
// name of rendered resources (trait outputs keyed "<output>").
func split(res []render.Resource) (map[string]any, map[string]any) {
	var output map[string]any
	outputs := map[string]any{}
	for _, r := range res {
		if r.IsWorkload() {
			output = r.Object.Object
			continue
		}
		if r.Output != "" {
			outputs[r.Output] = r.Object.Object
		}
	}
	if len(outputs) == 0 {
		outputs = nil
	}
	return output, outputs
}
