package health

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// obj parses a YAML manifest.
func obj(t testing.TB, manifest string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(manifest))
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(j))
	return u
}

func TestCheck(t *testing.T) {
	cases := []struct {
		reason   string
		manifest string
		want     Result
	}{
		{
			reason: "a Deployment with every replica ready, updated and available is healthy",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, generation: 2}
spec: {replicas: 3}
status:
  observedGeneration: 2
  replicas: 3
  readyReplicas: 3
  updatedReplicas: 3
  availableReplicas: 3
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}
`,
			want: Result{Healthy: true, Reason: ReasonHealthy, Message: "Ready:3/3"},
		},
		{
			reason: "a Deployment with a replica not ready is progressing",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, generation: 2}
spec: {replicas: 3}
status:
  observedGeneration: 2
  replicas: 3
  readyReplicas: 2
  updatedReplicas: 3
  availableReplicas: 2
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "True", reason: ReplicaSetUpdated}
`,
			want: Result{Reason: ReasonProgressing, Message: "Ready:2/3, updated:3/3, available:2/3"},
		},
		{
			reason: "a Deployment whose controller has not observed the latest spec is progressing",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, generation: 3}
spec: {replicas: 1}
status: {observedGeneration: 2, replicas: 1, readyReplicas: 1, updatedReplicas: 1, availableReplicas: 1}
`,
			want: Result{Reason: ReasonProgressing, Message: "waiting for the controller to observe generation 3 (observed 2)"},
		},
		{
			reason: "a Deployment past its progress deadline has failed",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, generation: 1}
spec: {replicas: 2}
status:
  observedGeneration: 1
  replicas: 2
  updatedReplicas: 2
  unavailableReplicas: 2
  conditions:
  - {type: Progressing, status: "False", reason: ProgressDeadlineExceeded, message: 'ReplicaSet "web-5d9" has timed out progressing.'}
`,
			want: Result{Reason: ReasonFailed, Message: `Ready:0/2, updated:2/2, available:0/2: rollout exceeded its progress deadline: ReplicaSet "web-5d9" has timed out progressing.`},
		},
		{
			reason: "a Deployment scaled to zero is healthy",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, generation: 4}
spec: {replicas: 0}
status:
  observedGeneration: 4
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}
`,
			want: Result{Healthy: true, Reason: ReasonHealthy, Message: "Ready:0/0"},
		},
		{
			reason: "a Deployment with its replicas up but its new ReplicaSet not yet reported available is progressing",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, generation: 1}
spec: {replicas: 1, progressDeadlineSeconds: 600}
status:
  observedGeneration: 1
  replicas: 1
  readyReplicas: 1
  updatedReplicas: 1
  availableReplicas: 1
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "True", reason: ReplicaSetUpdated}
`,
			want: Result{Reason: ReasonProgressing, Message: "Ready:1/1, updated:1/1, available:1/1: ReplicaSet not Available"},
		},
		{
			reason: "a StatefulSet fully rolled out is healthy",
			manifest: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: default, generation: 1}
spec: {replicas: 3, updateStrategy: {type: RollingUpdate}}
status: {observedGeneration: 1, replicas: 3, readyReplicas: 3, currentReplicas: 3, updatedReplicas: 3, currentRevision: db-7f, updateRevision: db-7f}
`,
			want: Result{Healthy: true, Reason: ReasonHealthy, Message: "Ready:3/3"},
		},
		{
			reason: "a StatefulSet mid-rollout is progressing",
			manifest: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: default, generation: 2}
spec: {replicas: 3, updateStrategy: {type: RollingUpdate}}
status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, currentReplicas: 2, updatedReplicas: 1, currentRevision: db-7f, updateRevision: db-8a}
`,
			want: Result{Reason: ReasonProgressing, Message: "Ready:3/3, updated:1/3"},
		},
		{
			reason: "a partitioned StatefulSet is healthy once the ordinals above the partition are updated",
			manifest: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: default, generation: 2}
spec: {replicas: 3, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}}
status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, currentReplicas: 2, updatedReplicas: 1, currentRevision: db-7f, updateRevision: db-8a}
`,
			want: Result{Healthy: true, Reason: ReasonHealthy, Message: "Ready:3/3, partitioned rollout: updated:1/1 (ordinals >= 2)"},
		},
		{
			reason: "a partitioned StatefulSet still updating its ordinals above the partition is progressing",
			manifest: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: default, generation: 2}
spec: {replicas: 4, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 1}}}
status: {observedGeneration: 2, replicas: 4, readyReplicas: 4, currentReplicas: 3, updatedReplicas: 1, currentRevision: db-7f, updateRevision: db-8a}
`,
			want: Result{Reason: ReasonProgressing, Message: "Ready:4/4, partitioned rollout: updated:1/3 (ordinals >= 1)"},
		},
		{
			reason: "a DaemonSet on every node is healthy",
			manifest: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system, generation: 1}
status: {observedGeneration: 1, desiredNumberScheduled: 2, currentNumberScheduled: 2, numberReady: 2, updatedNumberScheduled: 2, numberAvailable: 2}
`,
			want: Result{Healthy: true, Reason: ReasonHealthy, Message: "Ready:2/2"},
		},
		{
			reason: "a DaemonSet missing a ready pod is progressing",
			manifest: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system, generation: 1}
status: {observedGeneration: 1, desiredNumberScheduled: 2, currentNumberScheduled: 2, numberReady: 1, updatedNumberScheduled: 2, numberAvailable: 1}
`,
			want: Result{Reason: ReasonProgressing, Message: "Ready:1/2, updated:2/2, available:1/2"},
		},
		{
			reason: "a completed Job is healthy",
			manifest: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: default}
spec: {completions: 1, parallelism: 1}
status:
  succeeded: 1
  conditions:
  - {type: Complete, status: "True"}
`,
			want: Result{Healthy: true, Reason: ReasonHealthy, Message: "Completed: succeeded 1/1"},
		},
		{
			reason: "a running Job is not healthy yet",
			manifest: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: default}
spec: {completions: 3, parallelism: 1}
status: {active: 1, succeeded: 1, startTime: "2026-01-01T00:00:00Z"}
`,
			want: Result{Reason: ReasonProgressing, Message: "Running: succeeded 1/3, active 1, failed 0"},
		},
		{
			reason: "a failed Job has failed",
			manifest: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: default}
spec: {completions: 1, backoffLimit: 2}
status:
  failed: 3
  conditions:
  - {type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}
`,
			want: Result{Reason: ReasonFailed, Message: "Job failed (BackoffLimitExceeded): Job has reached the specified backoff limit"},
		},
		{
			reason: "a bound PVC is healthy",
			manifest: `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
spec: {volumeName: pv-1}
status: {phase: Bound}
`,
			want: Result{Healthy: true, Reason: ReasonHealthy, Message: "Bound to pv-1"},
		},
		{
			reason: "a pending PVC is progressing",
			manifest: `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
status: {phase: Pending}
`,
			want: Result{Reason: ReasonProgressing, Message: "Pending: waiting for a volume"},
		},
		{
			reason: "a ClusterIP Service is healthy",
			manifest: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec: {type: ClusterIP, clusterIP: 10.0.0.12, ports: [{port: 80}]}
`,
			want: Result{Healthy: true, Reason: ReasonHealthy, Message: "ClusterIP 10.0.0.12"},
		},
		{
			reason: "a LoadBalancer Service without an address is progressing",
			manifest: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec: {type: LoadBalancer, clusterIP: 10.0.0.12}
status: {loadBalancer: {}}
`,
			want: Result{Reason: ReasonProgressing, Message: "LoadBalancer: waiting for an external address"},
		},
		{
			reason: "a LoadBalancer Service with an address is healthy",
			manifest: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec: {type: LoadBalancer, clusterIP: 10.0.0.12}
status: {loadBalancer: {ingress: [{ip: 203.0.113.7}]}}
`,
			want: Result{Healthy: true, Reason: ReasonHealthy, Message: "LoadBalancer 203.0.113.7"},
		},
		{
			reason: "a ready Pod is healthy",
			manifest: `
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: default}
status:
  phase: Running
  conditions:
  - {type: Ready, status: "True"}
`,
			want: Result{Healthy: true, Reason: ReasonHealthy, Message: "Running"},
		},
		{
			reason: "a Pod waiting for its image is progressing and says so",
			manifest: `
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: default}
status:
  phase: Pending
  conditions:
  - {type: Ready, status: "False"}
  containerStatuses:
  - {name: main, ready: false, state: {waiting: {reason: ContainerCreating}}}
`,
			want: Result{Reason: ReasonProgressing, Message: "Pending, waiting: main (ContainerCreating)"},
		},
		{
			reason: "a ConfigMap (no status) is healthy",
			manifest: `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: default}
data: {a: b}
`,
			want: Result{Healthy: true, Reason: ReasonHealthy},
		},
		{
			reason: "a custom resource with Ready=False is progressing, with kstatus' message",
			manifest: `
apiVersion: example.com/v1
kind: Database
metadata: {name: db, namespace: default, generation: 1}
status:
  observedGeneration: 1
  conditions:
  - {type: Ready, status: "False", reason: Provisioning, message: creating the instance}
`,
			want: Result{Reason: ReasonProgressing, Message: "creating the instance"},
		},
		{
			reason: "an object being deleted is terminating",
			manifest: `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: default, deletionTimestamp: "2026-01-01T00:00:00Z", finalizers: [x]}
`,
			want: Result{Reason: ReasonTerminating, Message: "being deleted"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			got := Check(context.Background(), obj(t, tc.manifest))
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestCheckMissing(t *testing.T) {
	got := Check(context.Background(), nil)
	assert.False(t, got.Healthy)
	assert.Equal(t, ReasonMissing, got.Reason)
	assert.Contains(t, got.Message, "missing")
}
