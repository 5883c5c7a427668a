package multicluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// fakeFleet answers List with clusters and Health from reachable.
type fakeFleet struct {
	clusters  []Cluster
	reachable map[string]bool
	listErr   error
	mu        sync.Mutex
	asked     []string
}

func (f *fakeFleet) List(context.Context) ([]Cluster, error) { return f.clusters, f.listErr }

func (f *fakeFleet) Health(_ context.Context, name string) Health {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, name)
	return Health{Reachable: f.reachable[name]}
}

// stuckFleet's member "stuck" answers only once "east" has been asked (a
// member whose API server takes its client's whole timeout to fail).
type stuckFleet struct {
	asked chan struct{}
}

func (f *stuckFleet) List(context.Context) ([]Cluster, error) {
	return []Cluster{{Name: "stuck"}, {Name: "east"}}, nil
}

func (f *stuckFleet) Health(ctx context.Context, name string) Health {
	if name == "east" {
		close(f.asked)
		return Health{Reachable: true}
	}
	select {
	case <-f.asked:
		return Health{Reachable: true}
	case <-ctx.Done():
		return Health{Message: "timed out"}
	}
}

// TestProbeDoesNotWaitInLine: members are asked side by side, so a member
// that takes its whole client timeout to fail does not hold back the
// others' probes (with 20 members down, one after the other, a round
// took 20 x 15s). Sequential probing never asks east while stuck waits:
// stuck is then found down when the guard's deadline passes.
func TestProbeDoesNotWaitInLine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a deadlock guard, not a timed assertion
	defer cancel()
	p := &Prober{Fleet: &stuckFleet{asked: make(chan struct{})}}
	down := map[string]bool{}
	assert.Empty(t, p.Probe(ctx, down), "both members answer")
	assert.Empty(t, down)
}

func TestProbe(t *testing.T) {
	members := []Cluster{{Name: "local"}, {Name: "east"}, {Name: "west"}, {Name: "broken", Err: errors.New("no endpoint")}}
	cases := []struct {
		reason    string
		clusters  []Cluster
		listErr   error
		down      map[string]bool
		reachable map[string]bool
		changed   []string
		after     map[string]bool
	}{
		{"all answer, as assumed: no change", members, nil, map[string]bool{}, map[string]bool{"east": true, "west": true}, nil, map[string]bool{}},
		{"one stops answering", members, nil, map[string]bool{}, map[string]bool{"east": true}, []string{"west"}, map[string]bool{"west": true}},
		{"still down: no change", members, nil, map[string]bool{"west": true}, map[string]bool{"east": true}, nil, map[string]bool{"west": true}},
		{"back", members, nil, map[string]bool{"west": true}, map[string]bool{"east": true, "west": true}, []string{"west"}, map[string]bool{}},
		{"a detached member is forgotten", members[:2], nil, map[string]bool{"west": true}, map[string]bool{"east": true}, nil, map[string]bool{}},
		{"the registry cannot be read: nothing known changes", nil, errors.New("forbidden"), map[string]bool{"west": true}, nil, nil, map[string]bool{"west": true}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			f := &fakeFleet{clusters: tc.clusters, reachable: tc.reachable, listErr: tc.listErr}
			p := &Prober{Fleet: f}
			assert.Equal(t, tc.changed, p.Probe(context.Background(), tc.down))
			assert.Equal(t, tc.after, tc.down)
			assert.NotContains(t, f.asked, "local", "the hub is not probed")
			assert.NotContains(t, f.asked, "broken", "a misconfigured member is not probed")
		})
	}
}
