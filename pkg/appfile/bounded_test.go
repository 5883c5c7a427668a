package appfile

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/cuex"
)

// portsDef checks its ports pairwise, as webservice's checks do: cheap
// for a few ports, quadratic for many.
const portsDef = `ports: {
	type: "component"
	attributes: workload: definition: {apiVersion: "apps/v1", kind: "Deployment"}
}
template: {
	parameter: ports: [...{port: int}]
	_clash: [for i, a in parameter.ports for j, b in parameter.ports if i < j && a.port == b.port {a.port}]
	parameter: _noClash: len(_clash) & 0
	output: {
		apiVersion: "apps/v1"
		kind:       "Deployment"
		spec: ports: [for p in parameter.ports {containerPort: p.port}]
	}
}
`

func portsApp(t *testing.T, ns string, n int) *v1beta1.Application {
	t.Helper()
	ports := make([]string, n)
	for i := range ports {
		ports[i] = fmt.Sprintf("{port: %d}", i+1)
	}
	doc := fmt.Sprintf("apiVersion: core.oam.dev/v1beta1\nkind: Application\nmetadata: {name: app, namespace: %s}\nspec:\n  components: [{name: web, type: ports, properties: {ports: [%s]}}]\n"+suspendOnly, ns, strings.Join(ports, ","))
	a := &v1beta1.Application{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), a))
	return a
}

// One Application whose input makes the evaluation time out fails alone:
// others using the same definition on the same (shared) Engine, in other
// namespaces, validate before and after it, and it fails again on its own
// next attempt with its own error (not "does not compile").
func TestEvaluationTimeoutIsTheApplications(t *testing.T) {
	src, err := NewFSSource(fstest.MapFS{"defs/ports.cue": {Data: []byte(portsDef)}}, "defs")
	require.NoError(t, err)
	ctx := WithEngine(context.Background(), cuex.NewEngine(cuex.WithLimits(cuex.Limits{Timeout: 300 * time.Millisecond})))

	_, _, err = Validate(ctx, portsApp(t, "team-b", 3), src, nil)
	require.NoError(t, err, "before")
	for attempt := 0; attempt < 2; attempt++ {
		_, _, err = Validate(ctx, portsApp(t, "team-a", 20000), src, nil)
		require.Error(t, err)
		errs := validationErrors(t, err)
		require.Len(t, errs, 1)
		assert.Contains(t, errs[0], "spec.components[0].properties: ", "the failure is the component's properties'")
		assert.Contains(t, errs[0], "did not finish within 300ms")
		assert.NotContains(t, errs[0], "does not compile")

		_, _, err = Validate(ctx, portsApp(t, "team-b", 3), src, nil)
		require.NoError(t, err, "after attempt %d: another Application using the same definition is not affected", attempt)
		_, _, err = Validate(ctx, portsApp(t, "team-c", 4), src, nil)
		require.NoError(t, err, "after attempt %d: nor one with another input", attempt)
	}
}

// manyComponents is an Application of n components of type web, each with
// traits scaler traits.
func manyComponents(t testing.TB, n, traits int) *v1beta1.Application {
	t.Helper()
	var b strings.Builder
	b.WriteString("  components:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "    - {name: c%d, type: web, properties: {image: nginx, port: 80}", i)
		if traits > 0 {
			b.WriteString(", traits: [")
			for j := 0; j < traits; j++ {
				if j > 0 {
					b.WriteString(", ")
				}
				b.WriteString("{type: scaler, properties: {replicas: 1}}")
			}
			b.WriteString("]")
		}
		b.WriteString("}\n")
	}
	return app(t, b.String()+suspendOnly)
}

func TestValidateBudgets(t *testing.T) {
	big := manyComponents(t, 1, 0)
	big.Spec.Components[0].Properties = nil
	require.NoError(t, yaml.Unmarshal([]byte(`{image: "`+strings.Repeat("x", 2<<20)+`"}`), &big.Spec.Components[0].Properties))
	cases := []struct {
		reason  string
		app     *v1beta1.Application
		budgets *Budgets
		errs    []string
	}{
		{
			reason: "within the default budgets",
			app:    manyComponents(t, 3, 2),
		},
		{
			reason: "2,000 components are refused by the default component budget, naming the flag",
			app:    manyComponents(t, 2000, 0),
			errs:   []string{"spec.components: 2000 components; the limit is 500 (--max-components)"},
		},
		{
			reason:  "the budget is the flag's",
			app:     manyComponents(t, 4, 0),
			budgets: &Budgets{MaxComponents: 3},
			errs:    []string{"spec.components: 4 components; the limit is 3 (--max-components)"},
		},
		{
			reason:  "traits per component, each component named",
			app:     manyComponents(t, 2, 3),
			budgets: &Budgets{MaxTraitsPerComponent: 2},
			errs: []string{
				`spec.components[0].traits: 3 traits; the limit is 2 per component (--max-traits-per-component) (component "c0")`,
				`spec.components[1].traits: 3 traits; the limit is 2 per component (--max-traits-per-component) (component "c1")`,
			},
		},
		{
			reason: "the spec's size",
			app:    big,
			errs:   []string{"spec: 2097274 bytes; the limit is 1048576 (--max-application-bytes)"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			ctx := context.Background()
			if tc.budgets != nil {
				ctx = WithBudgets(ctx, *tc.budgets)
			}
			_, _, err := Validate(ctx, tc.app, testSource(t), nil)
			if tc.errs == nil {
				require.NoError(t, err)
				return
			}
			assert.Equal(t, tc.errs, validationErrors(t, err))
		})
	}
}

// BenchmarkValidateOverBudget: an Application over the component budget is
// refused without evaluating any of its components.
func BenchmarkValidateOverBudget(b *testing.B) {
	a := manyComponents(b, 2000, 1)
	src := testSource(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := Validate(context.Background(), a, src, nil); !IsInvalid(err) {
			b.Fatal(err)
		}
	}
}
