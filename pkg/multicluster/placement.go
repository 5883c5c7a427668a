package multicluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/render"
)

// Placement is a cluster and namespace to deploy to (render's type: Cluster
// "local" is the hub, Namespace "" keeps the app's namespace).
type Placement = render.Placement

// ResolvePlacements resolves one topology policy against the live registry.
// props are the policy's properties (the KubeVela topology contract):
//
//	clusters: [...string]               // by name; each must be registered
//	clusterLabelSelector: {key: value}  // members carrying every label ({} = every cluster, the hub included)
//	clusterSelector: {key: value}       // deprecated alias of clusterLabelSelector
//	allowEmpty: bool                    // an empty selection is not an error
//	namespace: string                   // namespace in each cluster ("" = the app's)
//
// The placements are the named clusters, then the selected ones, without
// duplicates; a topology with neither clusters nor a selector (only a
// namespace, say) places on the hub. Errors name policy and the field:
// a property of the wrong type, an unknown cluster name (wrapping a
// *ClusterNotFoundError), or an empty selection without allowEmpty.
// The placement rules are render.PlanDeploy's; this adds the checks
// against the registry.
func (r *Registry) ResolvePlacements(ctx context.Context, policy string, props map[string]any) ([]Placement, error) {
	names, err := checkTopology(props)
	if err != nil {
		return nil, fmt.Errorf("topology policy %q: %w", policy, err)
	}
	if err := r.ValidateClusters(ctx, names); err != nil {
		return nil, fmt.Errorf("topology policy %q properties.clusters: %w", policy, err)
	}
	af := &appfile.AppFile{Policies: []*appfile.Policy{{Name: policy, Type: appfile.PolicyTopology, Properties: props}}}
	plan, err := render.PlanDeploy(ctx, af, []string{policy}, r)
	if err != nil {
		return nil, err
	}
	out := make([]Placement, 0, len(plan.Targets))
	for _, t := range plan.Targets {
		out = append(out, t.Placement)
	}
	return out, nil
}

// checkTopology checks the types of a topology's properties and returns
// the cluster names it lists.
func checkTopology(props map[string]any) ([]string, error) {
	var names []string
	if v, ok := props["clusters"]; ok && v != nil {
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("properties.clusters: expected a list of cluster names, got %s", typeName(v))
		}
		for i, c := range list {
			s, ok := c.(string)
			if !ok || s == "" {
				return nil, fmt.Errorf("properties.clusters[%d]: expected a cluster name (non-empty string), got %s", i, typeName(c))
			}
			names = append(names, s)
		}
	}
	for _, key := range []string{"clusterLabelSelector", "clusterSelector"} {
		v, ok := props[key]
		if !ok || v == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("properties.%s: expected a map of label keys to values, got %s", key, typeName(v))
		}
		for _, k := range sortedKeys(m) {
			switch m[k].(type) {
			case string, bool, float64, int, int64:
			default:
				return nil, fmt.Errorf("properties.%s.%s: expected a label value (string), got %s", key, k, typeName(m[k]))
			}
		}
	}
	if v, ok := props["namespace"]; ok && v != nil {
		if _, ok := v.(string); !ok {
			return nil, fmt.Errorf("properties.namespace: expected a string, got %s", typeName(v))
		}
	}
	if v, ok := props["allowEmpty"]; ok && v != nil {
		if _, ok := v.(bool); !ok {
			return nil, fmt.Errorf("properties.allowEmpty: expected a boolean, got %s", typeName(v))
		}
	}
	return names, nil
}

// typeName names the JSON type of v for error messages.
func typeName(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		if v == "" {
			return "an empty string"
		}
		return "a string"
	case bool:
		return "a boolean"
	case float64, int, int64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// UnknownClustersError says which fields of an Application name clusters
// that are not registered. It unwraps to the *ClusterNotFoundError
// (errors.Is ErrClusterNotFound).
type UnknownClustersError struct {
	// Fields are the fields naming unknown clusters, in spec order.
	Fields []UnknownClusterField
	// NotFound lists the unknown names.
	NotFound *ClusterNotFoundError
}

// UnknownClusterField is one field naming a cluster that is not registered.
type UnknownClusterField struct {
	// Path is spec.policies[i].properties.clusters[j].
	Path string
	// Policy is the topology policy's name.
	Policy string
	// Cluster is the unknown name.
	Cluster string
}

func (e *UnknownClustersError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = fmt.Sprintf("%s: %q", f.Path, f.Cluster)
	}
	return fmt.Sprintf("%s: %v", strings.Join(parts, ", "), e.NotFound)
}

// Unwrap returns the *ClusterNotFoundError.
func (e *UnknownClustersError) Unwrap() error { return e.NotFound }

// FieldErrors are the Application's errors: one per field naming an
// unknown cluster (appfile.Validate reports them with the others).
func (e *UnknownClustersError) FieldErrors() []appfile.FieldError {
	out := make([]appfile.FieldError, len(e.Fields))
	for i, f := range e.Fields {
		nf := &ClusterNotFoundError{Names: []string{f.Cluster}}
		if e.NotFound != nil {
			nf.Namespace = e.NotFound.Namespace
		}
		out[i] = appfile.FieldError{Path: f.Path, Message: nf.Error(), Subject: fmt.Sprintf("policy %q", f.Policy)}
	}
	return out
}

// ValidateTopologies checks, before anything is deployed, that every
// cluster a topology policy of policies (an Application's
// spec.policies) names in properties.clusters is registered ("local"
// always is). The error is an *UnknownClustersError naming each field
// (spec.policies[i].properties.clusters[j]) and the unknown names; other
// errors are those of reading the registry. Properties that do not decode
// or are not a list of names are left to the policy's own validation.
func (r *Registry) ValidateTopologies(ctx context.Context, policies []common.AppPolicy) error {
	var fields []UnknownClusterField
	unknown := map[string]bool{}
	for i, p := range policies {
		if p.Type != appfile.PolicyTopology {
			continue
		}
		props, err := appfile.DecodeProperties(p.Properties)
		if err != nil {
			continue
		}
		list, _ := props["clusters"].([]any)
		for j, v := range list {
			name, ok := v.(string)
			if !ok || IsLocal(name) {
				continue
			}
			err := r.ValidateClusters(ctx, []string{name})
			switch {
			case errors.Is(err, ErrClusterNotFound):
				policy := p.Name
				if policy == "" {
					policy = appfile.AutoPolicyName(p.Type, i)
				}
				fields = append(fields, UnknownClusterField{Path: fmt.Sprintf("spec.policies[%d].properties.clusters[%d]", i, j), Policy: policy, Cluster: name})
				unknown[name] = true
			case err != nil:
				return fmt.Errorf("spec.policies[%d] (%s): checking cluster %q: %w", i, p.Name, name, err)
			}
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	return &UnknownClustersError{Fields: fields, NotFound: &ClusterNotFoundError{Names: sortedKeys(unknown), Namespace: r.namespace}}
}
