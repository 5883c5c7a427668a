package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	oamv1alpha1 "github.com/kubevela/pkg/apis/oam/v1alpha1"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
	"github.com/oamflow/oamflow/pkg/definition"
	"github.com/oamflow/oamflow/pkg/placement"
	"github.com/oamflow/oamflow/pkg/render"
)

// dryRunOptions are the flags of `oamflow dry-run`.
type dryRunOptions struct {
	global        *GlobalOptions
	files         []string
	defs          []string
	offline       bool
	merge         bool
	output        string
	clusterLabels []string
	chartRoot     string
	// clusterVersion is --cluster-version: the Kubernetes version templates
	// see in context.clusterVersion (default: a current cluster).
	clusterVersion string
	// budgets are --max-components and the other Application budgets.
	budgets appfile.Budgets
}

func newDryRunCommand(g *GlobalOptions) *cobra.Command {
	o := &dryRunOptions{global: g}
	cmd := &cobra.Command{
		Use:   "dry-run -f APP.yaml [-d DEFINITIONS]... [--offline]",
		Short: "Render an Application to the Kubernetes objects it would apply",
		Long: `Render an Application (and the definitions it uses) into the Kubernetes objects
oamflow would apply, with the labels it stamps, without changing anything.

Definitions come from -d files and folders (.cue definition files and
definition YAML; they win over everything else), then, unless --offline, the
cluster (the app's namespace, oamflow-system, vela-system), then oamflow's
built-in definitions.

Deploy steps (the default workflow with topology/override policies, or
explicit deploy steps) render one block per target cluster and namespace
with override policies applied. Offline, topology clusters are taken by
name; a clusterLabelSelector is matched against clusters described with
--cluster-labels NAME=KEY=VALUE[,KEY=VALUE] (repeatable), and without them
renders once for a placeholder cluster, with a warning. Online, it is
matched against the clusters registered in oamflow-system (unless
--cluster-labels is given).

Templates see context.clusterVersion of a current Kubernetes release
unless --cluster-version names the version of your cluster (vela assumes
an ancient one offline; --cluster-version v1.18 renders what it renders).

Exit codes: 0 rendered, 1 invalid input (files, properties, definitions),
2 anything else (cluster unreachable).`,
		Example: `  oamflow dry-run -f app.yaml --offline
  oamflow dry-run -f app.yaml,policies.yaml --merge -d ./defs --offline -o json
  oamflow dry-run -f app.yaml --offline --cluster-version v1.24
  oamflow dry-run -f app.yaml --offline --cluster-labels hz=region=hangzhou --cluster-labels sh=region=shanghai`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.files, "file", "f", nil, "Application file(s), comma-separated or repeated; \"-\" reads stdin (required)")
	f.StringSliceVarP(&o.defs, "definition", "d", nil, "definition files or folders (.cue or YAML), comma-separated or repeated")
	f.BoolVar(&o.offline, "offline", false, "use only -d and the built-in definitions; never contact a cluster")
	f.BoolVar(&o.merge, "merge", false, "fold standalone Policy and Workflow objects from the -f files into the Application")
	f.StringVarP(&o.output, "output", "o", "yaml", "output format: yaml or json")
	f.StringArrayVar(&o.clusterLabels, "cluster-labels", nil, "offline cluster for clusterLabelSelector: NAME=KEY=VALUE[,KEY=VALUE]")
	f.StringVar(&o.clusterVersion, "cluster-version", "", "Kubernetes version the templates render for (context.clusterVersion), e.g. v1.18 (default "+render.DefaultClusterVersion.GitVersion+")")
	f.StringVar(&o.chartRoot, "chart-root", ".", "folder holding the charts of helm components whose chart.source is a relative path (rendered like helm template)")
	addBudgetFlags(f, &o.budgets)
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

// addBudgetFlags binds the Application budgets (appfile.Budgets) under the
// controller's flag names and defaults, so that dry-run and up refuse what
// the controller and its webhook refuse.
func addBudgetFlags(f *pflag.FlagSet, b *appfile.Budgets) {
	d := appfile.DefaultBudgets()
	f.IntVar(&b.MaxComponents, appfile.FlagMaxComponents, d.MaxComponents, "components one Application may have (as the controller's flag)")
	f.IntVar(&b.MaxTraitsPerComponent, appfile.FlagMaxTraitsPerComponent, d.MaxTraitsPerComponent, "traits one component may have (as the controller's flag)")
	f.IntVar(&b.MaxApplicationBytes, appfile.FlagMaxApplicationBytes, d.MaxApplicationBytes, "bytes of an Application's spec as JSON (as the controller's flag)")
	f.IntVar(&b.MaxRenderedObjects, appfile.FlagMaxRenderedObjects, d.MaxRenderedObjects, "objects one rendering of an Application may produce (as the controller's flag)")
}

// standalonePolicy is a core.oam.dev/v1alpha1 Policy object.
type standalonePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Type              string                `json:"type"`
	Properties        *runtime.RawExtension `json:"properties,omitempty"`
}

// dryRunInputs are the objects read from the -f files.
type dryRunInputs struct {
	apps []*v1beta1.Application
	// appFiles are the files the apps came from.
	appFiles  []string
	policies  []*standalonePolicy
	workflows []*oamv1alpha1.Workflow
	defs      []client.Object
	// firstOnly reads only the first document of each file (dry-run,
	// as vela); warn says so when a file has more.
	firstOnly bool
	warn      io.Writer
}

func (o *dryRunOptions) run(ctx context.Context, out, errOut io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	// A dry-run is short and allocates a few tens of MB; collecting less
	// often saves about a sixth of its CPU time (measured).
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	if o.output != "yaml" && o.output != "json" {
		return userErrorf("--output must be yaml or json, not %q", o.output)
	}
	if err := o.budgets.Validate(); err != nil {
		return userErrorf("%v", err)
	}
	resolver, err := parseClusterLabels(o.clusterLabels)
	if err != nil {
		return err
	}
	var cv render.ClusterVersion
	if o.clusterVersion != "" {
		if cv, err = render.ParseVersion(o.clusterVersion); err != nil {
			return userErrorf("--cluster-version: %v", err)
		}
	}
	in, err := readDryRunInputs(o.files, errOut)
	if err != nil {
		return err
	}
	switch {
	case len(in.apps) == 0:
		return userErrorf("no Application found in %s", strings.Join(o.files, ", "))
	case len(in.apps) > 1:
		return userErrorf("the -f files hold %d Applications (%s); dry-run renders one at a time", len(in.apps), strings.Join(in.appFiles, ", "))
	}
	if !o.merge {
		// As vela does, on stdout before the objects (as JSON would not
		// parse then, on stderr for -o json).
		w := out
		if o.output == "json" {
			w = errOut
		}
		notReferenced(w, in.apps[0], in.policies, in.workflows)
		in.policies, in.workflows = nil, nil
	}

	src, err := o.source(in, errOut)
	if err != nil {
		return err
	}
	if resolver == nil && !o.offline {
		// Online: clusterLabelSelector picks registered clusters.
		if resolver, err = o.global.clusterResolver(); err != nil {
			return err
		}
	}
	ctx = appfile.WithEngine(ctx, cuex.NewEngine())
	ctx = appfile.WithBudgets(ctx, o.budgets)
	var docs []doc
	for _, app := range in.apps {
		if o.global != nil && o.global.Namespace != "" {
			app.Namespace = o.global.Namespace
		}
		if o.merge {
			if err := mergeStandalone(app, in.policies, in.workflows); err != nil {
				return err
			}
		}
		d, err := dryRunApp(ctx, app, src, resolver, cv, newHelmTemplater(o.chartRoot, nil), errOut)
		if err != nil {
			return err
		}
		docs = append(docs, d...)
	}
	return writeDocs(out, docs, o.output)
}

// source builds the definition source: -d and -f definitions first, then
// the cluster (unless offline), then the built-ins.
func (o *dryRunOptions) source(in *dryRunInputs, errOut io.Writer) (appfile.DefinitionSource, error) {
	var chain []appfile.DefinitionSource
	if len(o.defs) > 0 {
		local, err := appfile.NewLocalSource(o.defs...)
		if err != nil {
			return nil, &UserError{Err: err}
		}
		for _, err := range local.Skipped() {
			fmt.Fprintf(errOut, "Warning: skipped a definition file that cannot be read: %v\n", err)
		}
		chain = append(chain, local)
	}
	if len(in.defs) > 0 {
		chain = append(chain, objectSource(in.defs))
	}
	if !o.offline {
		cs, err := o.clusterSource(in)
		if err != nil {
			return nil, err
		}
		chain = append(chain, cs)
	}
	builtin, err := appfile.NewFSSource(definitions.FS, ".")
	if err != nil {
		return nil, fmt.Errorf("loading built-in definitions: %w", err)
	}
	chain = append(chain, builtin)
	return appfile.Chain(chain...), nil
}

func (o *dryRunOptions) clusterSource(in *dryRunInputs) (appfile.DefinitionSource, error) {
	if o.global == nil {
		return nil, errors.New("no cluster options")
	}
	c, err := o.global.appClient()
	if err != nil {
		return nil, fmt.Errorf("%w (or pass --offline)", err)
	}
	ns := o.global.ResolvedNamespace()
	if len(in.apps) == 1 && in.apps[0].Namespace != "" && o.global.Namespace == "" {
		ns = in.apps[0].Namespace
	}
	return appfile.NewClusterSource(c, ns, ""), nil
}

// objectSource serves definition objects given in -f files.
type objectSource []client.Object

func (s objectSource) Get(_ context.Context, kind appfile.DefinitionKind, name string) (*appfile.Definition, error) {
	base, _, err := appfile.SplitRevision(name)
	if err != nil {
		return nil, err
	}
	for i := len(s) - 1; i >= 0; i-- {
		if definition.KindOf(s[i]) == kind && s[i].GetName() == base {
			return &appfile.Definition{Kind: kind, Name: base, Origin: "-f", Object: s[i]}, nil
		}
	}
	return nil, fmt.Errorf("%s %q: %w", kind, base, appfile.ErrDefinitionNotFound)
}

// parseClusterLabels reads --cluster-labels NAME=K=V[,K=V].
func parseClusterLabels(flags []string) (placement.Resolver, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	clusters := placement.StaticClusters{}
	for _, f := range flags {
		name, rest, ok := strings.Cut(f, "=")
		if !ok || name == "" {
			return nil, userErrorf("--cluster-labels %q: want NAME=KEY=VALUE[,KEY=VALUE]", f)
		}
		labels := map[string]string{}
		for _, kv := range strings.Split(rest, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, userErrorf("--cluster-labels %q: %q is not KEY=VALUE", f, kv)
			}
			labels[k] = v
		}
		clusters[name] = labels
	}
	return clusters, nil
}

// notReferenced prints the warnings vela prints for standalone Workflow
// and Policy files given without --merge (they are ignored): a Workflow
// the Application's spec.workflow.ref does not name, and every Policy.
func notReferenced(w io.Writer, app *v1beta1.Application, policies []*standalonePolicy, workflows []*oamv1alpha1.Workflow) {
	for _, wf := range workflows {
		if app.Spec.Workflow == nil || app.Spec.Workflow.Ref != wf.Name {
			fmt.Fprintf(w, "WARNING: workflow %s not referenced by application\n\n", wf.Name)
		}
	}
	for _, p := range policies {
		fmt.Fprintf(w, "WARNING: policy %s not referenced by application\n\n", p.Name)
	}
}

// readDryRunInputs reads the -f files. As vela reads them, only the first
// YAML document of each file counts (a warning on errOut says how many
// more were ignored).
func readDryRunInputs(files []string, errOut io.Writer) (*dryRunInputs, error) {
	in := &dryRunInputs{firstOnly: true, warn: errOut}
	for _, f := range files {
		var data []byte
		var err error
		if f == "-" {
			data, err = io.ReadAll(os.Stdin)
		} else {
			data, err = os.ReadFile(f)
		}
		if err != nil {
			return nil, &UserError{Err: fmt.Errorf("reading %s: %w", f, err)}
		}
		if err := in.add(f, data); err != nil {
			return nil, &UserError{Err: err}
		}
	}
	return in, nil
}

func (in *dryRunInputs) add(file string, data []byte) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	read := 0
	for i := 0; ; i++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || isComments(raw) {
			continue
		}
		if in.firstOnly && read > 0 {
			if in.warn != nil {
				fmt.Fprintf(in.warn, "Warning: %s: only the first YAML document of a file is read; document %d and any after it are ignored\n", file, i)
			}
			return nil
		}
		read++
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(raw, &tm); err != nil {
			return fmt.Errorf("%s: document %d is not valid YAML: %w", file, i, err)
		}
		if tm.Kind == "" && tm.APIVersion == "" {
			if isComments(raw) {
				continue
			}
			return fmt.Errorf("%s: document %d has no apiVersion/kind", file, i)
		}
		group, _, _ := strings.Cut(tm.APIVersion, "/")
		if group != v1beta1.GroupVersion.Group {
			return fmt.Errorf("%s: document %d is %s %s; dry-run reads core.oam.dev Applications, Policies, Workflows and definitions", file, i, tm.APIVersion, tm.Kind)
		}
		switch tm.Kind {
		case "Application":
			app := &v1beta1.Application{}
			if err := yaml.UnmarshalStrict(raw, app); err != nil {
				return fmt.Errorf("%s: document %d (Application): %w", file, i, err)
			}
			if app.Name == "" {
				return fmt.Errorf("%s: document %d (Application): metadata.name is empty", file, i)
			}
			in.apps = append(in.apps, app)
			in.appFiles = append(in.appFiles, file)
		case "Policy":
			p := &standalonePolicy{}
			if err := yaml.UnmarshalStrict(raw, p); err != nil {
				return fmt.Errorf("%s: document %d (Policy): %w", file, i, err)
			}
			in.policies = append(in.policies, p)
		case "Workflow":
			w := &oamv1alpha1.Workflow{}
			if err := yaml.UnmarshalStrict(raw, w); err != nil {
				return fmt.Errorf("%s: document %d (Workflow): %w", file, i, err)
			}
			in.workflows = append(in.workflows, w)
		default:
			objs, err := definition.DecodeYAML(fmt.Sprintf("%s: document %d", file, i), raw)
			if err != nil {
				return err
			}
			in.defs = append(in.defs, objs...)
		}
	}
}

func isComments(raw []byte) bool {
	for _, l := range strings.Split(string(raw), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// mergeStandalone folds Policy objects into spec.policies (unless the app
// has a policy of that name) and a Workflow into spec.workflow (the one
// named by spec.workflow.ref, or the only one when the app has none).
func mergeStandalone(app *v1beta1.Application, policies []*standalonePolicy, workflows []*oamv1alpha1.Workflow) error {
	have := map[string]bool{}
	for _, p := range app.Spec.Policies {
		have[p.Name] = true
	}
	for _, p := range policies {
		if have[p.Name] {
			continue
		}
		app.Spec.Policies = append(app.Spec.Policies, common.AppPolicy{Name: p.Name, Type: p.Type, Properties: p.Properties})
	}
	var chosen *oamv1alpha1.Workflow
	if app.Spec.Workflow != nil && app.Spec.Workflow.Ref != "" {
		for _, w := range workflows {
			if w.Name == app.Spec.Workflow.Ref {
				chosen = w
			}
		}
		if chosen == nil {
			return userErrorf("application %s: spec.workflow.ref names Workflow %q, which is not among the -f files", app.Name, app.Spec.Workflow.Ref)
		}
	} else if (app.Spec.Workflow == nil || len(app.Spec.Workflow.Steps) == 0) && len(workflows) == 1 {
		chosen = workflows[0]
	}
	if chosen != nil {
		app.Spec.Workflow = &common.Workflow{Mode: chosen.Mode, Steps: chosen.Steps}
	}
	return nil
}

// doc is one output document: a header comment and an object.
type doc struct {
	header string
	obj    map[string]any
}

// dryRunApp validates and renders one Application. Online, the clusters
// its topology policies name are checked as up, the webhook and the
// controller check them (resolver is the cluster registry then).
func dryRunApp(ctx context.Context, app *v1beta1.Application, src appfile.DefinitionSource, resolver placement.Resolver, cv render.ClusterVersion, charts *helmTemplater, errOut io.Writer) ([]doc, error) {
	clusters, _ := resolver.(appfile.Clusters)
	af, warnings, err := appfile.Validate(ctx, app, src, clusters)
	if err != nil {
		return nil, asUserError(err)
	}
	printWarnings(errOut, app, warnings)
	warned := map[string]bool{}
	if af.Workflow != nil && af.Workflow.Ref != "" {
		fmt.Fprintf(errOut, "Warning: %s/%s: spec.workflow.ref %q is not rendered (pass the Workflow with -f and --merge); rendering every component\n", af.Namespace, af.Name, af.Workflow.Ref)
	}
	plans, err := render.PlanWorkflow(ctx, af, resolver)
	if err != nil {
		return nil, asUserError(err)
	}
	var docs []doc
	for _, p := range plans {
		for _, w := range p.Warnings {
			fmt.Fprintf(errOut, "Warning: %s/%s: %s\n", af.Namespace, af.Name, w)
		}
		for _, t := range p.Targets {
			opts := render.Options{Cluster: t.Cluster, Namespace: t.Namespace, ClusterVersion: cv}
			res, err := render.RenderApplication(ctx, t.AppFile, opts)
			if err != nil {
				return nil, asUserError(err)
			}
			for _, w := range render.AppliesToWarnings(t.AppFile, res) {
				if !warned[w] {
					warned[w] = true
					printWarnings(errOut, app, []string{w})
				}
			}
			if err := appfile.CheckRenderedObjects(ctx, af, len(res)); err != nil {
				return nil, asUserError(err)
			}
			if res, err = charts.expand(ctx, af.Namespace, res, errOut); err != nil {
				return nil, err
			}
			block := blockHeader(af, p, t)
			for i, r := range res {
				h := resourceHeader(r)
				if i == 0 {
					h = block + "\n" + h
				}
				docs = append(docs, doc{header: h, obj: r.Object.Object})
			}
			// Policies with an output follow the components, once per
			// block (as vela prints them).
			pres, err := render.RenderPolicies(ctx, t.AppFile, opts)
			if err != nil {
				return nil, asUserError(err)
			}
			for i, r := range pres {
				h := "# policy: " + r.Component
				if r.Output != "" {
					h += ", output: " + r.Output
				}
				if i == 0 && len(res) == 0 {
					h = block + "\n" + h
				}
				docs = append(docs, doc{header: h, obj: r.Object.Object})
			}
		}
	}
	return docs, nil
}

func blockHeader(af *appfile.AppFile, p render.Plan, t render.Target) string {
	cluster := t.Cluster
	if cluster == "" {
		cluster = "local"
	}
	ns := t.Namespace
	if ns == "" {
		ns = af.Namespace
	}
	h := fmt.Sprintf("# Application %s/%s → cluster %q, namespace %q", af.Namespace, af.Name, cluster, ns)
	if p.Step != "" {
		h += fmt.Sprintf(" (workflow step %q, %s)", p.Step, p.StepType)
	}
	if t.Placeholder {
		h += " [placeholder: labels not resolved offline]"
	}
	return h
}

func resourceHeader(r render.Resource) string {
	h := "# component: " + r.Component
	if r.Trait != "" {
		h += ", trait: " + r.Trait
	}
	if r.Output != "" {
		h += ", output: " + r.Output
	}
	if r.Reference {
		h += " (reference to existing objects; read from the cluster when deployed)"
	}
	return h
}

// asUserError marks invalid Applications (appfile.IsInvalid) and
// templates that fail to render with their properties as the user's.
func asUserError(err error) error {
	var ce *cuex.Error
	var ces cuex.Errors
	if appfile.IsInvalid(err) || errors.As(err, &ce) || errors.As(err, &ces) || errors.Is(err, appfile.ErrDefinitionNotFound) {
		return &UserError{Err: err}
	}
	return err
}

// writeDocs prints documents as multi-document YAML with header comments,
// or as one JSON List.
func writeDocs(out io.Writer, docs []doc, format string) error {
	if format == "json" {
		items := make([]any, len(docs))
		for i, d := range docs {
			items[i] = d.obj
		}
		b, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	}
	w := bufio.NewWriter(out)
	for _, d := range docs {
		b, err := yaml.Marshal(d.obj)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "---\n%s\n", d.header)
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return w.Flush()
}
