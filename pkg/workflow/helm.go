package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	cuexruntime "github.com/kubevela/pkg/cue/cuex/runtime"
	providertypes "github.com/kubevela/workflow/pkg/providers/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/egress"
	"github.com/oamflow/oamflow/pkg/errclass"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/tenancy"
)

// CompilerOption configures NewCompiler.
type CompilerOption func(*compilerOptions)

type compilerOptions struct {
	helm helmspec.Releases
	http *egress.Policy
}

// WithHTTPPolicy makes the requests of vela/http and op.#HTTPDo under p
// (nil: egress.Default(), which refuses loopback and link-local targets).
func WithHTTPPolicy(p *egress.Policy) CompilerOption {
	return func(o *compilerOptions) { o.http = p }
}

// WithHelm serves the vela/helm package (#Install, #Uninstall, #Status,
// #Template) with c. Without it (or with nil) those actions fail the step
// saying Helm is not configured.
func WithHelm(c helmspec.Releases) CompilerOption {
	return func(o *compilerOptions) { o.helm = c }
}

// errNoHelm fails vela/helm actions of a compiler built without WithHelm.
var errNoHelm = errors.New("vela/helm: this controller has no Helm client configured")

// helmReleaseStatus is the $returns of helm.#Install and helm.#Status
// (#ReleaseStatus in cue/helm.cue).
type helmReleaseStatus struct {
	Release helmReleaseInfo   `json:"release"`
	Healthy bool              `json:"healthy"`
	Reason  string            `json:"reason,omitempty"`
	Message string            `json:"message"`
	Details map[string]string `json:"details,omitempty"`
	Ready   int               `json:"ready"`
	Total   int               `json:"total"`
}

type helmReleaseInfo struct {
	Name         string `json:"name"`
	Namespace    string `json:"namespace"`
	Revision     int    `json:"revision"`
	Status       string `json:"status,omitempty"`
	Chart        string `json:"chart,omitempty"`
	ChartVersion string `json:"chartVersion,omitempty"`
	AppVersion   string `json:"appVersion,omitempty"`
}

// helmUninstallParams are the $params of helm.#Uninstall.
type helmUninstallParams struct {
	Cluster string               `json:"cluster,omitempty"`
	Release helmspec.ReleaseSpec `json:"release"`
	Options helmspec.Options     `json:"options,omitempty"`
}

type helmUninstallReturns struct {
	Action string `json:"action"`
}

type helmTemplateReturns struct {
	Objects []map[string]any `json:"objects"`
}

// helmProvider implements vela/helm on a helmspec.Releases (nil: not configured).
type helmProvider struct{ c helmspec.Releases }

func helmProviders(c helmspec.Releases) map[string]cuexruntime.ProviderFn {
	h := helmProvider{c: c}
	return map[string]cuexruntime.ProviderFn{
		"install": providertypes.GenericProviderFn[map[string]any, providertypes.Returns[helmReleaseStatus]](
			func(ctx context.Context, p *providertypes.Params[map[string]any]) (*providertypes.Returns[helmReleaseStatus], error) {
				r, err := h.install(ctx, p.Params, p.RuntimeParams)
				if err != nil {
					return nil, err
				}
				return &providertypes.Returns[helmReleaseStatus]{Returns: *r}, nil
			}),
		"status": providertypes.GenericProviderFn[map[string]any, providertypes.Returns[helmReleaseStatus]](
			func(ctx context.Context, p *providertypes.Params[map[string]any]) (*providertypes.Returns[helmReleaseStatus], error) {
				r, err := h.status(ctx, p.Params, p.RuntimeParams)
				if err != nil {
					return nil, err
				}
				return &providertypes.Returns[helmReleaseStatus]{Returns: *r}, nil
			}),
		"uninstall": providertypes.GenericProviderFn[helmUninstallParams, providertypes.Returns[helmUninstallReturns]](
			func(ctx context.Context, p *providertypes.Params[helmUninstallParams]) (*providertypes.Returns[helmUninstallReturns], error) {
				r, err := h.uninstall(ctx, p.Params, p.RuntimeParams)
				if err != nil {
					return nil, err
				}
				return &providertypes.Returns[helmUninstallReturns]{Returns: *r}, nil
			}),
		"template": providertypes.GenericProviderFn[map[string]any, providertypes.Returns[helmTemplateReturns]](
			func(ctx context.Context, p *providertypes.Params[map[string]any]) (*providertypes.Returns[helmTemplateReturns], error) {
				r, err := h.template(ctx, p.Params, p.RuntimeParams)
				if err != nil {
					return nil, err
				}
				return &providertypes.Returns[helmTemplateReturns]{Returns: *r}, nil
			}),
	}
}

// appNamespace is the namespace of the Application running the step (the
// default release namespace, and where auth Secrets and valuesFrom objects
// are read): the app.oam.dev/namespace label of the run, else the process
// context's namespace, else "default".
func appNamespace(rt providertypes.RuntimeParams) string {
	if ns := rt.Labels[v1beta1.LabelAppNamespace]; ns != "" {
		return ns
	}
	if rt.ProcessContext != nil {
		if ns, ok := rt.ProcessContext.GetData("namespace").(string); ok && ns != "" {
			return ns
		}
	}
	return "default"
}

// runOwner is the Application running the step (its app.oam.dev labels
// of the run), when there is one.
func runOwner(rt providertypes.RuntimeParams) (helmspec.Owner, bool) {
	o := helmspec.Owner{Name: rt.Labels[v1beta1.LabelAppName], Namespace: rt.Labels[v1beta1.LabelAppNamespace]}
	return o, o.Name != "" && o.Namespace != ""
}

// helmRequest parses the $params of #Install, #Status and #Template: a
// cluster plus the properties of a helm component, with the release
// namespace defaulting to the Application's. There is no default release
// name.
func helmRequest(params map[string]any, rt providertypes.RuntimeParams) (helmspec.Request, error) {
	props := make(map[string]any, len(params))
	for k, v := range params {
		props[k] = v
	}
	cluster, _ := props["cluster"].(string)
	delete(props, "cluster")
	ns := appNamespace(rt)
	spec, err := helmspec.ParseSpecMap(props, helmspec.Defaults{Namespace: ns})
	if err != nil {
		return helmspec.Request{}, fmt.Errorf("vela/helm: $params: %w", err)
	}
	return helmspec.Request{Cluster: cluster, Namespace: ns, Spec: spec}, nil
}

// releaseObject is the virtual HelmRelease (package helm's routing
// contract) that installs spec through the Application's resource keeper.
func releaseObject(spec *helmspec.Spec) (*unstructured.Unstructured, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": m}}
	obj.SetAPIVersion(helmspec.APIVersion)
	obj.SetKind(helmspec.Kind)
	obj.SetName(spec.Release.Name)
	obj.SetNamespace(spec.Release.Namespace)
	return obj, nil
}

// install brings the release to the desired state. In an Application's
// workflow it goes through the Deployer as a virtual HelmRelease, so the
// release is recorded in the Application's ResourceTracker (deleting the
// Application, or a revision no longer installing it, uninstalls it);
// elsewhere it calls Ensure directly. A bad spec, a chart that cannot be
// had or does not render with the values (errclass.IsTerminal) fails the step at
// once, another operation on the release makes it wait, other errors are
// retried.
func (h helmProvider) install(ctx context.Context, params map[string]any, rt providertypes.RuntimeParams) (*helmReleaseStatus, error) {
	if h.c == nil {
		return nil, fail(ctx, rt, errNoHelm.Error())
	}
	req, err := helmRequest(params, rt)
	if err != nil {
		return nil, fail(ctx, rt, err.Error())
	}
	what := fmt.Sprintf("installing helm release %s/%s", req.Spec.Release.Namespace, req.Spec.Release.Name)
	if run, ok := runFrom(ctx); ok {
		obj, err := releaseObject(req.Spec)
		if err != nil {
			return nil, fail(ctx, rt, fmt.Sprintf("%s: %v", what, err))
		}
		err = run.deployer.Apply(ctx, req.Cluster, []*unstructured.Unstructured{obj})
		switch {
		case err == nil:
		case errors.Is(err, helmspec.ErrOperationInProgress):
			return nil, wait(rt, fmt.Sprintf("%s: %v", what, err))
		case errclass.IsTerminal(err):
			return nil, fail(ctx, rt, fmt.Sprintf("%s: %v", what, err))
		default:
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	} else {
		res, err := h.c.Ensure(ctx, req)
		switch {
		case err == nil:
		case res.Action == helmspec.ActionPending || errors.Is(err, helmspec.ErrOperationInProgress):
			return nil, wait(rt, fmt.Sprintf("%s: %v", what, err))
		case errclass.IsTerminal(err):
			return nil, fail(ctx, rt, fmt.Sprintf("%s: %v", what, err))
		default:
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	hh, err := h.c.Status(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("reading helm release %s/%s: %w", req.Spec.Release.Namespace, req.Spec.Release.Name, err)
	}
	return releaseStatus(hh, req.Spec), nil
}

func (h helmProvider) status(ctx context.Context, params map[string]any, rt providertypes.RuntimeParams) (*helmReleaseStatus, error) {
	if h.c == nil {
		return nil, fail(ctx, rt, errNoHelm.Error())
	}
	req, err := helmRequest(params, rt)
	if err != nil {
		return nil, fail(ctx, rt, err.Error())
	}
	if err := checkReleaseScope(ctx, req.Cluster, req.Spec.Release.Namespace, req.Spec.Release.Name); err != nil {
		return nil, fail(ctx, rt, fmt.Sprintf("reading helm release %s/%s: %v", req.Spec.Release.Namespace, req.Spec.Release.Name, err))
	}
	hh, err := h.c.Status(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("reading helm release %s/%s: %w", req.Spec.Release.Namespace, req.Spec.Release.Name, err)
	}
	return releaseStatus(hh, req.Spec), nil
}

// checkReleaseScope refuses a release outside the scope of the Application
// running the step (package tenancy), if any.
func checkReleaseScope(ctx context.Context, cluster, namespace, name string) error {
	t, ok := tenancy.From(ctx)
	if !ok {
		return nil
	}
	return t.Check(tenancy.Object{Cluster: cluster, Kind: helmspec.Kind, Namespace: namespace, Name: name})
}

func (h helmProvider) uninstall(ctx context.Context, p helmUninstallParams, rt providertypes.RuntimeParams) (*helmUninstallReturns, error) {
	if h.c == nil {
		return nil, fail(ctx, rt, errNoHelm.Error())
	}
	if p.Release.Name == "" {
		return nil, fail(ctx, rt, "vela/helm: $params.release.name: Required value: the name of the release to uninstall")
	}
	ns := p.Release.Namespace
	if ns == "" {
		ns = appNamespace(rt)
	}
	what := fmt.Sprintf("uninstalling helm release %s/%s", ns, p.Release.Name)
	if err := checkReleaseScope(ctx, p.Cluster, ns, p.Release.Name); err != nil {
		return nil, fail(ctx, rt, fmt.Sprintf("%s: %v", what, err))
	}
	var res helmspec.Result
	var err error
	if owner, ok := runOwner(rt); ok {
		// In an Application's workflow, only a release the Application
		// owns is uninstalled.
		res, err = h.c.UninstallOwned(ctx, p.Cluster, ns, p.Release.Name, owner, p.Options)
	} else {
		res, err = h.c.Uninstall(ctx, p.Cluster, ns, p.Release.Name, p.Options)
	}
	if err != nil {
		if errclass.IsTerminal(err) {
			return nil, fail(ctx, rt, fmt.Sprintf("%s: %v", what, err))
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &helmUninstallReturns{Action: string(res.Action)}, nil
}

func (h helmProvider) template(ctx context.Context, params map[string]any, rt providertypes.RuntimeParams) (*helmTemplateReturns, error) {
	if h.c == nil {
		return nil, fail(ctx, rt, errNoHelm.Error())
	}
	req, err := helmRequest(params, rt)
	if err != nil {
		return nil, fail(ctx, rt, err.Error())
	}
	objs, err := h.c.Template(ctx, req)
	if err != nil {
		var ce *helmspec.ChartError
		if errclass.IsTerminal(err) || !errors.As(err, &ce) {
			// Not found, unsafe, or a chart that does not render with
			// these values: the same spec fails the same way again.
			return nil, fail(ctx, rt, fmt.Sprintf("rendering helm release %s/%s: %v", req.Spec.Release.Namespace, req.Spec.Release.Name, err))
		}
		return nil, fmt.Errorf("rendering helm release %s/%s: %w", req.Spec.Release.Namespace, req.Spec.Release.Name, err)
	}
	out := &helmTemplateReturns{Objects: make([]map[string]any, 0, len(objs))}
	for _, o := range objs {
		out.Objects = append(out.Objects, o.Object)
	}
	return out, nil
}

// releaseStatus converts a helm.Health; a release that does not exist yet
// keeps the requested name and namespace.
func releaseStatus(hh helmspec.Health, spec *helmspec.Spec) *helmReleaseStatus {
	r := hh.Release
	if r.Name == "" {
		r.Name, r.Namespace = spec.Release.Name, spec.Release.Namespace
	}
	return &helmReleaseStatus{
		Release: helmReleaseInfo{Name: r.Name, Namespace: r.Namespace, Revision: r.Revision, Status: r.Status,
			Chart: r.Chart, ChartVersion: r.ChartVersion, AppVersion: r.AppVersion},
		Healthy: hh.Healthy, Reason: hh.Reason, Message: hh.Message, Details: hh.Details(),
		Ready: hh.Ready, Total: hh.Total,
	}
}
