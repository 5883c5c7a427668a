// Package tenancy decides who oamflow acts as for an Application, and
// where the Application may act. It is the one place for both rules:
//
//   - Identity: the ServiceAccount named by the app.oam.dev/service-account-name
//     annotation in the Application's namespace; else the controller's
//     default ServiceAccount (--default-service-account, lockdown mode), in
//     the Application's namespace too; else — only when neither is set —
//     the controller itself (single-tenant mode, oamflow's behaviour
//     before tenancy existed). Every read and write made for the
//     Application (rendering reads, applies, deletes, Helm actions,
//     workflow providers, garbage collection) goes through a client that
//     impersonates the identity (user system:serviceaccount:<ns>:<name>,
//     KubeVela's form), on the hub and on member clusters alike.
//   - Scope: an Application reads and writes its own namespace, and on
//     member clusters the namespaces its topology policies name; other
//     namespaces and cluster-scoped objects need the controller flag
//     --allow-cross-namespace-resources (KubeVela's meaning).
//
// A Tenant (identity and scope of one Application) travels in the
// context of a reconcile (WithTenant): the Kubernetes API server does the
// same with the requesting user, and it lets the libraries oamflow hands
// a context to (Helm's action configuration, the workflow providers) act
// for the right Application without a parameter for it. Clients built by
// Clients refuse to work without a Tenant in the context, so a code path
// that forgot it fails instead of acting as the controller.
package tenancy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// Identity is who oamflow acts as for an Application: a ServiceAccount,
// or (the zero value) the controller itself.
type Identity struct {
	// Namespace and Name of the ServiceAccount; both empty for the
	// controller.
	Namespace, Name string
	// Source says where the identity came from (the annotation, the
	// controller flag, or nothing), for conditions and messages.
	Source Source
}

// Source is where an Identity came from.
type Source string

// Sources of an Identity.
const (
	// FromAnnotation: the Application's app.oam.dev/service-account-name.
	FromAnnotation Source = "annotation"
	// FromDefault: the controller's --default-service-account.
	FromDefault Source = "default"
	// FromController: neither; the controller acts as itself.
	FromController Source = "controller"
)

// IsController reports whether the identity is the controller itself.
func (i Identity) IsController() bool { return i.Name == "" }

// UserName is the user impersonated for the identity:
// system:serviceaccount:<namespace>:<name> ("" for the controller).
func (i Identity) UserName() string {
	if i.IsController() {
		return ""
	}
	return "system:serviceaccount:" + i.Namespace + ":" + i.Name
}

// String names the identity in messages: "serviceaccount team-a/deployer"
// or "the controller".
func (i Identity) String() string {
	if i.IsController() {
		return "the controller"
	}
	return "serviceaccount " + i.Namespace + "/" + i.Name
}

// Describe says, for the Application's Identity condition, who oamflow
// acts as and why.
func (i Identity) Describe() string {
	switch i.Source {
	case FromAnnotation:
		return fmt.Sprintf("acting as %s (annotation %s)", i, v1beta1.AnnoServiceAccountName)
	case FromDefault:
		return fmt.Sprintf("acting as %s (the controller's --default-service-account)", i)
	}
	return fmt.Sprintf("acting as the controller itself (single-tenant mode: no %s annotation and no --default-service-account)", v1beta1.AnnoServiceAccountName)
}

// Config is the controller's tenancy configuration (its flags).
type Config struct {
	// DefaultServiceAccount is the ServiceAccount, in each Application's
	// namespace, that Applications without the annotation act as
	// (--default-service-account). Empty: such Applications act as the
	// controller (single-tenant mode).
	DefaultServiceAccount string
	// AllowCrossNamespace lets Applications use other namespaces than their
	// own and cluster-scoped objects (--allow-cross-namespace-resources).
	// Nil: the mode's default — refused in lockdown, allowed in
	// single-tenant mode (as before tenancy existed, and as KubeVela's
	// default).
	AllowCrossNamespace *bool
}

// CrossNamespace reports whether Applications may use other namespaces and
// cluster-scoped objects.
func (c Config) CrossNamespace() bool {
	if c.AllowCrossNamespace != nil {
		return *c.AllowCrossNamespace
	}
	return !c.Lockdown()
}

// Lockdown reports whether every Application acts as a ServiceAccount
// (a default ServiceAccount is configured).
func (c Config) Lockdown() bool { return c.DefaultServiceAccount != "" }

// Validate checks the configuration's names.
func (c Config) Validate() error {
	if c.DefaultServiceAccount == "" {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(c.DefaultServiceAccount); len(errs) > 0 {
		return fmt.Errorf("--default-service-account %q is not a ServiceAccount name: %s", c.DefaultServiceAccount, strings.Join(errs, "; "))
	}
	return nil
}

// Describe says in one line how the controller acts for Applications, for
// its start-up log.
func (c Config) Describe() string {
	scope := "own namespace only (plus topology namespaces on member clusters)"
	if c.CrossNamespace() {
		scope = "any namespace and cluster-scoped objects (--allow-cross-namespace-resources)"
	}
	if c.Lockdown() {
		return fmt.Sprintf("lockdown: Applications act as their %s annotation's ServiceAccount, else ServiceAccount %q of their namespace; scope: %s",
			v1beta1.AnnoServiceAccountName, c.DefaultServiceAccount, scope)
	}
	return fmt.Sprintf("single-tenant: Applications without the %s annotation act as the controller itself (set --default-service-account for lockdown); scope: %s",
		v1beta1.AnnoServiceAccountName, scope)
}

// InvalidIdentityError says the Application's annotation does not name a
// ServiceAccount; it is the Application's to fix.
type InvalidIdentityError struct {
	App   types.NamespacedName
	Value string
	Why   string
}

func (e *InvalidIdentityError) Error() string {
	return fmt.Sprintf("application %s: metadata.annotations[%s]: %q is not a ServiceAccount name: %s",
		e.App, v1beta1.AnnoServiceAccountName, e.Value, e.Why)
}

// IdentityOf returns the identity app acts as under c.
func (c Config) IdentityOf(app *v1beta1.Application) (Identity, error) {
	if v, ok := app.Annotations[v1beta1.AnnoServiceAccountName]; ok {
		if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
			return Identity{}, &InvalidIdentityError{App: types.NamespacedName{Namespace: app.Namespace, Name: app.Name}, Value: v, Why: strings.Join(errs, "; ")}
		}
		return Identity{Namespace: app.Namespace, Name: v, Source: FromAnnotation}, nil
	}
	if c.DefaultServiceAccount != "" {
		return Identity{Namespace: app.Namespace, Name: c.DefaultServiceAccount, Source: FromDefault}, nil
	}
	return Identity{Source: FromController}, nil
}

// Tenant is one Application's identity and scope.
type Tenant struct {
	// App is the Application.
	App types.NamespacedName
	// Identity is who acts for it.
	Identity Identity
	// MemberNamespaces are the namespaces its topology policies name: it
	// may use them on member clusters (not on the hub).
	MemberNamespaces []string
	// AllowCrossNamespace lifts the scope: any namespace, cluster-scoped
	// objects too.
	AllowCrossNamespace bool
}

// TenantOf returns app's Tenant under c.
func (c Config) TenantOf(app *v1beta1.Application) (Tenant, error) {
	id, err := c.IdentityOf(app)
	if err != nil {
		return Tenant{}, err
	}
	return Tenant{
		App:                 types.NamespacedName{Namespace: app.Namespace, Name: app.Name},
		Identity:            id,
		MemberNamespaces:    TopologyNamespaces(app.Spec.Policies),
		AllowCrossNamespace: c.CrossNamespace(),
	}, nil
}

// Controller is the Tenant of work the controller does for itself (no
// Application): it acts as the controller with no scope limit.
func Controller() Tenant {
	return Tenant{Identity: Identity{Source: FromController}, AllowCrossNamespace: true}
}

// TopologyNamespaces returns the namespace properties of the topology
// policies, sorted, without duplicates.
func TopologyNamespaces(policies []common.AppPolicy) []string {
	var out []string
	for _, p := range policies {
		if p.Type != "topology" || p.Properties == nil || len(p.Properties.Raw) == 0 {
			continue
		}
		var props struct {
			Namespace string `json:"namespace"`
		}
		if json.Unmarshal(p.Properties.Raw, &props) != nil || props.Namespace == "" {
			continue
		}
		if !slices.Contains(out, props.Namespace) {
			out = append(out, props.Namespace)
		}
	}
	sort.Strings(out)
	return out
}

type tenantKey struct{}

// WithTenant returns ctx carrying t: what the clients of Clients act as.
func WithTenant(ctx context.Context, t Tenant) context.Context {
	return context.WithValue(ctx, tenantKey{}, t)
}

// From returns the Tenant of ctx.
func From(ctx context.Context) (Tenant, bool) {
	t, ok := ctx.Value(tenantKey{}).(Tenant)
	return t, ok
}
