// Package cuex compiles and evaluates the CUE of OAM definitions: templates,
// health policies and custom status. It caches compiled CUE by content hash,
// bounds every evaluation in time, recovers from evaluator panics, and
// translates CUE errors into errors that name the definition, the field path,
// the conflicting values and the position inside the definition's source.
//
// An Engine is safe for concurrent use; evaluations on one Engine run one at
// a time (CUE values are not safe for concurrent use), so a process that
// renders in parallel uses one Engine per worker.
package cuex

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"

	"github.com/oamflow/oamflow/pkg/cuepkg"
)

// Limits bound the work one definition may cause. Zero fields take the defaults.
type Limits struct {
	// MaxSourceBytes bounds a template's CUE source (default 1 MiB).
	MaxSourceBytes int
	// MaxInputBytes bounds the JSON size of the properties filled into one
	// evaluation (default 1 MiB: a Kubernetes object cannot be much larger).
	MaxInputBytes int
	// MaxOutputBytes bounds the JSON size of what one evaluation yields (default 8 MiB).
	MaxOutputBytes int
	// Timeout bounds one evaluation (default 5 s). CUE cannot be interrupted:
	// an evaluation that times out is abandoned and the Engine starts over
	// with a fresh CUE context. The failure belongs to that evaluation (the
	// template with those fills): other inputs to the same template are
	// evaluated as usual. Only compiling, which does not depend on any
	// input, is remembered as failing (see compileRetry).
	Timeout time.Duration
}

// DefaultLimits are the limits of an Engine built without options.
var DefaultLimits = Limits{
	MaxSourceBytes: 1 << 20,
	MaxInputBytes:  1 << 20,
	MaxOutputBytes: 8 << 20,
	Timeout:        5 * time.Second,
}

func (l Limits) withDefaults() Limits {
	if l.MaxSourceBytes <= 0 {
		l.MaxSourceBytes = DefaultLimits.MaxSourceBytes
	}
	if l.MaxInputBytes <= 0 {
		l.MaxInputBytes = DefaultLimits.MaxInputBytes
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = DefaultLimits.MaxOutputBytes
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultLimits.Timeout
	}
	return l
}

// Option configures an Engine.
type Option func(*Engine)

// WithLimits sets the evaluation limits.
func WithLimits(l Limits) Option { return func(e *Engine) { e.limits = l.withDefaults() } }

// WithAbandoned shares a with other Engines: their timed-out evaluations
// still running count together (default: the Engine's own, allowing
// DefaultMaxAbandoned).
func WithAbandoned(a *Abandoned) Option {
	return func(e *Engine) {
		if a != nil {
			e.abandoned = a
		}
	}
}

// WithMemo makes the Engine remember results in m, shared with the other
// Engines given m (default: a Memo of its own).
func WithMemo(m *Memo) Option {
	return func(e *Engine) {
		if m != nil {
			e.memo = m.l
		}
	}
}

// Engine compiles CUE sources once per content hash and evaluates them under
// the Engine's limits.
type Engine struct {
	mu     sync.Mutex
	limits Limits
	// abandoned counts timed-out evaluations still running (shared by
	// the Engines of a process with WithAbandoned).
	abandoned *Abandoned
	gen       int // incremented when the CUE context is replaced
	cctx      *cue.Context
	cache     map[string]*Template
	// failed remembers sources whose compiling (input-independent) timed
	// out or panicked; evaluations with fills are never remembered here.
	failed map[string]failure
	// now is the clock failures expire by (time.Now; tests replace it).
	now func() time.Time
	// memo caches results of evaluations by a hash of all their inputs.
	memo *lru
	// values keeps recently evaluated values by template and fills, so
	// that the same evaluation asked for twice (validating properties, then
	// rendering with the same context) is done once. A value holds CUE's
	// whole graph of the evaluation (hundreds of KiB for a webservice):
	// Forget drops them when a piece of work is done.
	values *lru
	// imports are the provider packages (pkg/cuepkg) by set and path,
	// parsed on first use; pkgValues are their values in cctx.
	imports   map[string]*build.Instance
	pkgValues map[string]cue.Value
	// listFixes are the offsets of list arithmetic, by template key, that
	// evaluations found (only once parameter and context are filled are
	// some operands known to be lists); compiling rewrites them too.
	listFixes map[string]map[int]bool
}

// compileRetry is how long a compile that timed out is remembered: the
// source is not evaluated again meanwhile (a template that loops costs its
// Timeout once a minute, not once per Application), but a timeout caused by
// a busy or CPU-throttled process does not make the definition unusable for
// good. A compile that panicked is remembered for good.
const compileRetry = time.Minute

// failure is a remembered compile failure; a zero until never expires.
type failure struct {
	err   error
	until time.Time
}

// failedLocked returns the remembered compile failure of key, if any, as
// src's: the same CUE may be another definition's, maybe of another
// namespace, whose name the error must not carry.
func (e *Engine) failedLocked(key string, src Source) error {
	f, ok := e.failed[key]
	if !ok {
		return nil
	}
	if !f.until.IsZero() && !e.now().Before(f.until) {
		delete(e.failed, key)
		return nil
	}
	var ce *Error
	if errors.As(f.err, &ce) && ce.Source != src {
		named := *ce
		named.Source = src
		named.Positions = make([]string, len(ce.Positions))
		for i, pos := range ce.Positions {
			if rest, ok := strings.CutPrefix(pos, ce.Source.filename()+":"); ok {
				pos = src.filename() + ":" + rest
			}
			named.Positions[i] = pos
		}
		return &named
	}
	return f.err
}

// evaluatedValues bounds Engine.values within one piece of work (see
// Forget).
const evaluatedValues = 64

type evaluated struct {
	gen int
	v   cue.Value
}

// NewEngine returns an Engine with an empty cache.
func NewEngine(opts ...Option) *Engine {
	e := &Engine{limits: DefaultLimits, failed: map[string]failure{}, now: time.Now, memo: newLRU(DefaultMemoEntries), imports: map[string]*build.Instance{}, listFixes: map[string]map[int]bool{}}
	for _, o := range opts {
		o(e)
	}
	if e.abandoned == nil {
		e.abandoned = NewAbandoned(0)
	}
	e.resetLocked()
	return e
}

// Forget drops the evaluated CUE values the Engine keeps for one piece of
// work (a reconcile, an admission review, a command), so that they are
// not carried into the next: a pool of Engines would otherwise keep up to
// evaluatedValues graphs of other Applications alive in each Engine, tens
// of MiB doing nothing. Compiled templates and remembered results (the
// Memo) stay.
func (e *Engine) Forget() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.values = newLRU(evaluatedValues)
}

// Limits returns the Engine's limits.
func (e *Engine) Limits() Limits { return e.limits }

func (e *Engine) resetLocked() {
	e.gen++
	e.cctx = cuecontext.New()
	e.cache = map[string]*Template{}
	e.values = newLRU(evaluatedValues)
	e.pkgValues = map[string]cue.Value{}
}

// Source names a piece of CUE for error messages and positions.
type Source struct {
	// Kind is the definition kind ("component", "trait", "policy",
	// "workflow-step") or another word naming the CUE ("health policy" …).
	Kind string
	// Name is the definition name.
	Name string
	// File is the file name used in positions; empty means "<kind> <name>".
	File string
	// LineOffset is added to lines after the first ImportLines lines to map
	// them to lines of File (a .cue definition file holds the template
	// inside `template: {...}`).
	LineOffset  int
	ImportLines int
	// ColumnOffset is added to the columns of those same lines (the
	// indentation the template block had in File).
	ColumnOffset int
	// ImportFirstLine, when not 0, is the line of File the first of the
	// ImportLines import lines comes from (they are contiguous there).
	ImportFirstLine int
}

// String is "<kind> <name>" (`trait "scaler"`).
func (s Source) String() string {
	if s.Name == "" {
		return s.Kind
	}
	return fmt.Sprintf("%s %q", s.Kind, s.Name)
}

func (s Source) filename() string {
	if s.File != "" {
		return s.File
	}
	return s.Kind + " " + s.Name
}

// Template is compiled CUE, ready to be evaluated many times.
type Template struct {
	src   Source
	text  string
	key   string
	gen   int
	value cue.Value
	// paramsFile is the template reduced to `parameter`, `context` and
	// what they refer to (see reduceToParameter), nil when it cannot be
	// reduced or is a component's (see compileLocked). CheckParameter
	// builds it into params the first time it needs it and evaluates that
	// instead of the whole template.
	paramsFile *ast.File
	params     *Template
	// imports are the provider packages the template is built with.
	imports []*build.Instance
	// labels are the top-level field names the source declares (also
	// inside top-level comprehensions).
	labels map[string]bool
	// warnings are problems that do not stop the template from working
	// (see Warnings).
	warnings []string
	// unprovided are the imports and actions of a workflow step oamflow
	// does not provide (see Unprovided).
	unprovided []string
	// file is the file name the value was built with (positions in
	// errors of its evaluations carry it).
	file string
	// fixed, when set, replaces this template: an evaluation found list
	// arithmetic that compiling could not see (evalLocked).
	fixed *Template
	// uses are the parameter paths the template uses as whole values
	// (parameterUses): their keys are passed through, never unknown.
	uses [][]string
	// actions are the provider actions the template uses ("helm.#Render").
	actions []string
	// context is what of context the template reads (contextPaths); nil:
	// all of it.
	context *ctxPaths
}

// Warnings returns what compiling found questionable but not wrong: a
// workflow step importing a package or action oamflow does not provide,
// legacy list arithmetic read as list.Concat/list.Repeat. Each names the
// definition and, where known, the position.
func (t *Template) Warnings() []string { return append([]string(nil), t.warnings...) }

// Actions returns the provider actions the template uses ("helm.#Render",
// "kube.#Apply"): a workflow step's engine runs them; rendering a
// component, trait or policy does not (see Eval).
func (t *Template) Actions() []string { return append([]string(nil), t.actions...) }

// Unprovided says, for each import or provider action of a workflow step
// that oamflow does not provide, what Warnings says of it without the
// position ("uses kube.#Nope, which oamflow's vela/kube does not
// provide"). The step compiles (they are open placeholders) but must fail
// when it runs, with these words.
func (t *Template) Unprovided() []string { return append([]string(nil), t.unprovided...) }

// Source returns what the template was compiled from.
func (t *Template) Source() Source { return t.src }

// Hash returns the content hash the template is cached under.
func (t *Template) Hash() string { return t.key }

// HasField reports whether the template declares a top-level field (for
// example "parameter", "output", "patch"), directly or inside a top-level
// comprehension.
func (t *Template) HasField(name string) bool {
	return t.labels[name] || t.value.LookupPath(cue.MakePath(cue.Str(name))).Exists()
}

// sourceKey hashes everything that changes how text compiles: the text
// and the provider packages its kind may import.
func sourceKey(src Source, text string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", cuepkg.SetFor(src.Kind))
	h.Write([]byte(text))
	return hex.EncodeToString(h.Sum(nil))
}

// Compile compiles text (cached by content hash). Templates may reference
// `context` and `parameter` without declaring them. Standard-library imports
// are allowed, except CUE's tool packages (IsSideEffecting); a definition template may also import the provider packages
// its kind may import (pkg/cuepkg: src.Kind "component", "trait", "policy"
// or "workflow-step"), compiled against their schemas. A value only known
// once `parameter` and `context` are filled (an incomplete value) is no
// error here.
func (e *Engine) Compile(src Source, text string) (*Template, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.compileLocked(src, text)
}

func (e *Engine) compileLocked(src Source, text string) (*Template, error) {
	if len(text) > e.limits.MaxSourceBytes {
		return nil, &Error{Source: src, Message: fmt.Sprintf("CUE source is %d bytes, over the limit of %d", len(text), e.limits.MaxSourceBytes)}
	}
	key := sourceKey(src, text)
	if err := e.failedLocked(key, src); err != nil {
		return nil, err
	}
	if t, ok := e.cache[key]; ok {
		if t.src == src {
			return t, nil
		}
		// Same CUE under another name: share the value, keep the name.
		cp := *t
		cp.src = src
		return &cp, nil
	}
	file, err := prepareSource(src, text)
	if err != nil {
		return nil, err
	}
	if err := refuseSideEffects(src, file); err != nil {
		return nil, err
	}
	imports, missed, actions, err := e.resolveImportsLocked(src, file)
	if err != nil {
		return nil, err
	}
	var warnings, unprov []string
	for _, u := range missed {
		warnings = append(warnings, u.warning(src))
		unprov = append(unprov, u.what)
	}
	// Building a value evaluates it (with `parameter` and `context` open),
	// so compiling runs under the time limit too.
	var (
		v     cue.Value
		fixed []token.Pos
	)
	if at := e.listFixes[key]; len(at) > 0 {
		// Learnt by an earlier evaluation (see evalLocked).
		file, fixed = rewriteListArithmetic(file, at)
	}
	cctx := e.cctx
	if err := e.runLocked(context.Background(), src, key, "", true, func() error {
		var more []token.Pos
		v, file, more = buildFixingListArithmetic(cctx, file, imports)
		fixed = append(fixed, more...)
		return nil
	}); err != nil {
		return nil, err
	}
	for _, at := range fixed {
		warnings = append(warnings, fmt.Sprintf("%s: list arithmetic at %s (list + list or list * n, removed in CUE v0.11) is read as list.Concat or list.Repeat, as KubeVela v1.11 does; write it that way", src, mapPosition(src, at)))
	}
	if err := v.Err(); err != nil && v.Validate() != nil {
		// (v.Err alone may be an incomplete value that filling
		// parameter and context completes; Validate ignores those.)
		return nil, translate(src, err, "")
	}
	t := &Template{src: src, text: text, key: key, gen: e.gen, value: v, imports: imports, labels: topLabels(file), warnings: warnings, unprovided: unprov, file: file.Filename, uses: parameterUses(file), actions: actions, context: contextPaths(file)}
	// A component's check evaluates the whole template with the context
	// its rendering uses, and the rendering reuses that evaluation; a
	// trait, policy or step is rendered with another context (or not at
	// all), so checking its parameter alone saves an evaluation.
	if src.Kind != "component" {
		t.paramsFile = reduceToParameter(file)
	}
	e.cache[key] = t
	return t, nil
}

// prepareSource parses text and appends open declarations of `context`
// and `parameter` when the template does not declare them (templates use
// both freely).
func prepareSource(src Source, text string) (*ast.File, error) {
	f, err := parser.ParseFile(src.filename(), text, parser.ParseComments)
	if err != nil {
		return nil, translate(src, err, "")
	}
	declared := map[string]bool{}
	for _, d := range f.Decls {
		if x, ok := d.(*ast.Field); ok {
			if name, _, err := ast.LabelName(x.Label); err == nil {
				declared[name] = true
			}
		}
	}
	for _, name := range []string{"context", "parameter"} {
		if !declared[name] {
			f.Decls = append(f.Decls, &ast.Field{Label: ast.NewIdent(name), Value: ast.NewIdent("_")})
		}
	}
	return f, nil
}

// topLabels returns the names of the top-level fields of f, including
// those top-level comprehensions may add.
func topLabels(f *ast.File) map[string]bool {
	out := map[string]bool{}
	var add func(decls []ast.Decl)
	add = func(decls []ast.Decl) {
		for _, d := range decls {
			switch x := d.(type) {
			case *ast.Field:
				if name, _, err := ast.LabelName(x.Label); err == nil && name != "" {
					out[name] = true
				}
			case *ast.Comprehension:
				if body, ok := x.Value.(*ast.StructLit); ok {
					add(body.Elts)
				}
			}
		}
	}
	add(f.Decls)
	return out
}

// Eval fills the template with the given values (CUE path → Go value, e.g.
// "parameter" → properties, "context" → the context struct) and calls fn
// with the result. fn runs under the Engine's time limit and must do all
// its CUE work on v (CUE evaluates lazily, so reading v is the evaluation).
// fn must not call back into the Engine.
func (e *Engine) Eval(ctx context.Context, t *Template, fills map[string]any, fn func(v cue.Value) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.evalLocked(ctx, t, fills, fn, 0)
}

func (e *Engine) evalLocked(ctx context.Context, t *Template, fills map[string]any, fn func(v cue.Value) error, round int) error {
	for t.fixed != nil {
		t = t.fixed
	}
	if err := e.failedLocked(t.key, t.src); err != nil {
		return err
	}
	if t.gen != e.gen {
		fresh, err := e.compileLocked(t.src, t.text)
		if err != nil {
			return err
		}
		t = fresh
	}
	// Context fields the template never selects cannot change its value:
	// leaving them out keeps an evaluation's cost independent of the
	// size of the Application (context.components).
	fills = pruneContext(t, fills)
	var (
		unified cue.Value
		listAt  map[int]bool
	)
	// call runs fn on v; when fn fails, it looks for list arithmetic to
	// rewrite (the rare case: no cost when fn succeeds).
	call := func(v cue.Value) error {
		if err := fn(v); err != nil {
			listAt = listArithmeticAt(v, t.file)
			return err
		}
		return nil
	}
	vkey := ""
	cached := false
	if len(fills) > 0 {
		// (len(t.listFixes): a template rewritten by refixLocked keeps its
		// key but must not reuse values of its former self.)
		if k, err := Key(t.key, len(e.listFixes[t.key]), fills); err == nil {
			vkey = k
			if x, ok := e.values.get(k); ok && x.(evaluated).gen == e.gen {
				unified, cached = x.(evaluated).v, true
			}
		}
	}
	// An evaluation fails for its fills (and fn) only: never remembered.
	err := e.runLocked(ctx, t.src, t.key, vkey, false, func() error {
		if cached {
			return call(unified)
		}
		v, err := fill(t, fills)
		if err != nil {
			return err
		}
		unified = v
		return call(v)
	})
	if err != nil && len(listAt) > 0 && round < maxListFixRounds {
		if fixed := e.refixLocked(t, listAt); fixed != nil {
			return e.evalLocked(ctx, fixed, fills, fn, round+1)
		}
	}
	if err != nil && len(t.actions) > 0 && cuepkg.SetFor(t.src.Kind) != cuepkg.Step {
		// What the actions would have returned is missing: say so
		// rather than which field it left incomplete.
		return &Error{Source: t.src, Message: fmt.Sprintf("uses %s, which oamflow does not run while rendering a %s (provider actions are not supported by oamflow outside workflow steps)",
			strings.Join(t.actions, ", "), t.src.Kind)}
	}
	if err == nil && !cached && vkey != "" && unified.Exists() {
		e.values.put(vkey, evaluated{gen: e.gen, v: unified})
	}
	return err
}

// refixLocked recompiles t with the list arithmetic at the offsets
// rewritten as well (see listarith.go), makes the result replace t (also
// in the cache) and returns it; nil when there is nothing new to rewrite
// or the result does not compile.
func (e *Engine) refixLocked(t *Template, at map[int]bool) *Template {
	known := e.listFixes[t.key]
	merged := map[int]bool{}
	for o := range known {
		merged[o] = true
	}
	added := false
	for o := range at {
		if !merged[o] {
			merged[o] = true
			added = true
		}
	}
	if !added {
		return nil
	}
	e.listFixes[t.key] = merged
	delete(e.cache, t.key)
	fresh, err := e.compileLocked(t.src, t.text)
	if err != nil {
		return nil
	}
	t.fixed = fresh
	return fresh
}

// fill unifies the template with the fills.
func fill(t *Template, fills map[string]any) (cue.Value, error) {
	v := t.value
	if len(fills) == 0 {
		return v, nil
	}
	// One unification with a struct holding every fill costs half of
	// filling path by path (each FillPath re-evaluates the template).
	simple := true
	for p := range fills {
		if !ast.IsValidIdent(p) || strings.HasPrefix(p, "#") || strings.HasPrefix(p, "_") {
			simple = false
		}
	}
	if simple {
		// Each fill's objects list their fields in the order the
		// template declares them (as KubeVela's output does).
		fv, err := fillsValue(v.Context(), fills, v)
		if err != nil {
			return v, &Error{Source: t.src, Message: "cannot encode the values to fill in: " + err.Error()}
		}
		return v.Unify(fv), nil
	}
	for _, p := range sortedKeys(fills) {
		fv, err := toOrderedValue(v.Context(), fills[p], v.LookupPath(cue.ParsePath(p)))
		if err != nil {
			return v, &Error{Source: t.src, Path: p, Message: "cannot encode the value to fill in: " + err.Error()}
		}
		v = v.FillPath(cue.ParsePath(p), fv)
	}
	return v, nil
}

// runLocked runs fn in its own goroutine and waits for it, for the time
// limit or for ctx. On a timeout or panic the CUE context is abandoned to
// the goroutine and replaced. remember says fn does not depend on any
// input (compiling key's source): its timeout or panic is then remembered
// for key (see compileRetry); otherwise the error is this call's alone.
//
// While the Engine's Abandoned counts as many timed-out evaluations still
// running as it allows, nothing is started: the call fails with ErrBusy
// (never remembered) and is retried by its caller.
//
// id names the evaluation (template and input) for Abandoned; "" is key.
func (e *Engine) runLocked(ctx context.Context, src Source, key, id string, remember bool, fn func() error) error {
	if id == "" {
		id = key
	}
	self, n, full := e.abandoned.check(id)
	if self {
		return &Error{Source: src, Err: ErrTimeout, Message: fmt.Sprintf("evaluation did not finish within %s: the same evaluation, abandoned at its timeout earlier, is still running (CUE cannot be interrupted); it is not started again until that one ends", e.limits.Timeout)}
	}
	if full {
		return &Error{Source: src, Err: ErrBusy, Message: fmt.Sprintf("not evaluated now: %d earlier evaluations that timed out are still running (CUE cannot be interrupted; at most %d may run); it is tried again later", n, e.abandoned.Max())}
	}
	// state: 0 running, 1 finished, 2 abandoned (counted in e.abandoned
	// until the goroutine ends).
	var state atomic.Int32
	done := make(chan error, 1)
	go func() {
		defer func() {
			if !state.CompareAndSwap(0, 1) {
				e.abandoned.add(id, -1)
			}
		}()
		var err error
		if perr := safely(func() { err = fn() }); perr != nil {
			err = &Error{Source: src, Message: "CUE evaluation panicked: " + perr.Error()}
			done <- &panicked{err}
			return
		}
		done <- err
	}()
	abandon := func() {
		e.abandoned.add(id, 1)
		if !state.CompareAndSwap(0, 2) {
			e.abandoned.add(id, -1) // it finished meanwhile
		}
	}
	timer := time.NewTimer(e.limits.Timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		if p := (*panicked)(nil); errors.As(err, &p) {
			if remember {
				e.failed[key] = failure{err: p.err}
			}
			e.resetLocked()
			return p.err
		}
		return err
	case <-timer.C:
		err := &Error{Source: src, Err: ErrTimeout, Message: fmt.Sprintf("evaluation did not finish within %s: the template loops or builds a huge value (look for comprehensions over large ranges or exploding disjunctions)", e.limits.Timeout)}
		if remember {
			e.failed[key] = failure{err: err, until: e.now().Add(compileRetry)}
		}
		abandon()
		e.resetLocked()
		return err
	case <-ctx.Done():
		abandon()
		e.resetLocked()
		return fmt.Errorf("evaluating %s: %w", src, ctx.Err())
	}
}

type panicked struct{ err error }

func (p *panicked) Error() string { return p.err.Error() }

// safely runs fn and turns a panic into an error.
func safely(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	fn()
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// "context" before "parameter" before anything else; stable otherwise.
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}
