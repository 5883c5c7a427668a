package appfile

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/definition"
)

// Namespaces searched for definitions after the app's own.
const (
	SystemNamespace     = "oamflow-system"
	VelaSystemNamespace = "vela-system"
)

// clusterSource reads definitions from the API server.
type clusterSource struct {
	c          client.Reader
	namespaces []string
}

// NewClusterSource returns a DefinitionSource reading definition objects
// through c: the app's namespace first, then systemNamespace ("" means
// oamflow-system), then vela-system (for definitions installed for
// KubeVela). "name@vN" reads DefinitionRevision "<name>-vN" from the first
// of those namespaces that has it. c's scheme must know core.oam.dev/v1beta1.
func NewClusterSource(c client.Reader, appNamespace, systemNamespace string) DefinitionSource {
	if systemNamespace == "" {
		systemNamespace = SystemNamespace
	}
	var nss []string
	seen := map[string]bool{}
	for _, ns := range []string{appNamespace, systemNamespace, VelaSystemNamespace} {
		if ns != "" && !seen[ns] {
			seen[ns] = true
			nss = append(nss, ns)
		}
	}
	return &clusterSource{c: c, namespaces: nss}
}

func (s *clusterSource) Get(ctx context.Context, kind DefinitionKind, name string) (*Definition, error) {
	base, rev, err := SplitRevision(name)
	if err != nil {
		return nil, err
	}
	for _, ns := range s.namespaces {
		if rev > 0 {
			dr := &v1beta1.DefinitionRevision{}
			key := types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("%s-v%d", base, rev)}
			if err := s.c.Get(ctx, key, dr); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return nil, fmt.Errorf("reading DefinitionRevision %s: %w", key, err)
			}
			obj := revisionObject(dr, kind)
			if obj == nil {
				return nil, fmt.Errorf("DefinitionRevision %s holds a %s, not a %s definition", key, dr.Spec.DefinitionType, kind)
			}
			d, err := fromObject(obj, "cluster "+key.String())
			if err != nil {
				return nil, err
			}
			d.Name = base
			d.Revision = rev
			return d, nil
		}
		obj, err := definition.NewObject(kind)
		if err != nil {
			return nil, err
		}
		key := types.NamespacedName{Namespace: ns, Name: base}
		if err := s.c.Get(ctx, key, obj); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("reading %s %s: %w", kind.CRDKind(), key, err)
		}
		obj.GetObjectKind().SetGroupVersionKind(v1beta1.GroupVersion.WithKind(kind.CRDKind()))
		return fromObject(obj, "cluster "+key.String())
	}
	if rev > 0 {
		return nil, fmt.Errorf("%s %q revision %d (DefinitionRevision %s-v%d in %v): %w", kind, base, rev, base, rev, s.namespaces, ErrDefinitionNotFound)
	}
	return nil, fmt.Errorf("%s %q (namespaces %v): %w", kind, base, s.namespaces, ErrDefinitionNotFound)
}

// revisionObject returns the snapshot of kind held by a DefinitionRevision.
func revisionObject(dr *v1beta1.DefinitionRevision, kind DefinitionKind) client.Object {
	var obj client.Object
	switch kind {
	case KindComponent:
		if dr.Spec.ComponentDefinition != nil {
			obj = dr.Spec.ComponentDefinition.DeepCopy()
		}
	case KindTrait:
		if dr.Spec.TraitDefinition != nil {
			obj = dr.Spec.TraitDefinition.DeepCopy()
		}
	case KindPolicy:
		if dr.Spec.PolicyDefinition != nil {
			obj = dr.Spec.PolicyDefinition.DeepCopy()
		}
	case KindWorkflowStep:
		if dr.Spec.WorkflowStepDefinition != nil {
			obj = dr.Spec.WorkflowStepDefinition.DeepCopy()
		}
	}
	if obj != nil {
		obj.GetObjectKind().SetGroupVersionKind(v1beta1.GroupVersion.WithKind(kind.CRDKind()))
	}
	return obj
}
