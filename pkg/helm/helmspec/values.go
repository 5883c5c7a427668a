package helmspec

import (
	"context"
	"fmt"
	"helm.sh/helm/v3/pkg/chart"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// ResolveValues returns the user values of spec: each ValuesFrom entry in
// order, then the inline Values, deep-merged so that later sources win.
// Maps merge key by key; lists and scalars are replaced; a null is kept as
// null, which Helm then treats as "delete this key from the chart's
// defaults" (including subchart defaults). Objects are read from namespace
// (the application's namespace) through r. A missing object or key fails
// unless the entry is optional; parse errors always fail. Errors name the
// field path (spec.valuesFrom[i]) and the object, never its content.
func ResolveValues(ctx context.Context, r client.Reader, namespace string, spec *Spec) (map[string]any, error) {
	out := map[string]any{}
	for i, vf := range spec.ValuesFrom {
		path := fmt.Sprintf("spec.valuesFrom[%d]", i)
		if vf.Namespace != "" && vf.Namespace != namespace {
			return nil, fmt.Errorf("%s.namespace: cross-namespace reference to %q refused: only %q may be read", path, vf.Namespace, namespace)
		}
		key := vf.Key
		if key == "" {
			key = defaultValuesKey
		}
		raw, found, err := readValuesKey(ctx, r, namespace, vf.Kind, vf.Name, key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if !found {
			if vf.Optional {
				continue
			}
			return nil, fmt.Errorf("%s: %s %s/%s or its key %q not found (set optional: true to skip it)", path, vf.Kind, namespace, vf.Name, key)
		}
		var vals map[string]any
		if err := yaml.Unmarshal(raw, &vals); err != nil {
			return nil, fmt.Errorf("%s: key %q of %s %s/%s is not a YAML map: %v", path, key, vf.Kind, namespace, vf.Name, yamlErrorLine(err))
		}
		out = MergeValues(out, vals)
	}
	return MergeValues(out, CopyValues(spec.Values)), nil
}

func readValuesKey(ctx context.Context, r client.Reader, namespace, kind, name, key string) ([]byte, bool, error) {
	if r == nil {
		return nil, false, fmt.Errorf("no reader configured for %s %s/%s", kind, namespace, name)
	}
	k := client.ObjectKey{Namespace: namespace, Name: name}
	switch kind {
	case "ConfigMap":
		var cm corev1.ConfigMap
		if err := r.Get(ctx, k, &cm); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("read ConfigMap %s/%s: %w", namespace, name, err)
		}
		if _, ok := cm.BinaryData[key]; ok {
			return nil, false, fmt.Errorf("key %q of ConfigMap %s/%s is binaryData; values must be in data", key, namespace, name)
		}
		v, ok := cm.Data[key]
		return []byte(v), ok, nil
	case "Secret":
		var s corev1.Secret
		if err := r.Get(ctx, k, &s); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("read Secret %s/%s: %w", namespace, name, err)
		}
		v, ok := s.Data[key]
		return v, ok, nil
	default:
		return nil, false, fmt.Errorf("kind %q is not supported: expected ConfigMap or Secret", kind)
	}
}

// yamlErrorLine keeps the position of a YAML error but not the offending
// text, which may be a secret.
func yamlErrorLine(err error) string {
	msg := err.Error()
	if len(msg) > 120 {
		msg = msg[:120] + "…"
	}
	return msg
}

// MergeValues deep-merges override into base and returns base: maps merge
// recursively, everything else (lists, scalars, null) in override replaces
// the value in base. Neither argument is copied.
func MergeValues(base, override map[string]any) map[string]any {
	if base == nil {
		base = map[string]any{}
	}
	for k, v := range override {
		if om, ok := v.(map[string]any); ok {
			if bm, ok := base[k].(map[string]any); ok {
				base[k] = MergeValues(bm, om)
				continue
			}
		}
		base[k] = v
	}
	return base
}

// CopyValues deep-copies maps (lists and scalars are shared; they are
// never modified).
func CopyValues(in map[string]any) map[string]any {
	if in == nil {
		return nil
	}
	out := make(map[string]any, len(in))
	for k, v := range in {
		if m, ok := v.(map[string]any); ok {
			out[k] = CopyValues(m)
			continue
		}
		out[k] = v
	}
	return out
}

// ApplyNulls deletes from the defaults of ch's subcharts every key that
// vals sets to null under the subchart's name (or alias), recursively, and
// then drops those nulls from vals (else templates would see the key with
// a nil value).
// Helm 3.16 honours null for the top-level chart's own defaults but not
// always for subchart defaults; this makes `child: {key: null}` delete
// `key` from child's values.yaml as users expect. ch is modified; it must
// be a chart loaded for this operation only.
func ApplyNulls(ch *chart.Chart, vals map[string]any) {
	if ch == nil || len(vals) == 0 {
		return
	}
	keys := map[string]string{} // subchart name → key in the parent's values
	if ch.Metadata != nil {
		for _, d := range ch.Metadata.Dependencies {
			if d != nil && d.Alias != "" {
				keys[d.Name] = d.Alias
			}
		}
	}
	for _, sub := range ch.Dependencies() {
		key := sub.Name()
		if alias, ok := keys[key]; ok {
			key = alias
		}
		sv, ok := vals[key].(map[string]any)
		if !ok {
			continue
		}
		if sub.Values == nil {
			sub.Values = map[string]any{}
		}
		deleteNulls(sub.Values, sv)
		ApplyNulls(sub, sv)
	}
}

// deleteNulls deletes from defaults each key that user sets to null,
// descending into maps present on both sides, and drops the nulls from user.
func deleteNulls(defaults, user map[string]any) {
	for k, v := range user {
		if v == nil {
			delete(defaults, k)
			delete(user, k)
			continue
		}
		um, ok1 := v.(map[string]any)
		dm, ok2 := defaults[k].(map[string]any)
		if ok1 && ok2 {
			deleteNulls(dm, um)
		}
	}
}
