package cuex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/token"
)

// errListArithmetic makes Eval look for list arithmetic to rewrite.
var errListArithmetic = errors.New("list arithmetic")

// FieldError is a problem with one property of a component, trait, policy
// or step, relative to the definition's `parameter`.
type FieldError struct {
	// Path is the property path; list indices are decimal strings
	// (["ports", "0", "port"]).
	Path []string
	// Message says what was expected and what was given.
	Message string
}

// ParameterCheck is the outcome of CheckParameter.
type ParameterCheck struct {
	// Errors make the properties unusable.
	Errors []FieldError
	// Pending are required properties that are missing now and that the
	// supplied keys will fill (from workflow inputs or override
	// policies): the properties can only be rendered once they are.
	Pending []FieldError
}

// CheckParameter unifies props (JSON-like Go data) with the template's
// `parameter` under cctx (the `context` value; parameters may default from
// it) and reports every problem at once: wrong types and values (expected
// vs. given), missing required properties, unknown properties, and the
// template's own `errs`-free constraints on parameter.
//
// A key is unknown where the schema lists its fields: a struct with at
// least one declared field, no `...` and no pattern constraint
// (`[string]: T`), or a closed one (`close`, definitions). The message
// suggests the declared field the key is most likely a typo of. Keys under
// a path the template uses as a whole value (`output: parameter`,
// `resources: parameter.resources`, see parameterUses) are never unknown:
// they are passed through.
//
// supplied lists dotted parameter keys that workflow inputs or override
// policies will fill: missing values at or under them are not errors but
// Pending.
//
// For templates other than components' it evaluates only what parameter
// depends on (see reduceToParameter), not the outputs and patches; a
// component's check evaluates the whole template, which its rendering with
// the same context then reuses.
func (e *Engine) CheckParameter(ctx context.Context, t *Template, props any, cctx map[string]any, supplied []string) (ParameterCheck, error) {
	if props == nil {
		props = map[string]any{}
	}
	if err := e.checkInputSize(t.src, props); err != nil {
		return ParameterCheck{}, err
	}
	cctx = t.Context(cctx)
	key, kerr := Key("parameter", t.key, props, cctx, supplied)
	if kerr == nil {
		if r, ok := e.Recall(key); ok {
			return r.(ParameterCheck), nil
		}
	}
	var res ParameterCheck
	schema := t.value.LookupPath(cue.MakePath(cue.Str("parameter")))
	inspect := func(pv cue.Value) error {
		errPaths := map[string]bool{}
		add := func(path []string, msg string) {
			k := strings.Join(path, "\x00") + "\x00" + msg
			if errPaths[k] {
				return
			}
			errPaths[k] = true
			res.Errors = append(res.Errors, FieldError{Path: path, Message: msg})
		}
		verr := pv.Validate(cue.Concrete(true), cue.All())
		if verr == nil {
			verr = pv.Err()
		}
		all := cueerrors.Errors(verr)
		for _, ce := range all {
			if format, _ := ce.Msg(); strings.Contains(format, listAddMessage) || strings.Contains(format, listMulMessage) {
				// Legacy list arithmetic is not the user's error: let
				// Eval rewrite it and evaluate again.
				return errListArithmetic
			}
		}
		// Group CUE's messages by path; one error per path is enough.
		type group struct {
			path []string
			msgs []string
		}
		var groups []*group
		byPath := map[string]*group{}
		for _, ce := range all {
			format, args := ce.Msg()
			msg := fmt.Sprintf(format, args...)
			if strings.Contains(msg, "errors in empty disjunction") && len(all) > 1 {
				continue
			}
			path := append([]string(nil), ce.Path()...)
			if len(path) > 0 && path[0] == "parameter" {
				path = path[1:]
			} else if len(path) > 0 {
				// An error outside parameter (in context, say) is not the user's.
				add(nil, strings.Join(path, ".")+": "+msg)
				continue
			}
			k := strings.Join(path, "\x00")
			g := byPath[k]
			if g == nil {
				g = &group{path: path}
				byPath[k] = g
				groups = append(groups, g)
			}
			g.msgs = append(g.msgs, msg)
		}
		for _, g := range groups {
			path := g.path
			msg := pickMessage(g.msgs)
			given, provided := lookupData(props, path)
			switch {
			case isIncomplete(msg):
				if !provided {
					if isSupplied(path, supplied) {
						res.Pending = append(res.Pending, FieldError{Path: path, Message: "missing until supplied"})
					} else {
						add(path, "missing required property"+expectedSuffix(schemaAt(schema, path)))
					}
					continue
				}
				add(path, msg)
			case strings.Contains(msg, "field not allowed") && len(path) > 0:
				add(path, unknownMessage(path[len(path)-1], schemaAt(schema, path[:len(path)-1])))
			case provided:
				exp := schemaText(schemaAt(schema, path))
				switch {
				case exp == "":
					add(path, msg)
				case strings.Contains(msg, "mismatched types"):
					add(path, fmt.Sprintf("expected %s, got %s %s", exp, kindOf(given), short(given)))
				default:
					add(path, fmt.Sprintf("expected %s, got %s %s: %s", exp, kindOf(given), short(given), msg))
				}
			default:
				add(path, msg)
			}
		}
		// CUE stops reporting incomplete values under a struct that has a
		// conflict; walk for missing required properties ourselves.
		missing(pv, nil, func(path []string) {
			if _, provided := lookupData(props, path); provided {
				return
			}
			if byPath[strings.Join(path, "\x00")] != nil {
				return
			}
			if isSupplied(path, supplied) {
				res.Pending = append(res.Pending, FieldError{Path: path, Message: "missing until supplied"})
				return
			}
			add(path, "missing required property"+expectedSuffix(schemaAt(schema, path)))
		})
		unknownKeys(schema, pv, props, nil, t.uses, func(path []string) {
			add(path, unknownMessage(path[len(path)-1], schemaAt(schema, path[:len(path)-1])))
		})
		return nil
	}
	// The reduced template holds everything parameter depends on, so its
	// evaluation reports the same problems without evaluating outputs and
	// patches.
	et := t
	if p := e.parameterTemplate(t); p != nil {
		et = p
	}
	err := e.Eval(ctx, et, map[string]any{"context": cctx, "parameter": props}, func(v cue.Value) error {
		return inspect(v.LookupPath(cue.MakePath(cue.Str("parameter"))))
	})
	if err != nil {
		return ParameterCheck{}, err
	}
	sortFieldErrors(res.Errors)
	res.Pending = dedupFieldErrors(res.Pending)
	sortFieldErrors(res.Pending)
	if kerr == nil {
		e.Remember(key, res)
	}
	return res, nil
}

func (e *Engine) checkInputSize(src Source, props any) error {
	b, err := json.Marshal(props)
	if err != nil {
		return &Error{Source: src, Message: "properties are not JSON data: " + err.Error()}
	}
	if len(b) > e.limits.MaxInputBytes {
		return &Error{Source: src, Message: fmt.Sprintf("properties are %d bytes of JSON, over the limit of %d", len(b), e.limits.MaxInputBytes)}
	}
	return nil
}

func sortFieldErrors(fe []FieldError) {
	sort.SliceStable(fe, func(i, j int) bool {
		return strings.Join(fe[i].Path, ".") < strings.Join(fe[j].Path, ".")
	})
}

// pickMessage chooses the most telling of CUE's messages for one path: a
// failed bound or validator over a type mismatch (the last one: mismatches
// with a default come first), over anything else.
func pickMessage(msgs []string) string {
	for _, m := range msgs {
		if strings.Contains(m, "invalid value") || strings.Contains(m, "out of bound") {
			return m
		}
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if strings.Contains(msgs[i], "mismatched types") {
			return msgs[i]
		}
	}
	return msgs[0]
}

// missing reports regular (non-optional) fields under v that have no
// concrete value.
func missing(v cue.Value, path []string, report func([]string)) {
	it, err := v.Fields()
	if err != nil {
		return
	}
	for it.Next() {
		fv := it.Value()
		p := append(append([]string(nil), path...), it.Selector().Unquoted())
		if fv.Err() != nil {
			continue
		}
		d, _ := fv.Default()
		switch d.IncompleteKind() {
		case cue.StructKind:
			missing(d, p, report)
			continue
		case cue.ListKind:
			if d.IsConcrete() {
				li, err := d.List()
				if err != nil {
					continue
				}
				for i := 0; li.Next(); i++ {
					if li.Value().IncompleteKind() == cue.StructKind {
						missing(li.Value(), append(append([]string(nil), p...), strconv.Itoa(i)), report)
					}
				}
			}
			continue
		}
		if !d.IsConcrete() {
			report(p)
		}
	}
}

func isIncomplete(msg string) bool {
	return strings.Contains(msg, "incomplete value") ||
		strings.Contains(msg, "non-concrete value") ||
		strings.Contains(msg, "field is required but not present")
}

func isSupplied(path []string, supplied []string) bool {
	p := strings.Join(path, ".")
	for _, s := range supplied {
		if p == s || strings.HasPrefix(p, s+".") || strings.HasPrefix(s, p+".") {
			return true
		}
	}
	return false
}

// lookupData walks JSON-like data along path.
func lookupData(data any, path []string) (any, bool) {
	cur := data
	for _, seg := range path {
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[seg]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// schemaAt finds the schema of a property path, following list element
// types and pattern constraints.
func schemaAt(schema cue.Value, path []string) cue.Value {
	cur := schema
	for _, seg := range path {
		if !cur.Exists() {
			return cur
		}
		if i, err := strconv.Atoi(seg); err == nil && cur.IncompleteKind()&cue.ListKind != 0 {
			next := cur.LookupPath(cue.MakePath(cue.Index(i)))
			if !next.Exists() {
				next = cur.LookupPath(cue.MakePath(cue.AnyIndex))
			}
			cur = next
			continue
		}
		next := cur.LookupPath(cue.MakePath(cue.Str(seg).Optional()))
		if !next.Exists() {
			next = cur.LookupPath(cue.MakePath(cue.Str(seg)))
		}
		if !next.Exists() {
			next = cur.LookupPath(cue.MakePath(cue.AnyString))
		}
		cur = next
	}
	return cur
}

// schemaText renders a schema for "expected …" messages: the constraint as
// written for scalars (`int & >=0`, `"a" | "b"`), the kind for structs and lists.
func schemaText(v cue.Value) string {
	if !v.Exists() {
		return ""
	}
	k := v.IncompleteKind()
	switch k {
	case cue.StructKind:
		return "an object"
	case cue.ListKind:
		return "a list"
	}
	s := exprText(v)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// exprText formats a schema; a default beside a type that allows it is
// left out (`*1 | int` reads "int"), other defaults lose their marker
// (`*"TCP" | "UDP"` reads `"TCP" | "UDP"`).
func exprText(v cue.Value) string {
	n := v.Syntax(cue.Raw())
	if b, err := format.Node(n); err == nil && strings.Contains(string(b), "#") {
		// A reference to a definition (#Port) says little: show what it is.
		if r := v.Syntax(cue.ResolveReferences(true)); r != nil { //nolint:staticcheck // SA1019: Syntax without it prints other "expected …" messages; replace once those are re-checked
			if rb, err := format.Node(r); err == nil && !strings.Contains(string(rb), "let ") {
				n = r
			}
		}
	}
	x, ok := n.(ast.Expr)
	if !ok {
		return syntaxText(v)
	}
	var disjuncts []ast.Expr
	var collect func(e ast.Expr)
	collect = func(e ast.Expr) {
		if b, ok := e.(*ast.BinaryExpr); ok && b.Op == token.OR {
			collect(b.X)
			collect(b.Y)
			return
		}
		disjuncts = append(disjuncts, e)
	}
	collect(x)
	if len(disjuncts) < 2 {
		if s := oneLine(x); s != "" {
			return strings.TrimPrefix(s, "*")
		}
		return syntaxText(v)
	}
	hasType := false
	for _, d := range disjuncts {
		if _, lit := d.(*ast.BasicLit); !lit {
			if u, ok := d.(*ast.UnaryExpr); !ok || u.Op != token.MUL {
				hasType = true
			}
		}
	}
	var parts []string
	for _, d := range disjuncts {
		if u, ok := d.(*ast.UnaryExpr); ok && u.Op == token.MUL {
			if _, lit := u.X.(*ast.BasicLit); lit && hasType {
				continue
			}
			d = u.X
		}
		b, err := format.Node(d)
		if err != nil {
			return syntaxText(v)
		}
		parts = append(parts, strings.Join(strings.Fields(string(b)), " "))
	}
	return strings.Join(parts, " | ")
}

// oneLine formats a syntax node on one line.
func oneLine(n ast.Node) string {
	b, err := format.Node(n)
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

func syntaxText(v cue.Value) string {
	b, err := format.Node(v.Syntax(cue.Raw()))
	if err != nil {
		return v.IncompleteKind().String()
	}
	return strings.TrimPrefix(strings.Join(strings.Fields(string(b)), " "), "*")
}

func expectedSuffix(v cue.Value) string {
	if s := schemaText(v); s != "" {
		return " (expected " + s + ")"
	}
	return ""
}

// unknownMessage says that key is not a field of the struct schema v:
// "unknown property; did you mean imagePullPolicy?" when a declared field
// is close to it, else the declared fields ("; allowed: a, b").
func unknownMessage(key string, v cue.Value) string {
	names := declaredFields(v)
	if len(names) == 0 {
		return "unknown property"
	}
	if s := closest(key, names); s != "" {
		return "unknown property; did you mean " + s + "?"
	}
	sort.Strings(names)
	if len(names) > 20 {
		names = append(names[:20], "…")
	}
	return "unknown property; allowed: " + strings.Join(names, ", ")
}

// declaredFields lists the regular and optional fields of a struct schema.
func declaredFields(v cue.Value) []string {
	if !v.Exists() || v.IncompleteKind() != cue.StructKind {
		return nil
	}
	it, err := v.Fields(cue.Optional(true))
	if err != nil {
		return nil
	}
	var names []string
	for it.Next() {
		names = append(names, it.Selector().Unquoted())
	}
	return names
}

// closest returns the name most likely meant by a mistyped key: one that
// differs only in case, else the nearest within an edit distance of 1 for
// short keys and 2 for keys of 5 or more characters ("" when none is; a tie
// picks the first in sorted order).
func closest(key string, names []string) string {
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	for _, n := range sorted {
		if strings.EqualFold(n, key) {
			return n
		}
	}
	limit := 1
	if len(key) >= 5 {
		limit = 2
	}
	best, bestD := "", limit+1
	for _, n := range sorted {
		if d := editDistance(key, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (in bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func dedupFieldErrors(fe []FieldError) []FieldError {
	seen := map[string]bool{}
	out := fe[:0]
	for _, e := range fe {
		k := strings.Join(e.Path, "\x00")
		if !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	return out
}

func kindOf(x any) string {
	switch x.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case string:
		return "string"
	case int, int64, int32:
		return "int"
	case float64, float32:
		return "float"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", x)
}

func short(x any) string {
	b, err := json.Marshal(x)
	if err != nil {
		return fmt.Sprint(x)
	}
	s := string(b)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// unknownKeys reports keys of data that schema does not declare, where
// the schema lists its fields (see CheckParameter); uses are the paths the
// template passes through whole (parameterUses). ev is the parameter
// evaluated with the data at the same path: a key the static schema lacks
// is still declared when the template adds it under a condition on the
// data (`if type == "pvc" {claimName: string}`; CUE shows the
// comprehension as the field's origin whether the condition holds or not,
// so such a key is always accepted).
func unknownKeys(schema, ev cue.Value, data any, path []string, uses [][]string, report func(path []string)) {
	if !schema.Exists() || passesThrough(uses, path) {
		return
	}
	if isDisjunction(schema) {
		return // disjunctions: CUE's own errors say which branch failed
	}
	switch d := data.(type) {
	case map[string]any:
		if schema.IncompleteKind()&cue.StructKind == 0 || schema.IncompleteKind() == cue.TopKind {
			return
		}
		// `...` and `[string]: T` both make any key a field.
		pattern := schema.LookupPath(cue.MakePath(cue.AnyString))
		closed := !schema.Allows(cue.Str("\x00oamflow-probe")) || (!pattern.Exists() && len(declaredFields(schema)) > 0)
		keys := make([]string, 0, len(d))
		for k := range d {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := append(append([]string(nil), path...), k)
			evk := lookupField(ev, k)
			fv := lookupField(schema, k)
			switch {
			case fv.Exists():
				unknownKeys(fv, evk, d[k], p, uses, report)
			case pattern.Exists():
				unknownKeys(pattern, evk, d[k], p, uses, report)
			case evk.Exists() && evk.Pos().IsValid():
				// Declared under a condition: what is under it is not
				// checked further (its schema is mixed with the data).
			case closed:
				report(p)
			}
		}
	case []any:
		if schema.IncompleteKind()&cue.ListKind == 0 {
			return
		}
		for i, item := range d {
			p := append(append([]string(nil), path...), strconv.Itoa(i))
			sv := schema.LookupPath(cue.MakePath(cue.Index(i)))
			if !sv.Exists() {
				sv = schema.LookupPath(cue.MakePath(cue.AnyIndex))
			}
			unknownKeys(sv, ev.LookupPath(cue.MakePath(cue.Index(i))), item, p, uses, report)
		}
	}
}

// lookupField finds field k of a struct, optional or not.
func lookupField(v cue.Value, k string) cue.Value {
	fv := v.LookupPath(cue.MakePath(cue.Str(k).Optional()))
	if !fv.Exists() {
		fv = v.LookupPath(cue.MakePath(cue.Str(k)))
	}
	return fv
}

// isDisjunction reports whether v is a disjunction, or a conjunction with
// one (defaults aside: `*1 | int` counts).
func isDisjunction(v cue.Value) bool {
	op, args := v.Expr()
	switch op {
	case cue.OrOp:
		return true
	case cue.AndOp:
		for _, a := range args {
			if isDisjunction(a) {
				return true
			}
		}
	}
	return false
}

// parameterTemplate returns t reduced to what its parameter needs, built
// on first use; nil when t has no reduction or it does not build (the
// whole template is checked then).
func (e *Engine) parameterTemplate(t *Template) *Template {
	if t.paramsFile == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if t.params != nil || t.gen != e.gen {
		return t.params
	}
	var v cue.Value
	cctx := e.cctx
	if err := e.runLocked(context.Background(), t.src, t.key, "", true, func() error {
		v = buildWith(cctx, t.paramsFile, t.imports)
		return nil
	}); err != nil || v.Err() != nil {
		t.paramsFile = nil
		return nil
	}
	// The text is the whole template's: if the engine's context is ever
	// replaced, Eval recompiles from it and checks the whole template.
	t.params = &Template{src: t.src, text: t.text, key: t.key + "/parameter", gen: e.gen, value: v, context: t.context}
	return t.params
}

// reduceToParameter returns the part of a prepared template that
// `parameter` depends on: the imports, fields and let clauses its fields
// refer to, directly or through each other, and `context` when any of them
// refers to it. Top-level comprehensions are left out (they add outputs,
// patches and errs). It returns nil when that cannot be worked out from
// the syntax: an embedding, a comprehension that may add to parameter or
// to anything it depends on, or a label that is not a plain name. Declarations are
// shared with f, not copied: build the result, never modify it.
func reduceToParameter(f *ast.File) *ast.File {
	decls := map[string][]ast.Node{}
	var comprehensions []*ast.Comprehension
	for _, d := range f.Decls {
		switch x := d.(type) {
		case *ast.Field:
			name, _, err := ast.LabelName(x.Label)
			if err != nil || name == "" {
				return nil
			}
			decls[name] = append(decls[name], x.Value)
		case *ast.LetClause:
			decls[x.Ident.Name] = append(decls[x.Ident.Name], x.Expr)
		case *ast.Comprehension:
			// `if ... {errs: ...}`, `for ... {outputs: ...}`: kept out
			// unless it adds to what parameter depends on (checked below).
			comprehensions = append(comprehensions, x)
		case *ast.ImportDecl, *ast.CommentGroup, *ast.Package, *ast.Attribute:
		default:
			return nil
		}
	}
	if len(decls["parameter"]) == 0 {
		return nil
	}
	used := map[string]bool{"parameter": true}
	queue := append([]ast.Node(nil), decls["parameter"]...)
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		ast.Walk(n, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && !used[id.Name] {
				used[id.Name] = true
				queue = append(queue, decls[id.Name]...)
			}
			return true
		}, nil)
	}
	for _, c := range comprehensions {
		if mayAddField(c, used) {
			return nil
		}
	}
	out := &ast.File{Filename: f.Filename}
	for _, d := range f.Decls {
		switch x := d.(type) {
		case *ast.ImportDecl:
			var specs []*ast.ImportSpec
			for _, spec := range x.Specs {
				p, _ := literal.Unquote(spec.Path.Value)
				if used[importName(spec, p)] {
					specs = append(specs, spec)
				}
			}
			if len(specs) > 0 {
				out.Decls = append(out.Decls, &ast.ImportDecl{Import: x.Import, Lparen: x.Lparen, Specs: specs, Rparen: x.Rparen})
			}
		case *ast.Field:
			if name, _, _ := ast.LabelName(x.Label); used[name] {
				out.Decls = append(out.Decls, x)
			}
		case *ast.LetClause:
			if used[x.Ident.Name] {
				out.Decls = append(out.Decls, x)
			}
		}
	}
	return out
}

// mayAddField reports whether comprehension c could yield a top-level
// field named by one of labels: its body declares one, or holds anything
// whose fields the syntax does not show (an embedding, a pattern or
// computed label, `...`).
func mayAddField(c *ast.Comprehension, labels map[string]bool) bool {
	body, ok := c.Value.(*ast.StructLit)
	if !ok {
		return true
	}
	for _, d := range body.Elts {
		switch x := d.(type) {
		case *ast.Field:
			name, _, err := ast.LabelName(x.Label)
			if err != nil || name == "" || labels[name] {
				return true
			}
		case *ast.Comprehension:
			if mayAddField(x, labels) {
				return true
			}
		case *ast.LetClause, *ast.CommentGroup, *ast.Attribute:
		default:
			return true
		}
	}
	return false
}
