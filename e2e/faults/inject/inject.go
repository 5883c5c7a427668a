// Package inject is the fault suite's API-error injector: an HTTP
// transport wrapper for the controller's Kubernetes clients that fails a
// fraction of writes with 500, 429 or 409 and delays some watches. It is
// linked only into the controller built with the `faults` tag
// (cmd/oamflow-controller/faults.go), which reads its configuration from
// $OAMFLOW_FAULTS_INJECT; the product has only the seam
// (manager.Options.WrapTransport).
package inject

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EnvVar holds the injector's configuration, for example
// "seed=7,write=0.05,watch=0.3,watch-delay=5s,stop=/tmp/faults-off".
const EnvVar = "OAMFLOW_FAULTS_INJECT"

// Logged is the prefix of the line written for each injected fault.
const Logged = "faults-inject:"

// Config says which requests fail.
type Config struct {
	// Seed seeds the injector's RNG (requests arrive concurrently, so a
	// seed fixes the draws, not which request gets which).
	Seed uint64
	// Write is the fraction of writes (POST, PUT, PATCH, DELETE) failed.
	Write float64
	// Watch is the fraction of watch requests delayed, by up to WatchDelay.
	Watch      float64
	WatchDelay time.Duration
	// Stop, when set, is a file whose existence turns injection off (the
	// suite creates it when the faults stop, then checks convergence).
	Stop string
}

// Parse reads a Config from "key=value,…" (keys seed, write, watch,
// watch-delay, stop).
func Parse(s string) (Config, error) {
	c := Config{WatchDelay: 5 * time.Second}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return c, fmt.Errorf("%s: %q is not key=value", EnvVar, kv)
		}
		var err error
		switch k {
		case "seed":
			c.Seed, err = strconv.ParseUint(v, 10, 64)
		case "write":
			c.Write, err = parseFraction(v)
		case "watch":
			c.Watch, err = parseFraction(v)
		case "watch-delay":
			c.WatchDelay, err = time.ParseDuration(v)
		case "stop":
			c.Stop = v
		default:
			err = fmt.Errorf("unknown key (expected seed, write, watch, watch-delay or stop)")
		}
		if err != nil {
			return c, fmt.Errorf("%s: %s: %w", EnvVar, k, err)
		}
	}
	return c, nil
}

func parseFraction(v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err == nil && (f < 0 || f > 1) {
		err = fmt.Errorf("%v is not between 0 and 1", f)
	}
	return f, err
}

// Injector wraps transports; its RNG and log are shared by all of them.
type Injector struct {
	cfg Config
	log io.Writer
	mu  sync.Mutex
	rng *rand.Rand
}

// New returns an injector writing one line per fault to log.
func New(cfg Config, log io.Writer) *Injector {
	return &Injector{cfg: cfg, log: log, rng: rand.New(rand.NewPCG(cfg.Seed, 1))}
}

// Wrap is a transport.WrapperFunc.
func (in *Injector) Wrap(next http.RoundTripper) http.RoundTripper {
	return &roundTripper{in: in, next: next}
}

// fault is what happens to one request.
type fault struct {
	status int
	// after: the request is sent and its response replaced (the write
	// happened, the client is told it failed).
	after bool
	delay time.Duration
}

func (in *Injector) draw(req *http.Request) (fault, bool) {
	if in.cfg.Stop != "" {
		if _, err := os.Stat(in.cfg.Stop); err == nil {
			return fault{}, false
		}
	}
	watch := req.Method == http.MethodGet && req.URL.Query().Get("watch") == "true"
	write := req.Method == http.MethodPost || req.Method == http.MethodPut || req.Method == http.MethodPatch || req.Method == http.MethodDelete
	in.mu.Lock()
	defer in.mu.Unlock()
	switch {
	case watch && in.cfg.Watch > 0 && in.rng.Float64() < in.cfg.Watch && in.cfg.WatchDelay > 0:
		return fault{delay: time.Duration(in.rng.Int64N(int64(in.cfg.WatchDelay)))}, true
	case write && in.cfg.Write > 0 && in.rng.Float64() < in.cfg.Write:
		switch in.rng.IntN(4) {
		case 0:
			return fault{status: http.StatusTooManyRequests}, true
		case 1:
			return fault{status: http.StatusConflict}, true
		case 2:
			return fault{status: http.StatusInternalServerError, after: true}, true
		default:
			return fault{status: http.StatusInternalServerError}, true
		}
	}
	return fault{}, false
}

type roundTripper struct {
	in   *Injector
	next http.RoundTripper
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	f, ok := rt.in.draw(req)
	if !ok {
		return rt.next.RoundTrip(req)
	}
	if f.delay > 0 {
		rt.in.logf("delay %s %s by %s", req.Method, req.URL.Path, f.delay.Round(time.Millisecond))
		select {
		case <-time.After(f.delay):
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
		return rt.next.RoundTrip(req)
	}
	if f.after {
		resp, err := rt.next.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		rt.in.logf("%d after sending %s %s (was %d)", f.status, req.Method, req.URL.Path, resp.StatusCode)
	} else {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		rt.in.logf("%d instead of %s %s", f.status, req.Method, req.URL.Path)
	}
	return statusResponse(req, f.status), nil
}

func (in *Injector) logf(format string, args ...any) {
	in.mu.Lock()
	defer in.mu.Unlock()
	fmt.Fprintf(in.log, "%s %s "+format+"\n", append([]any{Logged, time.Now().UTC().Format(time.RFC3339Nano)}, args...)...)
}

// statusResponse is the API server's answer with a Status of code.
func statusResponse(req *http.Request, code int) *http.Response {
	reason := map[int]metav1.StatusReason{
		http.StatusTooManyRequests:     metav1.StatusReasonTooManyRequests,
		http.StatusConflict:            metav1.StatusReasonConflict,
		http.StatusInternalServerError: metav1.StatusReasonInternalError,
	}[code]
	body, _ := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason,
		Message: fmt.Sprintf("injected by the fault suite (%s)", http.StatusText(code)),
	})
	return &http.Response{
		StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(strings.NewReader(string(body))),
		ContentLength: int64(len(body)), Request: req,
	}
}
