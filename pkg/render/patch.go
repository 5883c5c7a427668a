package render

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"

	"github.com/oamflow/oamflow/pkg/cuex"
)

// Patch markers: comments on a field of a trait's `patch` (or
// `patchOutputs.<name>`), as in KubeVela:
//
//	// +patchKey=name                  merge list items with equal `name`
//	// +patchKey=configMapRef.name,secretRef.name
//	//                                 a composite key of dotted paths
//	// +patchStrategy=retainKeys       the patch value replaces the base value's
//	//                                 keys (structs: base keys not in the patch
//	//                                 are dropped; lists: matched items are
//	//                                 replaced, not merged)
//	// +patchStrategy=replace          the patch value replaces the base value
//	// +patchStrategy=jsonMergePatch   (on `patch` itself) patch is an RFC 7386
//	//                                 JSON merge patch of the whole output
//	// +patchStrategy=jsonPatch        (on `patch` itself) patch.operations is an
//	//                                 RFC 6902 JSON patch of the whole output
//	// +patchStrategy=open             (on `patch` itself) the default merge; KubeVela's
//	//                                 engine ignores it too (its `command` trait
//	//                                 marks its patch so)
//
// A +patchKey holds for the lists below its field as well, until a field
// names its own (KubeVela inherits it the same way).
//
// Without markers: structs merge field by field; scalars are replaced by the
// patch; lists of scalars are replaced; lists of objects merge by `name`
// when every item has one, else item by item by index (the CUE
// unification KubeVela users expect of `containers: [{...}]`); see
// mergeList for keyed lists and open lists' element patterns.
const (
	markerPatchKey      = "+patchKey="
	markerPatchStrategy = "+patchStrategy="

	strategyOpen           = "open"
	strategyRetainKeys     = "retainKeys"
	strategyReplace        = "replace"
	strategyJSONMergePatch = "jsonMergePatch"
	strategyJSONPatch      = "jsonPatch"
)

// markers reads +patchKey and +patchStrategy from the comments of v's
// field. The field's own syntax is used when there is one: for a shorthand
// `patch: operations: [...]` CUE hands the comment above the line to the
// innermost field, but the author meant the outermost.
func markers(v cue.Value) (key, strategy string) {
	var groups []*ast.CommentGroup
	if f, ok := v.Source().(*ast.Field); ok {
		groups = ast.Comments(f)
	} else {
		groups = v.Doc()
	}
	for _, cg := range groups {
		for _, line := range strings.Split(cg.Text(), "\n") {
			line = strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(line, markerPatchKey):
				key = strings.TrimSpace(strings.TrimPrefix(line, markerPatchKey))
			case strings.HasPrefix(line, markerPatchStrategy):
				strategy = strings.TrimSpace(strings.TrimPrefix(line, markerPatchStrategy))
			}
		}
	}
	return key, strategy
}

// patchError is a patch problem at a path of the patched object.
type patchError struct {
	path []string
	msg  string
}

func (e *patchError) Error() string {
	if len(e.path) == 0 {
		return e.msg
	}
	return strings.Join(e.path, ".") + ": " + e.msg
}

// applyPatch applies the CUE value patch to base (JSON-like data, not
// modified) and returns the result.
func applyPatch(base map[string]any, patch cue.Value) (map[string]any, error) {
	key, strategy := markers(patch)
	switch strategy {
	case strategyJSONMergePatch:
		var p any
		if err := decode(patch, &p); err != nil {
			return nil, err
		}
		out, ok := mergePatch(deepCopy(base), p).(map[string]any)
		if !ok {
			return nil, &patchError{msg: "a JSON merge patch must be an object"}
		}
		return out, nil
	case strategyJSONPatch:
		var p struct {
			Operations []jsonPatchOp `json:"operations"`
		}
		if err := decode(patch, &p); err != nil {
			return nil, err
		}
		out, err := applyJSONPatch(deepCopy(base), p.Operations)
		if err != nil {
			return nil, err
		}
		m, ok := out.(map[string]any)
		if !ok {
			return nil, &patchError{msg: "a JSON patch must leave an object"}
		}
		return m, nil
	case "", strategyOpen, strategyRetainKeys, strategyReplace:
	default:
		return nil, &patchError{msg: fmt.Sprintf("unknown +patchStrategy=%s (want retainKeys, replace, open, jsonMergePatch or jsonPatch)", strategy)}
	}
	out, err := mergeValue(deepCopy(base), patch, key, "", nil)
	if err != nil {
		return nil, err
	}
	m, ok := out.(map[string]any)
	if !ok {
		return nil, &patchError{msg: "patch must be an object"}
	}
	return m, nil
}

// decode reads a concrete CUE value as JSON-like data (defaults taken).
func decode(v cue.Value, out any) error {
	if err := v.Validate(cue.Concrete(true)); err != nil {
		return err
	}
	return v.Decode(out)
}

// mergeValue merges patch value pv into base according to the markers of
// pv's field (key, strategy).
func mergeValue(base any, pv cue.Value, key, strategy string, path []string) (any, error) {
	// An open list's default is its explicit items alone; keep the list
	// itself so that its element pattern patches the other items.
	if d, ok := pv.Default(); ok && !hasPattern(pv) {
		pv = d
	}
	if err := pv.Err(); err != nil {
		return nil, err
	}
	switch pv.IncompleteKind() {
	case cue.StructKind:
		if strategy == strategyReplace {
			var x any
			if err := decode(pv, &x); err != nil {
				return nil, err
			}
			return x, nil
		}
		bm, _ := base.(map[string]any)
		out := map[string]any{}
		if strategy != strategyRetainKeys {
			for k, v := range bm {
				out[k] = v
			}
		}
		it, err := pv.Fields()
		if err != nil {
			return nil, err
		}
		for it.Next() {
			k := it.Selector().Unquoted()
			fk, fs := markers(it.Value())
			if fk == "" {
				// A +patchKey holds for the lists below its field too, as
				// in KubeVela, until a field names its own.
				fk = key
			}
			merged, err := mergeValue(bm[k], it.Value(), fk, fs, sub(path, k))
			if err != nil {
				return nil, err
			}
			out[k] = merged
		}
		return out, nil
	case cue.ListKind:
		if !pv.IsConcrete() {
			break
		}
		return mergeList(base, pv, key, strategy, path)
	}
	if !pv.IsConcrete() {
		// A constraint, not a value: the base value must satisfy it.
		if base == nil {
			return nil, &patchError{path: path, msg: "patch value is not concrete and the patched object has no value here"}
		}
		bv, err := cuex.ToValue(pv.Context(), base)
		if err != nil {
			return nil, &patchError{path: path, msg: err.Error()}
		}
		u := pv.Unify(bv)
		if err := u.Validate(cue.Concrete(true)); err != nil {
			return nil, &patchError{path: path, msg: fmt.Sprintf("value %s does not satisfy the patch: %v", short(base), err)}
		}
		return base, nil
	}
	var x any
	if err := decode(pv, &x); err != nil {
		return nil, err
	}
	return x, nil
}

// mergeList merges a concrete list patch into base, as KubeVela's
// strategic unification does:
//
//   - With a +patchKey (the field's own or inherited from an enclosing
//     field), patch items are matched to base items by key, one to one in
//     order: a patch item whose key an earlier patch item used already
//     pairs with the next base item of that key, or is appended unless an
//     item of that key holds it whole already; so items sharing a key but
//     otherwise distinct (two volumeMounts of one volume at different
//     mountPaths) all survive, and a repeated one is not added twice. When no patch item has
//     the key at all, items merge by position instead (KubeVela's
//     `resource` trait patches the first container with `containers:
//     [{resources: ...}]` under +patchKey=name).
//   - Merging by position, the element pattern of an open list (`[...T]`,
//     `[{...}, ...T]`) applies to every base item after the explicit ones
//     (`containers: [...{lifecycle: ...}]` patches every container).
//   - Lists of scalars are replaced.
func mergeList(base any, pv cue.Value, key, strategy string, path []string) (any, error) {
	items, err := listValues(pv)
	if err != nil {
		return nil, err
	}
	bl, _ := base.([]any)
	if strategy == strategyReplace || len(bl) == 0 && key == "" {
		var x any
		if err := decode(pv, &x); err != nil {
			return nil, err
		}
		return x, nil
	}
	allObjects := true
	for _, it := range items {
		if it.IncompleteKind() != cue.StructKind {
			allObjects = false
		}
	}
	for _, b := range bl {
		if _, ok := b.(map[string]any); !ok {
			allObjects = false
		}
	}
	if !allObjects {
		// Lists of scalars (or mixed): the patch replaces the list.
		var x any
		if err := decode(pv, &x); err != nil {
			return nil, err
		}
		return x, nil
	}
	if key == "" && allHaveName(bl, items) {
		key = "name"
	}
	keys := strings.Split(key, ",")
	if key != "" && !anyHasKey(items, keys) {
		key = ""
	}
	out := append([]any(nil), bl...)
	if key == "" {
		// Item by item, as CUE unifies lists.
		for i, it := range items {
			p := sub(path, strconv.Itoa(i))
			ik, is := markers(it)
			if ik == "" {
				ik = key
			}
			if is == "" {
				is = strategy
			}
			if i < len(out) {
				merged, err := mergeValue(out[i], it, ik, is, p)
				if err != nil {
					return nil, err
				}
				out[i] = merged
				continue
			}
			merged, err := mergeValue(nil, it, ik, "", p)
			if err != nil {
				return nil, err
			}
			out = append(out, merged)
		}
		if hasPattern(pv) {
			pattern := pv.LookupPath(cue.MakePath(cue.AnyIndex))
			for i := len(items); i < len(bl); i++ {
				merged, err := mergeValue(out[i], pattern, "", "", sub(path, strconv.Itoa(i)))
				if err != nil {
					return nil, err
				}
				out[i] = merged
			}
		}
		return out, nil
	}
	// paired marks the base items (and items appended by this patch) that
	// a patch item has merged into already.
	paired := make([]bool, len(out))
	for i, it := range items {
		var decoded any
		if err := decode(it, &decoded); err != nil {
			return nil, err
		}
		id, ok := itemKey(decoded, keys)
		match := -1
		if ok {
			known := false
			for j, b := range out {
				if bid, bok := itemKey(b, keys); bok && bid == id {
					if !paired[j] {
						match = j
						break
					}
					known = known || contains(b, decoded)
				}
			}
			if match < 0 && known {
				// Already there (the patch names it twice): nothing to add.
				continue
			}
		} else {
			for j, b := range out {
				if reflect.DeepEqual(normalize(b), normalize(decoded)) {
					match = j
					break
				}
			}
		}
		if match < 0 {
			out = append(out, decoded)
			paired = append(paired, true)
			continue
		}
		paired[match] = true
		if strategy == strategyRetainKeys {
			out[match] = decoded
			continue
		}
		merged, err := mergeValue(out[match], it, key, "", sub(path, strconv.Itoa(i)))
		if err != nil {
			return nil, err
		}
		out[match] = exclusive(path, out[match], merged, it)
	}
	return out, nil
}

// contains reports whether merging sub into x would change nothing: every
// field of sub is in x with the same value (lists and scalars equal).
func contains(x, sub any) bool {
	sm, ok := sub.(map[string]any)
	if !ok {
		return reflect.DeepEqual(normalize(x), normalize(sub))
	}
	xm, ok := x.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range sm {
		if !contains(xm[k], v) {
			return false
		}
	}
	return true
}

// hasPattern reports whether v is an open list with an element pattern
// other than top (`[...T]`, `[x, ...T]`).
func hasPattern(v cue.Value) bool {
	if v.IncompleteKind() != cue.ListKind {
		return false
	}
	p := v.LookupPath(cue.MakePath(cue.AnyIndex))
	return p.Exists() && p.IncompleteKind() != cue.TopKind
}

// anyHasKey reports whether some patch item has one of the key paths.
func anyHasKey(items []cue.Value, keys []string) bool {
	for _, it := range items {
		for _, k := range keys {
			sels := []cue.Selector{}
			for _, seg := range strings.Split(strings.TrimSpace(k), ".") {
				sels = append(sels, cue.Str(seg))
			}
			if it.LookupPath(cue.MakePath(sels...)).Exists() {
				return true
			}
		}
	}
	return false
}

// exclusiveFields are fields of a list item of which Kubernetes accepts
// one, by list name: a container env var has a literal value or a
// valueFrom, never both. When a patch item merged into a base item sets
// one of them, the other one of the base item goes.
var exclusiveFields = map[string][2]string{"env": {"value", "valueFrom"}}

func exclusive(path []string, before, merged any, patch cue.Value) any {
	if len(path) == 0 {
		return merged
	}
	pair, ok := exclusiveFields[path[len(path)-1]]
	if !ok {
		return merged
	}
	m, ok := merged.(map[string]any)
	b, _ := before.(map[string]any)
	if !ok {
		return merged
	}
	for i, f := range pair {
		other := pair[1-i]
		if patch.LookupPath(cue.MakePath(cue.Str(f))).Exists() && !patch.LookupPath(cue.MakePath(cue.Str(other))).Exists() {
			if _, had := b[other]; had {
				delete(m, other)
			}
		}
	}
	return merged
}

func listValues(v cue.Value) ([]cue.Value, error) {
	it, err := v.List()
	if err != nil {
		return nil, err
	}
	var out []cue.Value
	for it.Next() {
		out = append(out, it.Value())
	}
	return out, nil
}

func allHaveName(base []any, items []cue.Value) bool {
	for _, b := range base {
		m, _ := b.(map[string]any)
		if _, ok := m["name"].(string); !ok {
			return false
		}
	}
	for _, it := range items {
		n := it.LookupPath(cue.MakePath(cue.Str("name")))
		if !n.Exists() || n.IncompleteKind() != cue.StringKind {
			return false
		}
	}
	return true
}

// itemKey returns the identity of a list item under a composite key of
// dotted paths; ok is false when the item has none of them.
func itemKey(item any, keys []string) (string, bool) {
	parts := make([]string, len(keys))
	found := false
	for i, k := range keys {
		cur := item
		for _, seg := range strings.Split(strings.TrimSpace(k), ".") {
			m, ok := cur.(map[string]any)
			if !ok {
				cur = nil
				break
			}
			cur = m[seg]
		}
		if cur != nil {
			found = true
			parts[i] = fmt.Sprintf("%v", normalize(cur))
		} else {
			parts[i] = "\x00"
		}
	}
	return strings.Join(parts, "\x01"), found
}

// normalize makes numbers comparable across int/int64/float64.
func normalize(x any) any {
	switch v := x.(type) {
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normalize(e)
		}
		return out
	}
	return x
}

// deepCopy copies JSON-like data.
func deepCopy(x any) map[string]any {
	m, _ := deepCopyValue(x).(map[string]any)
	return m
}

func deepCopyValue(x any) any {
	switch v := x.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopyValue(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopyValue(e)
		}
		return out
	}
	return x
}

// mergePatch applies an RFC 7386 JSON merge patch.
func mergePatch(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	keys := make([]string, 0, len(pm))
	for k := range pm {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if pm[k] == nil {
			delete(tm, k)
			continue
		}
		tm[k] = mergePatch(tm[k], pm[k])
	}
	return tm
}

func short(x any) string {
	s := fmt.Sprintf("%v", x)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// sub returns path + seg without sharing path's backing array.
func sub(path []string, seg string) []string {
	return append(append(make([]string, 0, len(path)+1), path...), seg)
}
