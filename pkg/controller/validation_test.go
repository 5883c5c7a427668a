package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cli"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/webhook"
)

// TestOneValidationEverywhere runs one table of Applications through every
// entry point that validates them — the controller (Parsed condition and
// Warning events), the admission webhook (denial message and warnings),
// `oamflow up` and `oamflow dry-run` (error and warnings) — against the
// same API server, definitions and cluster registry, and asserts that they
// say the same thing word for word: appfile.Validate decides for all of
// them.
func TestOneValidationEverywhere(t *testing.T) {
	e := env(t)
	reg, err := multicluster.NewRegistry(e.Client, e.Config)
	require.NoError(t, err)
	h := newHarness(t, harnessOpt{with: []Option{WithClusterResolver(reg)}})
	builtins, err := appfile.NewFSSource(definitions.FS, ".")
	require.NoError(t, err)
	// The controller's own definition source (its default).
	validator := webhook.NewApplicationValidator(webhook.SourceFactoryFn(func(ns string) appfile.DefinitionSource {
		return appfile.Chain(appfile.NewClusterSource(h.c, ns, "oamflow-system"), builtins)
	}), reg)
	kubeconfig := writeKubeconfig(t, e.Config)

	cases := []struct {
		reason string
		name   string
		spec   string
		// invalid: the app is refused, with this message everywhere
		// (checked to contain each of these lines).
		invalid []string
		// warnings: the app is accepted, with these warnings everywhere.
		warnings []string
	}{
		{
			reason: "a typo in a property is named with what was meant",
			name:   "typo",
			spec: `
components:
- name: web
  type: webservice
  properties: {image: nginx, imagePulPolicy: Always}
`,
			invalid: []string{`spec.components[0].properties.imagePulPolicy: unknown property; did you mean imagePullPolicy? (component "web")`},
		},
		{
			reason: "every problem at once: unknown types, a missing property, a wrong type, an unregistered cluster",
			name:   "many",
			spec: `
components:
- name: web
  type: webservic
- name: api
  type: webservice
  properties: {port: 80}
  traits:
  - {type: scaler, properties: {replicas: many}}
policies:
- {name: far, type: topology, properties: {clusters: [local, member-9]}}
workflow:
  steps:
  - {name: go, type: deploi}
`,
			invalid: []string{
				`spec.components[0].type: unknown component type "webservic" (no component definition of that name) (component "web")`,
				`spec.components[1].properties.image: missing required property (expected string) (component "api")`,
				`spec.components[1].traits[0].properties.replicas: expected int & >=0, got string "many" (component "api", trait "scaler")`,
				`spec.workflow.steps[0].type: unknown workflow-step type "deploi" (no workflow-step definition of that name) (workflow step "go")`,
				`spec.policies[0].properties.clusters[1]: cluster "member-9" not registered (no cluster Secret in namespace oamflow-system;`,
			},
		},
		{
			reason: "workflow steps naming a component or a policy the Application does not have",
			name:   "steps",
			spec: `
components:
- {name: web, type: webservice, properties: {image: nginx}}
policies:
- {name: here, type: topology, properties: {clusters: [local]}}
workflow:
  steps:
  - {name: a, type: apply-component, properties: {component: wbe}}
  - name: g
    type: step-group
    subSteps:
    - {name: b, type: deploy, properties: {policies: [here, hree]}}
`,
			invalid: []string{
				`spec.workflow.steps[0].properties.component: unknown component "wbe" (the Application's components: web) (workflow step "a")`,
				`spec.workflow.steps[1].subSteps[0].properties.policies[1]: unknown policy "hree" (the Application's policies: here) (workflow step "b")`,
			},
		},
		{
			reason: "a trait outside its appliesToWorkloads is a warning, and the app is deployed",
			name:   "warned",
			spec: `
components:
- name: agent
  type: daemon
  properties: {image: nginx}
  traits:
  - {type: hpa, properties: {max: 3}}
`,
			warnings: []string{`spec.components[0].traits[0].type: trait "hpa" applies to deployments.apps, statefulsets.apps, autodetects.core.oam.dev, not to component type "daemon" (workload daemonsets.apps, DaemonSet, daemonset, daemonsets.apps, DaemonSet.apps); rendering it anyway (component "agent", trait "hpa")`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			app := h.app(tc.name, tc.spec)
			file := writeApp(t, app)

			// The controller.
			_, err := h.reconcile(app)
			require.NoError(t, err)
			parsed := meta.FindStatusCondition(h.get(app).Status.Conditions, common.ConditionParsed)
			require.NotNil(t, parsed)

			// The webhook.
			raw, err := json.Marshal(app)
			require.NoError(t, err)
			resp := validator.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Create, Namespace: app.Namespace, Object: runtime.RawExtension{Raw: raw},
			}})

			// dry-run (online: the cluster's definitions and registry) and up.
			dryOut, dryErrOut, dryErr := runCLI(kubeconfig, "dry-run", "-f", file)
			upOut, _, upErr := runCLI(kubeconfig, "up", "-f", file)

			if tc.invalid != nil {
				want := parsed.Message
				assert.Equal(t, common.ReasonInvalidApplication, parsed.Reason)
				for _, l := range tc.invalid {
					assert.Contains(t, want, l)
				}
				assert.False(t, resp.Allowed)
				require.NotNil(t, resp.Result)
				assert.Equal(t, want, resp.Result.Message, "webhook denial")
				require.Error(t, dryErr)
				assert.Equal(t, want, dryErr.Error(), "dry-run")
				require.Error(t, upErr)
				assert.Equal(t, want, upErr.Error(), "up")
				assert.True(t, isExitUserError(dryErr) && isExitUserError(upErr), "exit 1")
				assert.Empty(t, dryOut)
				return
			}
			assert.Equal(t, common.ReasonParsed, parsed.Reason, parsed.Message)
			assert.True(t, resp.Allowed)
			assert.Equal(t, tc.warnings, []string(resp.Warnings), "admission warnings")
			require.NoError(t, dryErr)
			require.NoError(t, upErr)
			events := strings.Join(h.events(), "\n")
			prefix := "Warning: application " + app.Namespace + "/" + app.Name + ": "
			for _, w := range tc.warnings {
				assert.Contains(t, events, "Warning "+common.ReasonValidationWarning+" "+w, "controller event")
				assert.Contains(t, dryErrOut, prefix+w+"\n", "dry-run stderr")
				assert.Contains(t, upOut, prefix+w+"\n", "up output")
			}
			assert.NotEmpty(t, dryOut, "rendered anyway")
		})
	}
}

func isExitUserError(err error) bool {
	var ue *cli.UserError
	return errors.As(err, &ue)
}

// runCLI runs the oamflow command line in-process.
func runCLI(kubeconfig string, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	root := cli.NewRootCommand(&out, &errOut)
	root.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
	err = root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// writeApp writes app (its metadata and spec) as an Application file.
func writeApp(t *testing.T, app *v1beta1.Application) string {
	t.Helper()
	doc := map[string]any{
		"apiVersion": v1beta1.GroupVersion.String(), "kind": "Application",
		"metadata": map[string]any{"name": app.Name, "namespace": app.Namespace},
		"spec":     app.Spec,
	}
	b, err := yaml.Marshal(doc)
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "app.yaml")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

// writeKubeconfig writes a kubeconfig for the test API server.
func writeKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
	return path
}
