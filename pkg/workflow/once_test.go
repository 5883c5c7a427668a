package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/definition"
	"github.com/oamflow/oamflow/pkg/testing/corpus"
)

// callThenWaitTemplate posts to parameter.url, then waits until the
// ConfigMap parameter.gate exists.
const callThenWaitTemplate = `import (
	"vela/builtin"
	"vela/http"
	"vela/kube"
)

call: http.#HTTPDo & {
	$params: {
		method: "POST"
		url:    parameter.url
		request: body: "{\"ticket\": \"open\"}"
	}
}
gate: kube.#Read & {
	$params: value: {
		apiVersion: "v1"
		kind:       "ConfigMap"
		metadata: {name: parameter.gate, namespace: context.namespace}
	}
}
wait: builtin.#ConditionalWait & {
	$params: {
		continue: call.$returns.statusCode == 200 && gate.$returns.err == _|_
		message:  "waiting for ConfigMap \(parameter.gate)"
	}
}
parameter: {url: string, gate: string}
`

// callWaitSuspendTemplate is callThenWaitTemplate followed, in the same
// step, by a suspend once the gate is open.
const callWaitSuspendTemplate = callThenWaitTemplate + `
if call.$returns != _|_ && gate.$returns != _|_ {
	if gate.$returns.err == _|_ {
		pause: builtin.#Suspend & {$params: message: "approve the ticket"}
	}
}
`

// copiedCallTemplate is callThenWaitTemplate with a copy of the action at
// another path (b: a) that the wait reads.
const copiedCallTemplate = callThenWaitTemplate + `
again: call
check: builtin.#ConditionalWait & {$params: continue: again.$returns.statusCode == 200}
`

// legacyCallThenWaitTemplate is callThenWaitTemplate in KubeVela's classic
// flat vela/op package.
const legacyCallThenWaitTemplate = `import "vela/op"

call: op.#HTTPDo & {
	method: "POST"
	url:    parameter.url
	request: body: "{\"ticket\": \"open\"}"
}
gate: op.#Read & {
	value: {
		apiVersion: "v1"
		kind:       "ConfigMap"
		metadata: {name: parameter.gate, namespace: context.namespace}
	}
}
wait: op.#ConditionalWait & {
	continue: call.response.statusCode == 200 && gate.err == _|_
}
parameter: {url: string, gate: string}
`

// countingServer counts the requests it answers (200, a JSON body).
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ticket":"T-1"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func kubevelaStep(t *testing.T, name string) string {
	t.Helper()
	f := corpus.StepDefinition(t, name)
	b, err := os.ReadFile(f)
	require.NoError(t, err)
	df, err := definition.ParseCUE(f, b)
	require.NoError(t, err)
	return df.Template
}

func withTemplates(h *harness, extra map[string]string) {
	tmpls := stepTemplates(h.t)
	for k, v := range extra {
		tmpls[k] = v
	}
	h.run.Templates = func(_ context.Context, typ string) (string, error) { return tmpls[typ], nil }
}

// TestSideEffectsOnce: an HTTP action is performed once per step
// execution, however many times the step is evaluated: while it waits,
// while it (or the next step) is suspended, after a resume, after a
// controller restart, and when its CUE holds a copy of the action
// (kubevela/workflow re-evaluated the step and called again each time).
func TestSideEffectsOnce(t *testing.T) {
	cases := []struct {
		reason string
		// steps get the server's URL as "url" and a gate ConfigMap name
		// as "gate".
		steps func(url, gate string) []*appfile.WorkflowStep
		// suspends: the run suspends after the gate opens and is resumed.
		suspends bool
	}{
		{
			reason: "HTTP + ConditionalWait, then a suspend step, then resume",
			steps: func(url, gate string) []*appfile.WorkflowStep {
				return []*appfile.WorkflowStep{
					{Name: "call", Type: "call-then-wait", Properties: map[string]any{"url": url, "gate": gate}},
					{Name: "approve", Type: "suspend"},
				}
			},
			suspends: true,
		},
		{
			reason: "HTTP + ConditionalWait + suspend in one step, in a step group, then resume",
			steps: func(url, gate string) []*appfile.WorkflowStep {
				return []*appfile.WorkflowStep{{Name: "group", Type: "step-group", SubSteps: []*appfile.WorkflowStep{
					{Name: "call", Type: "call-wait-suspend", Properties: map[string]any{"url": url, "gate": gate}},
				}}}
			},
			suspends: true,
		},
		{
			reason: "classic op.#HTTPDo + op.#ConditionalWait, then a suspend step, then resume",
			steps: func(url, gate string) []*appfile.WorkflowStep {
				return []*appfile.WorkflowStep{
					{Name: "call", Type: "legacy-call-then-wait", Properties: map[string]any{"url": url, "gate": gate}},
					{Name: "approve", Type: "suspend"},
				}
			},
			suspends: true,
		},
		{
			reason: "a copy of the action is the same call",
			steps: func(url, gate string) []*appfile.WorkflowStep {
				return []*appfile.WorkflowStep{{Name: "call", Type: "copied-call", Properties: map[string]any{"url": url, "gate": gate}}}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			srv, calls := countingServer(t)
			gate := "gate-" + time.Now().Format("150405.000000")
			wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: tc.steps(srv.URL, gate)}
			h := newHarness(t, wf, Options{})
			withTemplates(h, map[string]string{
				"call-then-wait":        callThenWaitTemplate,
				"call-wait-suspend":     callWaitSuspendTemplate,
				"copied-call":           copiedCallTemplate,
				"legacy-call-then-wait": legacyCallThenWaitTemplate,
			})

			for pass := 0; pass < 3; pass++ {
				res := h.pass()
				require.Equal(t, wfv1alpha1.WorkflowStateExecuting, res.Status.Status, "pass %d: %+v", pass, res.Status)
			}
			// A controller restart: no memory, only the stored status and
			// the context ConfigMap.
			Forget(h.app)
			engine, err := NewEngine(env(t).Client, Options{HTTP: allowLoopback(t)})
			require.NoError(t, err)
			h.engine = engine
			h.pass()
			before := calls.Load()

			c := env(t).Client
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: gate, Namespace: "default"}}
			require.NoError(t, c.Create(context.Background(), cm))
			t.Cleanup(func() { _ = c.Delete(context.Background(), cm) })

			if tc.suspends {
				res := h.until(20*time.Second, func(r Result) bool { return r.Status.Status == wfv1alpha1.WorkflowStateSuspending })
				for pass := 0; pass < 3; pass++ {
					res = h.pass()
					assert.Equal(t, wfv1alpha1.WorkflowStateSuspending, res.Status.Status)
				}
				assert.Equal(t, before, calls.Load(), "the suspended passes made no call")
				require.NoError(t, Resume(h.run.Status))
			}
			res := h.until(20*time.Second, finished)
			require.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, "%+v", res.Status)
			assert.Equal(t, int32(1), calls.Load(), "calls to the server")

		})
	}
}

// TestKubeVelaRequestStepCallsOnce: KubeVela's own request definition
// (op.#ConditionalWait, op.#Steps, op.#Fail around http.#HTTPDo) calls the
// server once and succeeds.
func TestKubeVelaRequestStepCallsOnce(t *testing.T) {
	srv, calls := countingServer(t)
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		{Name: "call", Type: "kubevela-request", Properties: map[string]any{"url": srv.URL, "method": "POST", "body": map[string]any{"a": 1}}},
		{Name: "approve", Type: "suspend"},
	}}
	h := newHarness(t, wf, Options{})
	withTemplates(h, map[string]string{"kubevela-request": kubevelaStep(t, "request")})
	for pass := 0; pass < 3; pass++ {
		res := h.pass()
		assert.Equal(t, wfv1alpha1.WorkflowStateSuspending, res.Status.Status, "%+v", res.Status)
	}
	require.NoError(t, Resume(h.run.Status))
	res := h.until(20*time.Second, finished)
	require.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, "%+v", res.Status)
	assert.Equal(t, int32(1), calls.Load())
}

// TestKubeVelaExternalStepsCallOnce: KubeVela's own request, webhook and
// notification (Slack) definitions, followed by a suspend, each reach the
// server exactly once over the suspended passes and the resume.
func TestKubeVelaExternalStepsCallOnce(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[r.Method+" "+r.URL.Path+" "+string(b)]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(srv.Close)
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		{Name: "request", Type: "kubevela-request", Properties: map[string]any{"url": srv.URL + "/request", "method": "POST", "body": map[string]any{"a": 1}}},
		{Name: "webhook", Type: "kubevela-webhook", Properties: map[string]any{"url": map[string]any{"value": srv.URL + "/webhook"}, "data": map[string]any{"b": 2}}},
		{Name: "notify", Type: "kubevela-notification", Properties: map[string]any{"slack": map[string]any{
			"url": map[string]any{"value": srv.URL + "/slack"}, "message": map[string]any{"text": "deployed"}}}},
		{Name: "approve", Type: "suspend"},
	}}
	h := newHarness(t, wf, Options{})
	withTemplates(h, map[string]string{
		"kubevela-request":      kubevelaStep(t, "request"),
		"kubevela-webhook":      kubevelaStep(t, "webhook"),
		"kubevela-notification": kubevelaStep(t, "notification"),
	})
	res := h.until(20*time.Second, func(r Result) bool { return r.Status.Status == wfv1alpha1.WorkflowStateSuspending })
	for pass := 0; pass < 3; pass++ {
		res = h.pass()
		require.Equal(t, wfv1alpha1.WorkflowStateSuspending, res.Status.Status, "%+v", res.Status)
	}
	require.NoError(t, Resume(h.run.Status))
	res = h.until(20*time.Second, finished)
	require.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, "%+v", res.Status)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[string]int{
		`POST /request {"a":1}`:           1,
		`POST /webhook {"b":2}`:           1,
		`POST /slack {"text":"deployed"}`: 1,
	}, got)
}

// TestSideEffectsRetriedAfterFailure: a step that made its call and then
// failed with a retryable error makes it again on the retry, and its
// message numbers the attempt.
func TestSideEffectsRetriedAfterFailure(t *testing.T) {
	srv, calls := countingServer(t)
	const tmpl = `import (
	"vela/http"
	"vela/kube"
)

call: http.#HTTPDo & {$params: {method: "POST", url: parameter.url}}
if call.$returns != _|_ {
	record: kube.#Apply & {$params: value: {
		apiVersion: "v1"
		kind:       "ConfigMap"
		metadata: {name: "ticket-\(context.name)", namespace: context.namespace}
		data: body: call.$returns.body
	}}
}
parameter: url: string
`
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		{Name: "call", Type: "call-and-record", Properties: map[string]any{"url": srv.URL}},
	}}
	h := newHarness(t, wf, Options{})
	withTemplates(h, map[string]string{"call-and-record": tmpl})
	var applies atomic.Int32
	h.deployer.applyErr = func(string) error {
		if applies.Add(1) == 1 {
			return apierrors.NewServiceUnavailable("the API server is restarting")
		}
		return nil
	}
	res := h.pass()
	require.Equal(t, failed, phaseOf(res.Status)["call"], "%+v", res.Status)
	assert.Contains(t, res.Status.Steps[0].Message, "attempt 1 of 3 failed: ")
	assert.Contains(t, res.Status.Steps[0].Message, "the API server is restarting")
	assert.Equal(t, int32(1), calls.Load())

	res = h.until(20*time.Second, finished)
	require.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, "%+v", res.Status)
	assert.Equal(t, int32(2), calls.Load(), "the retry is a new attempt and calls again")
}

func TestPruneSideEffects(t *testing.T) {
	step := func(id string, phase wfv1alpha1.WorkflowStepPhase, subs ...wfv1alpha1.StepStatus) wfv1alpha1.WorkflowStepStatus {
		return wfv1alpha1.WorkflowStepStatus{StepStatus: wfv1alpha1.StepStatus{ID: id, Name: id, Phase: phase}, SubStepsStatus: subs}
	}
	sub := func(id string, phase wfv1alpha1.WorkflowStepPhase) wfv1alpha1.StepStatus {
		return wfv1alpha1.StepStatus{ID: id, Name: id, Phase: phase}
	}
	st := &wfv1alpha1.WorkflowRunStatus{Steps: []wfv1alpha1.WorkflowStepStatus{
		step("done", succeeded),
		step("waiting", running),
		step("paused", suspending),
		step("retry", failed),
		step("group", running, sub("g-running", running), sub("g-done", succeeded)),
	}}
	cm := &corev1.ConfigMap{Data: map[string]string{
		"vars":                        "{}",
		"done." + sideEffectsKey:      "[]",
		"waiting." + sideEffectsKey:   "[]",
		"paused." + sideEffectsKey:    "[]",
		"retry." + sideEffectsKey:     "[]",
		"g-running." + sideEffectsKey: "[]",
		"g-done." + sideEffectsKey:    "[]",
		"restarted." + sideEffectsKey: "[]",
		"paused.resumeTimeStamp":      "2026-01-01T00:00:00Z",
	}}
	assert.True(t, pruneSideEffects(cm, st))
	assert.Equal(t, map[string]string{
		"vars":                        "{}",
		"waiting." + sideEffectsKey:   "[]",
		"paused." + sideEffectsKey:    "[]",
		"g-running." + sideEffectsKey: "[]",
		"paused.resumeTimeStamp":      "2026-01-01T00:00:00Z",
	}, cm.Data, "only running and suspended steps keep their results")
	assert.False(t, pruneSideEffects(cm, st), "nothing more to remove")
}

// TestSideEffectsTooLargeToKeep: a call whose result would push the
// context ConfigMap towards its 1 MiB limit fails the step for good,
// naming the step and the limit; it is not kept, and not made again.
func TestSideEffectsTooLargeToKeep(t *testing.T) {
	var calls atomic.Int32
	big := `{"data":"` + strings.Repeat("x", 300<<10) + `"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(big))
	}))
	t.Cleanup(srv.Close)
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		{Name: "call", Type: "kubevela-request", Properties: map[string]any{"url": srv.URL, "method": "GET"}},
	}}
	h := newHarness(t, wf, Options{})
	withTemplates(h, map[string]string{"kubevela-request": kubevelaStep(t, "request")})
	res := h.until(20*time.Second, finished)
	require.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status, "%+v", res.Status)
	require.NotEmpty(t, res.Status.Steps)
	assert.Equal(t, failed, res.Status.Steps[0].Phase)
	assert.Contains(t, res.Status.Steps[0].Message, `step "call": the result of http.do at req is too large to keep: the step's side-effect results would take 301 KiB of the workflow context ConfigMap, more than the 256 KiB kept per step`)
	for pass := 0; pass < 2; pass++ {
		h.pass()
	}
	assert.Equal(t, int32(1), calls.Load(), "failed for good: not called again")
	cm := &corev1.ConfigMap{}
	err := env(t).Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "workflow-" + h.app.Name + "-context"}, cm)
	if !apierrors.IsNotFound(err) { // nothing kept: no context at all
		require.NoError(t, err)
	}
	for k, v := range cm.Data {
		assert.False(t, strings.HasSuffix(k, "."+sideEffectsKey), "kept %s (%d bytes)", k, len(v))
	}
}

func TestSideEffectsTooLarge(t *testing.T) {
	result := func(n int) []sideEffect {
		return []sideEffect{{Path: "req", Call: "http.do", Result: map[string]json.RawMessage{"body": json.RawMessage(`"` + strings.Repeat("x", n) + `"`)}}}
	}
	others := func(sizes ...int) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{Data: map[string]string{"vars": strings.Repeat("v", 400<<10)}}
		for i, n := range sizes {
			cm.Data[fmt.Sprintf("other-%d.%s", i, sideEffectsKey)] = strings.Repeat("o", n)
		}
		return cm
	}
	cases := []struct {
		reason string
		cm     *corev1.ConfigMap
		kept   []sideEffect
		want   string
	}{
		{reason: "a small result is kept", cm: others(), kept: result(1 << 10)},
		{reason: "a step's results up to the per-step limit are kept", cm: others(), kept: result(250 << 10)},
		{reason: "over the per-step limit", cm: others(), kept: result(257 << 10),
			want: `step "call": the result of http.do at req is too large to keep: the step's side-effect results would take 258 KiB of the workflow context ConfigMap, more than the 256 KiB kept per step (a ConfigMap holds at most 1 MiB); the call was made and is not made again`},
		{reason: "other steps' results count, variables do not", cm: others(200 << 10), kept: result(200 << 10)},
		{reason: "over the limit for all running steps", cm: others(200<<10, 200<<10), kept: result(200 << 10),
			want: `step "call": the result of http.do at req is too large to keep: the side-effect results of the running steps would take 601 KiB of the workflow context ConfigMap, more than the 512 KiB kept for all of them (a ConfigMap holds at most 1 MiB); the call was made and is not made again`},
		{reason: "the step's own previous results are replaced, not counted twice",
			cm: func() *corev1.ConfigMap {
				cm := others(200 << 10)
				cm.Data["s1."+sideEffectsKey] = strings.Repeat("s", 200<<10)
				return cm
			}(), kept: result(250 << 10)},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, sideEffectsTooLarge(tc.cm, "call", "s1", "http.do", "req", tc.kept))
		})
	}
}

// TestIdempotencyKey: a step's POST carries an Idempotency-Key that is the
// same when the execution is repeated because its result was lost (a new
// engine, as after a controller restart, with no stored context), and
// differs for another revision's run; a GET carries none.
func TestIdempotencyKey(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Method+" "+r.Header.Get(IdempotencyKeyHeader))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(srv.Close)
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := keys
		keys = nil
		return out
	}
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		{Name: "notify", Type: "kubevela-webhook", Properties: map[string]any{"url": map[string]any{"value": srv.URL}, "data": map[string]any{"b": 2}}},
	}}
	h := newHarness(t, wf, Options{})
	withTemplates(h, map[string]string{"kubevela-webhook": kubevelaStep(t, "webhook")})
	res := h.until(20*time.Second, finished)
	require.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, "%+v", res.Status)
	first := seen()
	require.Len(t, first, 1)
	assert.Regexp(t, `^POST [0-9a-f]{32}$`, first[0])

	// The result is lost: the run starts over on a fresh engine with no
	// stored state (the context ConfigMap is gone).
	require.NoError(t, h.engine.Reset(context.Background(), h.app))
	again, err := NewEngine(env(t).Client, Options{HTTP: allowLoopback(t)})
	require.NoError(t, err)
	h.engine, h.run.Status = again, nil
	res = h.until(20*time.Second, finished)
	require.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, "%+v", res.Status)
	assert.Equal(t, first, seen(), "a repeat of the same execution carries the same key")

	// Another revision: another execution, another key.
	require.NoError(t, h.engine.Reset(context.Background(), h.app))
	h.run.Status, h.run.Revision = nil, h.app.Name+"-v2"
	h.run.Context = map[string]any{"appName": h.app.Name, "appRevision": h.app.Name + "-v2"}
	res = h.until(20*time.Second, finished)
	require.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, "%+v", res.Status)
	next := seen()
	require.Len(t, next, 1)
	assert.NotEqual(t, first, next, "another revision's run carries another key")

	// A GET only reads: no key.
	get := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		{Name: "ask", Type: "kubevela-request", Properties: map[string]any{"url": srv.URL, "method": "GET"}},
	}}
	h = newHarness(t, get, Options{})
	withTemplates(h, map[string]string{"kubevela-request": kubevelaStep(t, "request")})
	res = h.until(20*time.Second, finished)
	require.Equal(t, wfv1alpha1.WorkflowStateSucceeded, res.Status.Status, "%+v", res.Status)
	assert.Equal(t, []string{"GET "}, seen())
}
