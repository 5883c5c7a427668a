//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/e2e/framework"
)

// dfHostConfigDefinition renders a ConfigMap holding the host it is
// given: the consumer of a value produced in another cluster.
const dfHostConfigDefinition = `
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

// dfApp deploys component db (a Service) to member-1 and component web (a
// ConfigMap holding db's cluster IP, read as a component input) to
// member-2, one deploy step each, in DAG mode so that web waits for the
// value rather than for the step before it; dbSpec is the Service's spec.
func dfApp(t *testing.T, name, dbSpec string) *v1beta1.Application {
	t.Helper()
	app := &v1beta1.Application{}
	require.NoError(t, yaml.Unmarshal([]byte(`
apiVersion: core.oam.dev/v1beta1
kind: Application
metadata: {name: `+name+`, namespace: default}
spec:
  components:
  - name: db
    type: k8s-objects
    properties:
      objects: [{apiVersion: v1, kind: Service, metadata: {name: db}, spec: `+dbSpec+`}]
    outputs:
    - {name: db-host, valueFrom: output.spec.clusterIP}
  - name: web
    type: host-config
    properties: {host: unset}
    inputs:
    - {from: db-host, parameterKey: host}
  policies:
  - {name: east, type: topology, properties: {clusters: [member-1]}}
  - {name: west, type: topology, properties: {clusters: [member-2]}}
  - {name: only-db, type: override, properties: {selector: [db], components: []}}
  - {name: only-web, type: override, properties: {selector: [web], components: []}}
  workflow:
    mode: {steps: DAG}
    steps:
    - {name: deploy-db, type: deploy, properties: {policies: [east, only-db]}}
    - {name: deploy-web, type: deploy, properties: {policies: [west, only-web]}}
`), app))
	return app
}

// TestMultiClusterDataFlow is the acceptance test of cross-cluster data
// flow (issue 19): step 2 on member-2 consumes an output of step 1 on
// member-1 and the value arrives; when step 1 fails, step 2 fails at once
// naming the producer (step and component) and the value, and nothing of
// it reaches member-2.
func TestMultiClusterDataFlow(t *testing.T) {
	env := framework.Start(t, 3)
	hub := env.Cluster(t, "local")
	east, west := env.Cluster(t, "member-1"), env.Cluster(t, "member-2")
	for _, name := range []string{"member-1", "member-2"} {
		_, err := framework.Oamflow(t, hub.Kubeconfig, "cluster", "join", env.Cluster(t, name).Kubeconfig, "--name", name)
		require.NoError(t, err)
	}
	framework.StartController(t, hub)

	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1beta1.AddToScheme(s))
	hubClient, err := client.New(hub.Config, client.Options{Scheme: s})
	require.NoError(t, err)
	ctx := context.Background()
	def := &v1beta1.ComponentDefinition{}
	require.NoError(t, yaml.Unmarshal([]byte(dfHostConfigDefinition), def))
	require.NoError(t, hubClient.Create(ctx, def))

	t.Run("TheValueArrives", func(t *testing.T) {
		app := dfApp(t, "flow", `{ports: [{port: 5432}]}`)
		require.NoError(t, hubClient.Create(ctx, app))
		mcWaitRunning(t, hubClient, client.ObjectKeyFromObject(app), 3*time.Minute)
		svc := &corev1.Service{}
		require.NoError(t, east.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "db"}, svc))
		require.NotEmpty(t, svc.Spec.ClusterIP)
		cm := &corev1.ConfigMap{}
		require.NoError(t, west.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, cm))
		assert.Equal(t, svc.Spec.ClusterIP, cm.Data["host"], "db's address on member-1 reached web on member-2")
		assert.True(t, apierrors.IsNotFound(east.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, &corev1.ConfigMap{})), "web is only on member-2")
		assert.True(t, apierrors.IsNotFound(west.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "db"}, &corev1.Service{})), "db is only on member-1")
		require.NoError(t, hubClient.Delete(ctx, app))
	})

	t.Run("AFailedProducerFailsTheConsumerAtOnce", func(t *testing.T) {
		// member-1's API server refuses the Service (Invalid): terminal.
		app := dfApp(t, "flow-broken", `{type: Bogus, ports: [{port: 5432}]}`)
		require.NoError(t, hubClient.Create(ctx, app))
		// At once: well within the consumer's step timeout (10 min by
		// default), which is all it had before.
		var got *v1beta1.Application
		framework.WaitFor(t, 2*time.Minute, "the workflow failed", func(ctx context.Context) (bool, error) {
			a := &v1beta1.Application{}
			if err := hubClient.Get(ctx, client.ObjectKeyFromObject(app), a); err != nil {
				return false, err
			}
			got = a
			return a.Status.Phase == common.ApplicationWorkflowFailed, fmt.Errorf("phase %q, workflow %s", a.Status.Phase, mcWorkflowSummary(a))
		})
		t.Logf("workflow: %s", mcWorkflowSummary(got))
		var web, db *wfv1alpha1.StepStatus
		for i := range got.Status.Workflow.Steps {
			switch s := &got.Status.Workflow.Steps[i]; s.Name {
			case "deploy-web":
				web = &s.StepStatus
			case "deploy-db":
				db = &s.StepStatus
			}
		}
		require.NotNil(t, db)
		require.NotNil(t, web)
		assert.Equal(t, wfv1alpha1.WorkflowStepPhaseFailed, db.Phase)
		assert.Contains(t, db.Message, "member-1")
		assert.Equal(t, wfv1alpha1.WorkflowStepPhaseFailed, web.Phase)
		assert.Equal(t, `not run: input "db-host" cannot arrive: step "deploy-db", which deploys component "db" producing it, failed`, web.Message)
		assert.True(t, strings.Contains(got.Status.Workflow.Message, "deploy-db"), "the run names the failed producer: %s", got.Status.Workflow.Message)
		err := west.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, &corev1.ConfigMap{})
		assert.True(t, apierrors.IsNotFound(err), "nothing of the consumer reached member-2: %v", err)
		require.NoError(t, hubClient.Delete(ctx, app))
	})
}
