package appfile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/cuex"
)

// FieldError is one validation error of an Application.
type FieldError struct {
	// Path is the field path in the Application
	// (`spec.components[1].traits[0].properties.replicas`).
	Path string
	// Message says what is wrong and what was expected.
	Message string
	// Subject names what the path is in, by name: `component "web"`,
	// `component "web", trait "scaler"`, `policy "eu"`, `workflow step
	// "deploy"` ("" for the Application itself).
	Subject string
}

// String is `<path>: <message> (<subject>)`.
func (e FieldError) String() string {
	s := e.Message
	if e.Path != "" {
		s = e.Path + ": " + s
	}
	if e.Subject != "" {
		s += " (" + e.Subject + ")"
	}
	return s
}

// InvalidError lists every problem Parse found.
type InvalidError struct {
	// App is "<namespace>/<name>" of the Application.
	App    string
	Errors []FieldError
}

// Terminal says that retrying cannot help: the same Application and
// definitions are invalid the same way (package errclass).
func (e *InvalidError) Terminal() bool { return true }

func (e *InvalidError) Error() string {
	var b strings.Builder
	if len(e.Errors) == 1 {
		fmt.Fprintf(&b, "application %s is invalid: %s", e.App, e.Errors[0])
		return b.String()
	}
	fmt.Fprintf(&b, "application %s is invalid (%d errors):", e.App, len(e.Errors))
	for _, fe := range e.Errors {
		b.WriteString("\n  ")
		b.WriteString(fe.String())
	}
	return b.String()
}

// parser carries the state of one Parse.
type parser struct {
	src  DefinitionSource
	af   *AppFile
	opts parseOptions
	errs []FieldError
	// subject names what errors are recorded for now (FieldError.Subject).
	subject string
}

func (p *parser) errorf(path, format string, args ...any) {
	p.errs = append(p.errs, FieldError{Path: path, Message: fmt.Sprintf(format, args...), Subject: p.subject})
}

// warnf records a warning: a problem that does not stop the Application
// from being deployed.
func (p *parser) warnf(path, format string, args ...any) {
	p.af.Warnings = append(p.af.Warnings, FieldError{Path: path, Message: fmt.Sprintf(format, args...), Subject: p.subject}.String())
}

// ParseOption changes how Parse reads an Application.
type ParseOption func(*parseOptions)

type parseOptions struct {
	overridden bool
}

// OverridesApplied says the Application's components already have their
// override policies applied (a deploy target's copy): a required property
// the policies would supply is then missing when absent.
func OverridesApplied() ParseOption { return func(o *parseOptions) { o.overridden = true } }

// Parse validates app and resolves every definition it uses from src. It
// reports all problems at once in a *InvalidError: unknown
// component/trait/policy/step types, properties that do not match a
// definition's `parameter` (wrong type or value, missing required property
// unless an inputs[].parameterKey or an override policy supplies it,
// unknown property where the parameter lists its fields), dependsOn naming
// unknown components or forming a cycle, duplicate component, policy or
// step names, traits violating conflictsWith, and names Kubernetes would
// reject. A trait outside its appliesToWorkloads is a warning (KubeVela
// renders it). Errors that are not about the Application (a definition
// that cannot be read) are returned as they are. Policies without a name
// are named `<type>-auto-gen-<index>`, as KubeVela names them.
//
// Validate is the entry point for deciding whether an Application can be
// deployed; Parse is its first part (and re-reads overridden copies).
//
// The CUE engine comes from ctx (WithEngine), else a new one is made.
func Parse(ctx context.Context, app *v1beta1.Application, src DefinitionSource, opts ...ParseOption) (*AppFile, error) {
	if app == nil {
		return nil, errors.New("parse: nil Application")
	}
	if src == nil {
		return nil, errors.New("parse: nil DefinitionSource")
	}
	engine := EngineFrom(ctx)
	if engine == nil {
		engine = cuex.NewEngine()
	}
	ns := app.Namespace
	if ns == "" {
		ns = "default"
	}
	af := &AppFile{
		Name:           app.Name,
		Namespace:      ns,
		Labels:         app.Labels,
		Annotations:    app.Annotations,
		PublishVersion: app.Annotations[v1beta1.AnnoPublishVersion],
		Generation:     app.Generation,
		App:            app,
		Engine:         engine,
		Source:         src,
	}
	af.contextComponents = contextComponents(app.Spec.Components)
	p := &parser{src: src, af: af}
	for _, o := range opts {
		o(&p.opts)
	}
	p.checkName("metadata.name", app.Name, "application")
	if err := p.components(ctx, app.Spec.Components); err != nil {
		return nil, err
	}
	if err := p.policies(ctx, app.Spec.Policies); err != nil {
		return nil, err
	}
	if err := p.workflow(ctx, app.Spec.Workflow); err != nil {
		return nil, err
	}
	if len(p.errs) > 0 {
		return nil, &InvalidError{App: ns + "/" + app.Name, Errors: p.errs}
	}
	return af, nil
}

// checkName applies the Kubernetes limits that a name used in object names
// and label values must meet (RFC 1123 label: ≤ 63 lowercase alphanumerics
// or '-').
func (p *parser) checkName(path, name, what string) bool {
	if name == "" {
		p.errorf(path, "%s name is empty", what)
		return false
	}
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		p.errorf(path, "%s name %q is not valid in Kubernetes object names and labels: %s", what, name, strings.Join(msgs, "; "))
		return false
	}
	return true
}

// resolve gets a definition; a missing one is a validation error at path.
func (p *parser) resolve(ctx context.Context, path string, kind DefinitionKind, typ string) (*Definition, error) {
	if typ == "" {
		p.errorf(path, "type is empty")
		return nil, nil
	}
	if _, _, err := SplitRevision(typ); err != nil {
		p.errorf(path, "%v", err)
		return nil, nil
	}
	d, err := p.src.Get(ctx, kind, typ)
	if errors.Is(err, ErrDefinitionNotFound) {
		p.errorf(path, "unknown %s type %q (no %s definition of that name)", kind, typ, kind)
		return nil, nil
	}
	var de *DefinitionError
	if errors.As(err, &de) {
		p.errorf(path, "%s definition %q cannot be used: %v", kind, typ, err)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("resolving %s %q (%s): %w", kind, typ, path, err)
	}
	return d, nil
}

// checkProperties validates props against d's parameter and records
// errors under path. pending says a required property is missing that
// supplied keys will fill.
func (p *parser) checkProperties(ctx context.Context, path string, d *Definition, props map[string]any, cctx map[string]any, supplied []string) (pending bool, err error) {
	text := d.Template()
	if strings.TrimSpace(text) == "" {
		return false, nil
	}
	t, err := p.af.Engine.Compile(d.CUESource(), text)
	if err != nil {
		// The definition is at fault, not the properties: report it where
		// the type names it, as a definition that cannot be read is.
		typePath := strings.TrimSuffix(path, ".properties") + ".type"
		if errors.Is(err, cuex.ErrBusy) {
			// Neither the definition's fault nor the properties': retried.
			return false, err
		}
		if errors.Is(err, cuex.ErrTimeout) {
			// Not a compile error: retried after a while (cuex.Limits.Timeout).
			p.errorf(typePath, "%s definition %q cannot be used: compiling it timed out: %v", d.Kind, d.Name, err)
			return false, nil
		}
		p.errorf(typePath, "%s definition %q cannot be used: it does not compile: %v", d.Kind, d.Name, err)
		return false, nil
	}
	if !t.HasField("parameter") {
		return false, nil
	}
	res, err := p.af.Engine.CheckParameter(ctx, t, props, cctx, supplied)
	if errors.Is(err, cuex.ErrBusy) {
		return false, err
	}
	if err != nil {
		var ce *cuex.Error
		var ces cuex.Errors
		if errors.As(err, &ce) || errors.As(err, &ces) {
			p.errorf(path, "%v", err)
			return false, nil
		}
		return false, err
	}
	for _, fe := range res.Errors {
		p.errorf(joinPath(path, fe.Path), "%s", fe.Message)
	}
	return len(res.Pending) > 0, nil
}

// joinPath appends CUE path segments to a field path: numbers become [i].
func joinPath(base string, segs []string) string {
	var b strings.Builder
	b.WriteString(base)
	for _, s := range segs {
		if _, err := strconv.Atoi(s); err == nil {
			b.WriteString("[" + s + "]")
			continue
		}
		if isIdentLike(s) {
			b.WriteString("." + s)
		} else {
			b.WriteString("[" + strconv.Quote(s) + "]")
		}
	}
	return b.String()
}

func isIdentLike(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// DecodeProperties decodes a properties object: integers become int64,
// other numbers float64 (CUE tells int from float, so 3 must stay an int).
// nil or empty means an empty object.
func DecodeProperties(raw *runtime.RawExtension) (map[string]any, error) {
	if raw == nil || len(bytes.TrimSpace(raw.Raw)) == 0 {
		if raw != nil && raw.Object != nil {
			b, err := json.Marshal(raw.Object)
			if err != nil {
				return nil, err
			}
			return decodeObject(b)
		}
		return map[string]any{}, nil
	}
	return decodeObject(raw.Raw)
}

func decodeObject(b []byte) (map[string]any, error) {
	if string(bytes.TrimSpace(b)) == "null" {
		return map[string]any{}, nil
	}
	v, err := DecodeJSON(b)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("properties must be an object, got %s", kindName(v))
	}
	return m, nil
}

// DecodeJSON decodes JSON keeping integers as int64.
func DecodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after JSON value")
	}
	return normalizeNumbers(v), nil
}

func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeNumbers(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = normalizeNumbers(e)
		}
		return x
	case json.Number:
		if i, err := x.Int64(); err == nil && !strings.ContainsAny(string(x), ".eE") {
			return i
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

func kindName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a bool"
	case map[string]any:
		return "an object"
	}
	return "a number"
}

// validationContext is the `context` parameters are checked under: the
// one a default rendering uses (revision 1, the hub, the app's namespace),
// so that evaluating a component for validation also serves its rendering.
func (p *parser) validationContext(name string) map[string]any {
	return p.af.Context(name, ContextOptions{})
}

// ContextOptions are the parts of `context` that depend on where and for
// which revision a component is rendered.
type ContextOptions struct {
	// AppRevision is "<app>-v<N>"; empty means "<app>-v1".
	AppRevision string
	// Cluster is the target cluster ("" or "local" for the hub).
	Cluster string
	// Namespace is the target namespace; empty means the app's.
	Namespace string
	// Major, Minor, GitVersion and Platform are the target cluster's
	// Kubernetes version; zero Major means 1.31 (offline default).
	Major, Minor         int
	GitVersion, Platform string
}

// Context returns the CUE `context` of component name: name, namespace,
// appName, appRevision, appRevisionNum, revision ("<component>-v<N>"),
// components ([{name, type}]), appLabels, appAnnotations, cluster,
// clusterVersion ({major, minor: numbers, gitVersion, platform}),
// workflowName, publishVersion and replicaKey ("": not replicated). Traits add output, outputs and
// componentType; steps add stepName and stepSessionID.
func (af *AppFile) Context(name string, o ContextOptions) map[string]any {
	rev := o.AppRevision
	if rev == "" {
		rev = af.Name + "-v1"
	}
	revNum := int64(1)
	if i := strings.LastIndex(rev, "-v"); i >= 0 {
		if n, err := strconv.ParseInt(rev[i+2:], 10, 64); err == nil {
			revNum = n
		}
	}
	ns := o.Namespace
	if ns == "" {
		ns = af.Namespace
	}
	if o.Major == 0 {
		o.Major, o.Minor, o.GitVersion, o.Platform = 1, 31, "v1.31.0", "linux/amd64"
	}
	comps := af.contextComponents
	if comps == nil {
		// An AppFile not made by Parse.
		var specs []common.ApplicationComponent
		if af.App != nil {
			specs = af.App.Spec.Components
		}
		comps = contextComponents(specs)
	}
	return map[string]any{
		"name":           name,
		"namespace":      ns,
		"appName":        af.Name,
		"appRevision":    rev,
		"appRevisionNum": revNum,
		"revision":       fmt.Sprintf("%s-v%d", name, revNum),
		"components":     comps,
		"appLabels":      stringMap(af.Labels),
		"appAnnotations": stringMap(af.Annotations),
		"cluster":        o.Cluster,
		"clusterVersion": map[string]any{"major": int64(o.Major), "minor": int64(o.Minor), "gitVersion": o.GitVersion, "platform": o.Platform},
		"workflowName":   af.Name,
		"publishVersion": af.PublishVersion,
		// Empty: the component is not replicated (KubeVela's templates
		// read it, e.g. in names, and get "" then too).
		"replicaKey": "",
	}
}

// contextComponents is context.components: each component's name and
// type, in order. Callers share it: never modify it.
func contextComponents(specs []common.ApplicationComponent) []any {
	comps := make([]any, 0, len(specs))
	for _, c := range specs {
		comps = append(comps, map[string]any{"name": c.Name, "type": c.Type})
	}
	return comps
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// suppliedKeys turns inputs[].parameterKey into dotted CUE paths.
func suppliedKeys(inputs []string) []string {
	out := make([]string, 0, len(inputs))
	for _, k := range inputs {
		k = strings.ReplaceAll(k, "[", ".")
		k = strings.ReplaceAll(k, "]", "")
		out = append(out, strings.TrimPrefix(k, "parameter."))
	}
	return out
}

// components checks spec.components. An Application without components
// is valid (KubeVela accepts it: its workflow may do other things).
func (p *parser) components(ctx context.Context, specs []common.ApplicationComponent) error {
	seen := map[string]int{}
	defer func() { p.subject = "" }()
	for i := range specs {
		cs := &specs[i]
		path := fmt.Sprintf("spec.components[%d]", i)
		p.subject = ""
		if j, dup := seen[cs.Name]; dup && cs.Name != "" {
			p.errorf(path+".name", "duplicate component name %q (also spec.components[%d])", cs.Name, j)
		} else {
			seen[cs.Name] = i
		}
		if p.checkName(path+".name", cs.Name, "component") {
			p.subject = fmt.Sprintf("component %q", cs.Name)
		}
		comp := &Component{
			Name:             cs.Name,
			Type:             cs.Type,
			DependsOn:        cs.DependsOn,
			Inputs:           cs.Inputs,
			Outputs:          cs.Outputs,
			ExternalRevision: cs.ExternalRevision,
		}
		props, err := DecodeProperties(cs.Properties)
		if err != nil {
			p.errorf(path+".properties", "%v", err)
			props = map[string]any{}
		}
		comp.Properties = props
		def, err := p.resolve(ctx, path+".type", KindComponent, cs.Type)
		if err != nil {
			return err
		}
		comp.Definition = def
		cctx := p.validationContext(cs.Name)
		if def != nil {
			var keys []string
			for _, in := range cs.Inputs {
				if in.ParameterKey != "" {
					keys = append(keys, in.ParameterKey)
				}
			}
			supplied := suppliedKeys(keys)
			if !p.opts.overridden {
				supplied = append(supplied, overrideSupplied(p.af.App.Spec.Policies, cs)...)
			}
			pending, err := p.checkProperties(ctx, path+".properties", def, props, cctx, supplied)
			if err != nil {
				return err
			}
			comp.Pending = pending
		}
		for j := range cs.Inputs {
			if cs.Inputs[j].From == "" {
				p.errorf(fmt.Sprintf("%s.inputs[%d].from", path, j), "input names no output (from is empty)")
			}
		}
		for j := range cs.Outputs {
			if cs.Outputs[j].Name == "" {
				p.errorf(fmt.Sprintf("%s.outputs[%d].name", path, j), "output name is empty")
			}
		}
		if err := p.traits(ctx, path, comp, cs.Traits, cctx, p.subject); err != nil {
			return err
		}
		p.subject = ""
		p.af.Components = append(p.af.Components, comp)
	}
	p.subject = ""
	p.dependencies(specs)
	return nil
}

// traitSubject names a trait of the component subject names (`component
// "web", trait "scaler"`; just the trait when the component has no usable
// name).
func traitSubject(component, typ string) string {
	if component == "" {
		return fmt.Sprintf("trait %q", typ)
	}
	return fmt.Sprintf("%s, trait %q", component, typ)
}

func (p *parser) traits(ctx context.Context, path string, comp *Component, specs []common.ApplicationTrait, cctx map[string]any, compSubject string) error {
	for j := range specs {
		ts := &specs[j]
		tpath := fmt.Sprintf("%s.traits[%d]", path, j)
		props, err := DecodeProperties(ts.Properties)
		if err != nil {
			p.errorf(tpath+".properties", "%v", err)
			props = map[string]any{}
		}
		p.subject = traitSubject(compSubject, ts.Type)
		def, err := p.resolve(ctx, tpath+".type", KindTrait, ts.Type)
		if err != nil {
			return err
		}
		tr := &Trait{Type: ts.Type, Definition: def, Properties: props}
		comp.Traits = append(comp.Traits, tr)
		if def == nil {
			continue
		}
		if _, err := p.checkProperties(ctx, tpath+".properties", def, props, cctx, nil); err != nil {
			return err
		}
		spec := def.TraitSpec()
		// A trait outside its appliesToWorkloads is rendered, as KubeVela
		// renders it (its own examples attach expose to a daemon), with a
		// warning. Autodetected workloads are only known once rendered.
		if comp.Definition != nil && len(spec.AppliesToWorkloads) > 0 && !comp.Definition.IsAutodetect() &&
			!AppliesTo(spec.AppliesToWorkloads, comp.Definition.WorkloadNames()) {
			p.af.Warnings = append(p.af.Warnings, AppliesToWarning(tpath, comp.Name, ts.Type, spec.AppliesToWorkloads,
				fmt.Sprintf("component type %q (workload %s)", comp.Type, strings.Join(comp.Definition.WorkloadNames()[1:], ", "))))
		}
		for k := 0; k < j; k++ {
			other := specs[k].Type
			otherBase, _, _ := SplitRevision(other)
			if conflicts(spec.ConflictsWith, otherBase) {
				p.errorf(tpath+".type", "trait %q conflicts with trait %q (%s.traits[%d])", ts.Type, other, path, k)
			} else if od := comp.Traits[k].Definition; od != nil {
				base, _, _ := SplitRevision(ts.Type)
				if conflicts(od.TraitSpec().ConflictsWith, base) {
					p.errorf(tpath+".type", "trait %q conflicts with trait %q (%s.traits[%d])", ts.Type, other, path, k)
				}
			}
		}
	}
	return nil
}

// conflicts reports whether typ is listed in conflictsWith ("*" lists all).
func conflicts(list []string, typ string) bool {
	for _, c := range list {
		if c == typ || c == "*" {
			return true
		}
	}
	return false
}

// dependencies checks dependsOn names and looks for cycles.
func (p *parser) dependencies(specs []common.ApplicationComponent) {
	index := map[string]int{}
	for i, c := range specs {
		if _, ok := index[c.Name]; !ok {
			index[c.Name] = i
		}
	}
	graph := map[string][]string{}
	defer func() { p.subject = "" }()
	for i, c := range specs {
		p.subject = nameSubject("component", c.Name)
		for j, d := range c.DependsOn {
			path := fmt.Sprintf("spec.components[%d].dependsOn[%d]", i, j)
			switch {
			case d == c.Name:
				p.errorf(path, "component %q depends on itself", c.Name)
			case !has(index, d):
				p.errorf(path, "unknown component %q", d)
			default:
				graph[c.Name] = append(graph[c.Name], d)
			}
		}
	}
	for _, cyc := range findCycles(graph, names(specs)) {
		p.subject = nameSubject("component", cyc[0])
		p.errorf(fmt.Sprintf("spec.components[%d].dependsOn", index[cyc[0]]), "dependency cycle: %s", strings.Join(cyc, " → "))
	}
}

// nameSubject is `<what> "<name>"` for FieldError.Subject, or "" when name
// is not a usable name (its own error says so).
func nameSubject(what, name string) string {
	if name == "" || len(validation.IsDNS1123Label(name)) > 0 {
		return ""
	}
	return fmt.Sprintf("%s %q", what, name)
}

func names(specs []common.ApplicationComponent) []string {
	out := make([]string, len(specs))
	for i, c := range specs {
		out[i] = c.Name
	}
	return out
}

func has(m map[string]int, k string) bool { _, ok := m[k]; return ok }

// findCycles returns each cycle of graph once, as the path that closes it
// (first node repeated at the end), starting from nodes in order.
func findCycles(graph map[string][]string, order []string) [][]string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var out [][]string
	seen := map[string]bool{}
	var visit func(n string)
	visit = func(n string) {
		color[n] = grey
		stack = append(stack, n)
		for _, m := range graph[n] {
			switch color[m] {
			case white:
				visit(m)
			case grey:
				i := len(stack) - 1
				for stack[i] != m {
					i--
				}
				cyc := append(append([]string(nil), stack[i:]...), m)
				key := canonicalCycle(cyc[:len(cyc)-1])
				if !seen[key] {
					seen[key] = true
					out = append(out, cyc)
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
	}
	for _, n := range order {
		if color[n] == white {
			visit(n)
		}
	}
	return out
}

func canonicalCycle(c []string) string {
	s := append([]string(nil), c...)
	sort.Strings(s)
	return strings.Join(s, "\x00")
}

// AutoPolicyName is the name KubeVela gives a policy without one:
// "<type>-auto-gen-<index>", index its position in spec.policies.
func AutoPolicyName(typ string, index int) string {
	return fmt.Sprintf("%s-auto-gen-%d", typ, index)
}

func (p *parser) policies(ctx context.Context, specs []common.AppPolicy) error {
	seen := map[string]int{}
	defer func() { p.subject = "" }()
	for i := range specs {
		ps := &specs[i]
		path := fmt.Sprintf("spec.policies[%d]", i)
		name := ps.Name
		if name == "" {
			name = AutoPolicyName(ps.Type, i)
		}
		p.subject = ""
		if j, dup := seen[name]; dup {
			p.errorf(path+".name", "duplicate policy name %q (also spec.policies[%d])", name, j)
		} else {
			seen[name] = i
		}
		valid := false
		if ps.Name != "" {
			valid = p.checkName(path+".name", ps.Name, "policy")
		} else if ps.Type != "" {
			valid = p.checkName(path+".type", name, "generated policy")
		}
		if valid {
			p.subject = fmt.Sprintf("policy %q", name)
		}
		props, err := DecodeProperties(ps.Properties)
		if err != nil {
			p.errorf(path+".properties", "%v", err)
			props = map[string]any{}
		}
		def, err := p.resolve(ctx, path+".type", KindPolicy, ps.Type)
		if err != nil {
			return err
		}
		if ps.Type == PolicyReplication {
			p.warnf(path, "replication is not carried out: the selected components are deployed once, with an empty context.replicaKey")
		}
		pol := &Policy{Name: name, Type: ps.Type, Definition: def, Properties: props, Index: i}
		p.af.Policies = append(p.af.Policies, pol)
		if def != nil {
			if _, err := p.checkProperties(ctx, path+".properties", def, props, p.validationContext(name), nil); err != nil {
				return err
			}
		}
		if ps.Type == PolicyOverride {
			if err := p.overrideDefinitions(ctx, path, props); err != nil {
				return err
			}
		}
	}
	return nil
}

// overrideDefinitions resolves the component and trait types an override
// policy's entries name (as KubeVela does when it parses the policy): an
// unknown type is reported now, and a revision snapshots their
// definitions, which the deploy steps render the overridden components
// with. The properties themselves are checked on each deploy target's
// overridden copy.
func (p *parser) overrideDefinitions(ctx context.Context, path string, props map[string]any) error {
	for i, e := range OverrideEntries(props) {
		epath := fmt.Sprintf("%s.properties.components[%d]", path, i)
		if e.Type != "" {
			if _, err := p.resolve(ctx, epath+".type", KindComponent, e.Type); err != nil {
				return err
			}
		}
		for j, t := range e.Traits {
			tm, _ := t.(map[string]any)
			typ, _ := tm["type"].(string)
			if disable, _ := tm["disable"].(bool); disable || typ == "" {
				continue
			}
			if _, err := p.resolve(ctx, fmt.Sprintf("%s.traits[%d].type", epath, j), KindTrait, typ); err != nil {
				return err
			}
		}
	}
	return nil
}
