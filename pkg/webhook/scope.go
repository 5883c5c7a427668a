package webhook

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/placement"
	"github.com/oamflow/oamflow/pkg/tenancy"
)

// memberCluster stands for "some member cluster" in scope checks: on
// every member the same namespaces are in scope (tenancy.Tenant.Check).
const memberCluster = "a member cluster"

// checkScope returns, in lockdown, why the targets of app known from its
// spec alone are outside its scope ("" when none is: every refusal is
// listed), each refusal being tenancy's own (Tenant.Check) after the field
// path that names the target: topology policies' namespace on the hub,
// the objects of k8s-objects components (their namespace, and
// cluster-scoped kinds as mapper tells them), ref-objects references, and
// the apply-object and read-object steps. Rendered objects are the
// controller's to check.
func (c *IdentityChecker) checkScope(app *v1beta1.Application) string {
	s := c.scope(app)
	if s == nil {
		return ""
	}
	return s.refusal()
}

// scope walks the targets of app known from its spec (nil outside
// lockdown, or when the Application may use any namespace).
func (c *IdentityChecker) scope(app *v1beta1.Application) *scopeCheck {
	if !c.Tenancy.Lockdown() {
		return nil
	}
	t, err := c.Tenancy.TenantOf(app)
	if err != nil || t.AllowCrossNamespace {
		return nil // an invalid identity is Check's refusal
	}
	var mapper meta.RESTMapper
	if c.Reviews != nil {
		mapper = c.Reviews.RESTMapper()
	}
	s := scopeCheck{tenant: t, mapper: mapper, namespace: app.Namespace}
	hub, member := placements(app)
	for i, p := range app.Spec.Policies {
		if p.Type != "topology" {
			continue
		}
		t, ok := topology(p.Name, p.Properties)
		if !ok || t.Namespace == "" || !t.TargetsHub() {
			continue
		}
		s.check(fmt.Sprintf("spec.policies[%d].properties.namespace (topology policy %q)", i, p.Name),
			tenancy.Object{Kind: "the topology's target", Namespace: t.Namespace})
	}
	for i, comp := range app.Spec.Components {
		at := fmt.Sprintf("spec.components[%d].properties.objects", i)
		// A pinned version (k8s-objects@v1) is the same definition.
		typ, _, _ := strings.Cut(comp.Type, "@")
		switch typ {
		case "helm":
			if _, ns := release(comp.Properties); ns != "" {
				field := fmt.Sprintf("spec.components[%d].properties.release.namespace (component %q)", i, comp.Name)
				if hub {
					s.check(field, tenancy.Object{Kind: "HelmRelease", Namespace: ns, Name: comp.Name})
				}
				if member {
					s.check(field, tenancy.Object{Cluster: memberCluster, Kind: "HelmRelease", Namespace: ns, Name: comp.Name})
				}
			}
		case "k8s-objects":
			var props struct {
				Objects []object `json:"objects"`
			}
			if decode(comp.Properties, &props) != nil {
				continue
			}
			for j, o := range props.Objects {
				field := fmt.Sprintf("%s[%d] (component %q)", at, j, comp.Name)
				if hub {
					s.checkObject(field, "", o)
				}
				if member {
					s.checkObject(field, memberCluster, o)
				}
			}
		case "ref-objects":
			var props struct {
				Objects []struct {
					Resource  string `json:"resource"`
					Name      string `json:"name"`
					Namespace string `json:"namespace"`
					Cluster   string `json:"cluster"`
				} `json:"objects"`
			}
			if decode(comp.Properties, &props) != nil {
				continue
			}
			for j, o := range props.Objects {
				if o.Namespace == "" {
					continue
				}
				s.check(fmt.Sprintf("%s[%d].namespace (component %q)", at, j, comp.Name),
					tenancy.Object{Cluster: o.Cluster, Kind: o.Resource, Namespace: o.Namespace, Name: o.Name})
			}
		}
	}
	if app.Spec.Workflow != nil {
		for i, step := range app.Spec.Workflow.Steps {
			s.checkStep(fmt.Sprintf("spec.workflow.steps[%d]", i), step.Name, step.Type, step.Properties)
			for j, sub := range step.SubSteps {
				s.checkStep(fmt.Sprintf("spec.workflow.steps[%d].subSteps[%d]", i, j), sub.Name, sub.Type, sub.Properties)
			}
		}
	}
	return &s
}

// object is the part of a Kubernetes object the scope depends on.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

type scopeCheck struct {
	tenant    tenancy.Tenant
	mapper    meta.RESTMapper
	namespace string
	refusals  []string
	// writes are the objects in scope the spec has the hub's identity
	// write (accessWarnings).
	writes []write
}

// write is an object the Application's identity will write on the hub.
type write struct {
	field     string
	resource  schema.GroupVersionResource
	namespace string
}

// check records the refusal of o, at field.
func (s *scopeCheck) check(field string, o tenancy.Object) bool {
	if err := s.tenant.Check(o); err != nil {
		s.refusals = append(s.refusals, field+": "+err.Error())
		return false
	}
	return true
}

// refusal is every refusal in one message ("" when there is none).
func (s *scopeCheck) refusal() string {
	switch len(s.refusals) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("application %s: %s", s.tenant.App, s.refusals[0])
	}
	return fmt.Sprintf("application %s (%d targets outside its scope):\n  %s", s.tenant.App, len(s.refusals), strings.Join(s.refusals, "\n  "))
}

// checkObject checks a whole object on cluster: its namespace (the
// Application's when it names none), or none for a cluster-scoped kind.
// A kind the mapper does not know is left to the controller.
func (s *scopeCheck) checkObject(field, cluster string, o object) {
	ns := o.Metadata.Namespace
	if ns == "" {
		ns = s.namespace
	}
	at := field + ".metadata.namespace"
	m := s.mapping(o)
	if m != nil && m.Scope.Name() != meta.RESTScopeNameNamespace {
		ns = ""
		at = field + ".kind"
	}
	if s.check(at, tenancy.Object{Cluster: cluster, Kind: o.Kind, Namespace: ns, Name: o.Metadata.Name}) &&
		m != nil && (cluster == "" || cluster == v1beta1.ClusterLocal) {
		s.writes = append(s.writes, write{field: field, resource: m.Resource, namespace: ns})
	}
}

// mapping is what the mapper knows of o's kind (nil: nothing).
func (s *scopeCheck) mapping(o object) *meta.RESTMapping {
	if s.mapper == nil || o.Kind == "" {
		return nil
	}
	gv, err := schema.ParseGroupVersion(o.APIVersion)
	if err != nil {
		return nil
	}
	m, err := s.mapper.RESTMapping(gv.WithKind(o.Kind).GroupKind(), gv.Version)
	if err != nil {
		return nil
	}
	return m
}

func (s *scopeCheck) checkStep(at, name, typ string, props *runtime.RawExtension) {
	typ, _, _ = strings.Cut(typ, "@")
	switch typ {
	case "helm-install":
		var p struct {
			Cluster string `json:"cluster"`
		}
		if rel, ns := release(props); ns != "" && decode(props, &p) == nil {
			s.check(fmt.Sprintf("%s.properties.release.namespace (step %q)", at, name),
				tenancy.Object{Cluster: p.Cluster, Kind: "HelmRelease", Namespace: ns, Name: rel})
		}
	case "apply-object":
		var p struct {
			Value   object `json:"value"`
			Cluster string `json:"cluster"`
		}
		if decode(props, &p) == nil {
			s.checkObject(fmt.Sprintf("%s.properties.value (step %q)", at, name), p.Cluster, p.Value)
		}
	case "read-object":
		var p struct {
			Kind, Name, Namespace, Cluster string
		}
		if decode(props, &p) == nil && p.Namespace != "" {
			if p.Kind == "" {
				p.Kind = "Application"
			}
			s.check(fmt.Sprintf("%s.properties.namespace (step %q)", at, name),
				tenancy.Object{Cluster: p.Cluster, Kind: p.Kind, Namespace: p.Namespace, Name: p.Name})
		}
	}
}

// placements tells whether app's components may be placed on the hub and
// on member clusters, from its topology policies alone (package
// placement's rules: no topology places on the hub).
func placements(app *v1beta1.Application) (hub, member bool) {
	topologies := false
	for _, p := range app.Spec.Policies {
		if p.Type != "topology" {
			continue
		}
		topologies = true
		t, ok := topology(p.Name, p.Properties)
		if !ok {
			continue
		}
		hub = hub || t.TargetsHub()
		member = member || t.TargetsMembers()
	}
	return hub || !topologies, member
}

// topology decodes a topology policy's properties (false: they do not
// decode; validation reports that).
func topology(name string, raw *runtime.RawExtension) (placement.Topology, bool) {
	var props map[string]any
	if decode(raw, &props) != nil {
		return placement.Topology{}, false
	}
	t, err := placement.Parse(name, props)
	return t, err == nil
}

func decode(raw *runtime.RawExtension, into any) error {
	if raw == nil || len(raw.Raw) == 0 {
		return fmt.Errorf("no properties")
	}
	return json.Unmarshal(raw.Raw, into)
}

// release is properties.release's name and namespace of a helm component
// or helm-install step ("" for what it does not name).
func release(raw *runtime.RawExtension) (name, namespace string) {
	var props struct {
		Release struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"release"`
	}
	if decode(raw, &props) != nil {
		return "", ""
	}
	return props.Release.Name, props.Release.Namespace
}
