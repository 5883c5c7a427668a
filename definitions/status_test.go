package definitions_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/render"
)

// statusCase is one evaluation of a built-in's health policy, custom status
// and details against live objects, as the controller reads them.
type statusCase struct {
	reason string
	kind   appfile.DefinitionKind
	def    string
	// output is the live main workload (context.output), as YAML.
	output string
	// outputs are the live objects by output name (context.outputs), as YAML.
	outputs string
	// parameter is the component's or trait's properties, as YAML.
	parameter string

	healthy bool
	message string
	details map[string]string
}

// decode reads YAML the way client-go reads objects from the API server:
// whole numbers become int64, as in unstructured.Unstructured.
func decode(t *testing.T, y string, into any) {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	require.NoError(t, err)
	require.NoError(t, utiljson.Unmarshal(j, into))
}

func obj(t *testing.T, y string) map[string]any {
	t.Helper()
	if y == "" {
		return nil
	}
	m := map[string]any{}
	decode(t, y, &m)
	return m
}

func objs(t *testing.T, y string) map[string]map[string]any {
	t.Helper()
	if y == "" {
		return nil
	}
	m := map[string]map[string]any{}
	decode(t, y, &m)
	return m
}

const (
	deploymentReady = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, generation: 4}
spec: {replicas: 3}
status: {observedGeneration: 4, replicas: 3, readyReplicas: 3, updatedReplicas: 3, availableReplicas: 3}`
	deploymentRolling = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, generation: 5}
spec: {replicas: 3}
status: {observedGeneration: 5, replicas: 4, readyReplicas: 3, updatedReplicas: 1, availableReplicas: 3}`
	deploymentStale = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, generation: 6}
spec: {replicas: 3}
status: {observedGeneration: 5, replicas: 3, readyReplicas: 3, updatedReplicas: 3, availableReplicas: 3}`
	deploymentStuck = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, generation: 2}
spec: {replicas: 2}
status:
  observedGeneration: 2
  replicas: 2
  readyReplicas: 1
  updatedReplicas: 2
  availableReplicas: 1
  conditions:
  - {type: Progressing, status: "False", reason: ProgressDeadlineExceeded}`
	deploymentNew = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, generation: 1}
spec: {replicas: 1}`
)

func TestHealthPolicies(t *testing.T) {
	cases := []statusCase{
		// Deployments: webservice and worker share the policy.
		{reason: "all replicas updated, ready and available", kind: appfile.KindComponent, def: "webservice",
			output: deploymentReady, healthy: true, message: "Ready:3/3",
			details: map[string]string{"readyReplicas": "3", "updatedReplicas": "3", "availableReplicas": "3"}},
		{reason: "rollout in progress", kind: appfile.KindComponent, def: "webservice",
			output: deploymentRolling, healthy: false, message: "Ready:3/3 (updated 1/3)"},
		{reason: "controller has not seen the new generation", kind: appfile.KindComponent, def: "webservice",
			output: deploymentStale, healthy: false, message: "Ready:3/3 (generation 6 not yet observed)"},
		{reason: "progress deadline exceeded", kind: appfile.KindComponent, def: "webservice",
			output: deploymentStuck, healthy: false, message: "Ready:1/2 (progress deadline exceeded)"},
		{reason: "just created, no status yet", kind: appfile.KindComponent, def: "webservice",
			output: deploymentNew, healthy: false, message: "Ready:0/1 (updated 0/1)"},
		{reason: "health check disabled by annotation", kind: appfile.KindComponent, def: "webservice",
			output: `
kind: Deployment
metadata: {name: api, generation: 1, annotations: {app.oam.dev/disable-health-check: "true"}}
spec: {replicas: 1}`, healthy: true, message: "Ready:0/1 (updated 0/1)"},
		{reason: "scaled to zero", kind: appfile.KindComponent, def: "worker",
			output: `
kind: Deployment
metadata: {name: api, generation: 2}
spec: {replicas: 0}
status: {observedGeneration: 2}`, healthy: true, message: "Ready:0/0"},
		{reason: "worker rollout done", kind: appfile.KindComponent, def: "worker",
			output: deploymentReady, healthy: true, message: "Ready:3/3"},
		{reason: "worker rollout in progress", kind: appfile.KindComponent, def: "worker",
			output: deploymentRolling, healthy: false, message: "Ready:3/3 (updated 1/3)"},

		// StatefulSets.
		{reason: "all replicas ready on the current revision", kind: appfile.KindComponent, def: "statefulset",
			output: `
kind: StatefulSet
metadata: {name: db, generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, updatedReplicas: 3, currentRevision: db-1, updateRevision: db-1}`,
			healthy: true, message: "Ready:3/3", details: map[string]string{"readyReplicas": "3", "updatedReplicas": "3", "currentRevision": "db-1", "updateRevision": "db-1"}},
		{reason: "rolling update not finished", kind: appfile.KindComponent, def: "statefulset",
			output: `
kind: StatefulSet
metadata: {name: db, generation: 3}
spec: {replicas: 3}
status: {observedGeneration: 3, replicas: 3, readyReplicas: 3, updatedReplicas: 1, currentRevision: db-1, updateRevision: db-2}`,
			healthy: false, message: "Ready:3/3 (updated 1/3)"},
		{reason: "partitioned update done for the ordinals at or above the partition", kind: appfile.KindComponent, def: "statefulset",
			output: `
kind: StatefulSet
metadata: {name: db, generation: 3}
spec: {replicas: 3, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}}
status: {observedGeneration: 3, replicas: 3, readyReplicas: 3, updatedReplicas: 1, currentRevision: db-1, updateRevision: db-2}`,
			healthy: true, message: "Ready:3/3"},
		{reason: "partitioned update still running", kind: appfile.KindComponent, def: "statefulset",
			output: `
kind: StatefulSet
metadata: {name: db, generation: 3}
spec: {replicas: 3, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 1}}}
status: {observedGeneration: 3, replicas: 3, readyReplicas: 3, updatedReplicas: 1, currentRevision: db-1, updateRevision: db-2}`,
			healthy: false, message: "Ready:3/3 (updated 1/2, partition 1)"},
		{reason: "OnDelete updates are not waited for", kind: appfile.KindComponent, def: "statefulset",
			output: `
kind: StatefulSet
metadata: {name: db, generation: 3}
spec: {replicas: 2, updateStrategy: {type: OnDelete}}
status: {observedGeneration: 3, replicas: 2, readyReplicas: 2, updatedReplicas: 0, currentRevision: db-1, updateRevision: db-2}`,
			healthy: true, message: "Ready:2/2"},
		{reason: "scale down still removing pods", kind: appfile.KindComponent, def: "statefulset",
			output: `
kind: StatefulSet
metadata: {name: db, generation: 4}
spec: {replicas: 2}
status: {observedGeneration: 4, replicas: 3, readyReplicas: 2, updatedReplicas: 2, currentRevision: db-2, updateRevision: db-2}`,
			healthy: false, message: "Ready:2/2 (1 extra replicas terminating)"},

		// DaemonSets.
		{reason: "every scheduled node runs an updated ready pod", kind: appfile.KindComponent, def: "daemon",
			output: `
kind: DaemonSet
metadata: {name: agent, generation: 1}
status: {observedGeneration: 1, desiredNumberScheduled: 3, currentNumberScheduled: 3, numberReady: 3, numberAvailable: 3, updatedNumberScheduled: 3}`,
			healthy: true, message: "Ready:3/3", details: map[string]string{"desiredNumberScheduled": "3", "numberReady": "3", "updatedNumberScheduled": "3"}},
		{reason: "rolling update in progress", kind: appfile.KindComponent, def: "daemon",
			output: `
kind: DaemonSet
metadata: {name: agent, generation: 2}
status: {observedGeneration: 2, desiredNumberScheduled: 3, numberReady: 3, numberAvailable: 3, updatedNumberScheduled: 1}`,
			healthy: false, message: "Ready:3/3 (updated 1/3)"},
		{reason: "a pod not ready", kind: appfile.KindComponent, def: "daemon",
			output: `
kind: DaemonSet
metadata: {name: agent, generation: 2}
status: {observedGeneration: 2, desiredNumberScheduled: 3, numberReady: 2, numberAvailable: 2, updatedNumberScheduled: 3, numberMisscheduled: 1}`,
			healthy: false, message: "Ready:2/3 (1 misscheduled)"},

		// Jobs.
		{reason: "job complete", kind: appfile.KindComponent, def: "task",
			output: `
kind: Job
spec: {parallelism: 2, completions: 2}
status: {succeeded: 2, conditions: [{type: Complete, status: "True"}]}`,
			healthy: true, message: "Succeeded:2/2, active:0, failed:0", details: map[string]string{"active": "0", "failed": "0", "succeeded": "2"}},
		{reason: "job running", kind: appfile.KindComponent, def: "task",
			output: `
kind: Job
spec: {parallelism: 2, completions: 2}
status: {succeeded: 1, active: 1}`,
			healthy: false, message: "Succeeded:1/2, active:1, failed:0"},
		{reason: "job failed", kind: appfile.KindComponent, def: "task",
			output: `
kind: Job
spec: {parallelism: 1, completions: 1}
status:
  failed: 3
  conditions:
  - {type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}`,
			healthy: false, message: "Succeeded:0/1, active:0, failed:3 (failed: BackoffLimitExceeded: Job has reached the specified backoff limit)"},

		// CronJobs are healthy once they exist.
		{reason: "cron job scheduled", kind: appfile.KindComponent, def: "cron-task",
			output: `
kind: CronJob
spec: {schedule: "0 2 * * *", suspend: false}
status: {active: [{name: nightly-1}], lastScheduleTime: "2026-11-29T02:00:00Z"}`,
			healthy: true, message: `Scheduled "0 2 * * *", active:1, last schedule:2026-11-29T02:00:00Z, last success:never`},
		{reason: "cron job suspended", kind: appfile.KindComponent, def: "cron-task",
			output: `
kind: CronJob
spec: {schedule: "0 2 * * *", suspend: true}`,
			healthy: true, message: `Suspended "0 2 * * *", active:0, last schedule:never, last success:never`},

		// k8s-objects and ref-objects check every object by kind.
		{reason: "deployment ready and a configmap", kind: appfile.KindComponent, def: "k8s-objects",
			output: deploymentReady, outputs: `objects-1: {apiVersion: v1, kind: ConfigMap, metadata: {name: cfg}}`,
			healthy: true, message: "2/2 objects ready"},
		{reason: "deployment rolling", kind: appfile.KindComponent, def: "k8s-objects",
			output: deploymentRolling, outputs: `objects-1: {apiVersion: v1, kind: ConfigMap, metadata: {name: cfg}}`,
			healthy: false, message: "1/2 objects not ready; Deployment/api not ready (Ready:3/3)"},
		{reason: "load balancer without an address", kind: appfile.KindComponent, def: "k8s-objects",
			output:  `{apiVersion: v1, kind: Service, metadata: {name: lb}, spec: {type: LoadBalancer}}`,
			healthy: false, message: "1/1 objects not ready; Service/lb not ready (LoadBalancer pending)"},
		{reason: "claim pending", kind: appfile.KindComponent, def: "k8s-objects",
			output:  `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}, status: {phase: Pending}}`,
			healthy: false, message: "1/1 objects not ready; PersistentVolumeClaim/data not ready (Phase:Pending)"},
		{reason: "referenced job complete", kind: appfile.KindComponent, def: "ref-objects",
			output:  `{apiVersion: batch/v1, kind: Job, metadata: {name: seed}, status: {succeeded: 1, conditions: [{type: Complete, status: "True"}]}}`,
			healthy: true, message: "1/1 objects ready"},
		{reason: "referenced pod not ready", kind: appfile.KindComponent, def: "ref-objects",
			output:  `{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Running, conditions: [{type: Ready, status: "False"}]}}`,
			healthy: false, message: "1/1 objects not ready; Pod/p not ready (Phase:Running)"},

		// Traits.
		{reason: "load balancer has an address", kind: appfile.KindTrait, def: "expose",
			output: deploymentReady, outputs: `service: {kind: Service, spec: {type: LoadBalancer, clusterIP: 10.0.0.7, ports: [{port: 80}]}, status: {loadBalancer: {ingress: [{hostname: lb.example.com}]}}}`,
			healthy: true, message: "External address: lb.example.com"},
		{reason: "load balancer pending", kind: appfile.KindTrait, def: "expose",
			output: deploymentReady, outputs: `service: {kind: Service, spec: {type: LoadBalancer, clusterIP: 10.0.0.7, ports: [{port: 80}]}}`,
			healthy: false, message: "External address: pending"},
		{reason: "node port service", kind: appfile.KindTrait, def: "expose",
			output: deploymentReady, outputs: `service: {kind: Service, spec: {type: NodePort, clusterIP: 10.0.0.7, ports: [{port: 80, nodePort: 31080}]}}`,
			healthy: true, message: "ClusterIP: 10.0.0.7, node port: 31080"},
		{reason: "cluster IP service", kind: appfile.KindTrait, def: "expose",
			output: deploymentReady, outputs: `service: {kind: Service, spec: {type: ClusterIP, clusterIP: 10.0.0.7, ports: [{port: 80}]}}`,
			healthy: true, message: "ClusterIP: 10.0.0.7"},
		{reason: "gateway with host and ingress address", kind: appfile.KindTrait, def: "gateway",
			output: deploymentReady, outputs: `
service: {kind: Service, spec: {clusterIP: 10.0.0.8}}
ingress: {kind: Ingress, spec: {tls: [{secretName: t}], rules: [{host: api.example.com}]}, status: {loadBalancer: {ingress: [{ip: 203.0.113.5}]}}}`,
			healthy: true, message: "Visiting URL: https://api.example.com, IP: 203.0.113.5"},
		{reason: "gateway service without cluster IP yet", kind: appfile.KindTrait, def: "gateway",
			output: deploymentReady, outputs: `
service: {kind: Service, spec: {}}
ingress: {kind: Ingress, spec: {rules: [{http: {paths: []}}]}}`,
			healthy: false, message: "No host set and no ingress address yet; is an ingress controller running?"},
		{reason: "gateway routing to an existing service", kind: appfile.KindTrait, def: "gateway",
			output: deploymentReady, outputs: `ingress: {kind: Ingress, spec: {rules: [{host: legacy.example.com}]}}`,
			healthy: true, message: "Visiting URL: http://legacy.example.com (no ingress address yet)"},
		{reason: "autoscaler without metrics is reported, not unhealthy", kind: appfile.KindTrait, def: "hpa",
			output: deploymentReady, outputs: `
hpa:
  kind: HorizontalPodAutoscaler
  spec: {minReplicas: 2, maxReplicas: 8}
  status:
    currentReplicas: 2
    desiredReplicas: 2
    conditions:
    - {type: AbleToScale, status: "True"}
    - {type: ScalingActive, status: "False", reason: FailedGetResourceMetric}`,
			healthy: true, message: "Replicas:2 (desired 2, min 2, max 8); ScalingActive: FailedGetResourceMetric"},
		{reason: "autoscaler unable to scale", kind: appfile.KindTrait, def: "hpa",
			output: deploymentReady, outputs: `
hpa:
  kind: HorizontalPodAutoscaler
  spec: {minReplicas: 2, maxReplicas: 8}
  status:
    currentReplicas: 3
    desiredReplicas: 3
    conditions:
    - {type: AbleToScale, status: "False", reason: FailedGetScale}`,
			healthy: false, message: "Replicas:3 (desired 3, min 2, max 8); AbleToScale: FailedGetScale"},
		{reason: "claims bound", kind: appfile.KindTrait, def: "storage",
			output: deploymentReady, outputs: `
pvc-data: {kind: PersistentVolumeClaim, metadata: {name: data}, status: {phase: Bound}}
configmap-cfg: {kind: ConfigMap, metadata: {name: cfg}}`,
			healthy: true, message: "1 claims bound"},
		{reason: "claim waiting for a volume", kind: appfile.KindTrait, def: "storage",
			output: deploymentReady, outputs: `
pvc-data: {kind: PersistentVolumeClaim, metadata: {name: data}, status: {phase: Bound}}
pvc-logs: {kind: PersistentVolumeClaim, metadata: {name: logs}, status: {phase: Pending}}`,
			healthy: true, message: "1/2 claims bound; logs: Pending"},
		{reason: "claim lost its volume", kind: appfile.KindTrait, def: "storage",
			output: deploymentReady, outputs: `pvc-data: {kind: PersistentVolumeClaim, metadata: {name: data}, status: {phase: Lost}}`,
			healthy: false, message: "0/1 claims bound; data: Lost"},
		{reason: "no claims created", kind: appfile.KindTrait, def: "storage",
			output: deploymentReady, outputs: `configmap-cfg: {kind: ConfigMap, metadata: {name: cfg}}`,
			healthy: true, message: ""},
	}

	builtin, err := appfile.NewFSSource(definitions.FS, ".")
	require.NoError(t, err)
	ctx := context.Background()
	cctx := map[string]any{"name": "api", "namespace": "default", "appName": "demo", "appRevision": "demo-v1"}
	for _, tc := range cases {
		t.Run(tc.def+"/"+tc.reason, func(t *testing.T) {
			d, err := builtin.Get(ctx, tc.kind, tc.def)
			require.NoError(t, err)
			st := d.Status()
			require.NotNil(t, st, "%s %s has no status", tc.kind, tc.def)
			require.NotEmpty(t, st.HealthPolicy, "%s %s has no health policy", tc.kind, tc.def)
			res, err := render.EvalStatus(ctx, st, obj(t, tc.parameter), obj(t, tc.output), objs(t, tc.outputs), cctx)
			require.NoError(t, err)
			assert.Equal(t, tc.healthy, res.Healthy, "healthy")
			assert.Equal(t, tc.message, res.Message, "message")
			if tc.details != nil {
				assert.Equal(t, tc.details, res.Details, "details")
			}
		})
	}
}

// TestStatusWherePolicyExpected checks that every built-in whose objects
// have a notion of readiness carries a health policy and a custom status.
func TestStatusWherePolicyExpected(t *testing.T) {
	builtin, err := appfile.NewFSSource(definitions.FS, ".")
	require.NoError(t, err)
	ctx := context.Background()
	for _, c := range []struct {
		kind appfile.DefinitionKind
		name string
	}{
		{appfile.KindComponent, "webservice"}, {appfile.KindComponent, "worker"}, {appfile.KindComponent, "daemon"},
		{appfile.KindComponent, "statefulset"}, {appfile.KindComponent, "task"}, {appfile.KindComponent, "cron-task"},
		{appfile.KindComponent, "k8s-objects"}, {appfile.KindComponent, "ref-objects"},
		{appfile.KindTrait, "expose"}, {appfile.KindTrait, "gateway"}, {appfile.KindTrait, "hpa"}, {appfile.KindTrait, "storage"},
	} {
		d, err := builtin.Get(ctx, c.kind, c.name)
		require.NoError(t, err)
		st := d.Status()
		require.NotNil(t, st, "%s %s", c.kind, c.name)
		assert.NotEmpty(t, st.HealthPolicy, "%s %s: health policy", c.kind, c.name)
		assert.NotEmpty(t, st.CustomStatus, "%s %s: custom status", c.kind, c.name)
	}
}
