package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"cuelang.org/go/cue"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
)

// immutableMarker marks a parameter field that must not change once set
// (the OAM CUE contract's `// +immutable`).
const immutableMarker = "+immutable"

// ImmutableFields returns the paths (below `parameter`) of the fields of
// d's template marked `// +immutable`, nested structs included.
func ImmutableFields(ctx context.Context, af *appfile.AppFile, d *appfile.Definition) ([][]string, error) {
	text := d.Template()
	if !strings.Contains(text, immutableMarker) {
		return nil, nil
	}
	t, err := af.Engine.Compile(d.CUESource(), text)
	if err != nil {
		return nil, err
	}
	var paths [][]string
	err = af.Engine.Eval(ctx, t, nil, func(v cue.Value) error {
		walkImmutable(v.LookupPath(cue.ParsePath("parameter")), nil, &paths, 0)
		return nil
	})
	return paths, err
}

func walkImmutable(v cue.Value, prefix []string, out *[][]string, depth int) {
	if !v.Exists() || depth > 16 {
		return
	}
	it, err := v.Fields(cue.Optional(true))
	if err != nil {
		return
	}
	for it.Next() {
		path := append(append([]string{}, prefix...), it.Selector().Unquoted())
		for _, cg := range it.Value().Doc() {
			if strings.Contains(cg.Text(), immutableMarker) {
				*out = append(*out, path)
				break
			}
		}
		if it.Value().IncompleteKind() == cue.StructKind {
			walkImmutable(it.Value(), path, out, depth+1)
		}
	}
}

// checkImmutable compares the properties of each component of app that old
// also had, with the same type, at the fields its definition marks
// `// +immutable`: a field set in old may not change or go away.
func checkImmutable(ctx context.Context, af *appfile.AppFile, old, app *v1beta1.Application) ([]appfile.FieldError, error) {
	before := map[string]map[string]any{}
	types := map[string]string{}
	for _, c := range old.Spec.Components {
		props, err := appfile.DecodeProperties(c.Properties)
		if err != nil {
			continue
		}
		before[c.Name], types[c.Name] = props, c.Type
	}
	var errs []appfile.FieldError
	for i, c := range app.Spec.Components {
		prev, ok := before[c.Name]
		if !ok || types[c.Name] != c.Type {
			continue
		}
		comp := af.Component(c.Name)
		if comp == nil || comp.Definition == nil {
			continue
		}
		paths, err := ImmutableFields(ctx, af, comp.Definition)
		if err != nil {
			return nil, fmt.Errorf("reading the +immutable fields of component type %q: %w", c.Type, err)
		}
		if len(paths) == 0 {
			continue
		}
		now, err := appfile.DecodeProperties(c.Properties)
		if err != nil {
			continue
		}
		for _, p := range paths {
			was, set := lookup(prev, p)
			if !set {
				continue
			}
			is, still := lookup(now, p)
			if still && reflect.DeepEqual(was, is) {
				continue
			}
			path := fmt.Sprintf("spec.components[%d].properties.%s", i, strings.Join(p, "."))
			if !still {
				errs = append(errs, appfile.FieldError{Path: path, Message: fmt.Sprintf("is immutable (marked +immutable in %s %q) and cannot be removed; it was %s", comp.Definition.Kind, c.Type, jsonText(was))})
				continue
			}
			errs = append(errs, appfile.FieldError{Path: path, Message: fmt.Sprintf("is immutable (marked +immutable in %s %q): it was %s, not %s; create a new component instead", comp.Definition.Kind, c.Type, jsonText(was), jsonText(is))})
		}
	}
	return errs, nil
}

func lookup(m map[string]any, path []string) (any, bool) {
	var cur any = m
	for _, k := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
