package appfile

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

func testSource(t testing.TB) *LocalSource {
	t.Helper()
	src, err := NewLocalSource("testdata/defs")
	require.NoError(t, err)
	return src
}

func app(t testing.TB, spec string) *v1beta1.Application {
	t.Helper()
	a := &v1beta1.Application{}
	doc := "apiVersion: core.oam.dev/v1beta1\nkind: Application\nmetadata: {name: shop, namespace: prod}\nspec:\n" + spec
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), a))
	return a
}

func validationErrors(t *testing.T, err error) []string {
	t.Helper()
	var ve *InvalidError
	require.True(t, errors.As(err, &ve), "want a *InvalidError, got %v", err)
	out := make([]string, len(ve.Errors))
	for i, e := range ve.Errors {
		out[i] = e.String()
	}
	return out
}

func TestParseValidation(t *testing.T) {
	cases := []struct {
		reason string
		spec   string
		errs   []string
	}{
		{
			reason: "a valid app parses",
			spec: `
  components:
    - {name: web, type: web, properties: {image: nginx, port: 80}, traits: [{type: scaler, properties: {replicas: 2}}]}
    - {name: migrate, type: job, properties: {image: tool}, dependsOn: [web]}`,
		},
		{
			reason: "every property error is reported at once, with its field path",
			spec: `
  components:
    - name: a
      type: web
      properties: {image: 3, port: "80", colour: red}
      traits:
        - {type: scaler, properties: {replicas: x}}
    - name: b
      type: web
      properties: {port: 99999}`,
			errs: []string{
				`spec.components[0].properties.colour: unknown property; allowed: image, labels, port, replicas (component "a")`,
				`spec.components[0].properties.image: expected string, got int 3 (component "a")`,
				`spec.components[0].properties.port: expected int & >0 & <65536, got string "80" (component "a")`,
				`spec.components[0].traits[0].properties.replicas: expected int & >=0, got string "x" (component "a", trait "scaler")`,
				`spec.components[1].properties.image: missing required property (expected string) (component "b")`,
				`spec.components[1].properties.port: expected int & >0 & <65536, got int 99999: invalid value 99999 (out of bound <65536) (component "b")`,
			},
		},
		{
			reason: "unknown types of every kind",
			spec: `
  components:
    - {name: a, type: webz, properties: {image: x}, traits: [{type: scalar}]}
  policies:
    - {name: p, type: topolgy}
  workflow:
    steps:
      - {name: s, type: apply-objekt}`,
			errs: []string{
				`spec.components[0].type: unknown component type "webz" (no component definition of that name) (component "a")`,
				`spec.components[0].traits[0].type: unknown trait type "scalar" (no trait definition of that name) (component "a", trait "scalar")`,
				`spec.policies[0].type: unknown policy type "topolgy" (no policy definition of that name) (policy "p")`,
				`spec.workflow.steps[0].type: unknown workflow-step type "apply-objekt" (no workflow-step definition of that name) (workflow step "s")`,
			},
		},
		{
			reason: "dependsOn naming unknown components, itself, or forming a cycle",
			spec: `
  components:
    - {name: a, type: job, properties: {image: x}, dependsOn: [b]}
    - {name: b, type: job, properties: {image: x}, dependsOn: [c]}
    - {name: c, type: job, properties: {image: x}, dependsOn: [a, ghost, c]}`,
			errs: []string{
				`spec.components[2].dependsOn[1]: unknown component "ghost" (component "c")`,
				`spec.components[2].dependsOn[2]: component "c" depends on itself (component "c")`,
				`spec.components[0].dependsOn: dependency cycle: a → b → c → a (component "a")`,
			},
		},
		{
			reason: "duplicate names of components, policies and steps",
			spec: `
  components:
    - {name: a, type: job, properties: {image: x}}
    - {name: a, type: job, properties: {image: z}}
  policies:
    - {name: p, type: topology}
    - {name: p, type: topology}
  workflow:
    steps:
      - {name: s, type: suspend}
      - {name: s, type: suspend}`,
			errs: []string{
				`spec.components[1].name: duplicate component name "a" (also spec.components[0])`,
				`spec.policies[1].name: duplicate policy name "p" (also spec.policies[0])`,
				`spec.workflow.steps[1].name: duplicate step name "s" (also spec.workflow.steps[0]) (workflow step "s")`,
			},
		},
		{
			reason: "traits violating conflictsWith (appliesToWorkloads only warns, see TestParseWarnings)",
			spec: `
  components:
    - {name: j, type: job, properties: {image: x}, traits: [{type: scaler}]}
    - {name: w, type: web, properties: {image: x}, traits: [{type: scaler}, {type: hpa, properties: {max: 3}}]}`,
			errs: []string{
				`spec.components[1].traits[1].type: trait "hpa" conflicts with trait "scaler" (spec.components[1].traits[0]) (component "w", trait "hpa")`,
			},
		},
		{
			reason: "appliesToWorkloads of a trait on an autodetect component is left to rendering (the kind is that of the objects)",
			spec: `
  components:
    - {name: r, type: raw, properties: {objects: [{apiVersion: apps/v1, kind: Deployment}]}, traits: [{type: scaler}]}`,
		},
		{
			reason: "a required property supplied by inputs[].parameterKey is not missing",
			spec: `
  components:
    - {name: a, type: job, inputs: [{from: image-name, parameterKey: image}]}`,
		},
		{
			reason: "step properties are checked even though the step imports provider packages",
			spec: `
  components:
    - {name: a, type: job, properties: {image: x}}
  workflow:
    steps:
      - {name: s1, type: apply-object, properties: {value: {kind: ConfigMap}, cluster: 3}}
      - {name: s2, type: notify, properties: {url: "http://x"}, dependsOn: [s9]}
      - {name: s3, type: notify, inputs: [{from: msg, parameterKey: message}], properties: {url: "http://x"}, timeout: soon}`,
			errs: []string{
				`spec.workflow.steps[0].properties.cluster: expected string, got int 3 (workflow step "s1")`,
				`spec.workflow.steps[1].properties.message: missing required property (expected string) (workflow step "s2")`,
				`spec.workflow.steps[2].timeout: "soon" is not a duration (e.g. 30s, 5m) (workflow step "s3")`,
				`spec.workflow.steps[1].dependsOn[0]: unknown step "s9" (workflow step "s2")`,
			},
		},
		{
			reason: "names Kubernetes would reject: too long, non-ASCII, empty",
			spec: `
  components:
    - {name: this-component-name-is-far-too-long-to-be-a-kubernetes-label-value, type: job, properties: {image: x}}
    - {name: "café", type: job, properties: {image: x}}
    - {name: "", type: job, properties: {image: x}}`,
			errs: []string{
				`spec.components[0].name: component name "this-component-name-is-far-too-long-to-be-a-kubernetes-label-value" is not valid in Kubernetes object names and labels: must be no more than 63 characters`,
				`spec.components[1].name: component name "café" is not valid in Kubernetes object names and labels: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				`spec.components[2].name: component name is empty`,
			},
		},
		{
			reason: "a definition that does not compile is reported where it is used",
			spec: `
  components:
    - {name: a, type: web, properties: {image: x}, traits: [{type: broken, properties: {replicas: 1}}]}`,
			errs: []string{
				`spec.components[0].traits[0].type: trait definition "broken" cannot be used: it does not compile: trait "broken": missing ',' in struct literal (at testdata/defs/broken/broken.cue:7:11) (component "a", trait "broken")`,
			},
		},
		{
			reason: "properties must be an object",
			spec: `
  components:
    - {name: a, type: job, properties: [1, 2]}`,
			errs: []string{
				`spec.components[0].properties: properties must be an object, got a list (component "a")`,
				`spec.components[0].properties.image: missing required property (expected string) (component "a")`,
			},
		},
	}
	src := testSource(t)
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			af, err := Parse(context.Background(), app(t, tc.spec), src)
			if len(tc.errs) == 0 {
				require.NoError(t, err)
				require.NotNil(t, af)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.errs, validationErrors(t, err))
		})
	}
}

func TestParseWarnings(t *testing.T) {
	cases := []struct {
		reason   string
		spec     string
		warnings []string
	}{
		{
			// KubeVela's own examples attach expose to a daemon and
			// volumes to a task, and vela renders them.
			reason: "a trait outside its appliesToWorkloads is a warning, not an error",
			spec: `
  components:
    - {name: j, type: job, properties: {image: x}, traits: [{type: scaler}]}`,
			warnings: []string{`spec.components[0].traits[0].type: trait "scaler" applies to deployments.apps, not to component type "job" (workload Job, job, jobs.batch, Job.batch); rendering it anyway (component "j", trait "scaler")`},
		},
		{
			reason: "a replication policy is accepted, with a warning that it is not carried out",
			spec: `
  components:
    - {name: j, type: job, properties: {image: x}}
  policies:
    - {name: r, type: replication, properties: {keys: [a, b]}}`,
			warnings: []string{`spec.policies[0]: replication is not carried out: the selected components are deployed once, with an empty context.replicaKey (policy "r")`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			af, err := Parse(context.Background(), app(t, tc.spec), testSource(t))
			require.NoError(t, err)
			assert.Equal(t, tc.warnings, af.Warnings)
		})
	}
}

func TestDefaultWorkflow(t *testing.T) {
	cases := []struct {
		reason string
		spec   string
		mode   string
		steps  []string // "name:type<-deps"
	}{
		{
			reason: "one apply-component step per component, a DAG over dependsOn",
			spec: `
  components:
    - {name: db, type: job, properties: {image: x}}
    - {name: api, type: job, properties: {image: x}, dependsOn: [db]}`,
			mode:  ModeDAG,
			steps: []string{"db:apply-component<-", "api:apply-component<-db"},
		},
		{
			reason: "topology or override policies give a single deploy step",
			spec: `
  components:
    - {name: api, type: job, properties: {image: x}}
  policies:
    - {name: eu, type: topology, properties: {clusters: [a, b]}}`,
			mode:  ModeStepByStep,
			steps: []string{"deploy:deploy<-"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			af, err := Parse(context.Background(), app(t, tc.spec), testSource(t))
			require.NoError(t, err)
			require.True(t, af.Workflow.Default)
			assert.Equal(t, tc.mode, af.Workflow.Mode)
			var got []string
			for _, s := range af.Workflow.Steps {
				got = append(got, s.Name+":"+s.Type+"<-"+strings.Join(s.DependsOn, ","))
			}
			assert.Equal(t, tc.steps, got)
		})
	}
}

func TestExplicitWorkflowResolvesStepDefinitions(t *testing.T) {
	af, err := Parse(context.Background(), app(t, `
  components:
    - {name: a, type: job, properties: {image: x}}
  workflow:
    steps:
      - name: group
        type: step-group
        subSteps:
          - {name: apply, type: apply-object, properties: {value: {kind: ConfigMap}}}
          - {name: wait, type: suspend}`), testSource(t))
	require.NoError(t, err)
	require.Len(t, af.Workflow.Steps, 1)
	assert.Equal(t, ModeStepByStep, af.Workflow.Mode)
	assert.Equal(t, ModeDAG, af.Workflow.SubStepMode)
	sub := af.Workflow.Steps[0].SubSteps
	require.Len(t, sub, 2)
	d, err := sub[0].Definition(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "apply-object", d.Name)
	assert.Contains(t, d.Template(), `"vela/kube"`)
	d, err = sub[1].Definition(context.Background())
	require.NoError(t, err)
	assert.Nil(t, d, "suspend has no definition")
}
