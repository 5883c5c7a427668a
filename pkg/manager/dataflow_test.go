package manager_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

// hostConfigDefinition renders a ConfigMap holding the host it is given:
// the consumer of a value produced in another cluster.
const hostConfigDefinition = `
apiVersion: core.oam.dev/v1beta1
kind: ComponentDefinition
metadata:
  name: host-config
  namespace: oamflow-system
spec:
  workload:
    definition: {apiVersion: v1, kind: ConfigMap}
  schematic:
    cue:
      template: |
        output: {
          apiVersion: "v1"
          kind:       "ConfigMap"
          metadata: name: context.name
          data: host: parameter.host
        }
        parameter: host: string
`

// webInput links web to db by a component input (db's cluster IP);
// webDependsOn by dependsOn.
const (
	webInput = `
  properties: {host: unset}
  inputs:
  - {from: db-host, parameterKey: host}`
	webDependsOn = `
  properties: {host: fixed}
  dependsOn: [db]`
)

// dataflowApp deploys component db (a Service) to member xc-east and
// component web (a ConfigMap holding db's cluster IP, a component input)
// to member xc-west, one deploy step each; dbSpec is the Service's spec.
func dataflowApp(t *testing.T, ns, name, dbSpec, mode string) *v1beta1.Application {
	t.Helper()
	return linkedApp(t, ns, name, dbSpec, mode, webInput)
}

// linkedApp is dataflowApp with web linked to db by link.
func linkedApp(t *testing.T, ns, name, dbSpec, mode, link string) *v1beta1.Application {
	t.Helper()
	return tenantApp(t, ns, name, `
components:
- name: db
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: Service, metadata: {name: db}, spec: `+dbSpec+`}]
  outputs:
  - {name: db-host, valueFrom: output.spec.clusterIP}
- name: web
  type: host-config`+link+`
policies:
- {name: east, type: topology, properties: {clusters: [xc-east]}}
- {name: west, type: topology, properties: {clusters: [xc-west]}}
- {name: only-db, type: override, properties: {selector: [db], components: []}}
- {name: only-web, type: override, properties: {selector: [web], components: []}}
workflow:
  mode: {steps: `+mode+`}
  steps:
  - {name: deploy-db, type: deploy, properties: {policies: [east, only-db]}}
  - {name: deploy-web, type: deploy, properties: {policies: [west, only-web]}}
`, nil)
}

// TestCrossClusterDataFlow: a deploy step on one member consumes a
// component output produced by a deploy step on another member. The value
// arrives (db's cluster IP on east lands in web's ConfigMap on west); when
// the producer fails for good, the consumer fails at once, naming the
// producer step and component, instead of waiting until its timeout.
func TestCrossClusterDataFlow(t *testing.T) {
	ctx := context.Background()
	c := env.Client
	east, west := envtest.New(t), envtest.New(t)
	require.NoError(t, ignoreExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "oamflow-system"}})))
	ns := "dataflow"
	require.NoError(t, ignoreExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))
	joinMember(t, "xc-east", east, nil)
	joinMember(t, "xc-west", west, nil)
	def := &v1beta1.ComponentDefinition{}
	require.NoError(t, yaml.Unmarshal([]byte(hostConfigDefinition), def))
	require.NoError(t, ignoreExists(c.Create(ctx, def)))
	o := testOptions()
	o.DefaultStepTimeout = 5 * time.Minute
	startManager(t, o)

	t.Run("TheValueArrives", func(t *testing.T) {
		for _, mode := range []string{"StepByStep", "DAG"} {
			t.Run(mode, func(t *testing.T) {
				name := "flow-" + map[string]string{"StepByStep": "seq", "DAG": "dag"}[mode]
				app := dataflowApp(t, ns, name, `{ports: [{port: 5432}]}`, mode)
				require.NoError(t, c.Create(ctx, app))
				defer deleteApp(t, app)
				got := waitPhase(t, app, common.ApplicationRunning, common.ApplicationWorkflowFailed)
				require.Equal(t, common.ApplicationRunning, got.Status.Phase, dumpWorkflow(got))

				svc := &corev1.Service{}
				require.NoError(t, east.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, svc))
				require.NotEmpty(t, svc.Spec.ClusterIP)
				cm := &corev1.ConfigMap{}
				require.NoError(t, west.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, cm))
				assert.Equal(t, svc.Spec.ClusterIP, cm.Data["host"], "db's address on east reached web on west")
				assert.True(t, apierrors.IsNotFound(east.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &corev1.ConfigMap{})), "web is not on east")
				assert.True(t, apierrors.IsNotFound(west.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, &corev1.Service{})), "db is not on west")
			})
		}
	})

	t.Run("AFailedProducerFailsTheConsumer", func(t *testing.T) {
		// An invalid Service type: the member's API server refuses it
		// (Invalid), which is terminal.
		app := dataflowApp(t, ns, "flow-broken", `{type: Bogus, ports: [{port: 5432}]}`, "DAG")
		require.NoError(t, c.Create(ctx, app))
		defer deleteApp(t, app)
		got := failsAtOnce(t, app, "the consumer")
		steps := map[string]string{}
		phases := map[string]string{}
		for _, s := range got.Status.Workflow.Steps {
			steps[s.Name] = s.Message
			phases[s.Name] = string(s.Phase)
		}
		assert.Equal(t, "failed", phases["deploy-db"], "%+v", got.Status.Workflow.Steps)
		assert.Equal(t, "failed", phases["deploy-web"], "%+v", got.Status.Workflow.Steps)
		assert.Contains(t, steps["deploy-web"], `"deploy-db"`, "the consumer names the producer step")
		assert.Contains(t, steps["deploy-web"], `"db"`, "the consumer names the producer component")
		assert.Contains(t, steps["deploy-web"], `"db-host"`, "the consumer names the value")
		assert.True(t, apierrors.IsNotFound(west.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &corev1.ConfigMap{})), "nothing applied for the consumer")
	})

	t.Run("DependsOnAcrossClusters", func(t *testing.T) {
		app := linkedApp(t, ns, "flow-after", `{ports: [{port: 5432}]}`, "DAG", webDependsOn)
		require.NoError(t, c.Create(ctx, app))
		got := waitPhase(t, app, common.ApplicationRunning, common.ApplicationWorkflowFailed)
		require.Equal(t, common.ApplicationRunning, got.Status.Phase, dumpWorkflow(got))
		svc, cm := &corev1.Service{}, &corev1.ConfigMap{}
		require.NoError(t, east.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, svc))
		require.NoError(t, west.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, cm))
		assert.False(t, cm.CreationTimestamp.Before(&svc.CreationTimestamp), "web (west) created after db (east): %s < %s", cm.CreationTimestamp, svc.CreationTimestamp)
		deleteApp(t, app)
	})

	t.Run("AFailedDependencyFailsTheDependent", func(t *testing.T) {
		app := linkedApp(t, ns, "flow-after-broken", `{type: Bogus, ports: [{port: 5432}]}`, "DAG", webDependsOn)
		require.NoError(t, c.Create(ctx, app))
		defer deleteApp(t, app)
		got := failsAtOnce(t, app, "the dependent")
		var web string
		for _, s := range got.Status.Workflow.Steps {
			if s.Name == "deploy-web" {
				web = s.Message
			}
		}
		assert.Equal(t, `not run: component "web" depends on component "db", which cannot be deployed: step "deploy-db" failed`, web)
		assert.True(t, apierrors.IsNotFound(west.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &corev1.ConfigMap{})), "nothing applied for the dependent")
	})
}

// failsAtOnce waits (a minute at most, far below the step timeout) until
// app's workflow failed and returns it; who says what should fail.
func failsAtOnce(t *testing.T, app *v1beta1.Application, who string) *v1beta1.Application {
	t.Helper()
	got := &v1beta1.Application{}
	if !assert.Eventually(t, func() bool {
		return env.Client.Get(context.Background(), client.ObjectKeyFromObject(app), got) == nil && got.Status.Phase == common.ApplicationWorkflowFailed
	}, 60*time.Second, 200*time.Millisecond) {
		t.Fatalf("%s does not fail at once: %s", who, dumpWorkflow(got))
	}
	return got
}

// deleteApp deletes app and waits until it is gone, while its member
// clusters still run (a later test's manager would otherwise finish the
// deletion against members that are gone).
func deleteApp(t *testing.T, app *v1beta1.Application) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, client.IgnoreNotFound(env.Client.Delete(ctx, app)))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(app), &v1beta1.Application{}))
	}, 60*time.Second, 200*time.Millisecond, "%s/%s is not deleted", app.Namespace, app.Name)
}

// dumpWorkflow prints the phase and the workflow steps of app.
func dumpWorkflow(app *v1beta1.Application) string {
	out := string(app.Status.Phase)
	if app.Status.Workflow == nil {
		return out
	}
	for _, s := range app.Status.Workflow.Steps {
		out += "\n  " + s.Name + " " + string(s.Phase) + " (" + s.Reason + "): " + s.Message
	}
	return out
}
