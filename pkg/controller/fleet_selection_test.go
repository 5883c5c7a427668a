package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/placement"
	"github.com/oamflow/oamflow/pkg/revision"
)

// fleetMoved compares the registry with the selection recorded on the
// latest revision; whatever that record holds, the Application must go on
// following the fleet.
func TestFleetMovedRecord(t *testing.T) {
	fleet := placement.StaticClusters{"east": {"tier": "prod"}, "west": {"tier": "prod"}}
	af := &appfile.AppFile{Policies: []*appfile.Policy{{Name: "spread", Type: appfile.PolicyTopology,
		Properties: map[string]any{"clusterLabelSelector": map[string]any{"tier": "prod"}}}}}
	now := placement.Selection{"spread": {"east", "west"}}
	cases := []struct {
		reason    string
		anno      *string
		wantMoved bool
		// wantRecord is the annotation the stored revision has after.
		wantRecord string
	}{
		{reason: "the recorded selection is the registry's: nothing moved", anno: ptrTo(`{"spread":["east","west"]}`),
			wantRecord: `{"spread":["east","west"]}`},
		{reason: "a member joined since: moved", anno: ptrTo(`{"spread":["east"]}`), wantMoved: true,
			wantRecord: `{"spread":["east"]}`},
		{reason: "a revision from before selections were recorded gets the current one, without a run",
			wantRecord: `{"spread":["east","west"]}`},
		{reason: "an unreadable record is recorded again from the registry, not left to freeze the placement",
			anno: ptrTo(`{"spread":`), wantRecord: `{"spread":["east","west"]}`},
		{reason: "a record of the wrong shape is recorded again from the registry",
			anno: ptrTo(`["east"]`), wantRecord: `{"spread":["east","west"]}`},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			h := newHarness(t, harnessOpt{with: []Option{WithClusterResolver(fleet)}})
			app := h.app("shop", "components: [{name: web, type: webservice, properties: {image: nginx}}]")
			rev := revision.Snapshot(app, revision.Definitions{}, 1, "h1")
			if tc.anno != nil {
				rev.Annotations = map[string]string{revision.AnnoPlacement: *tc.anno}
			}
			require.NoError(t, env(t).Client.Create(context.Background(), rev), tc.reason)
			latest, err := h.r.revisions.Get(context.Background(), h.ns, rev.Name)
			require.NoError(t, err, tc.reason)

			s := &scope{app: app, latest: latest, log: ctrl.Log.WithName("test")}
			sel, moved := h.r.fleetMoved(context.Background(), s, af, revision.ReasonUnchanged)
			assert.Equal(t, tc.wantMoved, moved, tc.reason)
			if moved {
				assert.Equal(t, now, sel, tc.reason)
			}
			stored := &v1beta1.ApplicationRevision{}
			require.NoError(t, env(t).Client.Get(context.Background(), client.ObjectKeyFromObject(rev), stored), tc.reason)
			assert.JSONEq(t, tc.wantRecord, stored.Annotations[revision.AnnoPlacement], tc.reason)
		})
	}
}

func ptrTo(s string) *string { return &s }
