package resourcekeeper

import (
	"fmt"
	"strconv"
	"strings"
)

// pathSegment is one step of a field path: a map key or a list index.
type pathSegment struct {
	key   string
	index int // -1 for a map key
}

// parseFieldPath parses a dotted field path as apply-once and
// resource-update policies write it: "spec.replicas",
// "spec.template.spec.containers[0].image",
// `metadata.annotations["example.com/key"]`.
func parseFieldPath(p string) ([]pathSegment, error) {
	var segs []pathSegment
	rest := strings.TrimSpace(p)
	if rest == "" {
		return nil, fmt.Errorf("empty field path")
	}
	expectKey := true
	for rest != "" {
		switch rest[0] {
		case '.':
			if expectKey {
				return nil, fmt.Errorf("field path %q: unexpected '.'", p)
			}
			rest = rest[1:]
			expectKey = true
			if rest == "" {
				return nil, fmt.Errorf("field path %q: ends with '.'", p)
			}
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, fmt.Errorf("field path %q: missing ']'", p)
			}
			inner := rest[1:end]
			rest = rest[end+1:]
			if uq, err := strconv.Unquote(inner); err == nil {
				segs = append(segs, pathSegment{key: uq, index: -1})
			} else {
				n, err := strconv.Atoi(inner)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("field path %q: [%s] is neither a list index nor a quoted key", p, inner)
				}
				segs = append(segs, pathSegment{index: n})
			}
			expectKey = false
		default:
			if !expectKey {
				return nil, fmt.Errorf("field path %q: expected '.' or '[' before %q", p, rest)
			}
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			segs = append(segs, pathSegment{key: rest[:end], index: -1})
			rest = rest[end:]
			expectKey = false
		}
	}
	return segs, nil
}

// getPath returns the value at segs in obj and whether it exists.
func getPath(obj map[string]any, segs []pathSegment) (any, bool) {
	var cur any = obj
	for _, s := range segs {
		switch c := cur.(type) {
		case map[string]any:
			if s.index >= 0 {
				return nil, false
			}
			v, ok := c[s.key]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			if s.index < 0 || s.index >= len(c) {
				return nil, false
			}
			cur = c[s.index]
		default:
			return nil, false
		}
	}
	return cur, true
}

// setPath sets the value at segs in obj, creating maps on the way; it
// returns false when a list index is out of range or a parent is not a
// container.
func setPath(obj map[string]any, segs []pathSegment, v any) bool {
	if len(segs) == 0 {
		return false
	}
	var cur any = obj
	for i, s := range segs {
		last := i == len(segs)-1
		switch c := cur.(type) {
		case map[string]any:
			if s.index >= 0 {
				return false
			}
			if last {
				c[s.key] = v
				return true
			}
			next, ok := c[s.key]
			if !ok || next == nil {
				if segs[i+1].index >= 0 {
					return false
				}
				next = map[string]any{}
				c[s.key] = next
			}
			cur = next
		case []any:
			if s.index < 0 || s.index >= len(c) {
				return false
			}
			if last {
				c[s.index] = v
				return true
			}
			cur = c[s.index]
		default:
			return false
		}
	}
	return false
}

// deletePath removes the value at segs from obj (map keys only at the end).
func deletePath(obj map[string]any, segs []pathSegment) {
	if len(segs) == 0 {
		return
	}
	parent, ok := getPath(obj, segs[:len(segs)-1])
	if !ok {
		return
	}
	if m, ok := parent.(map[string]any); ok && segs[len(segs)-1].index < 0 {
		delete(m, segs[len(segs)-1].key)
	}
}
