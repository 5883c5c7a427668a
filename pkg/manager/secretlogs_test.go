package manager_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// TestNoSecretsInLogs: an apply-object step given a Secret, failing, logs
// the step's name, type and error, never the Secret's values.
func TestNoSecretsInLogs(t *testing.T) {
	c := env.Client
	ctx := context.Background()
	o := testOptions()
	o.MaxStepRetries = 2
	startManager(t, o)
	const value, encoded = "s3cr3t-pa55word-4a1f", "czNjcjN0LXBhNTV3b3JkLTRhMWY="
	app := application(t, "leaky", `
components: []
workflow:
  steps:
  - name: put-secret
    type: apply-object
    properties:
      value:
        apiVersion: v1
        kind: Secret
        metadata: {name: db, namespace: default, labels: {"not a label key!": x}}
        stringData: {password: `+value+`}
        data: {token: `+encoded+`}
`)
	require.NoError(t, c.Create(ctx, app))
	t.Cleanup(func() { deleteAndWait(t, app) })
	got := &v1beta1.Application{}
	require.Eventually(t, func() bool {
		return c.Get(ctx, client.ObjectKeyFromObject(app), got) == nil && got.Status.Phase == common.ApplicationWorkflowFailed
	}, 90*time.Second, 200*time.Millisecond)
	time.Sleep(time.Second) // let the last reconcile's logs out
	out := logs.String()
	assert.Contains(t, out, "put-secret", "the failure is logged with the step's name")
	for _, s := range []string{value, encoded} {
		if i := strings.Index(out, s); i >= 0 {
			lo := max(0, i-300)
			t.Errorf("the log holds the Secret's value %q: …%s…", s, out[lo:min(len(out), i+100)])
		}
	}
}
