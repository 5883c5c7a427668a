package workflow

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	cuexruntime "github.com/kubevela/pkg/cue/cuex/runtime"
	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	wfContext "github.com/kubevela/workflow/pkg/context"
	"github.com/kubevela/workflow/pkg/cue/model"
	providertypes "github.com/kubevela/workflow/pkg/providers/types"
	corev1 "k8s.io/api/core/v1"
)

// Side effects once.
//
// kubevela/workflow evaluates a step's CUE afresh on every pass until the
// step finishes: while it waits (op.#ConditionalWait, a component not yet
// healthy), while it is suspended, and within one evaluation again for
// every path that holds a copy of an action (`b: a`). An action that talks
// to the outside world (an HTTP request, a webhook, a notification, an
// e-mail) was therefore performed again on each of those.
//
// The provider functions with side effects (sideEffectFns) are wrapped so
// that a call is performed at most once per step execution: its result
// (the fields it filled in, e.g. $returns) is kept in the workflow context
// ConfigMap under "<step id>.sideEffects" and given back, without calling
// again, to every later evaluation of the same call: the same field path,
// or another path asking for the same call with the same parameters. The
// library commits the ConfigMap at the end of each step, so the results
// survive reconciles and controller restarts.
//
// A step execution ends when the step finishes or fails: at the start of a
// pass (pruneSideEffects) the results of every step that is not running
// or suspended in the stored status are dropped, so a retry after a failed
// attempt performs its actions again (the step message counts attempts,
// see failureCounts) and a restarted step, which gets a new id, starts
// afresh.

// sideEffectsKey is the suffix of a step's results in the context
// ConfigMap: "<step id>.sideEffects".
const sideEffectsKey = "sideEffects"

// sideEffectFns returns the functions of the provider package pkg (the
// #provider of its actions) that act on the outside world.
func sideEffectFns(pkg string) []string {
	switch pkg {
	case "http":
		return []string{"do"}
	case "email":
		return []string{"send"}
	case "op":
		// The flat legacy package: op.#HTTPDo and friends, op.#SendEmail.
		return []string{"do", "send"}
	}
	return nil
}

// withSideEffectsOnce returns fns with its side-effect functions wrapped
// by onceFn.
func withSideEffectsOnce(pkg string, fns map[string]cuexruntime.ProviderFn) map[string]cuexruntime.ProviderFn {
	for _, name := range sideEffectFns(pkg) {
		if fn, ok := fns[name]; ok {
			fns[name] = onceFn{call: pkg + "." + name, next: fn}
		}
	}
	return fns
}

// onceFn is a provider function performed at most once per step
// execution; see the comment above.
type onceFn struct {
	// call names the function, "<package>.<function>".
	call string
	next cuexruntime.ProviderFn
}

// sideEffect is the kept result of one call.
type sideEffect struct {
	// Path is the field path of the action in the step's CUE.
	Path string `json:"path"`
	// Call is "<package>.<function>".
	Call string `json:"call"`
	// Input is the digest of the call's parameters (the fields of the
	// action that are concrete, without Result's).
	Input string `json:"input"`
	// Result holds the fields the call filled in, by name.
	Result map[string]json.RawMessage `json:"result"`
}

// Call performs the call unless the step already did; a failed call is
// not kept (the step retries it).
func (o onceFn) Call(ctx context.Context, v cue.Value) (cue.Value, error) {
	fields := concreteFields(v)
	rt := providertypes.RuntimeParamsFrom(ctx)
	step := stepSessionID(rt)
	if rt.WorkflowContext == nil || step == "" {
		out, err := o.next.Call(ctx, withoutPlaceholders(v))
		if err != nil {
			return v, err
		}
		return fillResult(v, filledFields(fields, concreteFields(out)))
	}
	path := v.Path().String()
	kept := loadSideEffects(rt.WorkflowContext, step)
	if r, ok := findSideEffect(kept, o.call, path, fields); ok {
		return fillResult(v, r.Result)
	}
	out, err := o.next.Call(ctx, withoutPlaceholders(v))
	if err != nil {
		return v, err
	}
	result := filledFields(fields, concreteFields(out))
	kept = append(kept, sideEffect{Path: path, Call: o.call, Input: inputDigest(fields, result), Result: result})
	if msg := sideEffectsTooLarge(rt.WorkflowContext.GetStore(), stepName(rt), step, o.call, path, kept); msg != "" {
		// Not kept, the call would be made again on the next evaluation:
		// the step fails for good instead (no retry, no second call).
		if rt.Action != nil {
			return v, fail(ctx, rt, msg)
		}
		return v, errors.New(msg)
	}
	storeSideEffects(rt.WorkflowContext, step, kept)
	return fillResult(v, result)
}

// What the context ConfigMap may hold of side-effect results. A ConfigMap,
// like every object, holds at most 1 MiB (the API server refuses more), and
// the workflow context ConfigMap also holds the workflow's variables
// (step outputs): the results of one step may take a quarter of it, those
// of all the steps running at once (a DAG, a step group) half.
const (
	maxStepSideEffects = 256 << 10
	maxSideEffects     = 512 << 10
)

// sideEffectsTooLarge returns why kept, the results of step (id; name for
// the message) after call at path, cannot be stored in the context
// ConfigMap cm (nil: not checked against the other steps), or "".
func sideEffectsTooLarge(cm *corev1.ConfigMap, name, step, call, path string, kept []sideEffect) string {
	b, _ := json.Marshal(kept) // strings and raw JSON only: cannot fail
	size := len(b)
	if size > maxStepSideEffects {
		return fmt.Sprintf("step %q: the result of %s at %s is too large to keep: the step's side-effect results would take %s of the workflow context ConfigMap, more than the %s kept per step (a ConfigMap holds at most 1 MiB); the call was made and is not made again",
			name, call, path, kib(size), kib(maxStepSideEffects))
	}
	if cm == nil {
		return ""
	}
	total := size
	for k, s := range cm.Data {
		if k != step+"."+sideEffectsKey && strings.HasSuffix(k, "."+sideEffectsKey) {
			total += len(s)
		}
	}
	if total > maxSideEffects {
		return fmt.Sprintf("step %q: the result of %s at %s is too large to keep: the side-effect results of the running steps would take %s of the workflow context ConfigMap, more than the %s kept for all of them (a ConfigMap holds at most 1 MiB); the call was made and is not made again",
			name, call, path, kib(total), kib(maxSideEffects))
	}
	return ""
}

// kib formats n bytes in KiB, rounded up.
func kib(n int) string { return fmt.Sprintf("%d KiB", (n+1023)/1024) }

// stepName is the name of the step being run, for messages.
func stepName(rt providertypes.RuntimeParams) string {
	if rt.ProcessContext != nil {
		if n := rt.ProcessContext.GetData(model.ContextStepName); n != nil {
			return fmt.Sprint(n)
		}
	}
	return stepSessionID(rt)
}

// withoutPlaceholders returns the action v without its result
// placeholders: top-level fields holding no concrete value at all, such as
// op.#HTTPDo's `response: {body: string, statusCode: int}`. The legacy
// providers decode the whole action as JSON, which such a field makes fail
// ("response.body: cannot convert incomplete value"); a field with some
// concrete value but not all (a request body not computed yet) is kept, so
// the call still fails rather than going out without it. v itself when it
// has no placeholder.
func withoutPlaceholders(v cue.Value) cue.Value {
	it, err := v.Fields()
	if err != nil {
		return v
	}
	obj := map[string]json.RawMessage{}
	holes := false
	for it.Next() {
		f := it.Value()
		if !hasConcrete(f) {
			holes = true
			continue
		}
		b, err := f.MarshalJSON()
		if err != nil {
			return v
		}
		obj[it.Selector().Unquoted()] = b
	}
	if !holes {
		return v
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return v
	}
	in := v.Context().CompileBytes(b)
	if in.Err() != nil {
		return v
	}
	return in
}

// hasConcrete reports whether v holds a concrete scalar somewhere (regular
// fields and list elements).
func hasConcrete(v cue.Value) bool {
	switch v.IncompleteKind() {
	case cue.StructKind:
		it, err := v.Fields()
		if err != nil {
			return false
		}
		for it.Next() {
			if hasConcrete(it.Value()) {
				return true
			}
		}
		return false
	case cue.ListKind:
		it, err := v.List()
		if err != nil {
			return false
		}
		for it.Next() {
			if hasConcrete(it.Value()) {
				return true
			}
		}
		return false
	}
	return v.IsConcrete()
}

// stepSessionID is the id of the step being run (its status id), "" when
// the call is not made by a workflow step.
func stepSessionID(rt providertypes.RuntimeParams) string {
	if rt.ProcessContext == nil {
		return ""
	}
	id := rt.ProcessContext.GetData(model.ContextStepSessionID)
	if id == nil {
		return ""
	}
	s := fmt.Sprint(id)
	if s == "<nil>" {
		return ""
	}
	return s
}

// findSideEffect returns the kept result of the call at path or, failing
// that, of the same call with the same parameters at another path (a
// copy of the action).
func findSideEffect(kept []sideEffect, call, path string, fields map[string]json.RawMessage) (sideEffect, bool) {
	for _, k := range kept {
		if k.Call == call && k.Path == path {
			return k, true
		}
	}
	for _, k := range kept {
		if k.Call == call && k.Input == inputDigest(fields, k.Result) {
			return k, true
		}
	}
	return sideEffect{}, false
}

// concreteFields returns the regular fields of v that are concrete, as
// JSON by name; definitions (#do, #provider), hidden, optional and
// incomplete fields are left out.
func concreteFields(v cue.Value) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	it, err := v.Fields()
	if err != nil {
		return out
	}
	for it.Next() {
		b, err := it.Value().MarshalJSON()
		if err != nil {
			continue
		}
		out[it.Selector().Unquoted()] = canonicalJSON(b)
	}
	return out
}

// canonicalJSON returns b with object keys sorted (CUE writes fields in
// the order it met them, which differs between copies of a value).
func canonicalJSON(b []byte) json.RawMessage {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return b
	}
	c, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return c
}

// filledFields returns the fields of after that before lacks or has with
// another value: what a call filled in.
func filledFields(before, after map[string]json.RawMessage) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for k, a := range after {
		if b, ok := before[k]; ok && string(b) == string(a) {
			continue
		}
		out[k] = a
	}
	return out
}

// inputDigest is the digest of fields without the names of result.
func inputDigest(fields, result map[string]json.RawMessage) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		if _, isResult := result[k]; !isResult {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%q:%s\n", k, fields[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// fillResult fills the kept fields into the action v, as the call did.
func fillResult(v cue.Value, result map[string]json.RawMessage) (cue.Value, error) {
	b, err := json.Marshal(result)
	if err != nil {
		return v, err
	}
	r := v.Context().CompileBytes(b)
	if r.Err() != nil {
		return v, r.Err()
	}
	return v.FillPath(cue.ParsePath(""), r), nil
}

func loadSideEffects(wfCtx wfContext.Context, step string) []sideEffect {
	s := wfCtx.GetMutableValue(step, sideEffectsKey)
	if s == "" {
		return nil
	}
	var kept []sideEffect
	if err := json.Unmarshal([]byte(s), &kept); err != nil {
		return nil
	}
	return kept
}

func storeSideEffects(wfCtx wfContext.Context, step string, kept []sideEffect) {
	// Strings and raw JSON only: Marshal cannot fail.
	b, _ := json.Marshal(kept)
	wfCtx.SetMutableValue(string(b), step, sideEffectsKey)
}

// pruneSideEffects removes from the context ConfigMap cm the kept results
// of the steps whose execution is over: every step id that is not running
// or suspending in st (finished, failed — a retry is a new attempt —, or
// no longer in the status, e.g. restarted). It reports whether it removed
// any.
func pruneSideEffects(cm *corev1.ConfigMap, st *wfv1alpha1.WorkflowRunStatus) bool {
	live := map[string]bool{}
	note := func(s wfv1alpha1.StepStatus) {
		if s.ID != "" && (s.Phase == wfv1alpha1.WorkflowStepPhaseRunning || s.Phase == wfv1alpha1.WorkflowStepPhaseSuspending) {
			live[s.ID] = true
		}
	}
	for _, s := range st.Steps {
		note(s.StepStatus)
		for _, sub := range s.SubStepsStatus {
			note(sub)
		}
	}
	removed := false
	for k := range cm.Data {
		id, ok := strings.CutSuffix(k, "."+sideEffectsKey)
		if ok && !live[id] {
			delete(cm.Data, k)
			removed = true
		}
	}
	return removed
}
