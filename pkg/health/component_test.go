package health

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
)

const readyDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: prod, generation: 1}
spec: {replicas: 2}
status:
  observedGeneration: 1
  replicas: 2
  readyReplicas: 2
  updatedReplicas: 2
  availableReplicas: 2
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}
`

const unreadyDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: prod, generation: 1}
spec: {replicas: 2}
status: {observedGeneration: 1, replicas: 2, updatedReplicas: 2, readyReplicas: 1, availableReplicas: 1}
`

const pendingLB = `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: prod}
spec: {type: LoadBalancer, clusterIP: 10.0.0.3}
`

func TestEvaluate(t *testing.T) {
	// evaluator answers like a CUE engine would: isHealth from
	// output.status.readyReplicas == parameter.replicas, message from customStatus.
	evaluator := StatusEvaluatorFn(func(_ context.Context, st *common.Status, parameter map[string]any, out map[string]any,
		_ map[string]map[string]any, _ map[string]any) (EvalResult, error) {
		if st.HealthPolicy == "broken" {
			return EvalResult{}, errors.New("field not found: isHealth")
		}
		ready, _, _ := nestedIntFromMap(out, "status", "readyReplicas")
		return EvalResult{
			Healthy: ready == parameter["replicas"],
			Message: "ready replicas: " + itoa(ready),
			Details: map[string]string{"ready": itoa(ready)},
		}, nil
	})
	live := func(manifest string) *Object {
		o := obj(t, manifest)
		return &Object{Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName(), Live: o}
	}
	missing := &Object{Kind: "Deployment", Namespace: "prod", Name: "web"}

	cases := []struct {
		reason  string
		subject Subject
		want    Outcome
		wantErr bool
	}{
		{
			reason:  "without a health policy, a ready workload is healthy by kstatus",
			subject: Subject{Output: live(readyDeployment)},
			want:    Outcome{Result: Result{Healthy: true, Reason: ReasonHealthy}},
		},
		{
			reason:  "without a health policy, an unready workload is unhealthy and the message names it",
			subject: Subject{Output: live(unreadyDeployment)},
			want:    Outcome{Result: Result{Reason: ReasonProgressing, Message: "Deployment prod/web: Ready:1/2, updated:2/2, available:1/2"}},
		},
		{
			reason:  "without a health policy, an unhealthy auxiliary output makes the component unhealthy",
			subject: Subject{Output: live(readyDeployment), Outputs: map[string]Object{"svc": *live(pendingLB)}},
			want:    Outcome{Result: Result{Reason: ReasonProgressing, Message: "Service prod/web: LoadBalancer: waiting for an external address"}},
		},
		{
			reason:  "a missing workload is unhealthy with the word missing",
			subject: Subject{Output: missing, Status: &common.Status{HealthPolicy: "isHealth: true"}},
			want:    Outcome{Result: Result{Reason: ReasonMissing, Message: "Deployment prod/web is missing"}},
		},
		{
			reason: "a health policy decides over kstatus: unhealthy by policy although kstatus says current",
			subject: Subject{Output: live(readyDeployment), Parameter: map[string]any{"replicas": int64(3)},
				Status: &common.Status{HealthPolicy: "isHealth: ...", CustomStatus: "message: ..."}},
			want: Outcome{Result: Result{Reason: ReasonHealthPolicy, Message: "ready replicas: 2"}, Details: map[string]string{"ready": "2"}},
		},
		{
			reason: "a health policy decides over kstatus: healthy by policy although kstatus says progressing",
			subject: Subject{Output: live(unreadyDeployment), Parameter: map[string]any{"replicas": int64(1)},
				Status: &common.Status{HealthPolicy: "isHealth: ..."}},
			want: Outcome{Result: Result{Healthy: true, Reason: ReasonHealthy, Message: "ready replicas: 1"}, Details: map[string]string{"ready": "1"}},
		},
		{
			reason: "customStatus without a health policy gives the message of a healthy workload",
			subject: Subject{Output: live(readyDeployment), Parameter: map[string]any{"replicas": int64(9)},
				Status: &common.Status{CustomStatus: "message: ..."}},
			want: Outcome{Result: Result{Healthy: true, Reason: ReasonHealthy, Message: "ready replicas: 2"}, Details: map[string]string{"ready": "2"}},
		},
		{
			reason:  "an evaluation error is a StatusError",
			subject: Subject{Output: live(readyDeployment), Status: &common.Status{HealthPolicy: "broken"}},
			want:    Outcome{Result: Result{Reason: ReasonStatusError, Message: "evaluating the definition's status: field not found: isHealth"}},
			wantErr: true,
		},
		{
			reason: "a trait's custom status reads its component's workload as context.output, which is not judged",
			subject: Subject{Workload: live(unreadyDeployment), Parameter: map[string]any{"replicas": int64(1)},
				Status: &common.Status{CustomStatus: "message: ..."}},
			want: Outcome{Result: Result{Healthy: true, Reason: ReasonHealthy, Message: "ready replicas: 1"}, Details: map[string]string{"ready": "1"}},
		},
		{
			reason:  "a trait with neither outputs nor status is healthy",
			subject: Subject{},
			want:    Outcome{Result: Result{Healthy: true, Reason: ReasonHealthy}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			got, err := Evaluate(context.Background(), evaluator, tc.subject)
			if tc.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func nestedIntFromMap(m map[string]any, fields ...string) (int64, bool, error) {
	cur := any(m)
	for _, f := range fields {
		mm, ok := cur.(map[string]any)
		if !ok {
			return 0, false, nil
		}
		cur = mm[f]
	}
	n, ok := cur.(int64)
	return n, ok, nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
