package render

import (
	"context"
	"fmt"

	"cuelang.org/go/cue"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
)

// RenderPolicies renders the objects of af's policies whose definition
// template has an `output` (or `outputs`), in spec order, as KubeVela's
// dry-run prints them: each template is evaluated with its properties as
// `parameter` and a `context` whose name is the policy's; an object
// without a name is named after the policy, one without a namespace goes
// to the app's; it is labelled app.oam.dev/name, app.oam.dev/component
// (the policy's name) and app.oam.dev/appRevision. In the Resources,
// Component is the policy's name and Output the key under `outputs` ("" for
// `output`). Built-in policies have no output. Like KubeVela, the
// controller does not apply these objects; they are for dry-run.
func RenderPolicies(ctx context.Context, af *appfile.AppFile, opts Options) ([]Resource, error) {
	engine := af.Engine
	if engine == nil {
		engine = cuex.NewEngine()
	}
	var out []Resource
	for _, p := range af.Policies {
		if p.Definition == nil || p.Definition.Template() == "" {
			continue
		}
		res, err := renderPolicy(ctx, engine, af, p, opts)
		if err != nil {
			return nil, fmt.Errorf("policy %q (spec.policies[%d]): %w", p.Name, p.Index, err)
		}
		out = append(out, res...)
	}
	return out, nil
}

func renderPolicy(ctx context.Context, engine *cuex.Engine, af *appfile.AppFile, p *appfile.Policy, opts Options) ([]Resource, error) {
	src := p.Definition.CUESource()
	t, err := engine.Compile(src, p.Definition.Template())
	if err != nil {
		return nil, err
	}
	if !t.HasField("output") && !t.HasField("outputs") {
		return nil, nil
	}
	var res []Resource
	err = engine.Eval(ctx, t, map[string]any{"context": Context(af, p.Name, opts), "parameter": p.Properties}, func(v cue.Value) error {
		if err := userErrs(src, v); err != nil {
			return err
		}
		if o := v.LookupPath(cue.MakePath(cue.Str("output"))); o.Exists() {
			m, err := decodeObject(src, o, "output")
			if err != nil {
				return err
			}
			res = append(res, Resource{Component: p.Name, Object: &unstructured.Unstructured{Object: m}})
		}
		names, objs, err := decodeOutputs(src, v, "outputs")
		if err != nil {
			return err
		}
		for _, n := range names {
			res = append(res, Resource{Component: p.Name, Output: n, Object: &unstructured.Unstructured{Object: objs[n]}})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range res {
		obj := res[i].Object
		if obj.GetName() == "" {
			obj.SetName(p.Name)
		}
		if obj.GetNamespace() == "" {
			obj.SetNamespace(targetNamespace(af, opts))
		}
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[v1beta1.LabelAppName] = af.Name
		labels[v1beta1.LabelAppComponent] = p.Name
		labels[v1beta1.LabelAppRevision] = appRevision(af, opts)
		obj.SetLabels(labels)
		res[i].Cluster, res[i].Namespace = opts.Cluster, obj.GetNamespace()
	}
	return res, nil
}
