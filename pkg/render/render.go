// Package render turns a parsed AppFile into Kubernetes objects: each
// component's CUE template is evaluated with its properties as `parameter`
// and the OAM `context`, then its traits patch the workload in order and add
// their own resources. Every rendered object carries the OAM labels
// (app.oam.dev/name, /component, /appRevision, /resourceType, …).
package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
)

// ClusterVersion is the Kubernetes version of the target cluster, as the
// template sees it in context.clusterVersion ({major: 1, minor: 31,
// gitVersion: "v1.31.0", platform: "linux/amd64"}; major and minor are
// numbers so templates can compare them, as KubeVela's do).
type ClusterVersion struct {
	Major, Minor         int
	GitVersion, Platform string
}

// DefaultClusterVersion is used when Options.ClusterVersion is empty (offline).
var DefaultClusterVersion = ClusterVersion{Major: 1, Minor: 31, GitVersion: "v1.31.0", Platform: "linux/amd64"}

// ParseClusterVersion reads the strings of a Kubernetes version.Info
// (Major "1", Minor "31+", GitVersion "v1.31.2-eks-…").
func ParseClusterVersion(major, minor, gitVersion, platform string) ClusterVersion {
	num := func(s string) int {
		s = strings.TrimRight(s, "+")
		n, _ := strconv.Atoi(s)
		return n
	}
	return ClusterVersion{Major: num(major), Minor: num(minor), GitVersion: gitVersion, Platform: platform}
}

// ParseVersion reads a Kubernetes version as users write it: "v1.18",
// "1.18" or "v1.18.3" (a suffix such as "-eks-1" is kept in GitVersion).
// The platform is DefaultClusterVersion's.
func ParseVersion(s string) (ClusterVersion, error) {
	v := strings.TrimPrefix(strings.TrimSpace(s), "v")
	core, suffix, _ := strings.Cut(v, "-")
	parts := strings.Split(core, ".")
	bad := fmt.Errorf("cluster version %q: want vMAJOR.MINOR[.PATCH], e.g. v1.18", s)
	if len(parts) < 2 || len(parts) > 3 {
		return ClusterVersion{}, bad
	}
	nums := make([]int, 3)
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return ClusterVersion{}, bad
		}
		nums[i] = n
	}
	git := fmt.Sprintf("v%d.%d.%d", nums[0], nums[1], nums[2])
	if suffix != "" {
		git += "-" + suffix
	}
	return ClusterVersion{Major: nums[0], Minor: nums[1], GitVersion: git, Platform: DefaultClusterVersion.Platform}, nil
}

// Options say what the rendering is for.
type Options struct {
	// AppRevision is the ApplicationRevision name "<app>-v<N>"; empty
	// means "<app>-v1".
	AppRevision string
	// Cluster is the target cluster ("" or "local" for the hub).
	Cluster string
	// ClusterVersion of the target cluster; empty means DefaultClusterVersion.
	ClusterVersion ClusterVersion
	// Namespace overrides the target namespace of namespaced objects
	// (a topology policy's namespace); empty means the app's namespace.
	Namespace string
}

// Resource is one rendered object.
type Resource struct {
	// Component that rendered it.
	Component string
	// Trait type that rendered it; "" for the component's own objects.
	Trait string
	// Output is the key under `outputs` that produced the object; "" for
	// the component's main workload (`output`).
	Output string
	// Cluster and Namespace the object goes to (Namespace "" for
	// cluster-scoped objects).
	Cluster, Namespace string
	// Object is the rendered object with OAM labels stamped; for a
	// Reference it is the reference as the template gave it.
	Object *unstructured.Unstructured
	// Reference says Object is not an object but a reference to existing
	// objects (ref-objects: {resource, group, name | labelSelector,
	// namespace, cluster}) that the controller reads from the cluster.
	Reference bool
}

// IsWorkload reports whether r is a component's main workload.
func (r Resource) IsWorkload() bool { return r.Trait == "" && r.Output == "" }

// RenderApplication renders every component of af, in spec order.
func RenderApplication(ctx context.Context, af *appfile.AppFile, opts Options) ([]Resource, error) {
	var out []Resource
	for _, c := range af.Components {
		res, err := renderComponent(ctx, af, c, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, res...)
	}
	return out, nil
}

// RenderComponent renders one component of af by name.
func RenderComponent(ctx context.Context, af *appfile.AppFile, component string, opts Options) ([]Resource, error) {
	c := af.Component(component)
	if c == nil {
		return nil, fmt.Errorf("application %s has no component %q", af.Name, component)
	}
	return renderComponent(ctx, af, c, opts)
}

// Context returns the `context` a component's template is evaluated with:
// name, namespace, appName, appRevision, appRevisionNum, revision,
// components, appLabels, appAnnotations, cluster, clusterVersion,
// workflowName and publishVersion.
func Context(af *appfile.AppFile, component string, opts Options) map[string]any {
	cv := opts.ClusterVersion
	if cv == (ClusterVersion{}) {
		cv = DefaultClusterVersion
	}
	return af.Context(component, appfile.ContextOptions{
		AppRevision: opts.AppRevision, Cluster: opts.Cluster, Namespace: opts.Namespace,
		Major: cv.Major, Minor: cv.Minor, GitVersion: cv.GitVersion, Platform: cv.Platform,
	})
}

func targetNamespace(af *appfile.AppFile, opts Options) string {
	if opts.Namespace != "" {
		return opts.Namespace
	}
	return af.Namespace
}

// rendered is the state of one component while its traits apply.
type rendered struct {
	output      map[string]any            // main workload, nil if none
	outputs     map[string]map[string]any // component outputs by name
	outputOrder []string
	traitRes    []Resource
	traitIdx    []int // index in the component's traits of each traitRes
}

func renderComponent(ctx context.Context, af *appfile.AppFile, c *appfile.Component, opts Options) ([]Resource, error) {
	if c.Definition == nil {
		return nil, fmt.Errorf("component %q: type %q has no definition (was the AppFile parsed?)", c.Name, c.Type)
	}
	engine := af.Engine
	if engine == nil {
		engine = cuex.NewEngine()
	}
	cctx := Context(af, c.Name, opts)
	st, err := evalComponent(ctx, engine, c, cctx)
	if err != nil {
		return nil, fmt.Errorf("component %q: %w", c.Name, err)
	}
	// Traits see the workload's identity as it will be applied.
	ns := targetNamespace(af, opts)
	if st.output != nil && !isReference(st.output) {
		setIdentity(af, opts, ns, &unstructured.Unstructured{Object: st.output}, c.Name)
	}
	for _, n := range st.outputOrder {
		if o := st.outputs[n]; !isReference(o) {
			setIdentity(af, opts, ns, &unstructured.Unstructured{Object: o}, c.Name+"-"+n)
		}
	}
	for i, tr := range c.Traits {
		before := len(st.traitRes)
		if err := applyTrait(ctx, engine, c, tr, cctx, st); err != nil {
			return nil, fmt.Errorf("component %q: trait %q (traits[%d]): %w", c.Name, tr.Type, i, err)
		}
		for _, r := range st.traitRes[before:] {
			// Another trait type declaring the same output name would make
			// the component's outputs (as workflow steps read them)
			// ambiguous; several traits of one type (two pvc claims) are
			// KubeVela's documented use.
			for k, prev := range st.traitRes[:before] {
				if prev.Output == r.Output && prev.Trait != r.Trait {
					j := st.traitIdx[k]
					return nil, componentError(af, c, fmt.Sprintf("traits[%d]", i), fmt.Sprintf(
						"trait %q declares output %q, which trait %q (traits[%d]) declares too; rename one of them", tr.Type, r.Output, c.Traits[j].Type, j))
				}
			}
			st.traitIdx = append(st.traitIdx, i)
		}
	}
	return finish(af, c, opts, st, engine.Limits().MaxOutputBytes)
}

// componentError is a validation error at spec.components[i].<field> of
// component c (field may be empty).
func componentError(af *appfile.AppFile, c *appfile.Component, field, msg string) error {
	path := "spec.components"
	for i, x := range af.Components {
		if x == c || x.Name == c.Name {
			path = fmt.Sprintf("spec.components[%d]", i)
			break
		}
	}
	if field != "" {
		path += "." + field
	}
	return &appfile.InvalidError{App: af.Namespace + "/" + af.Name, Errors: []appfile.FieldError{{Path: path, Message: msg, Subject: fmt.Sprintf("component %q", c.Name)}}}
}

// setIdentity gives a rendered object the name and namespace the engine
// applies: defaultName when the template set none; the target namespace
// when it set none (or the app's, under a topology with a namespace); none
// for cluster-scoped kinds.
func setIdentity(af *appfile.AppFile, opts Options, ns string, obj *unstructured.Unstructured, defaultName string) {
	if obj.GetName() == "" {
		obj.SetName(defaultName)
	}
	if isClusterScoped(obj.GetAPIVersion(), obj.GetKind()) {
		obj.SetNamespace("")
		return
	}
	if obj.GetNamespace() == "" || (opts.Namespace != "" && obj.GetNamespace() == af.Namespace) {
		obj.SetNamespace(ns)
	}
}

// memoContext is cctx as the key of a remembered result of t: without
// context.components when t does not read it (hashing every component's
// name into every component's key made keys cost O(components²)). The
// other fields stay even when t does not read them: what is done with a
// result after it is remembered (setIdentity) depends on them.
func memoContext(t *cuex.Template, cctx map[string]any) map[string]any {
	if _, ok := cctx["components"]; !ok {
		return cctx
	}
	if _, used := t.Context(cctx)["components"]; used {
		return cctx
	}
	out := make(map[string]any, len(cctx))
	for k, v := range cctx {
		if k != "components" {
			out[k] = v
		}
	}
	return out
}

// evalComponent evaluates the component template's output and outputs.
func evalComponent(ctx context.Context, engine *cuex.Engine, c *appfile.Component, cctx map[string]any) (*rendered, error) {
	def := c.Definition
	src := def.CUESource()
	t, err := engine.Compile(src, def.Template())
	if err != nil {
		return nil, err
	}
	key, kerr := cuex.Key("component", t.Hash(), memoContext(t, cctx), c.Properties)
	if kerr == nil {
		if m, ok := engine.Recall(key); ok {
			return m.(*frozen).thaw(), nil
		}
	}
	st := &rendered{outputs: map[string]map[string]any{}}
	err = engine.Eval(ctx, t, map[string]any{"context": cctx, "parameter": c.Properties}, func(v cue.Value) error {
		if err := userErrs(src, v); err != nil {
			return err
		}
		if out := v.LookupPath(cue.MakePath(cue.Str("output"))); out.Exists() {
			m, err := decodeObject(src, out, "output")
			if err != nil {
				return err
			}
			st.output = m
		}
		names, objs, err := decodeOutputs(src, v, "outputs")
		if err != nil {
			return err
		}
		st.outputOrder = names
		st.outputs = objs
		return nil
	})
	if err != nil {
		return nil, err
	}
	if st.output == nil && len(st.outputs) == 0 {
		return nil, &cuex.Error{Source: src, Message: "the template defines neither `output` nor `outputs`"}
	}
	if kerr == nil {
		if f, ok := freeze(st); ok {
			engine.Remember(key, f)
		}
	}
	return st, nil
}

// applyTrait evaluates one trait: patch the workload, patchOutputs the
// component's outputs, and collect the trait's own outputs.
func applyTrait(ctx context.Context, engine *cuex.Engine, c *appfile.Component, tr *appfile.Trait, base map[string]any, st *rendered) error {
	def := tr.Definition
	if def == nil {
		return fmt.Errorf("type %q has no definition", tr.Type)
	}
	// appliesToWorkloads of autodetect components (k8s-objects,
	// ref-objects) is judged on the rendered kind: AppliesToWarnings.
	src := def.CUESource()
	t, err := engine.Compile(src, def.Template())
	if err != nil {
		return err
	}
	cctx := make(map[string]any, len(base)+3)
	for k, v := range base {
		cctx[k] = v
	}
	if st.output != nil {
		cctx["output"] = st.output
	}
	outs := make(map[string]any, len(st.outputs))
	for k, v := range st.outputs {
		outs[k] = v
	}
	cctx["outputs"] = outs
	cctx["componentType"] = c.Type
	// The trait's effect is a pure function of its template, context
	// (which holds the current output and outputs) and properties.
	key, kerr := cuex.Key("trait", t.Hash(), memoContext(t, cctx), tr.Properties)
	if kerr == nil {
		if m, ok := engine.Recall(key); ok {
			eff := m.(*frozen).thaw()
			st.output, st.outputs = eff.output, eff.outputs
			st.traitRes = append(st.traitRes, eff.traitRes...)
			return nil
		}
	}
	before := len(st.traitRes)
	err = engine.Eval(ctx, t, map[string]any{"context": cctx, "parameter": tr.Properties}, func(v cue.Value) error {
		if err := userErrs(src, v); err != nil {
			return err
		}
		if p := v.LookupPath(cue.MakePath(cue.Str("patch"))); p.Exists() {
			if st.output == nil {
				return &cuex.Error{Source: src, Path: "patch", Message: "the component has no `output` to patch"}
			}
			patched, err := applyPatch(st.output, p)
			if err != nil {
				return patchErr(src, "patch", err)
			}
			st.output = patched
		}
		if po := v.LookupPath(cue.MakePath(cue.Str("patchOutputs"))); po.Exists() {
			it, err := po.Fields()
			if err != nil {
				return cuex.Translate(src, err, "")
			}
			for it.Next() {
				name := it.Selector().Unquoted()
				target, ok := st.outputs[name]
				if !ok {
					return &cuex.Error{Source: src, Path: "patchOutputs." + name, Message: fmt.Sprintf("the component has no output %q to patch", name)}
				}
				patched, err := applyPatch(target, it.Value())
				if err != nil {
					return patchErr(src, "patchOutputs."+name, err)
				}
				st.outputs[name] = patched
			}
		}
		names, objs, err := decodeOutputs(src, v, "outputs")
		if err != nil {
			return err
		}
		for _, n := range names {
			st.traitRes = append(st.traitRes, Resource{Component: c.Name, Trait: baseType(tr.Type), Output: n,
				Object: &unstructured.Unstructured{Object: objs[n]}})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if kerr == nil {
		eff := &rendered{output: st.output, outputs: st.outputs, outputOrder: st.outputOrder, traitRes: st.traitRes[before:]}
		if f, ok := freeze(eff); ok {
			engine.Remember(key, f)
		}
	}
	return nil
}

func patchErr(src cuex.Source, field string, err error) error {
	if pe := (*patchError)(nil); errors.As(err, &pe) {
		path := field
		if len(pe.path) > 0 {
			path += "." + strings.Join(pe.path, ".")
		}
		return &cuex.Error{Source: src, Path: path, Message: pe.msg}
	}
	return cuex.Translate(src, err, "")
}

// userErrs reports a template's own `errs: [...string]`.
func userErrs(src cuex.Source, v cue.Value) error {
	ev := v.LookupPath(cue.MakePath(cue.Str("errs")))
	if !ev.Exists() {
		return nil
	}
	var msgs []string
	if err := ev.Decode(&msgs); err != nil {
		return cuex.Translate(src, err, "")
	}
	if len(msgs) == 0 {
		return nil
	}
	return &cuex.Error{Source: src, Path: "errs", Message: strings.Join(msgs, "; ")}
}

// decodeObject reads a concrete Kubernetes object from v.
func decodeObject(src cuex.Source, v cue.Value, path string) (map[string]any, error) {
	if err := v.Validate(cue.Concrete(true)); err != nil {
		return nil, cuex.Translate(src, err, "")
	}
	var m map[string]any
	if err := v.Decode(&m); err != nil {
		return nil, cuex.Translate(src, err, "")
	}
	if m == nil {
		return nil, &cuex.Error{Source: src, Path: path, Message: "is not an object"}
	}
	if isReference(m) {
		return m, nil
	}
	for _, f := range []string{"apiVersion", "kind"} {
		if s, _ := m[f].(string); s == "" {
			return nil, &cuex.Error{Source: src, Path: path + "." + f, Message: "missing: every rendered object needs apiVersion and kind"}
		}
	}
	return m, nil
}

// isReference tells a reference to existing objects (ref-objects:
// `resource` + `name` or `labelSelector`) from an object.
func isReference(m map[string]any) bool {
	if _, ok := m["apiVersion"].(string); ok {
		if _, ok := m["metadata"]; ok {
			return false
		}
	}
	_, hasResource := m["resource"].(string)
	_, hasKind := m["kind"].(string)
	_, hasName := m["name"].(string)
	_, hasSelector := m["labelSelector"].(map[string]any)
	return (hasResource || hasKind) && (hasName || hasSelector)
}

// decodeOutputs reads `outputs: <name>: {...}` in declaration order.
func decodeOutputs(src cuex.Source, v cue.Value, field string) ([]string, map[string]map[string]any, error) {
	ov := v.LookupPath(cue.MakePath(cue.Str(field)))
	objs := map[string]map[string]any{}
	if !ov.Exists() {
		return nil, objs, nil
	}
	it, err := ov.Fields()
	if err != nil {
		return nil, nil, cuex.Translate(src, err, "")
	}
	var names []string
	for it.Next() {
		name := it.Selector().Unquoted()
		m, err := decodeObject(src, it.Value(), field+"."+name)
		if err != nil {
			return nil, nil, err
		}
		names = append(names, name)
		objs[name] = m
	}
	return names, objs, nil
}

func baseType(t string) string {
	name, _, _ := appfile.SplitRevision(t)
	if name == "" {
		return t
	}
	return name
}

// finish turns the component's state into Resources with names,
// namespaces and OAM labels.
func finish(af *appfile.AppFile, c *appfile.Component, opts Options, st *rendered, maxBytes int) ([]Resource, error) {
	var out []Resource
	if st.output != nil {
		out = append(out, Resource{Component: c.Name, Object: &unstructured.Unstructured{Object: st.output}})
	}
	for _, n := range st.outputOrder {
		out = append(out, Resource{Component: c.Name, Output: n, Object: &unstructured.Unstructured{Object: st.outputs[n]}})
	}
	firstTrait := len(out)
	out = append(out, st.traitRes...)
	ns := targetNamespace(af, opts)
	// source names where each object came from, for conflicts.
	source := func(i int) string {
		r := out[i]
		switch {
		case r.IsWorkload():
			return "its output"
		case r.Trait == "":
			return "its outputs." + r.Output
		default:
			j := st.traitIdx[i-firstTrait]
			return fmt.Sprintf("trait %q (traits[%d]) outputs.%s", c.Traits[j].Type, j, r.Output)
		}
	}
	seen := map[[4]string]int{}
	for i := range out {
		r := &out[i]
		obj := r.Object
		if isReference(obj.Object) {
			r.Reference = true
			r.Cluster = opts.Cluster
			if c, _ := obj.Object["cluster"].(string); c != "" {
				r.Cluster = c
			}
			r.Namespace = ns
			if n, _ := obj.Object["namespace"].(string); n != "" {
				r.Namespace = n
			}
			continue
		}
		if r.IsWorkload() {
			setIdentity(af, opts, ns, obj, c.Name)
		} else {
			setIdentity(af, opts, ns, obj, c.Name+"-"+r.Output)
		}
		group, _, _ := strings.Cut(obj.GetAPIVersion(), "/")
		if !strings.Contains(obj.GetAPIVersion(), "/") {
			group = ""
		}
		key := [4]string{group, obj.GetKind(), obj.GetNamespace(), obj.GetName()}
		if j, dup := seen[key]; dup {
			where := obj.GetName()
			if obj.GetNamespace() != "" {
				where = obj.GetNamespace() + "/" + where
			}
			return nil, componentError(af, c, "", fmt.Sprintf("%s and %s render the same object (%s %s %s); one would overwrite the other: give one of them another name",
				source(j), source(i), obj.GetAPIVersion(), obj.GetKind(), where))
		}
		seen[key] = i
		StampMetadata(af, c, opts, *r)
		r.Cluster = opts.Cluster
		r.Namespace = obj.GetNamespace()
		if maxBytes > 0 {
			b, err := json.Marshal(obj.Object)
			if err != nil {
				return nil, fmt.Errorf("component %q: %s %s is not JSON data: %w", c.Name, obj.GetKind(), obj.GetName(), err)
			}
			if len(b) > maxBytes {
				return nil, fmt.Errorf("component %q: %s %s is %d bytes, over the limit of %d", c.Name, obj.GetKind(), obj.GetName(), len(b), maxBytes)
			}
		}
	}
	return out, nil
}

// Annotations of the Application that tune what is passed on to the
// objects it renders (KubeVela's): comma-separated keys of app labels and
// of annotations not to pass.
const (
	AnnoFilterLabelKeys      = "filter.oam.dev/label-keys"
	AnnoFilterAnnotationKeys = "filter.oam.dev/annotation-keys"
)

// neverPassed are annotations of the Application that no rendered object
// gets (KubeVela's defaults).
var neverPassed = []string{"app.oam.dev/inplace-upgrade", AnnoFilterLabelKeys, AnnoFilterAnnotationKeys,
	"kubectl.kubernetes.io/last-applied-configuration"}

// StampMetadata sets the labels and annotations of a rendered object, as
// KubeVela does:
//
//   - The Application's labels (but those named by its
//     filter.oam.dev/label-keys annotation) and the OAM labels
//     (oam-api-facts, "Labels stamped on applied resources": app name,
//     namespace, component and revision) are set on every object, over the
//     template's labels of the same keys. The main workload is a WORKLOAD
//     with workload.oam.dev/type; the objects of the component's `outputs`
//     and of its traits are TRAIT resources with trait.oam.dev/type (the
//     trait type, or AuxiliaryWorkload for the component's own outputs) and
//     trait.oam.dev/resource (the output name), and no workload type.
//   - The Application's annotations are set on every object, over the
//     template's of the same keys; then the annotations named by
//     filter.oam.dev/annotation-keys and a few never passed on
//     (kubectl's last-applied-configuration, the filter annotations
//     themselves, app.oam.dev/inplace-upgrade) are removed.
func StampMetadata(af *appfile.AppFile, c *appfile.Component, opts Options, r Resource) {
	obj := r.Object
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	if len(af.Labels) > 0 {
		filtered := splitKeys(af.Annotations[AnnoFilterLabelKeys])
		for k, v := range af.Labels {
			if !filtered[k] {
				labels[k] = v
			}
		}
	}
	labels[v1beta1.LabelAppName] = af.Name
	labels[v1beta1.LabelAppNamespace] = af.Namespace
	labels[v1beta1.LabelAppComponent] = c.Name
	labels[v1beta1.LabelAppRevision] = appRevision(af, opts)
	switch {
	case r.IsWorkload():
		labels[v1beta1.LabelResourceType] = v1beta1.ResourceTypeWorkload
		labels[v1beta1.LabelWorkloadType] = baseType(c.Type)
	case r.Trait == "":
		labels[v1beta1.LabelResourceType] = v1beta1.ResourceTypeTrait
		labels[v1beta1.LabelTraitType] = "AuxiliaryWorkload"
		labels[v1beta1.LabelTraitResource] = r.Output
	default:
		labels[v1beta1.LabelResourceType] = v1beta1.ResourceTypeTrait
		labels[v1beta1.LabelTraitType] = r.Trait
		labels[v1beta1.LabelTraitResource] = r.Output
	}
	obj.SetLabels(labels)

	annos := obj.GetAnnotations()
	if len(af.Annotations) == 0 && len(annos) == 0 {
		return
	}
	if annos == nil {
		annos = map[string]string{}
	}
	for k, v := range af.Annotations {
		annos[k] = v
	}
	for _, k := range neverPassed {
		delete(annos, k)
	}
	for k := range splitKeys(af.Annotations[AnnoFilterAnnotationKeys]) {
		delete(annos, k)
	}
	if len(annos) == 0 {
		annos = nil
	}
	obj.SetAnnotations(annos)
}

// splitKeys reads a comma-separated list of keys.
func splitKeys(s string) map[string]bool {
	if s == "" {
		return nil
	}
	out := map[string]bool{}
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out[k] = true
		}
	}
	return out
}

func appRevision(af *appfile.AppFile, opts Options) string {
	if opts.AppRevision != "" {
		return opts.AppRevision
	}
	return af.Name + "-v1"
}

// clusterScoped lists built-in cluster-scoped kinds by group/kind. Without
// a cluster there is no discovery; other kinds are taken as namespaced
// unless the template sets no namespace and the kind is listed here.
var clusterScoped = map[string]bool{
	"/Namespace": true, "/Node": true, "/PersistentVolume": true,
	"rbac.authorization.k8s.io/ClusterRole": true, "rbac.authorization.k8s.io/ClusterRoleBinding": true,
	"apiextensions.k8s.io/CustomResourceDefinition": true, "storage.k8s.io/StorageClass": true,
	"admissionregistration.k8s.io/MutatingWebhookConfiguration":   true,
	"admissionregistration.k8s.io/ValidatingWebhookConfiguration": true,
	"scheduling.k8s.io/PriorityClass":                             true, "networking.k8s.io/IngressClass": true,
	"apiregistration.k8s.io/APIService": true, "core.oam.dev/ResourceTracker": true,
	"node.k8s.io/RuntimeClass": true, "storage.k8s.io/CSIDriver": true, "storage.k8s.io/VolumeAttachment": true,
	"policy/PodSecurityPolicy": true, "certificates.k8s.io/CertificateSigningRequest": true,
	"gateway.networking.k8s.io/GatewayClass": true,
}

func isClusterScoped(apiVersion, kind string) bool {
	group := ""
	if i := strings.Index(apiVersion, "/"); i >= 0 {
		group = apiVersion[:i]
	}
	return clusterScoped[group+"/"+kind]
}

// Batch is the objects of one component to apply on one cluster together.
type Batch struct {
	Cluster string
	Objects []*unstructured.Unstructured
}

// Batches groups what a component rendered by the cluster it goes to, in
// the order the clusters first appear. References are left out: they name
// existing objects, which are read, not applied.
func Batches(res []Resource) []Batch {
	var out []Batch
	index := map[string]int{}
	for _, r := range res {
		if r.Reference {
			continue
		}
		i, seen := index[r.Cluster]
		if !seen {
			i = len(out)
			index[r.Cluster] = i
			out = append(out, Batch{Cluster: r.Cluster})
		}
		out[i].Objects = append(out[i].Objects, r.Object)
	}
	return out
}
