package cli

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
)

// bookkeeping are the labels and annotations oamflow changes with every
// revision; diff does not compare them.
func isBookkeeping(key string) bool {
	switch key {
	case v1beta1.LabelAppRevision, resourcekeeper.AnnoAppliedHash:
		return true
	}
	return false
}

// managedView returns live and after (a server-side dry run's result)
// reduced to the fields oamflow's field manager owns in either (a field
// it owns now and the apply drops shows as removed; a field another
// manager took from it shows as changed back), without oamflow's
// bookkeeping labels and annotations, Secret data masked.
func managedView(live, after *unstructured.Unstructured) (map[string]any, map[string]any) {
	fields := ownedFields(resourcekeeper.FieldManager, live, after)
	secretFields(after, fields)
	l, _ := pruneTo(live.Object, fields).(map[string]any)
	a, _ := pruneTo(after.Object, fields).(map[string]any)
	l, a = withoutBookkeeping(l), withoutBookkeeping(a)
	if isSecret(after) {
		maskSecretData(l, a)
	}
	return l, a
}

// createText is the object a create would make, on the fields oamflow
// sets, as YAML with every line prefixed by "+ ".
func createText(after *unstructured.Unstructured) string {
	obj := after.DeepCopy().Object
	if fields := ownedFields(resourcekeeper.FieldManager, after); len(fields) > 0 {
		secretFields(after, fields)
		obj, _ = pruneTo(after.Object, fields).(map[string]any)
	}
	obj = withoutBookkeeping(obj)
	if isSecret(after) {
		maskSecretData(nil, obj)
	}
	b, err := yaml.Marshal(obj)
	if err != nil {
		return fmt.Sprintf("+ (cannot print: %v)\n", err)
	}
	var sb strings.Builder
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		sb.WriteString("+ " + l + "\n")
	}
	return sb.String()
}

// unifiedDiff is the unified diff of live and after as YAML (sorted keys),
// "" when they are equal.
func unifiedDiff(live, after map[string]any) string {
	if reflect.DeepEqual(normalizeJSON(live), normalizeJSON(after)) {
		return ""
	}
	lb, err := yaml.Marshal(live)
	if err != nil {
		return fmt.Sprintf("(cannot print: %v)", err)
	}
	ab, err := yaml.Marshal(after)
	if err != nil {
		return fmt.Sprintf("(cannot print: %v)", err)
	}
	return unifiedText(string(lb), string(ab), "live", "after apply")
}

// unifiedText is the unified diff (3 lines of context) of two texts, ""
// when they are equal.
func unifiedText(a, b, from, to string) string {
	if a == b {
		return ""
	}
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(strings.TrimSuffix(a, "\n")), B: difflib.SplitLines(strings.TrimSuffix(b, "\n")),
		FromFile: from, ToFile: to, Context: 3,
	})
	if err != nil {
		return fmt.Sprintf("(cannot diff: %v)", err)
	}
	return d
}

// normalizeJSON round-trips v through JSON, so that int64 and float64
// numbers of equal value compare equal.
func normalizeJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}

// ownedFields is the union of the field sets (managedFields, FieldsV1
// JSON: "f:name", "k:{...}", "v:...", "i:N" keys) that manager owns on
// the main resource of objs.
func ownedFields(manager string, objs ...*unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	for _, obj := range objs {
		if obj == nil {
			continue
		}
		for _, mf := range obj.GetManagedFields() {
			if mf.Manager != manager || mf.Subresource != "" || mf.FieldsV1 == nil {
				continue
			}
			var set map[string]any
			if err := json.Unmarshal(mf.FieldsV1.Raw, &set); err != nil {
				continue
			}
			mergeFieldSets(out, set)
		}
	}
	return out
}

func mergeFieldSets(dst, src map[string]any) {
	for k, v := range src {
		sub, _ := v.(map[string]any)
		d, ok := dst[k].(map[string]any)
		if !ok {
			d = map[string]any{}
			dst[k] = d
		}
		mergeFieldSets(d, sub)
	}
}

// pruneTo keeps of v the fields of set (a FieldsV1 set). A field whose
// set has no children is kept whole: a scalar, or an atomic map or list
// (a Deployment's selector, a container's args).
func pruneTo(v any, set map[string]any) any {
	children := 0
	for k := range set {
		if k != "." {
			children++
		}
	}
	if children == 0 {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, sub := range set {
			name, ok := strings.CutPrefix(k, "f:")
			if !ok {
				continue
			}
			if val, ok := x[name]; ok {
				s, _ := sub.(map[string]any)
				out[name] = pruneTo(val, s)
			}
		}
		return out
	case []any:
		out := []any{}
		for i, item := range x {
			for k, sub := range set {
				if matchesListKey(k, i, item) {
					s, _ := sub.(map[string]any)
					out = append(out, pruneTo(item, s))
					break
				}
			}
		}
		return out
	}
	return v
}

// matchesListKey reports whether list item i matches the FieldsV1 key k:
// "k:{...}" (its key fields), "v:..." (its value) or "i:N" (its index).
func matchesListKey(k string, i int, item any) bool {
	switch {
	case strings.HasPrefix(k, "i:"):
		n, err := strconv.Atoi(k[2:])
		return err == nil && n == i
	case strings.HasPrefix(k, "v:"):
		var want any
		if err := json.Unmarshal([]byte(k[2:]), &want); err != nil {
			return false
		}
		return reflect.DeepEqual(normalizeJSON(item), want)
	case strings.HasPrefix(k, "k:"):
		var keys map[string]any
		if err := json.Unmarshal([]byte(k[2:]), &keys); err != nil {
			return false
		}
		m, ok := item.(map[string]any)
		if !ok {
			return false
		}
		for f, want := range keys {
			if !reflect.DeepEqual(normalizeJSON(m[f]), want) {
				return false
			}
		}
		return true
	}
	return false
}

// withoutBookkeeping drops oamflow's bookkeeping labels and annotations
// (and metadata maps left empty) from a copy of obj.
func withoutBookkeeping(obj map[string]any) map[string]any {
	if obj == nil {
		return nil
	}
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return obj
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	nmd := make(map[string]any, len(md))
	for k, v := range md {
		nmd[k] = v
	}
	for _, field := range []string{"labels", "annotations"} {
		m, ok := md[field].(map[string]any)
		if !ok {
			continue
		}
		nm := map[string]any{}
		for k, v := range m {
			if !isBookkeeping(k) {
				nm[k] = v
			}
		}
		if len(nm) == 0 {
			delete(nmd, field)
		} else {
			nmd[field] = nm
		}
	}
	out["metadata"] = nmd
	return out
}

// secretFields counts, for a Secret, the data keys of stringData keys
// oamflow owns as its own: the API server folds stringData into data.
func secretFields(obj *unstructured.Unstructured, fields map[string]any) {
	sd, ok := fields["f:stringData"].(map[string]any)
	if !isSecret(obj) || !ok {
		return
	}
	d, ok := fields["f:data"].(map[string]any)
	if !ok {
		d = map[string]any{}
		fields["f:data"] = d
	}
	mergeFieldSets(d, sd)
}

func isSecret(obj *unstructured.Unstructured) bool {
	return obj != nil && obj.GetKind() == "Secret" && obj.GetAPIVersion() == "v1"
}

// maskSecretData replaces the values of a Secret's data and stringData
// in live and after (either may be nil) by "<changed sha256:…>" or
// "<unchanged sha256:…>" (on after; live shows "<sha256:…>"), so that no
// value is ever printed but a change still shows.
func maskSecretData(live, after map[string]any) {
	for _, field := range []string{"data", "stringData"} {
		var lm, am map[string]any
		if live != nil {
			lm, _ = live[field].(map[string]any)
		}
		if after != nil {
			am, _ = after[field].(map[string]any)
		}
		for k, v := range am {
			lv, had := lm[k]
			mark := "changed"
			if had && reflect.DeepEqual(lv, v) {
				mark = "unchanged"
			}
			am[k] = "<" + mark + " " + secretHash(v) + ">"
		}
		for k, v := range lm {
			if _, ok := am[k]; ok && reflect.DeepEqual(am[k], "<unchanged "+secretHash(v)+">") {
				lm[k] = am[k]
				continue
			}
			lm[k] = "<" + secretHash(v) + ">"
		}
	}
}

// secretHashKey keys secretHash: random, made once per process, never
// written again. Without a key the short hash of a weak value ("admin")
// could be looked up in a dictionary from a CI log.
var secretHashKey = func() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic(fmt.Sprintf("reading random bytes: %v", err))
	}
	return k
}()

// secretHash is a short HMAC-SHA256 of a Secret value under a key of this
// run, enough to tell values apart within one diff, not to recover them
// or to compare them across runs.
func secretHash(v any) string {
	m := hmac.New(sha256.New, secretHashKey)
	fmt.Fprint(m, v)
	return "hmac:" + hex.EncodeToString(m.Sum(nil)[:6])
}
