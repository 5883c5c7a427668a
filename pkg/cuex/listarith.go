package cuex

import (
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/ast/astutil"
	"cuelang.org/go/cue/build"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
)

// CUE v0.11 removed list arithmetic (`a + b`, `a * n` on lists) and v0.14
// refuses it; KubeVela v1.11 rewrites such templates to list.Concat and
// list.Repeat before compiling them, so definitions written for older
// KubeVela keep working. CUE's own tools/fix does the same rewrite only
// where an operand is a list literal; oamflow rewrites exactly the
// expressions CUE's evaluation refuses, whatever their operands.
const (
	listAddMessage = "Addition of lists is superseded by list.Concat"
	listMulMessage = "Multiplication of lists is superseded by list.Repeat"
)

// maxListFixRounds bounds the rebuilds of buildFixingListArithmetic (an
// expression whose operands become lists only once another is fixed needs
// another round).
const maxListFixRounds = 8

// buildFixingListArithmetic builds f; while the result has list
// arithmetic errors, it rewrites the expressions they name to
// list.Concat([a, b]) or list.Repeat(a, n) and builds again. It returns
// the value, the file as built and the positions of the rewritten
// expressions.
func buildFixingListArithmetic(cctx *cue.Context, f *ast.File, imports []*build.Instance) (cue.Value, *ast.File, []token.Pos) {
	v := buildWith(cctx, f, imports)
	var fixed []token.Pos
	for round := 0; round < maxListFixRounds; round++ {
		at := listArithmeticAt(v, f.Filename)
		if len(at) == 0 {
			break
		}
		nf, done := rewriteListArithmetic(f, at)
		if len(done) == 0 {
			break
		}
		f = nf
		fixed = append(fixed, done...)
		v = buildWith(cctx, f, imports)
	}
	return v, f, fixed
}

// listArithmeticAt returns the offsets in file of v's list arithmetic
// errors.
func listArithmeticAt(v cue.Value, file string) map[int]bool {
	var at map[int]bool
	for _, err := range []error{v.Err(), v.Validate()} {
		if err == nil {
			continue
		}
		for _, ce := range cueerrors.Errors(err) {
			format, _ := ce.Msg()
			if !strings.Contains(format, listAddMessage) && !strings.Contains(format, listMulMessage) {
				continue
			}
			for _, p := range cueerrors.Positions(ce) {
				if p.IsValid() && p.Filename() == file {
					if at == nil {
						at = map[int]bool{}
					}
					at[p.Offset()] = true
				}
			}
		}
	}
	return at
}

// rewriteListArithmetic replaces the + and * expressions of f that start
// (or have their operator) at one of the offsets by list.Concat and
// list.Repeat calls, adding the "list" import (under another name if
// "list" is taken). It returns f and the positions rewritten.
func rewriteListArithmetic(f *ast.File, at map[int]bool) (*ast.File, []token.Pos) {
	var done []token.Pos
	listIdent := func() *ast.Ident {
		return &ast.Ident{Name: "list", Node: ast.NewImport(nil, "list")}
	}
	out := astutil.Apply(f, nil, func(c astutil.Cursor) bool {
		bin, ok := c.Node().(*ast.BinaryExpr)
		if !ok || (bin.Op != token.ADD && bin.Op != token.MUL) {
			return true
		}
		if !at[bin.Pos().Offset()] && !at[bin.OpPos.Offset()] {
			return true
		}
		var call *ast.CallExpr
		if bin.Op == token.ADD {
			call = ast.NewCall(ast.NewSel(listIdent(), "Concat"), ast.NewList(concatOperands(bin.X, bin.Y)...))
		} else {
			x, n := bin.X, bin.Y
			if _, ok := bin.Y.(*ast.ListLit); ok {
				x, n = bin.Y, bin.X
			} else if _, ok := bin.X.(*ast.BasicLit); ok {
				x, n = bin.Y, bin.X
			}
			call = ast.NewCall(ast.NewSel(listIdent(), "Repeat"), x, n)
		}
		ast.SetPos(call, bin.Pos())
		c.Replace(call)
		if len(done) == 0 || done[len(done)-1] != bin.Pos() {
			// (a + b + c: both additions start at a)
			done = append(done, bin.Pos())
		}
		return true
	})
	nf, ok := out.(*ast.File)
	if !ok || len(done) == 0 {
		return f, nil
	}
	if err := astutil.Sanitize(nf); err != nil {
		return f, nil
	}
	return nf, done
}

// concatOperands flattens operands that are list.Concat calls made by an
// earlier rewrite, so a + b + c becomes one list.Concat([a, b, c]).
func concatOperands(exprs ...ast.Expr) []ast.Expr {
	var out []ast.Expr
	for _, x := range exprs {
		if call, ok := x.(*ast.CallExpr); ok && len(call.Args) == 1 {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "list" {
					if name, _, _ := ast.LabelName(sel.Sel); name == "Concat" {
						if l, ok := call.Args[0].(*ast.ListLit); ok {
							out = append(out, l.Elts...)
							continue
						}
					}
				}
			}
		}
		out = append(out, x)
	}
	return out
}
