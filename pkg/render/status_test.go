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
