// Package webhook is oamflow's validating admission webhook: it refuses
// Applications that the controller would refuse, at `kubectl apply` time,
// and definitions whose CUE does not compile.
//
// Applications are checked with appfile.Validate against the same
// definition source the controller reconciles with (the app's namespace,
// then the system namespace, then vela-system, then the built-in
// definitions), so the denial message is the controller's Parsed condition
// message, word for word (`application <ns>/<name> is invalid: <field
// path>: <what> (<component>)`), and its warnings are admission warnings.
//
// The handlers are plain admission.Handlers; Register adds them to a
// controller-runtime webhook server, and Configuration builds the
// ValidatingWebhookConfiguration that makes the API server call them.
package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
	"github.com/oamflow/oamflow/pkg/definition"
)

// Paths served by the webhook server.
const (
	ApplicationPath = "/validate-core-oam-dev-v1beta1-application"
	DefinitionPath  = "/validate-core-oam-dev-v1beta1-definition"
)

// SourceFactory returns the definitions an Application in namespace is
// parsed against. The controller's source is
// appfile.Chain(appfile.NewClusterSource(direct, namespace, systemNamespace), builtins).
type SourceFactory interface {
	Source(namespace string) appfile.DefinitionSource
}

// SourceFactoryFn adapts a function to SourceFactory.
type SourceFactoryFn func(namespace string) appfile.DefinitionSource

// Source calls fn.
func (fn SourceFactoryFn) Source(namespace string) appfile.DefinitionSource { return fn(namespace) }

// ApplicationValidator validates Applications on create and on updates
// that change the spec. Updates that leave the spec alone (finalizers,
// labels, annotations such as publishVersion) and updates of an
// Application being deleted are always admitted, so the controller can
// always remove its finalizer.
type ApplicationValidator struct {
	Sources SourceFactory
	// Topologies, when set, checks the clusters topology policies name,
	// as the controller's parse phase does (multicluster.Registry).
	Topologies appfile.Clusters
	// Budgets bound each Application (appfile.Budgets; zero: the defaults).
	Budgets appfile.Budgets
	// Engines, when set, lends each review the CUE Engine it evaluates
	// with; the manager's pool shares the controller's memo of results
	// and count of timed-out evaluations, and its Engines keep what they
	// compiled between reviews. Nil: each review compiles every template
	// it uses afresh.
	Engines *cuex.Pool
	// Identity, when set, checks who the Application would act as
	// (package tenancy) against the user writing it.
	Identity *IdentityChecker
	decoder  runtime.Decoder
}

// NewApplicationValidator returns a validator parsing against sources and
// checking topologies with topologies (may be nil).
func NewApplicationValidator(sources SourceFactory, topologies appfile.Clusters) *ApplicationValidator {
	return &ApplicationValidator{Sources: sources, Topologies: topologies, decoder: decoder()}
}

func decoder() runtime.Decoder {
	s := runtime.NewScheme()
	_ = v1beta1.AddToScheme(s)
	return serializer.NewCodecFactory(s).UniversalDeserializer()
}

// Handle implements admission.Handler. An Application that
// appfile.Validate finds invalid is denied with its message; its warnings
// come back as admission warnings (kubectl prints them).
func (v *ApplicationValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	app := &v1beta1.Application{}
	if _, _, err := v.decoder.Decode(req.Object.Raw, nil, app); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the Application: %w", err))
	}
	if app.Namespace == "" {
		app.Namespace = req.Namespace
	}
	ctx = appfile.WithBudgets(ctx, v.Budgets)
	var old *v1beta1.Application
	if req.Operation == admissionv1.Update {
		if app.DeletionTimestamp != nil {
			return admission.Allowed("being deleted")
		}
		old = &v1beta1.Application{}
		if _, _, err := v.decoder.Decode(req.OldObject.Raw, nil, old); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the old Application: %w", err))
		}
	}
	if v.Identity != nil {
		refusal, err := v.Identity.Check(ctx, req.UserInfo, old, app)
		if err != nil {
			// Who may act as whom cannot be told: refuse rather than admit.
			return admission.Errored(http.StatusInternalServerError, err)
		}
		if refusal != "" {
			return admission.Denied(refusal)
		}
	}
	if old != nil {
		if equality.Semantic.DeepEqual(old.Spec, app.Spec) {
			return admission.Allowed("spec unchanged")
		}
	}
	if v.Identity != nil {
		// In lockdown, targets outside the Application's scope that its
		// spec names are refused now, with the controller's message.
		if refusal := v.Identity.checkScope(app); refusal != "" {
			return admission.Denied(refusal)
		}
	}
	warnings, err := v.validate(ctx, old, app)
	if errors.Is(err, errNoEngine) {
		return admission.Errored(http.StatusServiceUnavailable, err)
	}
	if err == nil && v.Identity != nil {
		warnings = append(warnings, v.Identity.accessWarnings(ctx, app)...)
	}
	switch {
	case appfile.IsInvalid(err):
		return admission.Denied(err.Error()).WithWarnings(warnings...)
	case err != nil:
		// Not the Application's fault (a definition could not be read):
		// admit it and let the controller report and retry.
		ctrl.LoggerFrom(ctx).Info("admitting an Application that could not be validated", "application", app.Namespace+"/"+app.Name, "error", err.Error())
		return admission.Allowed("").WithWarnings(append(warnings, "not validated: "+err.Error())...)
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

// errNoEngine: no Engine of the pool was free before the review's
// context ended.
var errNoEngine = errors.New("waiting for a CUE engine to validate the Application")

// validate is ValidateUpdate with an Engine borrowed from v.Engines for
// it alone: reviews that need no CUE (the spec unchanged, the identity
// checks) never wait for one.
func (v *ApplicationValidator) validate(ctx context.Context, old, app *v1beta1.Application) ([]string, error) {
	if v.Engines != nil {
		engine, err := v.Engines.Get(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errNoEngine, err)
		}
		defer v.Engines.Put(engine)
		ctx = appfile.WithEngine(ctx, engine)
	}
	return ValidateUpdate(ctx, old, app, v.Sources.Source(app.Namespace), v.Topologies)
}

// ValidateUpdate is appfile.Validate, and when old is not nil (an update)
// also refuses changes to properties that the component's definition
// marks `// +immutable` (a check the controller does not make: it can only
// be made at admission, where the old object is known). It returns the
// warnings; an Application that cannot be deployed is an
// *appfile.InvalidError.
func ValidateUpdate(ctx context.Context, old, app *v1beta1.Application, src appfile.DefinitionSource, clusters appfile.Clusters) ([]string, error) {
	af, warnings, err := appfile.Validate(ctx, app, src, clusters)
	if err != nil || old == nil {
		return warnings, err
	}
	errs, err := checkImmutable(ctx, af, old, app)
	if err != nil {
		return warnings, err
	}
	if len(errs) > 0 {
		return warnings, &appfile.InvalidError{App: af.Namespace + "/" + af.Name, Errors: errs}
	}
	return warnings, nil
}

// DefinitionValidator refuses ComponentDefinitions, TraitDefinitions,
// PolicyDefinitions and WorkflowStepDefinitions whose CUE (template,
// health policy, custom status, status details) does not compile. It does
// not evaluate the template: `oamflow def vet` goes further.
type DefinitionValidator struct {
	engine  *cuex.Engine
	decoder runtime.Decoder
}

// NewDefinitionValidator returns a DefinitionValidator with its own CUE engine.
func NewDefinitionValidator() *DefinitionValidator {
	return &DefinitionValidator{engine: cuex.NewEngine(), decoder: decoder()}
}

// Handle implements admission.Handler.
func (v *DefinitionValidator) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	obj, _, err := v.decoder.Decode(req.Object.Raw, nil, nil)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the definition: %w", err))
	}
	def, ok := obj.(client.Object)
	if !ok || definition.KindOf(def) == "" {
		return admission.Allowed("not a definition")
	}
	if def.GetDeletionTimestamp() != nil {
		return admission.Allowed("being deleted")
	}
	warnings, err := CheckDefinition(v.engine, def)
	if err != nil {
		return admission.Denied(err.Error())
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

// ValidateDefinition compiles the CUE of a definition object (its template
// and its status health policy, custom status and details) and returns
// `<kind> "<name>" is invalid:` followed by every compile error with its
// position, one per line; nil when all of it compiles. Definitions without
// a CUE template pass.
func ValidateDefinition(engine *cuex.Engine, obj client.Object) error {
	_, err := CheckDefinition(engine, obj)
	return err
}

// CheckDefinition is ValidateDefinition that also returns the template's
// warnings (an import or provider action oamflow does not provide, legacy
// list arithmetic; see cuex.Template.Warnings), for admission warnings.
func CheckDefinition(engine *cuex.Engine, obj client.Object) ([]string, error) {
	kind := definition.KindOf(obj)
	d := &appfile.Definition{Kind: kind, Name: obj.GetName(), Origin: "admission", Object: obj}
	var problems, warnings []string
	if text := d.Template(); strings.TrimSpace(text) != "" {
		t, err := engine.Compile(d.CUESource(), text)
		if err != nil {
			problems = append(problems, "spec.schematic.cue.template: "+err.Error())
		} else {
			warnings = t.Warnings()
		}
	}
	if st := d.Status(); st != nil {
		for _, part := range []struct{ field, kind, text string }{
			{"healthPolicy", "health policy", st.HealthPolicy},
			{"customStatus", "custom status", st.CustomStatus},
			{"details", "status details", st.Details},
		} {
			if strings.TrimSpace(part.text) == "" {
				continue
			}
			if _, err := engine.Compile(cuex.Source{Kind: part.kind, Name: d.Name}, part.text); err != nil {
				problems = append(problems, "spec.status."+part.field+": "+err.Error())
			}
		}
	}
	if len(problems) == 0 {
		return warnings, nil
	}
	return nil, fmt.Errorf("%s %q is invalid:\n  %s", kind, obj.GetName(), strings.Join(problems, "\n  "))
}
