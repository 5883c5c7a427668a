package multicluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/placement"
)

// ResolvePlacements resolves one topology policy against the live registry
// (package placement's rules; props are the policy's properties) after
// checking that every cluster it names is registered. Errors name the
// policy and the field: a property of the wrong type, an unknown cluster
// name (wrapping a *ClusterNotFoundError), or an empty selection without
// allowEmpty (a *placement.NoMatchError).
func (r *Registry) ResolvePlacements(ctx context.Context, policy string, props map[string]any) ([]placement.Placement, error) {
	t, err := placement.Parse(policy, props)
	if err != nil {
		return nil, fmt.Errorf("topology policy %q: %w", policy, err)
	}
	if err := r.ValidateClusters(ctx, t.Clusters); err != nil {
		return nil, fmt.Errorf("topology policy %q properties.clusters: %w", policy, err)
	}
	res, err := placement.Resolve(ctx, []placement.Topology{t}, r)
	if err != nil {
		return nil, err
	}
	out := make([]placement.Placement, 0, len(res.Targets))
	for _, t := range res.Targets {
		out = append(out, t.Placement)
	}
	return out, nil
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
