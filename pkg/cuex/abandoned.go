package cuex

import (
	"errors"
	"sync"
)

// ErrBusy is wrapped by the Error of an evaluation that was not started
// because too many evaluations abandoned at their timeout are still
// running (see Abandoned). It is not the input's fault: trying again
// later may succeed.
var ErrBusy = errors.New("CUE evaluations abandoned at their timeout are still running")

// DefaultMaxAbandoned is how many timed-out evaluations may still run
// before Engines sharing an Abandoned stop starting new ones.
const DefaultMaxAbandoned = 2

// Abandoned counts the evaluations that timed out and still run in their
// abandoned goroutines. CUE (v0.14) cannot be interrupted: a runaway
// evaluation keeps its CPU and its memory until it ends by itself (tens of
// seconds, or never). Engines sharing one Abandoned (WithAbandoned: the
// controller's workers and its webhook) refuse to start an evaluation while
// Max of them run, so that retries of a hostile Application (or many of
// them) cannot stack runaway goroutines without bound; the refused
// evaluation fails with ErrBusy and is retried later. It is safe for
// concurrent use.
//
// The same evaluation (the same template and input) is not started again
// while its abandoned predecessor runs: it fails at once with the
// timeout's error, without taking another place.
type Abandoned struct {
	mu      sync.Mutex
	running int
	max     int
	// ids are the evaluations (template and input) still running, with
	// how many times each.
	ids map[string]int
}

// NewAbandoned returns a counter allowing max abandoned evaluations to run
// (DefaultMaxAbandoned when max ≤ 0).
func NewAbandoned(max int) *Abandoned {
	if max <= 0 {
		max = DefaultMaxAbandoned
	}
	return &Abandoned{max: max, ids: map[string]int{}}
}

// Running returns how many abandoned evaluations still run.
func (a *Abandoned) Running() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running
}

// Max returns the limit.
func (a *Abandoned) Max() int { return a.max }

// check returns whether id itself still runs abandoned, else how many
// run and whether that is the limit.
func (a *Abandoned) check(id string) (self bool, n int, full bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if id != "" && a.ids[id] > 0 {
		return true, a.running, false
	}
	return false, a.running, a.running >= a.max
}

func (a *Abandoned) add(id string, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.running += n
	if id != "" {
		if a.ids[id] += n; a.ids[id] <= 0 {
			delete(a.ids, id)
		}
	}
}
