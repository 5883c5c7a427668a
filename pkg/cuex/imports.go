package cuex

import (
	"sort"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/parser"
)

// stdlibRoots are the first path elements of CUE's standard library
// (cuelang.org/go/pkg). Provider packages such as vela/kube have no dot in
// their first element either, so the list is needed to tell them apart.
var stdlibRoots = map[string]bool{
	"crypto": true, "encoding": true, "html": true, "list": true, "math": true,
	"net": true, "path": true, "regexp": true, "strconv": true, "strings": true,
	"struct": true, "text": true, "time": true, "tool": true, "uuid": true,
}

// IsStdlib reports whether an import path names a CUE standard-library package.
func IsStdlib(importPath string) bool {
	root, _, _ := strings.Cut(importPath, "/")
	return stdlibRoots[root]
}

// stubImports rewrites text so that each non-standard import `name` becomes
// a file-level `let name = {sel1: _, sel2: _}` holding open placeholders for
// every selector the template uses on it (`kube.#Apply`, `op.#Steps`). The
// import text is blanked out in place and the let clauses are appended, so
// line and column numbers of the template stay the same.
func stubImports(text string) (string, error) {
	f, err := parser.ParseFile("template", text)
	if err != nil {
		return "", err
	}
	buf := []byte(text)
	blank := func(from, to int) {
		for i := from; i < to && i < len(buf); i++ {
			if buf[i] != '\n' {
				buf[i] = ' '
			}
		}
	}
	stubbed := map[string]bool{}
	for _, d := range f.Decls {
		imp, ok := d.(*ast.ImportDecl)
		if !ok {
			continue
		}
		kept := 0
		for _, spec := range imp.Specs {
			p, _ := literal.Unquote(spec.Path.Value)
			if IsStdlib(p) {
				kept++
				continue
			}
			stubbed[importName(spec, p)] = true
			if imp.Lparen.IsValid() {
				blank(spec.Pos().Offset(), spec.End().Offset())
			}
		}
		if kept == 0 {
			blank(imp.Pos().Offset(), imp.End().Offset())
		}
	}
	if len(stubbed) == 0 {
		return text, nil
	}
	selectors := map[string]map[string]bool{}
	ast.Walk(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok || !stubbed[id.Name] {
			return true
		}
		name, _, err := ast.LabelName(sel.Sel)
		if err != nil {
			return true
		}
		if selectors[id.Name] == nil {
			selectors[id.Name] = map[string]bool{}
		}
		selectors[id.Name][name] = true
		return true
	}, nil)
	names := make([]string, 0, len(stubbed))
	for n := range stubbed {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.Write(buf)
	b.WriteString("\n")
	for _, n := range names {
		sels := make([]string, 0, len(selectors[n]))
		for s := range selectors[n] {
			sels = append(sels, s+": _")
		}
		sort.Strings(sels)
		b.WriteString("let " + n + " = {" + strings.Join(sels, ", ") + "}\n")
	}
	return b.String(), nil
}

func importName(spec *ast.ImportSpec, p string) string {
	if spec.Name != nil {
		return spec.Name.Name
	}
	if i := strings.LastIndexAny(p, "/:"); i >= 0 {
		p = p[i+1:]
	}
	if i := strings.IndexByte(p, '@'); i >= 0 {
		p = p[:i]
	}
	return p
}
