package definition

import (
	"bytes"
	"strconv"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
)

// LoadCUE reads a .cue definition file like ParseCUE and returns the same
// File, but for files laid out as `cue fmt` writes them (imports, the
// header and `template: {` starting at column 0, everything inside the two
// blocks indented, each block closed by a `}` line at column 0) and whose
// header holds only literal values, it neither parses the template nor
// evaluates the header: it cuts the file along those lines and converts
// the header's syntax to data. Any other file goes through ParseCUE.
//
// Use it where the template is compiled next (rendering): a syntax error
// inside the template is then reported by the compiler, with positions
// mapped into the file through TemplateLineOffset, instead of here. Tools
// that check a file without compiling it (def vet, def init) use ParseCUE.
func LoadCUE(filename string, src []byte) (*File, error) {
	if f, ok := loadFormatted(filename, src); ok {
		return f, nil
	}
	return ParseCUE(filename, src)
}

// formattedLayout is where the parts of a formatted definition file are.
type formattedLayout struct {
	imports     []string // text of each import declaration, as in the file
	importLines int      // lines those declarations span
	importFirst int      // file line of the first import; 0 when the imports are not contiguous
	name        string   // header label, unquoted
	header      []byte   // "{ ... }" of the header block
	body        []byte   // template body: the lines between `template: {` and `}`
	bodyLine    int      // 1-based file line of the first body line
}

// noteImport records that an import declaration starts at file line
// line, before it is added to imports.
func (l *formattedLayout) noteImport(line int) {
	switch {
	case len(l.imports) == 0:
		l.importFirst = line
	case l.importFirst > 0 && line != l.importFirst+l.importLines:
		l.importFirst = 0 // not contiguous: not mapped
	}
}

// loadFormatted is LoadCUE's fast path; ok is false when the file is not
// laid out as it expects or its header is not plain data.
func loadFormatted(filename string, src []byte) (*File, bool) {
	l, ok := splitFormatted(src)
	if !ok {
		return nil, false
	}
	x, err := parser.ParseExpr(filename, l.header)
	if err != nil {
		return nil, false
	}
	data, ok := literalData(x)
	if !ok {
		return nil, false
	}
	h, ok := headerFromData(data.(map[string]any))
	if !ok || !Kind(h.Type).Valid() {
		return nil, false
	}
	var tb strings.Builder
	tb.Grow(len(src))
	for _, imp := range l.imports {
		tb.WriteString(imp)
		tb.WriteByte('\n')
	}
	body, indent := dedent(string(l.body))
	if hasImportLine(body) {
		// An import inside `template: {...}` is a syntax error in the
		// file (ParseCUE reports it) but would pass once the body stands
		// alone.
		return nil, false
	}
	tb.WriteString(body)
	f := h.file(l.name, filename, tb.String(), l.importLines, l.bodyLine, indent)
	f.TemplateImportFirstLine = l.importFirst
	return f, true
}

// splitFormatted cuts a formatted definition file into its parts by
// looking at column 0 only. Blank lines and `//` comments may sit between
// the top-level declarations; any other column-0 text (a package clause,
// a second header, a block closed on its own line's text, ...) makes it
// give up.
func splitFormatted(src []byte) (formattedLayout, bool) {
	var l formattedLayout
	const (
		top = iota
		inImports
		inHeader
		inTemplate
	)
	state := top
	var blockStart int // offset of the current block's first byte ('{' or "import (")
	headers, templates := 0, 0
	lineNo := 0
	for off := 0; off < len(src); {
		end := bytes.IndexByte(src[off:], '\n')
		next := len(src)
		if end < 0 {
			end = len(src)
		} else {
			end += off
			next = end + 1
		}
		line := src[off:end]
		lineNo++
		trimmed := bytes.TrimRight(line, " \t\r")
		col0 := len(line) > 0 && line[0] != ' ' && line[0] != '\t'
		switch state {
		case inImports:
			if col0 {
				if string(trimmed) != ")" {
					return l, false
				}
				text := string(src[blockStart : off+1])
				l.imports = append(l.imports, text)
				l.importLines += strings.Count(text, "\n") + 1
				state = top
			}
		case inHeader, inTemplate:
			if col0 {
				if string(trimmed) != "}" {
					return l, false
				}
				if state == inHeader {
					l.header = src[blockStart : off+1]
				} else {
					l.body = src[blockStart:off]
				}
				state = top
			}
		default:
			switch {
			case len(trimmed) == 0 || !col0 && len(bytes.TrimSpace(line)) == 0:
			case !col0:
				return l, false
			case bytes.HasPrefix(trimmed, []byte("//")):
			case bytes.HasPrefix(trimmed, []byte("import")) && (headers > 0 || templates > 0):
				// Imports come first in CUE; ParseCUE says so.
				return l, false
			case string(trimmed) == "import (":
				l.noteImport(lineNo)
				state, blockStart = inImports, off
			case bytes.HasPrefix(trimmed, []byte("import ")):
				// `import "path"` or `import name "path"`, nothing after it.
				spec := strings.Fields(string(trimmed[len("import "):]))
				if len(spec) == 0 || len(spec) > 2 {
					return l, false
				}
				// (literal.Unquote panics on a lone quote: check the shape first.)
				path := spec[len(spec)-1]
				if len(path) < 2 || path[0] != '"' || path[len(path)-1] != '"' {
					return l, false
				}
				if _, err := literal.Unquote(path); err != nil {
					return l, false
				}
				l.noteImport(lineNo)
				l.imports = append(l.imports, string(trimmed))
				l.importLines++
			case string(line) == "template: {":
				templates++
				state, blockStart = inTemplate, next
				l.bodyLine = lineNo + 1
			default:
				label, opens, ok := blockLabel(trimmed)
				if !opens || !ok || label == "template" {
					return l, false
				}
				headers++
				l.name = label
				state = inHeader
				blockStart = off + bytes.IndexByte(line, '{')
			}
		}
		off = next
	}
	if state != top || headers != 1 || templates != 1 {
		return l, false
	}
	return l, true
}

// literalData converts CUE syntax made only of struct and list literals,
// strings, numbers, booleans and null into JSON-like Go data, as
// cue.Value.Decode into an interface would (int64, float64, string, bool,
// nil, []any, map[string]any). ok is false for anything that needs
// evaluation: references, operators, interpolations, comprehensions,
// embeddings, definitions, optional or required fields, attributes, or a
// label given twice.
func literalData(x ast.Expr) (any, bool) {
	switch x := x.(type) {
	case *ast.StructLit:
		m := make(map[string]any, len(x.Elts))
		for _, d := range x.Elts {
			f, ok := d.(*ast.Field)
			if !ok || len(f.Attrs) > 0 || f.Constraint != token.ILLEGAL {
				return nil, false
			}
			switch f.Label.(type) {
			case *ast.Ident, *ast.BasicLit:
			default: // an alias (X=label), a pattern or a computed label
				return nil, false
			}
			name, _, err := ast.LabelName(f.Label)
			if err != nil || name == "" || strings.HasPrefix(name, "#") || strings.HasPrefix(name, "_") {
				return nil, false
			}
			if _, dup := m[name]; dup {
				return nil, false
			}
			v, ok := literalData(f.Value)
			if !ok {
				return nil, false
			}
			m[name] = v
		}
		return m, true
	case *ast.ListLit:
		a := make([]any, 0, len(x.Elts))
		for _, e := range x.Elts {
			v, ok := literalData(e)
			if !ok {
				return nil, false
			}
			a = append(a, v)
		}
		return a, true
	case *ast.BasicLit:
		switch x.Kind {
		case token.STRING:
			if strings.HasPrefix(x.Value, "'") {
				return nil, false // bytes
			}
			s, err := literal.Unquote(x.Value)
			return s, err == nil
		case token.INT:
			i, err := strconv.ParseInt(x.Value, 10, 64)
			return i, err == nil
		case token.FLOAT:
			f, err := strconv.ParseFloat(x.Value, 64)
			return f, err == nil
		case token.TRUE:
			return true, true
		case token.FALSE:
			return false, true
		case token.NULL:
			return nil, true
		}
	case *ast.Ident:
		// The parser reads true, false and null as identifiers.
		switch x.Name {
		case "true":
			return true, true
		case "false":
			return false, true
		case "null":
			return nil, true
		}
	}
	return nil, false
}

// headerFromData fills headerData from literal header data the way
// decoding the evaluated header does; ok is false when a known key has
// another shape (ParseCUE then reports it).
func headerFromData(m map[string]any) (headerData, bool) {
	var h headerData
	str := func(key string, dst *string) bool {
		v, present := m[key]
		if !present {
			return true
		}
		s, ok := v.(string)
		*dst = s
		return ok
	}
	strMap := func(key string, dst *map[string]string) bool {
		v, present := m[key]
		if !present {
			return true
		}
		in, ok := v.(map[string]any)
		if !ok {
			return false
		}
		out := make(map[string]string, len(in))
		for k, v := range in {
			s, ok := v.(string)
			if !ok {
				return false
			}
			out[k] = s
		}
		*dst = out
		return true
	}
	if !str("type", &h.Type) || !str("description", &h.Description) || !str("alias", &h.Alias) ||
		!strMap("annotations", &h.Annotations) || !strMap("labels", &h.Labels) {
		return h, false
	}
	if v, present := m["attributes"]; present {
		a, ok := v.(map[string]any)
		if !ok {
			return h, false
		}
		h.Attributes = a
	}
	return h, true
}

// hasImportLine reports whether a dedented template body has a line at
// its top level that starts an import declaration.
func hasImportLine(body string) bool {
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, "import"); ok && (rest == "" || strings.ContainsAny(rest[:1], " \t(\"")) {
			return true
		}
	}
	return false
}
