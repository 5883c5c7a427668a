package helm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(j))
	return u
}

// TestResourceReady checks the kstatus readiness rules on crafted live
// objects: envtest has no kubelets, so this is where readiness is tested.
func TestResourceReady(t *testing.T) {
	cases := []struct {
		reason string
		yaml   string
		ready  bool
	}{
		{reason: "Deployment available and fully updated", ready: true, yaml: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 2}
spec: {replicas: 2}
status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2,
  conditions: [{type: Available, status: "True"}, {type: Progressing, status: "True", reason: NewReplicaSetAvailable}]}`},
		{reason: "Deployment with too few available replicas", yaml: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 1}
spec: {replicas: 3}
status: {observedGeneration: 1, replicas: 3, updatedReplicas: 3, readyReplicas: 1, availableReplicas: 1,
  conditions: [{type: Available, status: "False"}]}`},
		{reason: "Deployment whose new generation is not observed yet", yaml: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 3}
spec: {replicas: 1}
status: {observedGeneration: 2, replicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1}`},
		{reason: "StatefulSet rolled out", ready: true, yaml: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 1}
spec: {replicas: 3, updateStrategy: {type: RollingUpdate}}
status: {observedGeneration: 1, replicas: 3, readyReplicas: 3, currentReplicas: 3, updatedReplicas: 3, currentRevision: r2, updateRevision: r2}`},
		{reason: "partitioned StatefulSet rollout is done when the pods above the partition are updated", ready: true, yaml: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 2}
spec: {replicas: 3, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}}
status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, currentReplicas: 2, updatedReplicas: 1, currentRevision: r1, updateRevision: r2}`},
		{reason: "partitioned StatefulSet still updating above the partition", yaml: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 2}
spec: {replicas: 3, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 1}}}
status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, currentReplicas: 2, updatedReplicas: 1, currentRevision: r1, updateRevision: r2}`},
		{reason: "DaemonSet scheduled and available everywhere", ready: true, yaml: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, generation: 1}
status: {observedGeneration: 1, desiredNumberScheduled: 2, currentNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 2, numberReady: 2}`},
		{reason: "DaemonSet missing a pod", yaml: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, generation: 1}
status: {observedGeneration: 1, desiredNumberScheduled: 2, currentNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 1, numberReady: 1}`},
		{reason: "Job complete", ready: true, yaml: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, generation: 1}
spec: {completions: 1, parallelism: 1}
status: {succeeded: 1, conditions: [{type: Complete, status: "True"}]}`},
		{reason: "Job running", yaml: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, generation: 1}
spec: {completions: 1, parallelism: 1}
status: {active: 1, startTime: "2024-01-01T00:00:00Z"}`},
		{reason: "PVC bound", ready: true, yaml: `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
status: {phase: Bound}`},
		{reason: "PVC pending", yaml: `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
status: {phase: Pending}`},
		{reason: "ConfigMap exists, so it is ready", ready: true, yaml: `
apiVersion: v1
kind: ConfigMap
metadata: {name: c}`},
		{reason: "custom resource with Ready=False", yaml: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, generation: 1}
status: {observedGeneration: 1, conditions: [{type: Ready, status: "False", reason: Waiting}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			ready, msg, err := ResourceReady(obj(t, tc.yaml))
			require.NoError(t, err)
			assert.Equal(t, tc.ready, ready, msg)
			if !tc.ready {
				assert.NotEmpty(t, msg)
			}
		})
	}
}

func TestHealthDetails(t *testing.T) {
	h := helmspec.Health{
		Release: helmspec.ReleaseInfo{Namespace: "ns"},
		Resources: []helmspec.ResourceHealth{
			{Kind: "Deployment", Namespace: "ns", Name: "web", State: helmspec.StateNotReady, Message: "Available: 0/2"},
			{Kind: "Deployment", Namespace: "ns", Name: "api", State: helmspec.StateMissing},
			{Kind: "Deployment", Namespace: "ns", Name: "ok", State: helmspec.StateReady},
			{Kind: "ConfigMap", Namespace: "ns", Name: "c", State: helmspec.StateReady},
			{Kind: "ClusterRole", Name: "r", State: helmspec.StateMissing},
			{Kind: "Service", Namespace: "other", Name: "s", State: helmspec.StateNotReady},
		},
	}
	assert.Equal(t, map[string]string{
		"Deployment":  "not ready: web (Available: 0/2); MISSING: api",
		"ClusterRole": "MISSING: r",
		"Service":     "not ready: other/s",
	}, h.Details())
	assert.Nil(t, helmspec.Health{Resources: []helmspec.ResourceHealth{{Kind: "A", State: helmspec.StateReady}}}.Details())
}

func TestUnmetCriteria(t *testing.T) {
	manifest := []*unstructured.Unstructured{
		obj(t, "{apiVersion: apps/v1, kind: Deployment, metadata: {name: a}}"),
		obj(t, "{apiVersion: apps/v1, kind: Deployment, metadata: {name: b}}"),
		obj(t, "{apiVersion: batch/v1, kind: Job, metadata: {name: j}}"),
	}
	live := []*unstructured.Unstructured{
		obj(t, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: a}, status: {conditions: [{type: Available, status: "True"}]}}`),
		obj(t, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: b}, status: {conditions: [{type: Available, status: "False"}]}}`),
		nil, // the Job is missing
	}
	crit := func(kind, name, typ, status string) helmspec.HealthCriterion {
		return helmspec.HealthCriterion{Resource: helmspec.CriterionResource{Kind: kind, Name: name}, Condition: helmspec.CriterionCondition{Type: typ, Status: status}}
	}
	cases := []struct {
		reason   string
		criteria []helmspec.HealthCriterion
		want     []string
	}{
		{reason: "first of kind when no name", criteria: []helmspec.HealthCriterion{crit("Deployment", "", "Available", "True")}},
		{reason: "named resource", criteria: []helmspec.HealthCriterion{crit("Deployment", "b", "Available", "True")}, want: []string{"Deployment/b Available=True"}},
		{reason: "expected False", criteria: []helmspec.HealthCriterion{crit("Deployment", "b", "Available", "False")}},
		{reason: "missing resource", criteria: []helmspec.HealthCriterion{crit("Job", "", "Complete", "True")}, want: []string{"Job Complete=True (resource not found)"}},
		{reason: "kind absent from the manifest", criteria: []helmspec.HealthCriterion{crit("StatefulSet", "", "Ready", "True")}, want: []string{"StatefulSet Ready=True (resource not found)"}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, unmetCriteria(manifest, live, tc.criteria))
		})
	}
}
