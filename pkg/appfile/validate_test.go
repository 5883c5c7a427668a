package appfile

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/pkg/errclass"
)

// clustersFunc adapts a function to Clusters.
type clustersFunc func(policies []common.AppPolicy) error

func (f clustersFunc) ValidateTopologies(_ context.Context, policies []common.AppPolicy) error {
	return f(policies)
}

// unknownCluster is a Clusters error naming fields, as the registry's is.
type unknownCluster struct{ fields []FieldError }

func (e *unknownCluster) Error() string             { return "unknown clusters" }
func (e *unknownCluster) FieldErrors() []FieldError { return e.fields }

// suspendOnly is a workflow whose step needs no definition.
const suspendOnly = "  workflow: {steps: [{name: s, type: suspend}]}\n"

func TestValidate(t *testing.T) {
	refuse := clustersFunc(func([]common.AppPolicy) error {
		return &unknownCluster{fields: []FieldError{{Path: "spec.policies[0].properties.clusters[0]", Message: `cluster "mars" not registered`, Subject: `policy "eu"`}}}
	})
	unreachable := clustersFunc(func([]common.AppPolicy) error { return errors.New("cluster Secrets cannot be read") })
	cases := []struct {
		reason   string
		spec     string
		clusters Clusters
		// errs are the InvalidError's lines; nil: valid.
		errs []string
		// other is a substring of an error that is not the app's.
		other string
	}{
		{
			reason: "an Application without components is valid (KubeVela accepts it)",
			spec:   "  components: []\n",
		},
		{
			reason:   "cluster errors come with the parse errors, all at once",
			spec:     "  components:\n    - {name: a, type: job, properties: {image: 1}}\n  policies:\n    - {name: eu, type: topology, properties: {clusters: [mars]}}\n" + suspendOnly,
			clusters: refuse,
			errs: []string{
				`spec.components[0].properties.image: expected string, got int 1 (component "a")`,
				`spec.policies[0].properties.clusters[0]: cluster "mars" not registered (policy "eu")`,
			},
		},
		{
			reason:   "a cluster registry that cannot be read is not the Application's fault",
			spec:     "  components:\n    - {name: a, type: job, properties: {image: x}}\n" + suspendOnly,
			clusters: unreachable,
			other:    "cluster Secrets cannot be read",
		},
		{
			reason: "the default workflow's step types must have definitions",
			spec:   "  components:\n    - {name: a, type: job, properties: {image: x}}\n",
			errs:   []string{`spec.workflow: unknown workflow-step type "apply-component" (no workflow-step definition of that name) (workflow step "a")`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			src := testSource(t)
			a := app(t, tc.spec)
			af, warnings, err := Validate(context.Background(), a, src, tc.clusters)
			switch {
			case tc.other != "":
				require.Error(t, err)
				assert.False(t, IsInvalid(err))
				assert.Contains(t, err.Error(), tc.other)
			case tc.errs != nil:
				require.True(t, IsInvalid(err), "%v", err)
				assert.True(t, errclass.IsTerminal(err), "an invalid Application is not retried")
				assert.Equal(t, tc.errs, validationErrors(t, err))
				assert.Nil(t, af)
			default:
				require.NoError(t, err)
				require.NotNil(t, af)
				assert.Empty(t, warnings)
			}
		})
	}
}

func TestAnonymousPolicies(t *testing.T) {
	af, err := Parse(context.Background(), app(t, `
  components:
    - {name: a, type: job, properties: {image: x}}
  policies:
    - {type: topology, properties: {clusters: [local]}}
    - {name: eu, type: topology}
    - {type: replication, properties: {keys: [x]}}`), testSource(t))
	require.NoError(t, err)
	var names []string
	for _, p := range af.Policies {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"topology-auto-gen-0", "eu", "replication-auto-gen-2"}, names, "named <type>-auto-gen-<index> as KubeVela names them")
	assert.NotNil(t, af.Policy("topology-auto-gen-0"), "steps can refer to the generated name")
	assert.Empty(t, af.App.Spec.Policies[0].Name, "the Application itself is not changed")

	_, err = Parse(context.Background(), app(t, `
  components:
    - {name: a, type: job, properties: {image: x}}
  policies:
    - {type: topology}
    - {name: topology-auto-gen-0, type: topology}`), testSource(t))
	assert.Equal(t, []string{`spec.policies[1].name: duplicate policy name "topology-auto-gen-0" (also spec.policies[0])`}, validationErrors(t, err))
}

func TestOverrideSuppliedProperties(t *testing.T) {
	cases := []struct {
		reason  string
		spec    string
		errs    []string
		pending map[string]bool
	}{
		{
			reason: "a required property an override policy sets for the component is not missing",
			spec: `
  components:
    - {name: a, type: job}
    - {name: b, type: job, properties: {image: x}}
  policies:
    - {name: o, type: override, properties: {components: [{name: a, properties: {image: nginx}}]}}`,
			pending: map[string]bool{"a": true, "b": false},
		},
		{
			reason: "an entry by type, or by wildcard, supplies too",
			spec: `
  components:
    - {name: web-1, type: job}
    - {name: web-2, type: web}
  policies:
    - {name: o, type: override, properties: {components: [{type: job, properties: {image: x}}, {name: "web-*", properties: {image: y}}]}}`,
			pending: map[string]bool{"web-1": true, "web-2": true},
		},
		{
			reason: "an entry for another component does not",
			spec: `
  components:
    - {name: a, type: job}
  policies:
    - {name: o, type: override, properties: {components: [{name: b, properties: {image: nginx}}]}}`,
			errs: []string{`spec.components[0].properties.image: missing required property (expected string) (component "a")`},
		},
		{
			reason: "the component and trait types override entries name must exist",
			spec: `
  components:
    - {name: a, type: job, properties: {image: x}}
  policies:
    - {name: o, type: override, properties: {components: [{name: extra, type: jobb, traits: [{type: scalr}]}]}}`,
			errs: []string{
				`spec.policies[0].properties.components[0].type: unknown component type "jobb" (no component definition of that name) (policy "o")`,
				`spec.policies[0].properties.components[0].traits[0].type: unknown trait type "scalr" (no trait definition of that name) (policy "o")`,
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			af, err := Parse(context.Background(), app(t, tc.spec), testSource(t))
			if tc.errs != nil {
				assert.Equal(t, tc.errs, validationErrors(t, err))
				return
			}
			require.NoError(t, err)
			for name, want := range tc.pending {
				assert.Equal(t, want, af.Component(name).Pending, name)
			}
		})
	}
	// The deploy target's copy, overrides applied, checks what is left.
	_, err := Parse(context.Background(), app(t, `
  components:
    - {name: a, type: job}
  policies:
    - {name: o, type: override, properties: {components: [{name: a, properties: {image: nginx}}]}}`), testSource(t), OverridesApplied())
	assert.Equal(t, []string{`spec.components[0].properties.image: missing required property (expected string) (component "a")`}, validationErrors(t, err))
}

func TestOverrideEntryMatches(t *testing.T) {
	cases := []struct {
		reason     string
		entry      OverrideEntry
		name, typ  string
		match, add bool
	}{
		{"an empty name matches every component", OverrideEntry{}, "web", "webservice", true, false},
		{"a type alone matches the components of that type", OverrideEntry{Type: "worker"}, "web", "webservice", false, false},
		{"a name matches that component whatever its type", OverrideEntry{Name: "web", Type: "worker"}, "web", "webservice", true, true},
		{"a name matches whole names only", OverrideEntry{Name: "web"}, "web-2", "webservice", false, false},
		{"* is a wildcard", OverrideEntry{Name: "web-*"}, "web-2", "webservice", true, false},
		{"a name with a type adds the component when none matches", OverrideEntry{Name: "cache", Type: "worker"}, "web", "webservice", false, true},
		{"a wildcard never adds", OverrideEntry{Name: "cache-*", Type: "worker"}, "web", "webservice", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.match, tc.entry.Matches(tc.name, tc.typ))
			assert.Equal(t, tc.add, tc.entry.Adds())
		})
	}
}
