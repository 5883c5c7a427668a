package cuex

import (
	"fmt"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/parser"

	"github.com/oamflow/oamflow/pkg/cuepkg"
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

// IsSideEffecting reports whether an import path names a CUE package whose
// values are tasks with side effects rather than data: the tool packages
// (tool, tool/cli, tool/exec, tool/file, tool/http, tool/os), which `cue
// cmd` runs to execute commands, read and write files, make HTTP requests
// and read the environment. Definitions are data: oamflow refuses them.
func IsSideEffecting(importPath string) bool {
	return importPath == "tool" || strings.HasPrefix(importPath, "tool/")
}

// refuseSideEffects returns an error naming each import of f that
// IsSideEffecting, with its position; nil when there is none.
func refuseSideEffects(src Source, f *ast.File) error {
	var errs Errors
	for _, spec := range f.Imports {
		p, err := literal.Unquote(spec.Path.Value)
		if err != nil || !IsSideEffecting(p) {
			continue
		}
		errs = append(errs, &Error{Source: src, Positions: nonEmpty(mapPosition(src, spec.Pos())),
			Message: fmt.Sprintf("imports %q, which is refused: CUE's tool packages run commands, read and write files, make HTTP requests and read the environment, and a definition is data (use a workflow step's provider actions instead)", p)})
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errs
}

// providerImport is one non-standard import of a template.
type providerImport struct {
	spec *ast.ImportSpec
	path string
	name string // the identifier it binds
	// selectors are the fields the template selects on it (#Apply, …).
	selectors map[string]*ast.SelectorExpr
}

// providerImports lists the imports of f that are not standard-library
// packages, with what the template selects on each.
func providerImports(f *ast.File) []*providerImport {
	var out []*providerImport
	byName := map[string]*providerImport{}
	for _, spec := range f.Imports {
		p, err := literal.Unquote(spec.Path.Value)
		if err != nil || IsStdlib(p) {
			continue
		}
		pi := &providerImport{spec: spec, path: p, name: importName(spec, p), selectors: map[string]*ast.SelectorExpr{}}
		out = append(out, pi)
		byName[pi.name] = pi
	}
	if len(out) == 0 {
		return nil
	}
	ast.Walk(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok || byName[id.Name] == nil {
			return true
		}
		name, _, err := ast.LabelName(sel.Sel)
		if err != nil {
			return true
		}
		if _, seen := byName[id.Name].selectors[name]; !seen {
			byName[id.Name].selectors[name] = sel
		}
		return true
	}, nil)
	return out
}

// resolveImportsLocked returns the packages f imports, to build it with.
// A package of src's set (cuepkg.SetFor) is served with its schema. A
// workflow step may also import a package oamflow does not serve, or
// select an action a package lacks: those get open placeholders (`#Foo:
// _`) so that the rest of the step is still checked, and a warning says
// so, naming the import or action and its position (the step fails when it
// runs: see Template.Unprovided). Anything else is an error.
//
// It also returns the provider actions the template uses ("helm.#Render").
func (e *Engine) resolveImportsLocked(src Source, f *ast.File) ([]*build.Instance, []unprovided, []string, error) {
	imports := providerImports(f)
	if len(imports) == 0 {
		return nil, nil, nil, nil
	}
	set := cuepkg.SetFor(src.Kind)
	var (
		served  []*build.Instance
		missed  []unprovided
		refused []string
		actions []string
	)
	for _, pi := range imports {
		pkg, ok := cuepkg.Lookup(set, pi.path)
		if !ok {
			if set != cuepkg.Step {
				refused = append(refused, pi.path)
				continue
			}
			missed = append(missed, unprovided{what: fmt.Sprintf("imports %s, which oamflow does not provide", pi.path), pos: mapPosition(src, pi.spec.Pos())})
			served = append(served, placeholders(pi, "", sortedSelectors(pi.selectors)))
			continue
		}
		inst, pv, err := e.packageLocked(set, pkg)
		if err != nil {
			return nil, nil, nil, &Error{Source: src, Message: fmt.Sprintf("the schema of %s does not build: %v", pi.path, err)}
		}
		var missing []string
		for _, sel := range sortedSelectors(pi.selectors) {
			x := pv.LookupPath(cue.ParsePath(sel))
			if !x.Exists() {
				missing = append(missing, sel)
				continue
			}
			if x.LookupPath(cue.ParsePath("#do")).Exists() {
				actions = append(actions, pi.name+"."+sel)
			}
		}
		if len(missing) == 0 {
			served = append(served, inst)
			continue
		}
		if set != cuepkg.Step {
			return nil, nil, nil, &Error{Source: src, Message: fmt.Sprintf("%s has no %s", pi.path, strings.Join(missing, ", ")),
				Positions: nonEmpty(mapPosition(src, pi.selectors[missing[0]].Pos()))}
		}
		for _, m := range missing {
			missed = append(missed, unprovided{what: fmt.Sprintf("uses %s.%s, which oamflow's %s does not provide", pi.name, m, pi.path), pos: mapPosition(src, pi.selectors[m].Pos())})
		}
		served = append(served, placeholders(pi, pkg.Template, missing))
	}
	if len(refused) > 0 {
		return nil, nil, nil, &Error{Source: src, Message: refusedImports(src.Kind, set, refused)}
	}
	return served, missed, actions, nil
}

// unprovided is an import or action of a workflow step that oamflow does
// not provide.
type unprovided struct {
	// what says it ("uses kube.#Nope, which oamflow's vela/kube does not
	// provide"): the warning and the step's failure both say it so.
	what string
	// pos is its position, "" when unknown.
	pos string
}

// warning is the compile warning of u in src.
func (u unprovided) warning(src Source) string {
	w := fmt.Sprintf("%s: %s: the step fails when it runs", src, u.what)
	if u.pos != "" {
		w += " (at " + u.pos + ")"
	}
	return w
}

// placeholders builds a package for pi: schema (may be empty) plus an open
// field for each of names.
func placeholders(pi *providerImport, schema string, names []string) *build.Instance {
	var b strings.Builder
	b.WriteString(schema)
	b.WriteString("\n")
	for _, n := range names {
		b.WriteString(n + ": _\n")
	}
	inst := &build.Instance{PkgName: pi.name, ImportPath: pi.path}
	if f, err := parser.ParseFile(pi.path+".cue", b.String()); err == nil {
		_ = inst.AddSyntax(f)
	}
	return inst
}

func refusedImports(kind string, set cuepkg.Set, paths []string) string {
	what := strings.Join(paths, ", ")
	if set == cuepkg.None {
		return fmt.Sprintf("imports %s, which is not a CUE standard-library package (provider packages are for definition templates)", what)
	}
	var allowed []string
	for _, p := range cuepkg.Packages(set) {
		allowed = append(allowed, p.Path())
	}
	return fmt.Sprintf("imports %s, which %s templates cannot import (they may import %s and CUE's standard library)", what, kind, strings.Join(allowed, ", "))
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func sortedSelectors(m map[string]*ast.SelectorExpr) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// packageLocked returns the build instance of a package (for imports)
// and its value in the engine's CUE context (for looking up what it
// defines), both made on first use. The value is built from an instance of
// its own: building an instance alone records its errors in it (vela/op's
// `NoExist: _|_`), which an importing build would then report.
func (e *Engine) packageLocked(set cuepkg.Set, pkg cuepkg.Package) (*build.Instance, cue.Value, error) {
	key := string(set) + "\x00" + pkg.Path()
	inst, ok := e.imports[key]
	if !ok {
		var err error
		if inst, err = packageInstance(pkg); err != nil {
			return nil, cue.Value{}, err
		}
		e.imports[key] = inst
	}
	v, ok := e.pkgValues[key]
	if !ok {
		alone, err := packageInstance(pkg)
		if err != nil {
			return nil, cue.Value{}, err
		}
		v = e.cctx.BuildInstance(alone)
		e.pkgValues[key] = v
	}
	return inst, v, nil
}

func packageInstance(pkg cuepkg.Package) (*build.Instance, error) {
	inst := &build.Instance{PkgName: pkg.Name, ImportPath: pkg.Path()}
	f, err := parser.ParseFile(pkg.Path()+".cue", pkg.Template, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	if err := inst.AddSyntax(f); err != nil {
		return nil, err
	}
	return inst, nil
}

// buildWith builds f in cctx, importing the given provider packages.
func buildWith(cctx *cue.Context, f *ast.File, imports []*build.Instance) cue.Value {
	if len(imports) == 0 {
		return cctx.BuildFile(f)
	}
	bi := build.NewContext().NewInstance("", nil)
	bi.Imports = imports
	if err := bi.AddSyntax(f); err != nil {
		bi.Err = cueerrors.Append(bi.Err, err) // BuildInstance reports it
	}
	return cctx.BuildInstance(bi)
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
