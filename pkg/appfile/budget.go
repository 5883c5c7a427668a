package appfile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// Budgets bound what one Application may ask of oamflow before any of it
// is evaluated. Every entry point (the controller, the admission webhook,
// `up` and `dry-run`) checks them in Validate with the same defaults and
// flag names, so an Application over a budget is refused the same way,
// fast, wherever it is seen. A zero field takes its default (the zero
// Budgets are the defaults); flags are checked by Validate, which refuses
// values below 1 so that --max-components=0 never silently means 500.
type Budgets struct {
	// MaxComponents bounds spec.components (flag --max-components).
	MaxComponents int
	// MaxTraitsPerComponent bounds spec.components[i].traits (flag
	// --max-traits-per-component).
	MaxTraitsPerComponent int
	// MaxApplicationBytes bounds the JSON size of the Application's spec
	// (flag --max-application-bytes).
	MaxApplicationBytes int
	// MaxRenderedObjects bounds the objects one rendering of the
	// Application produces, all components and traits for one target
	// (flag --max-rendered-objects). Checked where rendering happens: the
	// controller before a run applies anything, dry-run and up; the
	// webhook does not render.
	MaxRenderedObjects int
}

// The flags that set Budgets, named in the errors of an Application over
// one; every binary binds them under these names.
const (
	FlagMaxComponents         = "max-components"
	FlagMaxTraitsPerComponent = "max-traits-per-component"
	FlagMaxApplicationBytes   = "max-application-bytes"
	FlagMaxRenderedObjects    = "max-rendered-objects"
)

// DefaultBudgets returns the budgets used when none are set: 500
// components, 50 traits per component, a 1 MiB spec and 2,000 rendered
// objects. A Kubernetes
// object cannot be much larger than 1.5 MiB (etcd's request limit), and
// every component costs a CUE evaluation per reconcile.
func DefaultBudgets() Budgets {
	return Budgets{MaxComponents: 500, MaxTraitsPerComponent: 50, MaxApplicationBytes: 1 << 20, MaxRenderedObjects: 2000}
}

// Validate refuses budgets below 1, naming the flag: a budget of 0 would
// refuse every Application (or, defaulted, silently allow the default).
// Every binary calls it on the values its flags set.
func (b Budgets) Validate() error {
	var errs []error
	for _, f := range []struct {
		flag string
		v    int
	}{{FlagMaxComponents, b.MaxComponents}, {FlagMaxTraitsPerComponent, b.MaxTraitsPerComponent}, {FlagMaxApplicationBytes, b.MaxApplicationBytes}, {FlagMaxRenderedObjects, b.MaxRenderedObjects}} {
		if f.v < 1 {
			errs = append(errs, fmt.Errorf("--%s must be at least 1, got %d", f.flag, f.v))
		}
	}
	return errors.Join(errs...)
}

func (b Budgets) withDefaults() Budgets {
	d := DefaultBudgets()
	if b.MaxComponents <= 0 {
		b.MaxComponents = d.MaxComponents
	}
	if b.MaxTraitsPerComponent <= 0 {
		b.MaxTraitsPerComponent = d.MaxTraitsPerComponent
	}
	if b.MaxApplicationBytes <= 0 {
		b.MaxApplicationBytes = d.MaxApplicationBytes
	}
	if b.MaxRenderedObjects <= 0 {
		b.MaxRenderedObjects = d.MaxRenderedObjects
	}
	return b
}

type budgetsKey struct{}

// WithBudgets returns a context carrying b; Validate checks the
// Application against it (DefaultBudgets when ctx carries none).
func WithBudgets(ctx context.Context, b Budgets) context.Context {
	return context.WithValue(ctx, budgetsKey{}, b)
}

// BudgetsFrom returns the budgets ctx carries, defaults filled in.
func BudgetsFrom(ctx context.Context) Budgets {
	b, _ := ctx.Value(budgetsKey{}).(Budgets)
	return b.withDefaults()
}

// checkBudgets returns the field errors of app over b: one per budget
// exceeded, each naming the field, the value, the limit and its flag.
// It reads only counts and the spec's size, never the definitions.
func checkBudgets(app *v1beta1.Application, b Budgets) []FieldError {
	var errs []FieldError
	if raw, err := json.Marshal(app.Spec); err == nil && len(raw) > b.MaxApplicationBytes {
		errs = append(errs, FieldError{Path: "spec", Message: fmt.Sprintf("%d bytes; the limit is %d (--%s)", len(raw), b.MaxApplicationBytes, FlagMaxApplicationBytes)})
	}
	if n := len(app.Spec.Components); n > b.MaxComponents {
		errs = append(errs, FieldError{Path: "spec.components", Message: fmt.Sprintf("%d components; the limit is %d (--%s)", n, b.MaxComponents, FlagMaxComponents)})
	}
	for i, c := range app.Spec.Components {
		if n := len(c.Traits); n > b.MaxTraitsPerComponent {
			errs = append(errs, FieldError{Path: fmt.Sprintf("spec.components[%d].traits", i), Subject: fmt.Sprintf("component %q", c.Name),
				Message: fmt.Sprintf("%d traits; the limit is %d per component (--%s)", n, b.MaxTraitsPerComponent, FlagMaxTraitsPerComponent)})
		}
	}
	return errs
}

// CheckRenderedObjects refuses a rendering of af (one target: every
// component and trait) that produced n objects, more than the budget ctx
// carries: an *InvalidError naming the count, the limit and its flag.
func CheckRenderedObjects(ctx context.Context, af *AppFile, n int) error {
	b := BudgetsFrom(ctx)
	if n <= b.MaxRenderedObjects {
		return nil
	}
	return &InvalidError{App: af.Namespace + "/" + af.Name, Errors: []FieldError{{Path: "spec.components",
		Message: fmt.Sprintf("renders %d objects; the limit is %d (--%s)", n, b.MaxRenderedObjects, FlagMaxRenderedObjects)}}}
}
