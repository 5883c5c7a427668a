package render

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// jsonPatchOp is one RFC 6902 operation.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from,omitempty"`
	Value any    `json:"value,omitempty"`
}

// applyJSONPatch applies RFC 6902 operations to doc (modified in place
// where possible) and returns the result.
func applyJSONPatch(doc any, ops []jsonPatchOp) (any, error) {
	var err error
	for i, op := range ops {
		doc, err = applyOp(doc, op)
		if err != nil {
			return nil, &patchError{msg: fmt.Sprintf("JSON patch operation %d (%s %s): %v", i, op.Op, op.Path, err)}
		}
	}
	return doc, nil
}

func applyOp(doc any, op jsonPatchOp) (any, error) {
	switch op.Op {
	case "add":
		return pointerSet(doc, op.Path, deepCopyValue(op.Value), true)
	case "replace":
		if _, err := pointerGet(doc, op.Path); err != nil {
			return nil, err
		}
		return pointerSet(doc, op.Path, deepCopyValue(op.Value), false)
	case "remove":
		return pointerRemove(doc, op.Path)
	case "move":
		v, err := pointerGet(doc, op.From)
		if err != nil {
			return nil, err
		}
		if doc, err = pointerRemove(doc, op.From); err != nil {
			return nil, err
		}
		return pointerSet(doc, op.Path, v, true)
	case "copy":
		v, err := pointerGet(doc, op.From)
		if err != nil {
			return nil, err
		}
		return pointerSet(doc, op.Path, deepCopyValue(v), true)
	case "test":
		v, err := pointerGet(doc, op.Path)
		if err != nil {
			return nil, err
		}
		if !reflect.DeepEqual(normalize(v), normalize(op.Value)) {
			return nil, fmt.Errorf("test failed: value is %v", short(v))
		}
		return doc, nil
	}
	return nil, fmt.Errorf("unknown op %q (want add, remove, replace, move, copy or test)", op.Op)
}

// splitPointer parses an RFC 6901 JSON pointer.
func splitPointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("path %q must start with /", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

func pointerGet(doc any, p string) (any, error) {
	parts, err := splitPointer(p)
	if err != nil {
		return nil, err
	}
	cur := doc
	for _, seg := range parts {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[seg]
			if !ok {
				return nil, fmt.Errorf("%s: no field %q", p, seg)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("%s: no list index %q", p, seg)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("%s: %q is not inside an object or list", p, seg)
		}
	}
	return cur, nil
}

// pointerSet sets (insert: adds to lists, "-" appends) the value at p.
func pointerSet(doc any, p string, val any, insert bool) (any, error) {
	parts, err := splitPointer(p)
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return val, nil
	}
	return setIn(doc, parts, val, insert, p)
}

func setIn(cur any, parts []string, val any, insert bool, p string) (any, error) {
	seg := parts[0]
	last := len(parts) == 1
	switch c := cur.(type) {
	case map[string]any:
		if last {
			c[seg] = val
			return c, nil
		}
		child, ok := c[seg]
		if !ok {
			return nil, fmt.Errorf("%s: no field %q", p, seg)
		}
		nc, err := setIn(child, parts[1:], val, insert, p)
		if err != nil {
			return nil, err
		}
		c[seg] = nc
		return c, nil
	case []any:
		i := len(c)
		if seg != "-" {
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n > len(c) || (!insert || !last) && n == len(c) {
				return nil, fmt.Errorf("%s: no list index %q", p, seg)
			}
			i = n
		} else if !last || !insert {
			return nil, fmt.Errorf("%s: \"-\" only appends", p)
		}
		if last {
			if insert {
				c = append(c, nil)
				copy(c[i+1:], c[i:])
				c[i] = val
				return c, nil
			}
			c[i] = val
			return c, nil
		}
		nc, err := setIn(c[i], parts[1:], val, insert, p)
		if err != nil {
			return nil, err
		}
		c[i] = nc
		return c, nil
	}
	return nil, fmt.Errorf("%s: %q is not inside an object or list", p, seg)
}

func pointerRemove(doc any, p string) (any, error) {
	parts, err := splitPointer(p)
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("cannot remove the whole document")
	}
	parent, err := pointerGet(doc, "/"+strings.Join(escape(parts[:len(parts)-1]), "/"))
	if len(parts) == 1 {
		parent, err = doc, nil
	}
	if err != nil {
		return nil, err
	}
	seg := parts[len(parts)-1]
	switch c := parent.(type) {
	case map[string]any:
		if _, ok := c[seg]; !ok {
			return nil, fmt.Errorf("%s: no field %q", p, seg)
		}
		delete(c, seg)
		return doc, nil
	case []any:
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= len(c) {
			return nil, fmt.Errorf("%s: no list index %q", p, seg)
		}
		nl := append(append([]any(nil), c[:i]...), c[i+1:]...)
		if len(parts) == 1 {
			return nl, nil
		}
		return pointerSet(doc, "/"+strings.Join(escape(parts[:len(parts)-1]), "/"), nl, false)
	}
	return nil, fmt.Errorf("%s: not inside an object or list", p)
}

func escape(parts []string) []string {
	out := make([]string, len(parts))
	for i, s := range parts {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
	}
	return out
}
