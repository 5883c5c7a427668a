// Package sharding splits the Applications of one hub between several
// controller processes, in KubeVela's scheme so that an installation
// migrating from KubeVela keeps its labels and flags:
//
//   - an Application is reconciled by the shard named by its label
//     controller.core.oam.dev/scheduled-shard-id; its ApplicationRevisions
//     and ResourceTrackers carry the same label (Propagate);
//   - a controller started with --enable-sharding --shard-id=<id> caches
//     and reconciles only the Applications labelled for <id> (Selector);
//   - the master shard (--shard-id=master, the default) also serves the
//     admission webhooks, which give every new Application a shard
//     (Scheduler: round-robin over --schedulable-shards, or over the
//     running shards when that list is empty), and runs the Supervisor,
//     which schedules Applications the webhook did not see and tells, in
//     the status of Applications labelled for a shard that does not run,
//     which shard they wait for;
//   - each shard elects its own leader with its own Lease (LeaseName), so
//     a shard can have replicas; a shard runs while its Lease is held.
//
// Controller Pods carry controller.core.oam.dev/shard-id=<id> (LabelShardID).
package sharding

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	// LabelShardID is the label of controller Pods naming their shard.
	LabelShardID = "controller.core.oam.dev/shard-id"
	// LabelScheduledShardID is the label of Applications (and of their
	// revisions and trackers) naming the shard that reconciles them.
	LabelScheduledShardID = "controller.core.oam.dev/scheduled-shard-id"
	// MasterShardID is the shard that serves the webhooks and schedules.
	MasterShardID = "master"
	// ConditionScheduled is the Application condition saying which shard
	// reconciles it (True) or which shard it waits for (False).
	ConditionScheduled = "Scheduled"
	// ReasonShardRunning and ReasonShardNotRunning are its reasons.
	ReasonShardRunning    = "ShardRunning"
	ReasonShardNotRunning = "ShardNotRunning"
)

// Config is the sharding flags: --enable-sharding, --shard-id,
// --schedulable-shards.
type Config struct {
	Enabled bool
	// ShardID is this controller's shard (MasterShardID when empty).
	ShardID string
	// SchedulableShards are the shards the master assigns new
	// Applications to, in round-robin order; empty: the shards that run
	// (whose Lease is held), the master excepted.
	SchedulableShards []string
}

// ID is the shard id, MasterShardID when unset.
func (c Config) ID() string {
	if c.ShardID == "" {
		return MasterShardID
	}
	return c.ShardID
}

// IsMaster reports whether this controller schedules and serves the
// webhooks: without sharding, or as the master shard.
func (c Config) IsMaster() bool { return !c.Enabled || c.ID() == MasterShardID }

// Validate checks that the shard ids are label values, naming the flag.
func (c Config) Validate() error {
	if !c.Enabled {
		return nil
	}
	var errs []error
	if msgs := validation.IsValidLabelValue(c.ID()); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--shard-id %q is not a label value: %s", c.ID(), strings.Join(msgs, "; ")))
	}
	seen := map[string]bool{}
	for _, s := range c.SchedulableShards {
		if msgs := validation.IsValidLabelValue(s); len(msgs) > 0 || s == "" {
			errs = append(errs, fmt.Errorf("--schedulable-shards: %q is not a label value: %s", s, strings.Join(msgs, "; ")))
		}
		if seen[s] {
			errs = append(errs, fmt.Errorf("--schedulable-shards: %q is listed twice", s))
		}
		seen[s] = true
	}
	return errors.Join(errs...)
}

// Selector selects the objects of this shard (nil without sharding).
func (c Config) Selector() labels.Selector {
	if !c.Enabled {
		return nil
	}
	return labels.SelectorFromSet(labels.Set{LabelScheduledShardID: c.ID()})
}

// LeaseName is the leader election Lease of shard given the base name
// (--leader-election-id): the base for the master, base-<shard> for the
// others (KubeVela's suffix).
func LeaseName(base, shard string) string {
	if shard == "" || shard == MasterShardID {
		return base
	}
	return base + "-" + shard
}

// ScheduledShard is the shard o is labelled for.
func ScheduledShard(o metav1.Object) (string, bool) {
	id, ok := o.GetLabels()[LabelScheduledShardID]
	return id, ok && id != ""
}

// SetScheduledShard labels o for shard.
func SetScheduledShard(o metav1.Object, shard string) {
	l := o.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[LabelScheduledShardID] = shard
	o.SetLabels(l)
}

// Propagate gives to (a revision, a tracker, a workflow context) the shard
// label of from (its Application), removing it when from has none, and
// reports whether to changed. It is the one place owned objects get the
// label (KubeVela forgot revisions once: kubevela#6433).
func Propagate(from, to metav1.Object) bool {
	want, ok := ScheduledShard(from)
	have, had := to.GetLabels()[LabelScheduledShardID]
	switch {
	case ok && (!had || have != want):
		SetScheduledShard(to, want)
		return true
	case !ok && had:
		l := to.GetLabels()
		delete(l, LabelScheduledShardID)
		to.SetLabels(l)
		return true
	}
	return false
}

// Scheduler picks the shard of a new Application: round-robin over the
// candidates, in the order given (--schedulable-shards), or sorted when
// they are discovered. Round-robin keeps the split even for Applications
// created together (a Git sync), which a least-loaded count read from a
// cache would not; shards that already hold more stay so until their
// Applications are re-labelled.
type Scheduler struct {
	static []string
	// running is the last list of running shards (dynamic discovery).
	running atomic.Pointer[[]string]
	next    atomic.Uint64
}

// NewScheduler schedules over shards, or over the shards SetRunning
// reports when shards is empty.
func NewScheduler(shards []string) *Scheduler {
	return &Scheduler{static: slices.Clone(shards)}
}

// Static reports whether the candidates are a fixed list.
func (s *Scheduler) Static() bool { return len(s.static) > 0 }

// SetRunning records the running shards (dynamic discovery); the master
// is left out, as in KubeVela, unless it is listed statically.
func (s *Scheduler) SetRunning(shards []string) {
	var c []string
	for _, id := range shards {
		if id != MasterShardID {
			c = append(c, id)
		}
	}
	slices.Sort(c)
	s.running.Store(&c)
}

func (s *Scheduler) candidates() []string {
	if len(s.static) > 0 {
		return s.static
	}
	if p := s.running.Load(); p != nil {
		return *p
	}
	return nil
}

// Schedule labels o for the next shard unless it is labelled already, and
// returns the shard it is labelled for; false when there is no candidate.
func (s *Scheduler) Schedule(o metav1.Object) (string, bool) {
	if id, ok := ScheduledShard(o); ok {
		return id, true
	}
	c := s.candidates()
	if len(c) == 0 {
		return "", false
	}
	id := c[(s.next.Add(1)-1)%uint64(len(c))]
	SetScheduledShard(o, id)
	return id, true
}
