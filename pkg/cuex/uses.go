package cuex

import (
	"strconv"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/token"
)

// anyElem stands for any list index or struct key in a parameter path.
const anyElem = "*"

// parameterUses returns the paths under `parameter` that a template uses
// as whole values: copied into a field (`resources: parameter.resources`),
// embedded (`output: parameter`), handed to a function
// (`json.Marshal(parameter.x)`) or to a provider (`$params: parameter`).
// The keys under such a path end up somewhere, so none of them is unknown
// to the template, whatever its parameter declares. Uses that only look at
// a value — comparisons (`parameter.x != _|_`), `len(...)`, the source of a
// `for` (its loop variable's own uses count instead), and selections of a
// field of it (`parameter.x.y` uses y, not all of x) — are not whole uses.
// The analysis is syntactic and errs on the side of whole uses: a name
// bound by `for` or `let` to a part of parameter stands for that part
// wherever the name is used. The empty path (parameter itself) is
// returned as a zero-length slice.
func parameterUses(f *ast.File) [][]string {
	u := &usesWalker{bound: map[string][][]string{}}
	// Bindings first (a let or for may come after its uses in the file).
	ast.Walk(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.LetClause:
			if p, ok := u.resolve(x.Expr); ok {
				u.bind(x.Ident.Name, p)
			}
		case *ast.ForClause:
			if p, ok := u.resolve(x.Source); ok && x.Value != nil {
				u.bind(x.Value.Name, append(p, anyElem))
			}
		}
		return true
	}, nil)
	// Bindings of bindings (`for c in x.containers` where x is bound).
	for i := 0; i < 3; i++ {
		ast.Walk(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.LetClause:
				for _, p := range u.resolveAll(x.Expr) {
					u.bind(x.Ident.Name, p)
				}
			case *ast.ForClause:
				if x.Value != nil {
					for _, p := range u.resolveAll(x.Source) {
						u.bind(x.Value.Name, append(p, anyElem))
					}
				}
			}
			return true
		}, nil)
	}
	u.walk(f, nil)
	return u.uses
}

type usesWalker struct {
	// bound maps a for/let name to the parameter paths it stands for.
	bound map[string][][]string
	uses  [][]string
	seen  map[string]bool
}

func (u *usesWalker) bind(name string, p []string) {
	for _, q := range u.bound[name] {
		if equalPath(q, p) {
			return
		}
	}
	u.bound[name] = append(u.bound[name], append([]string(nil), p...))
}

func (u *usesWalker) use(p []string) {
	if u.seen == nil {
		u.seen = map[string]bool{}
	}
	k := ""
	for _, s := range p {
		k += s + "\x00"
	}
	if u.seen[k] {
		return
	}
	u.seen[k] = true
	u.uses = append(u.uses, append([]string{}, p...))
}

// chain splits a reference like `a.b["c"][i]` into its root identifier
// and the selectors after it (a non-literal index is anyElem).
func chain(e ast.Expr) (root string, path []string, ok bool) {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name, nil, true
	case *ast.SelectorExpr:
		r, p, ok := chain(x.X)
		if !ok {
			return "", nil, false
		}
		name, _, err := ast.LabelName(x.Sel)
		if err != nil {
			return "", nil, false
		}
		return r, append(p, name), true
	case *ast.IndexExpr:
		r, p, ok := chain(x.X)
		if !ok {
			return "", nil, false
		}
		if lit, isLit := x.Index.(*ast.BasicLit); isLit {
			switch lit.Kind {
			case token.STRING:
				if s, err := literal.Unquote(lit.Value); err == nil {
					return r, append(p, s), true
				}
			case token.INT:
				if _, err := strconv.Atoi(lit.Value); err == nil {
					return r, append(p, lit.Value), true
				}
			}
		}
		return r, append(p, anyElem), true
	case *ast.ParenExpr:
		return chain(x.X)
	}
	return "", nil, false
}

// resolve returns the parameter path e refers to (through `parameter`
// itself only).
func (u *usesWalker) resolve(e ast.Expr) ([]string, bool) {
	root, p, ok := chain(e)
	if !ok || root != "parameter" {
		return nil, false
	}
	return p, true
}

// resolveAll returns every parameter path e may refer to, through
// `parameter` or a bound name.
func (u *usesWalker) resolveAll(e ast.Expr) [][]string {
	root, p, ok := chain(e)
	if !ok {
		return nil
	}
	if root == "parameter" {
		return [][]string{p}
	}
	var out [][]string
	for _, b := range u.bound[root] {
		out = append(out, append(append([]string(nil), b...), p...))
	}
	return out
}

// walk records the whole uses under n. parent is the node n belongs to
// (nil at the top), so a reference knows how it is used.
func (u *usesWalker) walk(n ast.Node, parent ast.Node) {
	if n == nil {
		return
	}
	// Labels and the names bound by let, for and aliases are not uses.
	switch x := n.(type) {
	case *ast.Field:
		u.walk(x.Value, x)
		return
	case *ast.LetClause:
		u.walk(x.Expr, x)
		return
	case *ast.ForClause:
		u.walk(x.Source, x)
		return
	case *ast.Alias:
		u.walk(x.Expr, x)
		return
	case *ast.ImportDecl, *ast.ImportSpec, *ast.CommentGroup, *ast.Comment, *ast.Attribute:
		return
	}
	if e, ok := n.(ast.Expr); ok {
		if _, _, isRef := chain(e); isRef {
			switch e.(type) {
			case *ast.Ident, *ast.SelectorExpr, *ast.IndexExpr:
				if !lookOnly(parent, e) {
					for _, p := range u.resolveAll(e) {
						u.use(p)
					}
				}
				// Index expressions inside the chain are uses of their own.
				u.walkIndexes(e)
				return
			}
		}
	}
	ast.Walk(n, func(c ast.Node) bool {
		if c == n {
			return true
		}
		u.walk(c, n)
		return false
	}, nil)
}

func (u *usesWalker) walkIndexes(e ast.Expr) {
	switch x := e.(type) {
	case *ast.SelectorExpr:
		u.walkIndexes(x.X)
	case *ast.IndexExpr:
		u.walkIndexes(x.X)
		if _, lit := x.Index.(*ast.BasicLit); !lit {
			u.walk(x.Index, x)
		}
	case *ast.ParenExpr:
		u.walkIndexes(x.X)
	}
}

// lookOnly reports whether parent only looks at e: compares it, takes its
// length, or iterates over it.
func lookOnly(parent ast.Node, e ast.Expr) bool {
	switch p := parent.(type) {
	case *ast.BinaryExpr:
		switch p.Op {
		case token.EQL, token.NEQ, token.LSS, token.LEQ, token.GTR, token.GEQ, token.MAT, token.NMAT:
			return true
		}
	case *ast.CallExpr:
		if id, ok := p.Fun.(*ast.Ident); ok && id.Name == "len" {
			return true
		}
	case *ast.ForClause:
		return p.Source == e
	case *ast.LetClause:
		return p.Expr == e
	}
	return false
}

// passesThrough reports whether the keys at path (a property path; list
// indices are decimal strings) are used by a whole use of uses.
func passesThrough(uses [][]string, path []string) bool {
	for _, u := range uses {
		if len(u) > len(path) {
			continue
		}
		match := true
		for i, s := range u {
			if s != anyElem && s != path[i] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

func equalPath(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ctxPaths are the parts of `context` a template reads: a tree of field
// names; a node without children (or marked whole) is read whole, with
// everything under it.
type ctxPaths struct {
	whole bool
	kids  map[string]*ctxPaths
}

func (p *ctxPaths) add(path []string) {
	n := p
	for _, s := range path {
		if n.whole {
			return
		}
		if n.kids == nil {
			n.kids = map[string]*ctxPaths{}
		}
		k, ok := n.kids[s]
		if !ok {
			k = &ctxPaths{}
			n.kids[s] = k
		}
		n = k
	}
	n.whole, n.kids = true, nil
}

// contextPaths returns the parts of `context` a template reads: for each
// reference to context, the chain of field selections after it
// (`context.output.status.readyReplicas`, `context["name"]`) up to the
// first thing that is not a selection by name — whatever is done with the
// value there (copied, compared, iterated, indexed by a computed key,
// bound by let), all of it under that path counts as read. It returns nil,
// all of context, when context is used whole (`x: context`, `let c =
// context`, `context[k]`) or declared (`context: {...}` at the top: its
// fields could refer to each other by scope, without naming context). A
// selection of a field named context (`x.context`) is not a reference.
// Evaluations fill only what is read (pruneContext), so that what a
// template never reads — context.components lists every component of the
// Application, a live object's managedFields and most of its status —
// costs nothing to encode and unify.
func contextPaths(f *ast.File) *ctxPaths {
	root := &ctxPaths{}
	whole := false
	var stack []ast.Node
	ast.Walk(f, func(n ast.Node) bool {
		if whole {
			return false
		}
		if id, ok := n.(*ast.Ident); ok && id.Name == "context" && len(stack) > 0 {
			switch p := stack[len(stack)-1].(type) {
			case *ast.Field:
				if p.Label != id {
					break
				}
				// A label. At the top, a declaration with a value (not the
				// `context: _` every template gets) may have fields
				// referring to each other by scope.
				if _, top := stack[0].(*ast.File); top && len(stack) == 2 && !isTop(p.Value) {
					whole = true
					return false
				}
				stack = append(stack, n)
				return true
			case *ast.SelectorExpr:
				if p.Sel == id {
					return false // x.context: a field of something else
				}
			}
			path := selectionsAfter(stack, id)
			if len(path) == 0 {
				whole = true
				return false
			}
			root.add(path)
		}
		stack = append(stack, n)
		return true
	}, func(ast.Node) { stack = stack[:len(stack)-1] })
	if whole {
		return nil
	}
	return root
}

func isTop(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "_"
}

// selectionsAfter returns the field names selected after e, going up
// through stack (e's ancestors, innermost last) while they select from it
// by name.
func selectionsAfter(stack []ast.Node, e ast.Expr) []string {
	var path []string
	var cur ast.Node = e
	for i := len(stack) - 1; i >= 0; i-- {
		switch p := stack[i].(type) {
		case *ast.ParenExpr:
			if p.X != cur {
				return path
			}
		case *ast.SelectorExpr:
			if p.X != cur {
				return path
			}
			name, _, err := ast.LabelName(p.Sel)
			if err != nil || name == "" {
				return path
			}
			path = append(path, name)
		case *ast.IndexExpr:
			lit, ok := p.Index.(*ast.BasicLit)
			if p.X != cur || !ok || lit.Kind != token.STRING {
				return path
			}
			name, err := literal.Unquote(lit.Value)
			if err != nil {
				return path
			}
			path = append(path, name)
		default:
			return path
		}
		cur = stack[i]
	}
	return path
}

// prune returns the parts of v that p reads; v itself when p reads it
// whole or v is not a struct (lists are kept whole). Only the root can
// have no children without being whole (a template reading nothing).
func (p *ctxPaths) prune(v any) any {
	m, ok := v.(map[string]any)
	if p.whole || !ok {
		return v
	}
	out := make(map[string]any, len(p.kids))
	for k, kp := range p.kids {
		if x, ok := m[k]; ok {
			out[k] = kp.prune(x)
		}
	}
	return out
}

// Context returns cctx reduced to the parts of context the template reads
// (contextPaths; cctx itself when it uses context whole; never changed). Its evaluations are the same with either: use it to key
// results by what they depend on.
func (t *Template) Context(cctx map[string]any) map[string]any {
	fills := pruneContext(t, map[string]any{"context": cctx})
	return fills["context"].(map[string]any)
}

// pruneContext returns fills with the "context" fill reduced to the parts
// t reads (contextPaths); fills itself when t reads all of it (the
// caller's maps are never changed).
func pruneContext(t *Template, fills map[string]any) map[string]any {
	if t.context == nil {
		return fills
	}
	cctx, ok := fills["context"].(map[string]any)
	if !ok {
		return fills
	}
	out := make(map[string]any, len(fills))
	for k, v := range fills {
		out[k] = v
	}
	out["context"] = t.context.prune(cctx)
	return out
}
