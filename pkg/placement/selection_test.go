package placement

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSelect(t *testing.T) {
	fleet := StaticClusters{"east": {"region": "east", "tier": "prod"}, "west": {"region": "west", "tier": "prod"}, "lab": {}}
	cases := []struct {
		reason     string
		topologies []Topology
		want       Selection
	}{
		{"no topology selects nothing", nil, nil},
		{"named clusters are the Application's, not the fleet's", []Topology{{Name: "named", Clusters: []string{"east"}, HasClusters: true}}, nil},
		{"a selector records what it matches, sorted", []Topology{{Name: "prod", Selector: map[string]string{"tier": "prod"}, HasSelector: true}},
			Selection{"prod": {"east", "west"}}},
		{"a selector matching nothing records that", []Topology{{Name: "mars", Selector: map[string]string{"region": "mars"}, HasSelector: true}},
			Selection{"mars": nil}},
	}
	for _, tc := range cases {
		got, err := Select(context.Background(), tc.topologies, fleet)
		require.NoError(t, err, tc.reason)
		assert.Equal(t, tc.want, got, tc.reason)
	}
}

func TestSelectionChanges(t *testing.T) {
	cases := []struct {
		reason      string
		now, before Selection
		want        []string
	}{
		{"equal", Selection{"p": {"a"}}, Selection{"p": {"a"}}, nil},
		{"nil and empty are equal", nil, Selection{}, nil},
		{"a cluster joined", Selection{"p": {"a", "b"}}, Selection{"p": {"a"}}, []string{`policy "p": cluster b joined`}},
		{"one joined, one left", Selection{"p": {"b"}}, Selection{"p": {"a"}}, []string{`policy "p": cluster b joined; cluster a left`}},
		{"per policy, sorted", Selection{"z": {"a"}, "b": nil}, Selection{"z": nil, "b": {"c"}},
			[]string{`policy "b": cluster c left`, `policy "z": cluster a joined`}},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, tc.now.Changes(tc.before), tc.reason)
		assert.Equal(t, tc.want == nil, tc.now.Equal(tc.before) || len(tc.now)+len(tc.before) == 0, tc.reason)
	}
}
