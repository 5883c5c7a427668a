package render

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
)

func deployment(replicas, ready, updated, available, gen, observed int64) map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "generation": gen},
		"spec":     map[string]any{"replicas": replicas},
		"status": map[string]any{"readyReplicas": ready, "updatedReplicas": updated,
			"availableReplicas": available, "observedGeneration": observed},
	}
}

func TestEvalStatus(t *testing.T) {
	ctx := appfile.WithEngine(context.Background(), cuex.NewEngine())
	d, err := testSource(t).Get(ctx, appfile.KindComponent, "webservice")
	require.NoError(t, err)
	st := d.Status()
	require.NotNil(t, st)
	cases := []struct {
		reason  string
		status  *common.Status
		output  map[string]any
		healthy bool
		message string
		details map[string]string
		errPart string
	}{
		{reason: "no status CUE means healthy", status: nil, healthy: true},
		{reason: "all replicas available", status: st, output: deployment(3, 3, 3, 3, 2, 2), healthy: true, message: "Ready:3/3"},
		{reason: "rollout in progress", status: st, output: deployment(3, 1, 3, 1, 2, 2), healthy: false, message: "Ready:1/3"},
		{reason: "fresh object without status is not healthy yet", status: st,
			output:  map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "w", "generation": int64(1)}, "spec": map[string]any{"replicas": int64(1)}},
			healthy: false, message: "Ready:0/1"},
		{reason: "details become strings; stdlib imports work",
			status: &common.Status{Details: "import \"strings\"\nimage: strings.ToUpper(parameter.image)\nreplicas: context.output.spec.replicas\n"},
			output: deployment(2, 2, 2, 2, 1, 1), healthy: true, details: map[string]string{"image": "NGINX", "replicas": "2"}},
		{reason: "a policy without isHealth is an error", status: &common.Status{HealthPolicy: "ok: true"}, output: deployment(1, 1, 1, 1, 1, 1), errPart: "does not define isHealth"},
		{reason: "a policy that does not compile is an error naming the component",
			status: &common.Status{HealthPolicy: "isHealth: context.output.spec.replicas +"}, output: deployment(1, 1, 1, 1, 1, 1), errPart: `health policy "web"`},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			res, err := EvalStatus(ctx, tc.status, map[string]any{"image": "nginx"}, tc.output, nil, map[string]any{"name": "web", "namespace": "default"})
			if tc.errPart != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errPart)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.healthy, res.Healthy)
			assert.Equal(t, tc.message, res.Message)
			assert.Equal(t, tc.details, res.Details)
		})
	}
}

// A status evaluation is remembered by what its CUE reads: the same live
// object again, or one changed only where the CUE does not look (its
// resourceVersion, managed fields), evaluates nothing; a change the CUE
// reads is evaluated afresh. A remembered result is the caller's to keep.
func TestEvalStatusRemembersByWhatItReads(t *testing.T) {
	memo := cuex.NewMemo(0)
	ctx := appfile.WithEngine(context.Background(), cuex.NewEngine(cuex.WithMemo(memo)))
	st := &common.Status{
		HealthPolicy: "isHealth: context.output.status.readyReplicas == context.output.spec.replicas\n",
		CustomStatus: "message: \"Ready:\\(context.output.status.readyReplicas)\"\n",
		Details:      "ready: \"\\(context.output.status.readyReplicas)\"\n",
	}
	cctx := map[string]any{"name": "web", "namespace": "default"}
	live := func(ready int64, rv string) map[string]any {
		d := deployment(2, ready, 2, ready, 1, 1)
		d["metadata"].(map[string]any)["resourceVersion"] = rv
		d["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "kube-controller-manager", "time": rv}}
		return d
	}
	cases := []struct {
		reason      string
		output      map[string]any
		healthy     bool
		message     string
		remembered  int
		editDetails bool
	}{
		{reason: "a first evaluation is remembered", output: live(1, "10"), message: "Ready:1", remembered: 1, editDetails: true},
		{reason: "a change the CUE does not read finds it (and the caller's edit did not reach it)", output: live(1, "11"), message: "Ready:1", remembered: 1},
		{reason: "a change it reads is evaluated", output: live(2, "12"), healthy: true, message: "Ready:2", remembered: 2},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			res, err := EvalStatus(ctx, st, nil, tc.output, nil, cctx)
			require.NoError(t, err)
			assert.Equal(t, tc.healthy, res.Healthy)
			assert.Equal(t, tc.message, res.Message)
			assert.Equal(t, map[string]string{"ready": tc.message[len("Ready:"):]}, res.Details)
			assert.Equal(t, tc.remembered, memo.Len(), "results remembered")
			if tc.editDetails {
				res.Details["ready"] = "edited"
			}
		})
	}
}
