package localcluster

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStateRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "home", "state.json")

	st, err := loadState(path)
	require.NoError(t, err, "a missing state file is an empty state")
	assert.Empty(t, st.Clusters)

	created := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	st.NamePrefix = "oamflow-"
	st.put(clusterRecord{Name: "member-2", KwokName: "oamflow-member-2", Ports: Ports{APIServer: 3}, Nodes: 2, CreatedAt: created})
	st.put(clusterRecord{Name: "local", KwokName: "oamflow-local", Ports: Ports{APIServer: 1, Etcd: 11}, Nodes: 2, CreatedAt: created})
	st.put(clusterRecord{Name: "member-1", KwokName: "oamflow-member-1", Ports: Ports{APIServer: 2}, Nodes: 2, CreatedAt: created})
	require.NoError(t, st.save(path))

	got, err := loadState(path)
	require.NoError(t, err)
	assert.Equal(t, st, got, "what was saved is loaded")
	assert.Equal(t, []string{"local", "member-1", "member-2"}, recordNames(got), "kept in set order")

	got.put(clusterRecord{Name: "local", KwokName: "oamflow-local", Ports: Ports{APIServer: 9}})
	assert.Equal(t, 9, got.get("local").Ports.APIServer, "put replaces a record")
	assert.Len(t, got.Clusters, 3)
	assert.Equal(t, map[int]bool{0: true, 9: true, 2: true, 3: true}, got.usedPorts(), "ports of all records")

	got.remove("member-1")
	assert.Nil(t, got.get("member-1"))
	got.remove("local")
	got.remove("member-2")
	require.NoError(t, got.save(path))
	assert.NoFileExists(t, path, "an empty state removes the file")
}

func TestLoadStateErrors(t *testing.T) {
	cases := map[string]struct {
		reason  string
		content string
		want    string
	}{
		"Corrupt":    {reason: "bad JSON says what to do", content: "{nope", want: "corrupt"},
		"NewVersion": {reason: "a newer layout is refused", content: `{"version": 99}`, want: "version 99"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "state.json")
			writeFile(t, p, tc.content, 0o644)
			_, err := loadState(p)
			require.Error(t, err, tc.reason)
			assert.Contains(t, err.Error(), tc.want, tc.reason)
			assert.Contains(t, err.Error(), "oamflow local down", "the message says how to recover")
		})
	}
}

func recordNames(s *state) []string {
	var out []string
	for _, c := range s.Clusters {
		out = append(out, c.Name)
	}
	return out
}
