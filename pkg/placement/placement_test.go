package placement_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/pkg/placement"
)

var fleet = placement.StaticClusters{
	"east-1": {"region": "east", "env": "prod"},
	"east-2": {"region": "east", "env": "dev"},
	"west-1": {"region": "west", "env": "prod"},
}

func TestResolve(t *testing.T) {
	cases := []struct {
		reason   string
		props    []map[string]any
		offline  bool
		want     []placement.Target
		warnings int
		wantErr  string
	}{
		{
			reason: "no topology places on the hub",
			want:   []placement.Target{{Reason: "no topology policy: the hub", CreateNamespace: true}},
		},
		{
			reason: "labels select members, sorted, with why",
			props:  []map[string]any{{"clusterLabelSelector": map[string]any{"region": "east"}, "namespace": "team-x"}},
			want: []placement.Target{
				{Placement: placement.Placement{Cluster: "east-1", Namespace: "team-x"}, Policy: "p0", Reason: "labels match policy p0 {region=east}", CreateNamespace: true},
				{Placement: placement.Placement{Cluster: "east-2", Namespace: "team-x"}, Policy: "p0", Reason: "labels match policy p0 {region=east}", CreateNamespace: true},
			},
		},
		{
			reason: "createNamespace: false is carried to the targets",
			props:  []map[string]any{{"clusters": []any{"west-1"}, "createNamespace": false}},
			want:   []placement.Target{{Placement: placement.Placement{Cluster: "west-1"}, Policy: "p0", Reason: "named in policy p0 clusters"}},
		},
		{
			reason: "the union of topologies, without duplicates (the first wins)",
			props:  []map[string]any{{"clusters": []any{"east-1"}}, {"clusterLabelSelector": map[string]any{"env": "prod"}}},
			want: []placement.Target{
				{Placement: placement.Placement{Cluster: "east-1"}, Policy: "p0", Reason: "named in policy p0 clusters", CreateNamespace: true},
				{Placement: placement.Placement{Cluster: "west-1"}, Policy: "p1", Reason: "labels match policy p1 {env=prod}", CreateNamespace: true},
			},
		},
		{
			reason: "an empty selector selects the hub first, then every member",
			props:  []map[string]any{{"clusterSelector": map[string]any{}}},
			want: []placement.Target{
				{Placement: placement.Placement{Cluster: "local"}, Policy: "p0", Reason: "policy p0 selects every cluster ({})", CreateNamespace: true},
				{Placement: placement.Placement{Cluster: "east-1"}, Policy: "p0", Reason: "labels match policy p0 {}", CreateNamespace: true},
				{Placement: placement.Placement{Cluster: "east-2"}, Policy: "p0", Reason: "labels match policy p0 {}", CreateNamespace: true},
				{Placement: placement.Placement{Cluster: "west-1"}, Policy: "p0", Reason: "labels match policy p0 {}", CreateNamespace: true},
			},
		},
		{
			reason: "a namespace-only topology is the hub",
			props:  []map[string]any{{"namespace": "apps"}},
			want:   []placement.Target{{Placement: placement.Placement{Cluster: "local", Namespace: "apps"}, Policy: "p0", Reason: "policy p0 names no cluster: the hub", CreateNamespace: true}},
		},
		{
			reason:  "a selector matching nothing is an explicit no-match",
			props:   []map[string]any{{"clusterLabelSelector": map[string]any{"region": "mars"}}},
			wantErr: `policy "p0": no clusters match {region=mars} (set allowEmpty: true to allow that)`,
		},
		{
			reason:   "unless allowEmpty",
			props:    []map[string]any{{"clusterLabelSelector": map[string]any{"region": "mars"}, "allowEmpty": true}},
			warnings: 1,
		},
		{
			reason:   "without a resolver a selector is a placeholder with a warning",
			props:    []map[string]any{{"clusterLabelSelector": map[string]any{"region": "east"}}},
			offline:  true,
			want:     []placement.Target{{Placement: placement.Placement{Cluster: "<clusters labelled region=east>"}, Policy: "p0", Reason: "labels match {region=east}", CreateNamespace: true, Placeholder: true}},
			warnings: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			var tops []placement.Topology
			for i, p := range tc.props {
				top, err := placement.Parse("p"+string(rune('0'+i)), p)
				require.NoError(t, err)
				tops = append(tops, top)
			}
			var resolver placement.Resolver = fleet
			if tc.offline {
				resolver = nil
			}
			got, err := placement.Resolve(context.Background(), tops, resolver)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				var nm *placement.NoMatchError
				assert.True(t, errors.As(err, &nm), "a *NoMatchError")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got.Targets)
			assert.Len(t, got.Warnings, tc.warnings)
		})
	}
}

func TestParse(t *testing.T) {
	cases := []struct {
		reason             string
		props              map[string]any
		hub, members, labs bool
		wantErr            string
	}{
		{reason: "nothing named: the hub", props: map[string]any{}, hub: true},
		{reason: "local by name", props: map[string]any{"clusters": []any{"local"}}, hub: true},
		{reason: "a member by name", props: map[string]any{"clusters": []any{"m1"}}, members: true},
		{reason: "an empty list names nothing", props: map[string]any{"clusters": []any{}}},
		{reason: "a selector", props: map[string]any{"clusterLabelSelector": map[string]any{"a": "b"}}, members: true, labs: true},
		{reason: "the empty selector includes the hub", props: map[string]any{"clusterLabelSelector": map[string]any{}}, hub: true, members: true, labs: true},
		{reason: "clusters must be a list", props: map[string]any{"clusters": "m1"}, wantErr: "properties.clusters: expected a list of cluster names, got a string"},
		{reason: "names must be strings", props: map[string]any{"clusters": []any{"m1", 3.0}}, wantErr: "properties.clusters[1]: expected a cluster name (non-empty string), got a number"},
		{reason: "selector values are scalars", props: map[string]any{"clusterLabelSelector": map[string]any{"a": []any{}}}, wantErr: "properties.clusterLabelSelector.a: expected a label value (string), got a list"},
		{reason: "createNamespace is a boolean", props: map[string]any{"createNamespace": "no"}, wantErr: "properties.createNamespace: expected a boolean, got a string"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			top, err := placement.Parse("p", tc.props)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.hub, top.TargetsHub(), "TargetsHub")
			assert.Equal(t, tc.members, top.TargetsMembers(), "TargetsMembers")
			assert.Equal(t, tc.labs, top.SelectsByLabels(), "SelectsByLabels")
			assert.True(t, top.CreateNamespace, "createNamespace defaults to true")
		})
	}
}
