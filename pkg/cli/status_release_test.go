package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
)

// TestReleaseState: a Helm release in `status --tree` takes the controller's
// verdict for its component and cluster instead of being read as an object
// (it used to show as MISSING: "cluster does not serve HelmRelease").
func TestReleaseState(t *testing.T) {
	services := []common.ApplicationComponentStatus{
		{Name: "engine", Cluster: "member-1", Healthy: true, Message: "release engine revision 1: 3/3 resources ready"},
		{Name: "engine", Cluster: "member-2", Healthy: false, Message: "release engine revision 1: 1/3 resources ready"},
		{Name: "hubchart", Cluster: "", Healthy: true, Message: "ready"},
	}
	cases := []struct {
		reason      string
		res         liveResource
		wantState   string
		wantMessage string
	}{
		{"healthy on member-1", liveResource{Component: "engine", Cluster: "member-1"}, "Healthy", services[0].Message},
		{"unhealthy on member-2", liveResource{Component: "engine", Cluster: "member-2"}, "Unhealthy", services[1].Message},
		{"hub named local matches an empty cluster", liveResource{Component: "hubchart", Cluster: "local"}, "Healthy", "ready"},
		{"no verdict yet", liveResource{Component: "engine", Cluster: "member-3"}, "Unknown", "no health reported for this release yet"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			state, msg := releaseState(&tc.res, services)
			assert.Equal(t, tc.wantState, state)
			assert.Equal(t, tc.wantMessage, msg)
		})
	}
}
