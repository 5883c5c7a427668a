package manager_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// TestOutboundPolicy: the controller refuses request steps to the cloud
// metadata endpoint and to its own metrics port (the latter although
// loopback is allow-listed), failing the step with the reason.
func TestOutboundPolicy(t *testing.T) {
	c := env.Client
	ctx := context.Background()
	o := testOptions()
	o.MetricsAddr = addr(freePort(t))
	o.Outbound.Allow = []string{"127.0.0.0/8"}
	startManager(t, o)
	for _, tc := range []struct {
		reason, name, url, want string
	}{
		{"cloud metadata", "to-metadata", "http://169.254.169.254/latest/meta-data/",
			"169.254.169.254:80 is a link-local address; oamflow does not connect to it unless an admin allow-lists it (--outbound-allow)"},
		{"the controller's metrics port", "to-metrics", "http://" + o.MetricsAddr + "/metrics",
			o.MetricsAddr + " is one of the controller's own listeners; oamflow does not connect to it"},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			app := application(t, tc.name, fmt.Sprintf(`
components: []
workflow:
  steps:
  - name: call
    type: request
    properties: {url: %q}
`, tc.url))
			require.NoError(t, c.Create(ctx, app))
			t.Cleanup(func() { deleteAndWait(t, app) })
			got := &v1beta1.Application{}
			require.Eventually(t, func() bool {
				return c.Get(ctx, client.ObjectKeyFromObject(app), got) == nil && got.Status.Phase == common.ApplicationWorkflowFailed
			}, 60*time.Second, 200*time.Millisecond)
			require.NotNil(t, got.Status.Workflow)
			require.NotEmpty(t, got.Status.Workflow.Steps)
			assert.Contains(t, got.Status.Workflow.Steps[0].Message, tc.want)
		})
	}
}
