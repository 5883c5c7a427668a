package cuex

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/token"
)

// toValue turns JSON-like Go data into a CUE value of c by building its
// syntax tree and compiling that. Filling Go values directly (FillPath with
// a map) trips an evaluator bug in CUE v0.14: structs converted from Go and
// re-emitted by a list comprehension lose their fields
// (`[for c in goList {c}][0].x` is "undefined field"). Values compiled from
// syntax do not, and integral floats keep their float kind ("2.0").
func toValue(c *cue.Context, x any) (cue.Value, error) {
	if v, ok := x.(cue.Value); ok {
		return v, nil
	}
	expr, err := toExpr(x)
	if err != nil {
		return cue.Value{}, err
	}
	v := c.BuildExpr(expr)
	return v, v.Err()
}

// toExpr builds the CUE syntax of JSON-like Go data.
func toExpr(x any) (ast.Expr, error) { return toExprOrdered(x, cue.Value{}) }

// toOrderedValue is toValue with the fields of every object ordered as
// the same fields of schema are (then the others, sorted): a template
// unified with data lists the data's fields in the data's order, and
// KubeVela, compiling the parameter after the template, lists them in the
// parameter schema's order (json.Marshal of a parameter shows it).
func toOrderedValue(c *cue.Context, x any, schema cue.Value) (cue.Value, error) {
	expr, err := toExprOrdered(x, schema)
	if err != nil {
		return cue.Value{}, err
	}
	v := c.BuildExpr(expr)
	return v, v.Err()
}

// fillsValue is toOrderedValue for the fills of a template: a struct of
// the fills (sorted by path), each ordered by the template's field of that
// name. The template's own top-level order is not read: listing its
// fields would evaluate them before the fill.
func fillsValue(c *cue.Context, fills map[string]any, template cue.Value) (cue.Value, error) {
	st := &ast.StructLit{Elts: make([]ast.Decl, 0, len(fills))}
	for _, p := range sortedKeys(fills) {
		e, err := toExprOrdered(fills[p], childSchema(template, cue.Str(p)))
		if err != nil {
			return cue.Value{}, err
		}
		st.Elts = append(st.Elts, &ast.Field{Label: ast.NewString(p), Value: e})
	}
	return buildValue(c, st)
}

func buildValue(c *cue.Context, expr ast.Expr) (cue.Value, error) {
	v := c.BuildExpr(expr)
	return v, v.Err()
}

// schemaOrder returns the labels of schema's fields (optional ones too) in
// declaration order; nil when schema is not a struct.
func schemaOrder(schema cue.Value) []string {
	if !schema.Exists() {
		return nil
	}
	if d, ok := schema.Default(); ok {
		schema = d
	}
	if schema.IncompleteKind()&cue.StructKind == 0 {
		return nil
	}
	it, err := schema.Fields(cue.Optional(true))
	if err != nil {
		return nil
	}
	var out []string
	for it.Next() {
		out = append(out, it.Selector().Unquoted())
	}
	return out
}

// childSchema is the schema of field k (or item i) of schema.
func childSchema(schema cue.Value, sel cue.Selector) cue.Value {
	if !schema.Exists() {
		return cue.Value{}
	}
	if d, ok := schema.Default(); ok {
		schema = d
	}
	if schema.IncompleteKind() == cue.TopKind {
		return cue.Value{}
	}
	c := schema.LookupPath(cue.MakePath(sel))
	if !c.Exists() && sel.Type() == cue.IndexLabel {
		c = schema.LookupPath(cue.MakePath(cue.AnyIndex))
	}
	if !c.Exists() || c.IncompleteKind() == cue.TopKind {
		return cue.Value{}
	}
	return c
}

func toExprOrdered(x any, schema cue.Value) (ast.Expr, error) {
	switch v := x.(type) {
	case nil:
		return ast.NewNull(), nil
	case bool:
		return ast.NewBool(v), nil
	case string:
		return ast.NewString(v), nil
	case int:
		return intExpr(int64(v)), nil
	case int32:
		return intExpr(int64(v)), nil
	case int64:
		return intExpr(v), nil
	case uint64:
		return &ast.BasicLit{Kind: token.INT, Value: strconv.FormatUint(v, 10)}, nil
	case float32:
		return floatExpr(float64(v))
	case float64:
		return floatExpr(v)
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return intExpr(i), nil
		}
		f, err := v.Float64()
		if err != nil {
			return nil, err
		}
		return floatExpr(f)
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if order := schemaOrder(schema); len(order) > 0 {
			first := make([]string, 0, len(keys))
			seen := make(map[string]bool, len(order))
			for _, k := range order {
				if _, ok := v[k]; ok && !seen[k] {
					first = append(first, k)
					seen[k] = true
				}
			}
			for _, k := range keys {
				if !seen[k] {
					first = append(first, k)
				}
			}
			keys = first
		}
		st := &ast.StructLit{Elts: make([]ast.Decl, 0, len(keys))}
		for _, k := range keys {
			var cs cue.Value
			if schema.Exists() {
				cs = childSchema(schema, cue.Str(k))
			}
			e, err := toExprOrdered(v[k], cs)
			if err != nil {
				return nil, err
			}
			st.Elts = append(st.Elts, &ast.Field{Label: ast.NewString(k), Value: e})
		}
		return st, nil
	case []any:
		l := &ast.ListLit{Elts: make([]ast.Expr, 0, len(v))}
		for i, e := range v {
			var cs cue.Value
			if schema.Exists() {
				cs = childSchema(schema, cue.Index(i))
			}
			ex, err := toExprOrdered(e, cs)
			if err != nil {
				return nil, err
			}
			l.Elts = append(l.Elts, ex)
		}
		return l, nil
	case map[string]string:
		m := make(map[string]any, len(v))
		for k, s := range v {
			m[k] = s
		}
		return toExpr(m)
	case []string:
		l := make([]any, len(v))
		for i, s := range v {
			l[i] = s
		}
		return toExpr(l)
	}
	rv := reflect.ValueOf(x)
	switch rv.Kind() {
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, fmt.Errorf("cannot encode %T: map keys must be strings", x)
		}
		m := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			m[it.Key().String()] = it.Value().Interface()
		}
		return toExpr(m)
	case reflect.Slice, reflect.Array:
		l := make([]any, rv.Len())
		for i := range l {
			l[i] = rv.Index(i).Interface()
		}
		return toExpr(l)
	}
	raw, err := json.Marshal(x)
	if err != nil {
		return nil, fmt.Errorf("cannot encode %T: %w", x, err)
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return nil, err
	}
	return toExpr(generic)
}

func intExpr(i int64) ast.Expr {
	if i < 0 {
		return &ast.UnaryExpr{Op: token.SUB, X: &ast.BasicLit{Kind: token.INT, Value: strconv.FormatUint(uint64(-i), 10)}}
	}
	return &ast.BasicLit{Kind: token.INT, Value: strconv.FormatInt(i, 10)}
}

func floatExpr(f float64) (ast.Expr, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("cannot encode %v: not a JSON number", f)
	}
	neg := f < 0
	if neg {
		f = -f
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	var e ast.Expr = &ast.BasicLit{Kind: token.FLOAT, Value: s}
	if neg {
		e = &ast.UnaryExpr{Op: token.SUB, X: e}
	}
	return e, nil
}

// ToValue is toValue for callers working inside Engine.Eval: it builds a
// value in c (use v.Context() of the value being evaluated).
func ToValue(c *cue.Context, x any) (cue.Value, error) { return toValue(c, x) }

// EncodeCUE writes JSON-like Go data as CUE source (a JSON superset:
// quoted labels, float literals always carry a '.' or exponent).
func EncodeCUE(x any) (string, error) {
	var b strings.Builder
	err := writeCUE(&b, x)
	return b.String(), err
}

func writeCUE(b *strings.Builder, x any) error {
	switch v := x.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		b.WriteString(literal.String.Quote(v))
	case int:
		b.WriteString(strconv.Itoa(v))
	case int32:
		b.WriteString(strconv.FormatInt(int64(v), 10))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case uint64:
		b.WriteString(strconv.FormatUint(v, 10))
	case float32:
		return writeFloat(b, float64(v))
	case float64:
		return writeFloat(b, v)
	case json.Number:
		if _, err := v.Int64(); err == nil {
			b.WriteString(v.String())
			return nil
		}
		f, err := v.Float64()
		if err != nil {
			return err
		}
		return writeFloat(b, f)
	case map[string]any:
		b.WriteByte('{')
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(literal.Label.Quote(k))
			b.WriteByte(':')
			if err := writeCUE(b, v[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCUE(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]string:
		m := make(map[string]any, len(v))
		for k, s := range v {
			m[k] = s
		}
		return writeCUE(b, m)
	case []string:
		l := make([]any, len(v))
		for i, s := range v {
			l[i] = s
		}
		return writeCUE(b, l)
	default:
		rv := reflect.ValueOf(x)
		switch rv.Kind() {
		case reflect.Map:
			if rv.Type().Key().Kind() != reflect.String {
				return fmt.Errorf("cannot encode %T: map keys must be strings", x)
			}
			m := make(map[string]any, rv.Len())
			it := rv.MapRange()
			for it.Next() {
				m[it.Key().String()] = it.Value().Interface()
			}
			return writeCUE(b, m)
		case reflect.Slice, reflect.Array:
			l := make([]any, rv.Len())
			for i := range l {
				l[i] = rv.Index(i).Interface()
			}
			return writeCUE(b, l)
		}
		// Anything else: through JSON.
		raw, err := json.Marshal(x)
		if err != nil {
			return fmt.Errorf("cannot encode %T: %w", x, err)
		}
		var generic any
		if err := json.Unmarshal(raw, &generic); err != nil {
			return err
		}
		return writeCUE(b, generic)
	}
	return nil
}

func writeFloat(b *strings.Builder, f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("cannot encode %v: not a JSON number", f)
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	b.WriteString(s)
	return nil
}
