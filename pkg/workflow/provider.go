package workflow

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"cuelang.org/go/cue/cuecontext"
	"github.com/kubevela/pkg/cue/cuex"
	cuexruntime "github.com/kubevela/pkg/cue/cuex/runtime"
	wfContext "github.com/kubevela/workflow/pkg/context"
	"github.com/kubevela/workflow/pkg/cue/model/value"
	wferrors "github.com/kubevela/workflow/pkg/errors"
	"github.com/kubevela/workflow/pkg/providers/builtin"
	"github.com/kubevela/workflow/pkg/providers/config"
	"github.com/kubevela/workflow/pkg/providers/email"
	"github.com/kubevela/workflow/pkg/providers/http"
	"github.com/kubevela/workflow/pkg/providers/kube"
	"github.com/kubevela/workflow/pkg/providers/legacy"
	"github.com/kubevela/workflow/pkg/providers/metrics"
	wftime "github.com/kubevela/workflow/pkg/providers/time"
	providertypes "github.com/kubevela/workflow/pkg/providers/types"
	"github.com/kubevela/workflow/pkg/providers/util"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/oamflow/oamflow/pkg/helm"
	"github.com/oamflow/oamflow/pkg/render"
)

//go:embed cue/oam.cue
var oamTemplate string

//go:embed cue/op_oam.cue
var opOAMTemplate string

// NewCompiler returns the CUE compiler workflow steps are evaluated with.
// It serves the provider packages of kubevela/workflow (vela/kube,
// vela/builtin, vela/http, vela/util, vela/time, vela/email, vela/metrics,
// vela/config and the legacy flat vela/op) plus oamflow's vela/oam
// (#ApplyComponent, #RenderComponent), which are also reachable as
// op.#ApplyComponent / op.#RenderComponent for KubeVela step definitions,
// and vela/helm (#Install, #Uninstall, #Status, #Template; see WithHelm).
// builtin.#Suspend and op.#Suspend report their message parameter as the
// step's message (suspend.go; the library drops it). Actions with side
// effects (HTTP, e-mail) are performed once per step execution (once.go).
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
	builtinProviders := builtin.GetProviders()
	builtinProviders["suspend"] = suspendProvider()
	type pkg struct {
		name, template string
		fns            map[string]cuexruntime.ProviderFn
	}
	pkgs := []pkg{
		{"op", legacy.GetLegacyTemplate() + "\n" + opOAMTemplate, opProviders},
		{"oam", oamTemplate, oamProviders()},
		{"helm", helmTemplate, helmProviders(co.helm)},
		{"kube", kube.GetTemplate(), kube.GetProviders()},
		{"builtin", builtin.GetTemplate(), builtinProviders},
		{"http", http.GetTemplate(), http.GetProviders()},
		{"util", util.GetTemplate(), util.GetProviders()},
		{"time", wftime.GetTemplate(), wftime.GetProviders()},
		{"email", email.GetTemplate(), email.GetProviders()},
		{"metrics", metrics.GetTemplate(), metrics.GetProviders()},
		{"config", config.GetTemplate(), config.GetProviders()},
	}
	var packages []cuexruntime.Package
	for _, p := range pkgs {
		cp, err := cuexruntime.NewInternalPackage(p.name, p.template, withSideEffectsOnce(p.name, p.fns))
		if err != nil {
			return nil, fmt.Errorf("building CUE package vela/%s: %w", p.name, err)
		}
		packages = append(packages, cp)
	}
	return cuex.NewCompilerWithInternalPackages(packages...), nil
}

// componentParams are the $params of oam.#ApplyComponent and
// oam.#RenderComponent (and the fields of their op.* forms).
type componentParams struct {
	Component   string         `json:"component"`
	Cluster     string         `json:"cluster,omitempty"`
	Namespace   string         `json:"namespace,omitempty"`
	WaitHealthy *bool          `json:"waitHealthy,omitempty"`
	Properties  map[string]any `json:"properties,omitempty"`
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
				r, err := applyComponent(ctx, p.Params, p.RuntimeParams)
				if err != nil {
					return nil, err
				}
				return &providertypes.Returns[componentReturns]{Returns: *r}, nil
			}),
		"component-render": providertypes.GenericProviderFn[componentParams, providertypes.Returns[componentReturns]](
			func(ctx context.Context, p *providertypes.Params[componentParams]) (*providertypes.Returns[componentReturns], error) {
				r, err := renderComponent(ctx, p.Params, p.RuntimeParams)
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
				return applyComponent(ctx, p.Params, p.RuntimeParams)
			}),
		"component-render": providertypes.LegacyGenericProviderFn[componentParams, componentReturns](
			func(ctx context.Context, p *providertypes.LegacyParams[componentParams]) (*componentReturns, error) {
				return renderComponent(ctx, p.Params, p.RuntimeParams)
			}),
	}
}

// fail ends the step as failed (reason Action) with msg; the workflow then
// fails instead of retrying.
func fail(rt providertypes.RuntimeParams, msg string) error {
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
func prepare(comp Component, p componentParams, rt providertypes.RuntimeParams) (ComponentRequest, string, error) {
	props := deepCopyMap(comp.Properties)
	for _, in := range comp.Inputs {
		v, err := readVar(rt.WorkflowContext, in.From)
		if err != nil {
			return ComponentRequest{}, fmt.Sprintf("component %q waits for input %q", comp.Name, in.From), nil
		}
		if in.ParameterKey == "" {
			continue
		}
		if err := setPath(props, in.ParameterKey, v); err != nil {
			return ComponentRequest{}, "", fail(rt, fmt.Sprintf("component %q input %q: parameterKey %q: %v", comp.Name, in.From, in.ParameterKey, err))
		}
	}
	for k, v := range p.Properties {
		props[k] = v
	}
	return ComponentRequest{Name: comp.Name, Properties: props, Cluster: p.Cluster, Namespace: p.Namespace}, "", nil
}

// lookup returns the run and the component p names.
func lookup(ctx context.Context, p componentParams, rt providertypes.RuntimeParams) (*runValues, Component, error) {
	run, ok := runFrom(ctx)
	if !ok {
		return nil, Component{}, fmt.Errorf("vela/oam: no Application deployer in this workflow run")
	}
	comp, ok := run.deployer.Component(p.Component)
	if !ok {
		return nil, Component{}, fail(rt, fmt.Sprintf("component %q is not in spec.components", p.Component))
	}
	return run, comp, nil
}

func renderComponent(ctx context.Context, p componentParams, rt providertypes.RuntimeParams) (*componentReturns, error) {
	run, comp, err := lookup(ctx, p, rt)
	if err != nil {
		return nil, err
	}
	req, waiting, err := prepare(comp, p, rt)
	if err != nil {
		return nil, err
	}
	if waiting != "" {
		return nil, wait(rt, waiting)
	}
	res, err := run.deployer.Render(ctx, req)
	if err != nil {
		return nil, fail(rt, fmt.Sprintf("rendering component %q: %v", req.Name, err))
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
	res, err := applyOne(ctx, run, comp, p, rt)
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
func applyOne(ctx context.Context, run *runValues, comp Component, p componentParams, rt providertypes.RuntimeParams) (applied, error) {
	req, waiting, err := prepare(comp, p, rt)
	if err != nil || waiting != "" {
		return applied{waiting: waiting}, err
	}
	res, err := run.deployer.Render(ctx, req)
	if err != nil {
		return applied{}, fail(rt, fmt.Sprintf("rendering component %q: %v", req.Name, err))
	}
	objs := make(map[string][]*unstructured.Unstructured)
	var clusters []string
	for _, r := range res {
		if r.Reference {
			// A reference names existing objects; it is read, not applied.
			continue
		}
		if _, seen := objs[r.Cluster]; !seen {
			clusters = append(clusters, r.Cluster)
		}
		objs[r.Cluster] = append(objs[r.Cluster], r.Object)
	}
	for _, cl := range clusters {
		if err := run.deployer.Apply(ctx, cl, objs[cl]); err != nil {
			noteFailedApply(ctx, run, req, res, err)
			if IsTerminal(err) {
				return applied{}, fail(rt, fmt.Sprintf("applying component %q: %v", req.Name, err))
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
	return applied{returns: componentReturns{Output: h.Output, Outputs: h.Outputs, Healthy: &healthy, Message: h.Status.Message}}, nil
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
	var renderErr *helm.RenderError
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
