package definition

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
)

// Kind is the kind of a definition as the .cue header names it.
type Kind string

// Definition kinds, spelled as in the `type:` field of a .cue definition header.
const (
	KindComponent    Kind = "component"
	KindTrait        Kind = "trait"
	KindPolicy       Kind = "policy"
	KindWorkflowStep Kind = "workflow-step"
)

// Kinds lists every definition kind in a stable order.
var Kinds = []Kind{KindComponent, KindTrait, KindPolicy, KindWorkflowStep}

// Valid reports whether k is one of the four definition kinds.
func (k Kind) Valid() bool {
	switch k {
	case KindComponent, KindTrait, KindPolicy, KindWorkflowStep:
		return true
	}
	return false
}

// Annotation keys a .cue header fills in.
const (
	AnnoDescription = "definition.oam.dev/description"
	AnnoAlias       = "definition.oam.dev/alias"
)

// File is one definition in the KubeVela .cue definition format:
//
//	import "strings"            // optional, shared by header and template
//	"<name>": {                 // header
//	    type: "component" | "trait" | "policy" | "workflow-step"
//	    description: "..."
//	    annotations: {...}
//	    labels: {...}
//	    attributes: {...}       // the CRD spec minus the schematic
//	}
//	template: { ... }           // becomes spec.schematic.cue.template
type File struct {
	// Name is the header's label: the definition's metadata.name.
	Name string
	// Kind is the header's `type`.
	Kind Kind
	// Description becomes annotation definition.oam.dev/description.
	Description string
	// Alias becomes annotation definition.oam.dev/alias.
	Alias       string
	Annotations map[string]string
	Labels      map[string]string
	// Attributes is the CRD spec without schematic, as JSON-compatible data.
	Attributes map[string]any
	// Template is CUE source: the file's imports followed by the body of
	// `template: {...}`, dedented.
	Template string
	// Filename is where the file was read from ("" when built in memory).
	Filename string
	// TemplateLineOffset maps template lines to file lines: for a template
	// line L greater than TemplateImportLines, the file line is L+TemplateLineOffset.
	TemplateLineOffset int
	// TemplateImportLines is the number of leading template lines holding
	// the imports.
	TemplateImportLines int
	// TemplateImportFirstLine is the file line of the first of them when
	// they are contiguous lines of the file (template line L ≤
	// TemplateImportLines is then file line L+TemplateImportFirstLine-1);
	// 0 when they are not, or there are none.
	TemplateImportFirstLine int
	// TemplateIndent is the number of bytes removed from the start of each
	// template body line (the block's indentation, 1 for a tab): a column
	// C of a body line is column C+TemplateIndent of the file.
	TemplateIndent int
}

// ScanCUE reads only the name and kind of a .cue definition file, without
// evaluating anything. It is the cheap step used to index folders of
// definitions (ParseCUE does the full read): formatted files (`cue fmt`
// style: top-level fields at column 0, the header's `type: "..."` on its
// own line) are recognized from their lines; anything else is parsed.
func ScanCUE(filename string, src []byte) (string, Kind, error) {
	if name, kind, ok := scanLines(src); ok {
		return name, kind, nil
	}
	f, err := parser.ParseFile(filename, src)
	if err != nil {
		return "", "", fmt.Errorf("%s: parsing CUE: %w", filename, cueErr(err))
	}
	header, _, err := splitFile(filename, f)
	if err != nil {
		return "", "", err
	}
	name, _, _ := ast.LabelName(header.Label)
	kind := literalKind(header.Value)
	if kind == "" {
		// Not a plain literal: evaluate the header to find out.
		full, err := ParseCUE(filename, src)
		if err != nil {
			return "", "", err
		}
		return full.Name, full.Kind, nil
	}
	return name, kind, nil
}

// scanLines finds the header of a formatted definition file: the one
// top-level `<label>: {` line other than `template: {`, and the first
// `type: "<kind>"` line at one tab (or two spaces) of indentation inside it.
func scanLines(src []byte) (string, Kind, bool) {
	var name string
	var kind Kind
	headers := 0
	inHeader := false
	var unit []byte   // the header's indentation, from its first indented line
	inString := false // inside a multi-line string ("""...""" or '''...''')
	for off := 0; off < len(src); {
		end := bytes.IndexByte(src[off:], '\n')
		if end < 0 {
			end = len(src)
		} else {
			end += off
		}
		line := src[off:end]
		off = end + 1
		if inHeader {
			if n := bytes.Count(line, []byte(`"""`)) + bytes.Count(line, []byte("'''")); n%2 == 1 {
				inString = !inString
				continue
			}
			if inString {
				continue
			}
			if bytes.HasPrefix(line, []byte("}")) {
				inHeader = false
				continue
			}
			t := bytes.TrimLeft(line, " \t")
			if unit == nil && len(t) > 0 {
				unit = line[:len(line)-len(t)]
			}
			if kind == "" && bytes.Equal(line[:len(line)-len(t)], unit) && bytes.HasPrefix(t, []byte("type:")) {
				v := bytes.TrimSpace(t[len("type:"):])
				if len(v) > 2 && v[0] == '"' && v[len(v)-1] == '"' && Kind(v[1:len(v)-1]).Valid() {
					kind = Kind(v[1 : len(v)-1])
				}
			}
			continue
		}
		if len(line) == 0 || line[0] == ' ' || line[0] == '\t' || line[0] == ')' || line[0] == '}' || bytes.HasPrefix(line, []byte("//")) || bytes.HasPrefix(line, []byte("import")) {
			continue
		}
		label, opens, ok := blockLabel(line)
		if !opens || label == "template" {
			continue
		}
		if !ok {
			return "", "", false
		}
		headers++
		name = label
		inHeader = true
	}
	if headers != 1 || kind == "" || name == "" {
		return "", "", false
	}
	return name, kind, true
}

// blockLabel reads a column-0 line `<label>: {` that opens a top-level
// block: label is unquoted; opens is false when the line opens no block;
// ok is false when it does but the label is not a name a line scan can
// trust (a quoted label with escapes, a definition, a hidden field, an
// alias or expression).
func blockLabel(line []byte) (label string, opens, ok bool) {
	i := bytes.IndexByte(line, ':')
	if i < 0 || string(bytes.TrimSpace(line[i+1:])) != "{" {
		return "", false, false
	}
	label = string(bytes.TrimSpace(line[:i]))
	if len(label) > 1 && label[0] == '"' && label[len(label)-1] == '"' {
		label = label[1 : len(label)-1]
		return label, true, label != "" && !strings.ContainsAny(label, "\\\"")
	}
	return label, true, ast.IsValidIdent(label) && !strings.HasPrefix(label, "#") && !strings.HasPrefix(label, "_")
}

// literalKind returns the literal value of `type:` in a header struct, or "".
func literalKind(x ast.Expr) Kind {
	st, ok := x.(*ast.StructLit)
	if !ok {
		return ""
	}
	for _, d := range st.Elts {
		f, ok := d.(*ast.Field)
		if !ok {
			continue
		}
		if n, _, _ := ast.LabelName(f.Label); n != "type" {
			continue
		}
		if lit, ok := f.Value.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			s, err := literal.Unquote(lit.Value)
			if err == nil && Kind(s).Valid() {
				return Kind(s)
			}
		}
	}
	return ""
}

// splitFile finds the header field and the template field of a definition file.
func splitFile(filename string, f *ast.File) (header, template *ast.Field, err error) {
	for _, d := range f.Decls {
		switch x := d.(type) {
		case *ast.Field:
			name, _, lerr := ast.LabelName(x.Label)
			if lerr != nil {
				return nil, nil, fmt.Errorf("%s: %s: a definition file holds only literal top-level labels", filename, x.Pos())
			}
			if name == "template" {
				if template != nil {
					return nil, nil, fmt.Errorf("%s: %s: second `template` block", filename, x.Pos())
				}
				template = x
				continue
			}
			if header != nil {
				return nil, nil, fmt.Errorf("%s: %s: second header block %q (a definition file holds one header and one `template`)", filename, x.Pos(), name)
			}
			header = x
		case *ast.ImportDecl, *ast.CommentGroup, *ast.Package, *ast.Attribute:
		default:
			return nil, nil, fmt.Errorf("%s: %s: unexpected top-level declaration (a definition file holds imports, one header and one `template`)", filename, d.Pos())
		}
	}
	if header == nil {
		return nil, nil, fmt.Errorf("%s: no header block (`\"<name>\": {type: \"component\", ...}`)", filename)
	}
	if template == nil {
		return nil, nil, fmt.Errorf("%s: no `template: {...}` block", filename)
	}
	return header, template, nil
}

// headerData is the evaluated header block.
type headerData struct {
	Type        string            `json:"type"`
	Description string            `json:"description"`
	Alias       string            `json:"alias"`
	Annotations map[string]string `json:"annotations"`
	Labels      map[string]string `json:"labels"`
	Attributes  map[string]any    `json:"attributes"`
}

// ParseCUE reads a .cue definition file. The header is evaluated (it may use
// standard-library imports); the template is only parsed, never evaluated,
// so templates importing provider packages load fine. Errors carry the file
// position.
func ParseCUE(filename string, src []byte) (*File, error) {
	f, err := parser.ParseFile(filename, src, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("%s: parsing CUE: %w", filename, cueErr(err))
	}
	header, tmpl, err := splitFile(filename, f)
	if err != nil {
		return nil, err
	}
	name, _, _ := ast.LabelName(header.Label)
	if name == "" {
		return nil, fmt.Errorf("%s: %s: empty definition name", filename, header.Pos())
	}

	// Evaluate the header alone, with the file's imports that it uses.
	hf := &ast.File{Filename: filename}
	var imports []*ast.ImportDecl
	for _, d := range f.Decls {
		if imp, ok := d.(*ast.ImportDecl); ok {
			imports = append(imports, imp)
		}
	}
	used := usedIdents(header.Value)
	for _, imp := range imports {
		var specs []*ast.ImportSpec
		for _, s := range imp.Specs {
			if used[importName(s)] {
				specs = append(specs, s)
			}
		}
		if len(specs) > 0 {
			hf.Decls = append(hf.Decls, &ast.ImportDecl{Specs: specs})
		}
	}
	hf.Decls = append(hf.Decls, &ast.Field{Label: ast.NewIdent("header"), Value: header.Value})
	v := cuecontext.New().BuildFile(hf)
	if err := v.Err(); err != nil {
		return nil, fmt.Errorf("%s: evaluating header of %q: %w", filename, name, cueErr(err))
	}
	var h headerData
	if err := v.LookupPath(cue.ParsePath("header")).Decode(&h); err != nil {
		return nil, fmt.Errorf("%s: decoding header of %q (type, description, annotations, labels, attributes): %w", filename, name, cueErr(err))
	}
	if !Kind(h.Type).Valid() {
		return nil, fmt.Errorf("%s: header of %q: type %q is not one of component, trait, policy, workflow-step", filename, name, h.Type)
	}

	var tb strings.Builder
	importLines := 0
	// The imports are mapped back with one offset when they are
	// contiguous lines of the file (the usual layout); see File.
	importFirstLine, contiguous := 0, true
	for i, imp := range imports {
		if i == 0 {
			importFirstLine = imp.Pos().Line()
		} else if imp.Pos().Line() != importFirstLine+importLines {
			contiguous = false
		}
		text := string(src[imp.Pos().Offset():imp.End().Offset()])
		tb.WriteString(text)
		tb.WriteByte('\n')
		importLines += strings.Count(text, "\n") + 1
	}
	var bodyText string
	var firstBodyLine int
	if body, ok := tmpl.Value.(*ast.StructLit); ok && body.Lbrace.IsValid() && body.Rbrace.IsValid() {
		bodyText = string(src[body.Lbrace.Offset()+1 : body.Rbrace.Offset()])
		firstBodyLine = body.Lbrace.Line()
		if strings.HasPrefix(bodyText, "\n") {
			bodyText = bodyText[1:]
			firstBodyLine++
		}
	} else {
		// `template: parameter: {...}` and other shorthands: the value
		// itself is the body.
		from, to := tmpl.Value.Pos(), tmpl.Value.End()
		if st, ok := tmpl.Value.(*ast.StructLit); ok && len(st.Elts) > 0 {
			from, to = st.Elts[0].Pos(), st.Elts[len(st.Elts)-1].End()
		}
		if !from.IsValid() || !to.IsValid() || to.Offset() > len(src) {
			return nil, fmt.Errorf("%s: %s: cannot read the `template` block", filename, tmpl.Pos())
		}
		bodyText = string(src[from.Offset():to.Offset()])
		firstBodyLine = from.Line()
	}
	body, indent := dedent(bodyText)
	tb.WriteString(body)
	file := h.file(name, filename, tb.String(), importLines, firstBodyLine, indent)
	if contiguous {
		file.TemplateImportFirstLine = importFirstLine
	}
	return file, nil
}

// file is the File of a definition with header h named name, read from
// filename: template holds importLines lines of imports followed by the
// body, whose first line is line firstBodyLine of the file, dedented by
// indent bytes.
func (h headerData) file(name, filename, template string, importLines, firstBodyLine, indent int) *File {
	return &File{
		Name:                name,
		Kind:                Kind(h.Type),
		Description:         h.Description,
		Alias:               h.Alias,
		Annotations:         h.Annotations,
		Labels:              h.Labels,
		Attributes:          h.Attributes,
		Template:            template,
		Filename:            filename,
		TemplateImportLines: importLines,
		TemplateLineOffset:  firstBodyLine - (importLines + 1),
		TemplateIndent:      indent,
	}
}

// importName is the identifier an import binds.
func importName(s *ast.ImportSpec) string {
	if s.Name != nil {
		return s.Name.Name
	}
	p, _ := literal.Unquote(s.Path.Value)
	if i := strings.LastIndexAny(p, "/:"); i >= 0 {
		p = p[i+1:]
	}
	if i := strings.IndexByte(p, '@'); i >= 0 {
		p = p[:i]
	}
	return p
}

// usedIdents collects the identifiers referenced under n.
func usedIdents(n ast.Node) map[string]bool {
	out := map[string]bool{}
	ast.Walk(n, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			out[id.Name] = true
		}
		return true
	}, nil)
	return out
}

// dedent removes one leading tab (or the common leading spaces) from every
// non-empty line when all of them have it, and returns how many bytes it
// removed from each line. CUE multi-line strings strip their closing-quote
// indentation, so a uniform dedent keeps their content.
func dedent(s string) (string, int) {
	lines := strings.Split(s, "\n")
	prefix := ""
	for _, cand := range []string{"\t", "    ", "  "} {
		ok := true
		for _, l := range lines {
			if strings.TrimSpace(l) != "" && !strings.HasPrefix(l, cand) {
				ok = false
				break
			}
		}
		if ok {
			prefix = cand
			break
		}
	}
	if prefix == "" {
		return strings.TrimRight(s, " \t\n") + "\n", 0
	}
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, prefix)
	}
	return strings.TrimRight(strings.Join(lines, "\n"), " \t\n") + "\n", len(prefix)
}

// indent prefixes every non-empty line with one tab.
func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			lines[i] = "\t" + l
		} else {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// FormatCUE writes f in the .cue definition format. Imports are hoisted from
// the template to the top of the file; strings holding newlines are written
// as multi-line strings.
func (f *File) FormatCUE() ([]byte, error) {
	tf, err := parser.ParseFile(f.Name+".template.cue", f.Template, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("definition %q: parsing template: %w", f.Name, cueErr(err))
	}
	var imports []string
	bodyStart := 0
	for _, d := range tf.Decls {
		if imp, ok := d.(*ast.ImportDecl); ok {
			imports = append(imports, f.Template[imp.Pos().Offset():imp.End().Offset()])
			bodyStart = imp.End().Offset()
		}
	}
	body := strings.TrimLeft(f.Template[bodyStart:], "\n")

	h := map[string]any{"type": string(f.Kind)}
	if f.Description != "" {
		h["description"] = f.Description
	}
	if f.Alias != "" {
		h["alias"] = f.Alias
	}
	if len(f.Annotations) > 0 {
		h["annotations"] = f.Annotations
	}
	if len(f.Labels) > 0 {
		h["labels"] = f.Labels
	}
	if len(f.Attributes) > 0 {
		h["attributes"] = f.Attributes
	}
	hv := cuecontext.New().Encode(h)
	if err := hv.Err(); err != nil {
		return nil, fmt.Errorf("definition %q: encoding header: %w", f.Name, err)
	}
	hx, ok := hv.Syntax(cue.Final()).(ast.Expr)
	if !ok {
		return nil, fmt.Errorf("definition %q: encoding header: not an expression", f.Name)
	}
	orderHeader(hx)
	multilineStrings(hx, 0)
	hdr := &ast.Field{Label: ast.NewString(f.Name), Value: hx}
	hb, err := format.Node(hdr)
	if err != nil {
		return nil, fmt.Errorf("definition %q: formatting header: %w", f.Name, err)
	}
	var out bytes.Buffer
	for _, imp := range imports {
		out.WriteString(imp)
		out.WriteByte('\n')
	}
	if len(imports) > 0 {
		out.WriteByte('\n')
	}
	out.Write(hb)
	out.WriteString("\ntemplate: {\n")
	out.WriteString(indent(body))
	out.WriteString("\n}\n")
	// The template is kept as written (only indented); check the result.
	if _, err := parser.ParseFile(f.Name+".cue", out.Bytes()); err != nil {
		return nil, fmt.Errorf("definition %q: formatted file does not parse: %w", f.Name, cueErr(err))
	}
	return out.Bytes(), nil
}

// orderHeader puts header fields in the conventional order.
func orderHeader(x ast.Expr) {
	st, ok := x.(*ast.StructLit)
	if !ok {
		return
	}
	rank := map[string]int{"alias": 0, "type": 1, "annotations": 2, "labels": 3, "description": 4, "attributes": 5}
	sort.SliceStable(st.Elts, func(i, j int) bool {
		return rank[declName(st.Elts[i])] < rank[declName(st.Elts[j])]
	})
}

// multiline writes s as a #"""…"""# string indented by tabs: tabs, quotes
// and \( stay as written (health policies interpolate with \(…)), the way
// people write them by hand. Strings that could end the literal early fall
// back to an escaped multi-line string.
func multiline(s string, tabs int) string {
	if strings.Contains(s, `\#`) || strings.Contains(s, `"""#`) {
		return literal.String.WithTabIndent(tabs).Quote(s)
	}
	ind := strings.Repeat("\t", tabs)
	var b strings.Builder
	b.WriteString("#\"\"\"\n")
	for _, line := range strings.Split(s, "\n") {
		if line != "" {
			b.WriteString(ind)
			b.WriteString(line)
		}
		b.WriteByte('\n')
	}
	b.WriteString(ind)
	b.WriteString("\"\"\"#")
	return b.String()
}

func declName(d ast.Decl) string {
	if f, ok := d.(*ast.Field); ok {
		n, _, _ := ast.LabelName(f.Label)
		return n
	}
	return ""
}

// multilineStrings rewrites string literals holding newlines as """ strings,
// indented to their field's depth.
func multilineStrings(x ast.Expr, depth int) {
	switch v := x.(type) {
	case *ast.StructLit:
		for _, d := range v.Elts {
			f, ok := d.(*ast.Field)
			if !ok {
				continue
			}
			if lit, ok := f.Value.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := literal.Unquote(lit.Value); err == nil && strings.Contains(s, "\n") {
					lit.Value = multiline(s, depth+1)
				}
				continue
			}
			multilineStrings(f.Value, depth+1)
		}
	case *ast.ListLit:
		for _, e := range v.Elts {
			multilineStrings(e, depth+1)
		}
	}
}

// cueErr flattens a CUE error into one line per error: "message (at
// file:line:col)".
func cueErr(err error) error {
	if err == nil {
		return nil
	}
	errs := cueerrors.Errors(err)
	if len(errs) == 0 {
		return err
	}
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		format, args := e.Msg()
		msg := fmt.Sprintf(format, args...)
		var pos []string
		for _, p := range cueerrors.Positions(e) {
			pos = append(pos, p.String())
		}
		if len(pos) > 0 {
			msg += " (at " + strings.Join(pos, ", ") + ")"
		}
		msgs = append(msgs, msg)
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

// attributesJSON returns a's JSON encoding ("{}" when empty).
func attributesJSON(a map[string]any) ([]byte, error) {
	if a == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(a)
}
