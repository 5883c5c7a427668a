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
	"cuelang.org/go/cue/literal"
)

// toValue turns JSON-like Go data into a CUE value of c by writing it as
// CUE source and compiling that. Filling Go values directly (FillPath with
// a map) trips an evaluator bug in CUE v0.14: structs converted from Go and
// re-emitted by a list comprehension lose their fields
// (`[for c in goList {c}][0].x` is "undefined field"). Values compiled from
// source do not, and integral floats keep their float kind ("2.0").
func toValue(c *cue.Context, x any) (cue.Value, error) {
	if v, ok := x.(cue.Value); ok {
		return v, nil
	}
	var b strings.Builder
	if err := writeCUE(&b, x); err != nil {
		return cue.Value{}, err
	}
	v := c.CompileString(b.String())
	return v, v.Err()
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
