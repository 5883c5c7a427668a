package tenancy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// Object names what an Application wants to read or write, for Check.
type Object struct {
	// Cluster is the target cluster ("" or "local": the hub).
	Cluster string
	// Kind of the object ("ConfigMap", "HelmRelease", ...).
	Kind string
	// Namespace is "" for a cluster-scoped object (or, with Name empty, a
	// list across all namespaces).
	Namespace, Name string
}

func (o Object) String() string {
	s := o.Kind
	switch {
	case o.Namespace != "" && o.Name != "":
		s += " " + o.Namespace + "/" + o.Name
	case o.Name != "":
		s += " " + o.Name
	case o.Namespace != "":
		s += " in namespace " + o.Namespace
	default:
		s += " in every namespace"
	}
	if !isHub(o.Cluster) {
		s += " in cluster " + o.Cluster
	}
	return s
}

func isHub(cluster string) bool { return cluster == "" || cluster == v1beta1.ClusterLocal }

// ScopeError says an Application may not use an object outside its scope.
type ScopeError struct {
	App     string
	Object  Object
	Allowed []string
}

func (e *ScopeError) Error() string {
	where := "namespace " + e.Allowed[0]
	if len(e.Allowed) > 1 {
		where = "namespaces " + strings.Join(e.Allowed, ", ")
	}
	what := "other namespaces"
	if e.Object.Namespace == "" {
		what = "cluster-scoped objects and other namespaces"
	}
	return fmt.Sprintf("%s is outside the scope of Application %s: it may only use %s here (%s need the controller flag --allow-cross-namespace-resources)",
		e.Object, e.App, where, what)
}

// Check returns a *ScopeError when the Tenant may not use o: an object
// outside the Application's namespace — or, on a member cluster, outside
// the namespaces its topology policies name — or a cluster-scoped object,
// unless AllowCrossNamespace.
func (t Tenant) Check(o Object) error {
	if t.AllowCrossNamespace {
		return nil
	}
	allowed := []string{t.App.Namespace}
	if !isHub(o.Cluster) {
		for _, ns := range t.MemberNamespaces {
			if !slices.Contains(allowed, ns) {
				allowed = append(allowed, ns)
			}
		}
	}
	if o.Namespace != "" && slices.Contains(allowed, o.Namespace) {
		return nil
	}
	return &ScopeError{App: t.App.String(), Object: o, Allowed: allowed}
}
