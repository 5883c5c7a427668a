//go:build faults || e2e

package faults

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"

	"github.com/oamflow/oamflow/pkg/workflow"
)

// hookCall is what the webhook step of a kindLocal Application posts:
// which Application, which life of it (created) and which spec version.
// One intended execution of the step is one (app, life, version) whose
// workflow reached the step.
type hookCall struct {
	App     string `json:"app"`
	Life    int    `json:"life"`
	Version int    `json:"version"`
}

// hookServer is the counting HTTP server of the side-effect invariant: it
// counts the requests per hookCall and per Idempotency-Key. A request is
// made again when its result could not be recorded (the controller killed,
// or the write of the workflow state failed, between the request and the
// record): delivery is at least once, and the repeat carries the same key,
// so a receiver that honours the key performs it once. The invariant is
// therefore one key per intended execution; repeats are counted.
type hookServer struct {
	srv *httptest.Server
	mu  sync.Mutex
	// calls holds the keys seen per call and how often each came.
	calls map[hookCall]map[string]int
	// bad counts requests that were not a hookCall or had no key.
	bad int
}

func startHookServer(t *testing.T) *hookServer {
	t.Helper()
	h := &hookServer{calls: map[hookCall]map[string]int{}}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c hookCall
		err := json.NewDecoder(r.Body).Decode(&c)
		key := r.Header.Get(workflow.IdempotencyKeyHeader)
		h.mu.Lock()
		switch {
		case err != nil || c.App == "" || key == "":
			h.bad++
		case h.calls[c] == nil:
			h.calls[c] = map[string]int{key: 1}
		default:
			h.calls[c][key]++
		}
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookServer) url() string { return h.srv.URL + "/hook" }

// check adds a violation for every existing kindLocal Application whose
// current spec's step never ran, and for every execution that reached the
// server under more than one key (performed twice as far as a receiver
// can tell); it returns the number of requests received and how many of
// them repeated an execution under its key.
func (h *hookServer) check(want []desired, v *violations) (requests, repeats int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	requests = h.bad
	var dups []string
	for c, keys := range h.calls {
		for _, n := range keys {
			requests += n
			repeats += n - 1
		}
		if len(keys) > 1 {
			dups = append(dups, fmt.Sprintf("%s life %d version %d: %d keys %v", c.App, c.Life, c.Version, len(keys), keys))
		}
	}
	sort.Strings(dups)
	for _, d := range dups {
		v.add("side effect performed more than once: the webhook step of %s", d)
	}
	if h.bad > 0 {
		v.add("the counting server got %d requests that were no step's or carried no %s", h.bad, workflow.IdempotencyKeyHeader)
	}
	for i, w := range want {
		if kindOf(i) != kindLocal || !w.exists {
			continue
		}
		if len(h.calls[hookCall{App: appName(i), Life: w.created, Version: w.version}]) == 0 {
			v.add("the webhook step of %s (life %d, version %d) never ran", appName(i), w.created, w.version)
		}
	}
	v.checked(len(h.calls) + len(want))
	return requests, repeats
}
