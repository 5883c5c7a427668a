package sharding

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestPropagate(t *testing.T) {
	cases := []struct {
		reason   string
		from, to map[string]string
		want     map[string]string
		changed  bool
	}{
		{"copied to an object without labels", map[string]string{LabelScheduledShardID: "s0"}, nil, map[string]string{LabelScheduledShardID: "s0"}, true},
		{"moved", map[string]string{LabelScheduledShardID: "s1"}, map[string]string{LabelScheduledShardID: "s0", "a": "b"},
			map[string]string{LabelScheduledShardID: "s1", "a": "b"}, true},
		{"already there", map[string]string{LabelScheduledShardID: "s1"}, map[string]string{LabelScheduledShardID: "s1"},
			map[string]string{LabelScheduledShardID: "s1"}, false},
		{"removed when the Application has none", nil, map[string]string{LabelScheduledShardID: "s0", "a": "b"}, map[string]string{"a": "b"}, true},
		{"nothing to do without sharding", map[string]string{"x": "y"}, nil, nil, false},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			to := &metav1.ObjectMeta{Labels: c.to}
			assert.Equal(t, c.changed, Propagate(&metav1.ObjectMeta{Labels: c.from}, to))
			assert.Equal(t, c.want, to.Labels)
		})
	}
}

func TestScheduler(t *testing.T) {
	s := NewScheduler([]string{"b", "a"})
	var got []string
	for range 5 {
		id, ok := s.Schedule(&metav1.ObjectMeta{})
		assert.True(t, ok)
		got = append(got, id)
	}
	assert.Equal(t, []string{"b", "a", "b", "a", "b"}, got, "round-robin in the order given")
	id, _ := s.Schedule(&metav1.ObjectMeta{Labels: map[string]string{LabelScheduledShardID: "z"}})
	assert.Equal(t, "z", id, "a labelled object keeps its shard")

	d := NewScheduler(nil)
	_, ok := d.Schedule(&metav1.ObjectMeta{})
	assert.False(t, ok, "no shard known yet")
	d.SetRunning([]string{"master", "s1", "s0"})
	got = nil
	for range 3 {
		id, _ := d.Schedule(&metav1.ObjectMeta{})
		got = append(got, id)
	}
	assert.Equal(t, []string{"s0", "s1", "s0"}, got, "running shards, sorted, the master left out")
}

func TestValidate(t *testing.T) {
	cases := []struct {
		reason string
		c      Config
		err    string
	}{
		{"off", Config{ShardID: "not a label"}, ""},
		{"master by default", Config{Enabled: true}, ""},
		{"a shard", Config{Enabled: true, ShardID: "shard-0"}, ""},
		{"bad id", Config{Enabled: true, ShardID: "shard 0"}, `--shard-id "shard 0" is not a label value`},
		{"empty schedulable shard", Config{Enabled: true, SchedulableShards: []string{""}}, `--schedulable-shards: "" is not a label value`},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			err := c.c.Validate()
			if c.err == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, c.err)
		})
	}
}

func TestLeases(t *testing.T) {
	assert.Equal(t, "oamflow", LeaseName("oamflow", MasterShardID))
	assert.Equal(t, "oamflow-shard-0", LeaseName("oamflow", "shard-0"))
	for name, want := range map[string]string{"oamflow": MasterShardID, "oamflow-shard-0": "shard-0", "other": "", "oamflow-": ""} {
		got, ok := shardOfLease("oamflow", name)
		assert.Equal(t, want != "", ok, name)
		assert.Equal(t, want, got, name)
	}
	now := time.Now()
	lease := func(holder string, renewed time.Time) coordinationv1.Lease {
		return coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: &metav1.MicroTime{Time: renewed}}}
	}
	assert.True(t, held(lease("a", now.Add(-5*time.Second)), now))
	assert.False(t, held(lease("a", now.Add(-20*time.Second)), now), "expired")
	assert.False(t, held(lease("", now), now), "released")
	assert.False(t, held(coordinationv1.Lease{}, now), "never held")
}
