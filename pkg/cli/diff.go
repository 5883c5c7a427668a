package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"

	"cuelang.org/go/cue"
	"github.com/go-logr/logr"
	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/placement"
	"github.com/oamflow/oamflow/pkg/render"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
	"github.com/oamflow/oamflow/pkg/revision"
)

// Exit codes of `oamflow diff`.
const (
	// ExitDiffNone: nothing would change.
	ExitDiffNone = 0
	// ExitDiffChanges: something would be created, updated, deleted or
	// refused as another owner's.
	ExitDiffChanges = 1
	// ExitDiffError: the plan could not be made (bad input, a target
	// cluster unreachable, a refusal).
	ExitDiffError = 2
)

// diffOptions are the flags of `oamflow diff`.
type diffOptions struct {
	global            *GlobalOptions
	files             []string
	output            string
	verbose           bool
	ignoreUnreachable bool
	chartRoot         string
	budgets           appfile.Budgets
	// parallel bounds the dry-run requests in flight per cluster.
	parallel int
	// revision > 0 diffs the live Application's revision N (its snapshot
	// of the spec and definitions) instead of the files' spec.
	revision int64
	// offline compares with the objects of the live files instead.
	offline bool
	// clusterLabels name the offline clusters a clusterLabelSelector
	// picks from (as dry-run's --cluster-labels).
	clusterLabels []string
	live          []string
}

// DiffUserAgentPrefix starts the User-Agent of every request `oamflow diff`
// sends, to the hub and to member clusters ("oamflow-diff/<version>"), so
// that an API server's audit log tells diff's requests apart.
const DiffUserAgentPrefix = "oamflow-diff/"

func newDiffCommand(g *GlobalOptions) *cobra.Command {
	o := &diffOptions{global: g}
	cmd := &cobra.Command{
		Use:   "diff -f APP.yaml [-f MORE.yaml]... [-o text|json|yaml] [-v]",
		Short: "Show what `up` would change, per cluster, against the live objects",
		Long: `Show what applying an Application would change on every cluster its
workflow deploys to, without changing anything.

The Application of the -f files (with the definitions, Policy and Workflow
objects in the same files, as ` + "`up`" + ` reads them) is validated as ` + "`up`" + `
validates it, then rendered as the controller renders it, in the order of
its workflow's steps: each deploy and apply-component step (and the object
of each apply-object step, on its cluster), topology and override policies
per target cluster; only the steps there are (a workflow of apply-object
steps deploys no component). A step of another type whose only writing
action is kube.#Apply (a custom step, KubeVela's apply-deployment) is
evaluated with its properties and the workflow's context, and each object
it applies that is known then is planned as apply-object's. A step that
writes otherwise (helm.#Install..., as helm-install) or applies what only
running it tells is not run: it is listed as "? not planned", and an
object a step applied that the plan no longer has is not judged then. A step with an if
condition is planned too; its changes
say whether the condition holds on the live Application's status from its
last run, "depends on S" when it reads a step S that status does not have,
or "only if step S runs" when it reads inputs or context. Every
object goes through the controller's own apply plan
(ownership, adoption, shared-resource, read-only and apply-once policies)
and is sent to its cluster as a server-side apply dry run (dryRun=All)
with the controller's field manager "oamflow", so that defaulting,
admission and field ownership are the API server's. The diff compares the
live object with the dry run's result on the fields oamflow manages only:
status, defaults and fields other managers own (an HPA's spec.replicas)
are not shown. oamflow's bookkeeping labels and annotations
(app.oam.dev/appRevision, app.oam.dev/applied-hash), which change with
every revision, are not compared. Secret data is never printed: each key
shows <changed> or <unchanged> with a short sha256 of its value.

A helm/helmchart component's chart is rendered with its values as
` + "`helm template`" + ` would and its manifest is diffed against the manifest of
the live release (Helm's release record on the target cluster). A chart
under --chart-root is read there; a remote chart is not fetched: it is
rendered from the chart the live release's record keeps when that is the
chart and the exact version asked for (and has no subcharts, which the
record does not keep), else listed as not compared, saying why.

What the new revision no longer renders is looked up in the Application's
ResourceTrackers and judged by its garbage-collect policy: deleted, kept
(keepLegacyResource, strategy never/onAppDelete), orphaned or handed over
to a sharer.

Per cluster:
  + create           the object does not exist yet
  ~ update           unified diff of the YAML (sorted keys), live → applied
  - delete (GC)      garbage collection would delete it (or hand it over)
  - orphan (GC)      garbage collection would release it, kept on the cluster
  = unchanged        counted; listed with -v (also: kept by garbage collection)
  ! conflict         another Application or manager owns it: up would refuse it
  ? unknown          the cluster could not be reached, with the error

Nothing is written: the only requests besides reads are dry runs.

--offline contacts no cluster (for CI): the rendered objects are compared
with the objects of --live files or folders (YAML as kubectl get -o yaml
prints it; an object labelled app.oam.dev/cluster belongs to that member,
others to the hub) on the fields the render sets; there is no API server to
default or dry-run them, so defaults the render omits are not shown and
fields the render sets to the server's default may be. Garbage collection
is judged from the live objects carrying the Application's labels (no
ResourceTrackers), by the same garbage-collect rules. Helm components are
not compared offline.

Exit codes: 0 no changes; 1 changes (including conflicts); 2 the plan could
not be made: invalid input (the messages of ` + "`up`" + `), a refusal (a
read-only object missing), or a target cluster unreachable (unless
--ignore-unreachable).`,
		Example: `  oamflow diff -f app.yaml
  oamflow diff -f app.yaml -f policies.yaml -v
  oamflow diff -f app.yaml -o json --ignore-unreachable`,
		// Bad arguments or flags are "the plan could not be made" (2),
		// not "changes" (1), which other commands' usage errors exit with.
		Args: func(cmd *cobra.Command, args []string) error {
			if err := noArgs(cmd, args); err != nil {
				return &ExitError{Code: ExitDiffError, Err: err}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			g.userAgent = DiffUserAgentPrefix + Version
			code, err := o.run(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return &ExitError{Code: ExitDiffError, Err: err}
			}
			if code != ExitOK {
				return &ExitError{Code: code}
			}
			return nil
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &ExitError{Code: ExitDiffError, Err: err} })
	f := cmd.Flags()
	f.StringSliceVarP(&o.files, "file", "f", nil, "file(s) with the Application, comma-separated or repeated; \"-\" reads stdin (required)")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text, json or yaml")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "list unchanged objects too")
	f.BoolVar(&o.ignoreUnreachable, "ignore-unreachable", false, "an unreachable cluster is shown as unknown but does not make the exit code 2")
	f.Int64Var(&o.revision, "revision", 0, "diff the live Application's revision N (the spec and definitions it recorded, what a rollback to it would apply); -f names the Application")
	f.StringArrayVar(&o.clusterLabels, "cluster-labels", nil, "with --offline, a cluster for clusterLabelSelector: NAME=KEY=VALUE[,KEY=VALUE] (repeatable)")
	f.BoolVar(&o.offline, "offline", false, "contact no cluster: compare with the objects of --live (definitions: the files' and the built-ins)")
	f.StringSliceVar(&o.live, "live", nil, "with --offline, YAML files or folders of the live objects (kubectl get -o yaml output; Lists are read item by item)")
	f.StringVar(&o.chartRoot, "chart-root", ".", "folder holding the charts of helm components whose chart.source is a relative path")
	f.IntVar(&o.parallel, "parallel", defaultDiffParallel, "dry-run requests in flight per cluster")
	_ = f.MarkHidden("parallel")
	addBudgetFlags(f, &o.budgets)
	return cmd
}

// defaultDiffParallel is how many dry runs diff keeps in flight per cluster.
const defaultDiffParallel = 4

// plan renders app and compares it with the clusters: diff's report.
func (o *diffOptions) plan(ctx context.Context, hub client.Client, reg *multicluster.Registry, app *v1beta1.Application, defs []*appfile.Definition, errOut io.Writer) (*diffReport, error) {
	di, err := o.render(ctx, hub, reg, app, defs, errOut)
	if err != nil {
		return nil, err
	}
	return o.compare(ctx, hub, reg, di, errOut)
}

// diffItem is one rendered object bound for a cluster.
type diffItem struct {
	step      string
	component string
	obj       *unstructured.Unstructured
	// cond notes the step's if condition (its group's too), when the
	// step may not run (conditionNote).
	cond string
}

// stepConditions maps each step and sub-step of af's workflow to the if
// conditions it runs under (a group's and its own), "" when it always
// runs.
func stepConditions(af *appfile.AppFile) map[string]string {
	out := map[string]string{}
	if af.Workflow == nil {
		return out
	}
	cond := func(c string) string {
		if c == "" || c == "always" {
			return ""
		}
		return c
	}
	for _, s := range af.Workflow.Steps {
		out[s.Name] = cond(s.If)
		for _, sub := range s.SubSteps {
			c := cond(sub.If)
			switch {
			case out[s.Name] != "" && c != "":
				c = "(" + out[s.Name] + ") && (" + c + ")"
			case out[s.Name] != "":
				c = out[s.Name]
			}
			out[sub.Name] = c
		}
	}
	return out
}

// diffInput is what to compare: the Application, its parsed form, the
// revision the controller would render it as, and the rendered objects per
// cluster (clusters in the order the workflow first reaches them).
type diffInput struct {
	app      *v1beta1.Application
	af       *appfile.AppFile
	revision int64
	clusters []string
	items    map[string][]diffItem
	// notPlanned are the steps that may write but are not planned.
	notPlanned []notPlannedStep
	// liveFinalizers are the live Application's: the controller's Keeper
	// is built from the live Application, whose orphan-resource finalizer
	// turns every collection into an orphaning.
	liveFinalizers []string
}

func (o *diffOptions) run(ctx context.Context, stdin io.Reader, out, errOut io.Writer) (int, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	switch o.output {
	case "text", "json", "yaml":
	default:
		return 0, userErrorf("--output must be text, json or yaml, not %q", o.output)
	}
	// The Keeper logs what the controller would log; diff reports instead.
	ctx = logf.IntoContext(ctx, logr.Discard())
	var rep *diffReport
	if o.offline {
		if o.revision > 0 {
			return 0, userErrorf("--revision reads the revision from the cluster; it cannot be used with --offline")
		}
		if len(o.live) == 0 {
			return 0, userErrorf("--offline compares with the objects of --live FILE|DIR (YAML, as kubectl get -o yaml prints them)")
		}
		app, defs, err := o.readApp(ctx, stdin, errOut)
		if err != nil {
			return 0, err
		}
		live, err := readLiveObjects(o.live)
		if err != nil {
			return 0, err
		}
		di, err := o.render(ctx, nil, nil, app, defs, errOut)
		if err != nil {
			return 0, err
		}
		if rep, err = compareOffline(di, live); err != nil {
			return 0, err
		}
	} else {
		if len(o.live) > 0 {
			return 0, userErrorf("--live needs --offline")
		}
		env, di, err := o.load(ctx, stdin, errOut)
		if err != nil {
			return 0, err
		}
		if rep, err = o.compare(ctx, env.hub, env.reg, di, errOut); err != nil {
			return 0, err
		}
	}
	if err := writeDiffReport(out, rep, o.output, o.verbose); err != nil {
		return 0, err
	}
	return rep.exitCode(o.ignoreUnreachable), nil
}

// diffClusters reach the hub and the member clusters.
type diffClusters struct {
	hub client.Client
	reg *multicluster.Registry
}

// load reads the -f files, validates the Application and renders it.
func (o *diffOptions) load(ctx context.Context, stdin io.Reader, errOut io.Writer) (*diffClusters, *diffInput, error) {
	app, defs, err := o.readApp(ctx, stdin, errOut)
	if err != nil {
		return nil, nil, err
	}
	hub, cfg, err := o.global.kubeClient()
	if err != nil {
		return nil, nil, err
	}
	reg, err := multicluster.NewRegistry(hub, cfg, multicluster.WithUserAgent(cfg.UserAgent))
	if err != nil {
		return nil, nil, err
	}
	var snapshot *v1beta1.ApplicationRevision
	if o.revision > 0 {
		if app, snapshot, err = revisionApp(ctx, hub, app, o.revision); err != nil {
			return nil, nil, err
		}
	}
	di, err := o.renderAs(ctx, hub, reg, app, defs, snapshot, errOut)
	if err != nil {
		return nil, nil, err
	}
	return &diffClusters{hub: hub, reg: reg}, di, nil
}

// revisionApp returns the Application revision n of the live app recorded
// (with the live identity), and the revision.
func revisionApp(ctx context.Context, hub client.Client, app *v1beta1.Application, n int64) (*v1beta1.Application, *v1beta1.ApplicationRevision, error) {
	live := &v1beta1.Application{}
	if err := hub.Get(ctx, client.ObjectKeyFromObject(app), live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, userErrorf("--revision: Application %s/%s does not exist", app.Namespace, app.Name)
		}
		return nil, nil, fmt.Errorf("reading Application %s/%s: %w", app.Namespace, app.Name, err)
	}
	name := revision.Name(app.Name, n)
	rev, err := revision.NewManager(hub, hub).Get(ctx, app.Namespace, name)
	if err != nil {
		return nil, nil, err
	}
	if rev == nil {
		return nil, nil, userErrorf("--revision %d: ApplicationRevision %s/%s does not exist (`oamflow revision list %s` lists them)", n, app.Namespace, name, app.Name)
	}
	return revision.Application(rev, live), rev, nil
}

// readApp reads the one Application of the -f files, with the
// definitions, Policies and Workflows of the same files, in its namespace.
func (o *diffOptions) readApp(ctx context.Context, stdin io.Reader, errOut io.Writer) (*v1beta1.Application, []*appfile.Definition, error) {
	if len(o.files) == 0 {
		return nil, nil, userErrorf("give the Application with -f (\"-\" reads stdin)")
	}
	if o.parallel < 1 {
		o.parallel = 1
	}
	if err := o.budgets.Validate(); err != nil {
		return nil, nil, userErrorf("%v", err)
	}
	in, cueDefs, err := readUpInputs(o.files, stdin)
	if err != nil {
		return nil, nil, err
	}
	if len(in.apps) != 1 {
		return nil, nil, userErrorf("the -f files hold %d Applications; diff compares exactly one", len(in.apps))
	}
	app := in.apps[0]
	if err := mergeStandalone(app, in.policies, in.workflows); err != nil {
		return nil, nil, err
	}
	defs, err := vetInlineDefinitions(ctx, errOut, in.defs, cueDefs)
	if err != nil {
		return nil, nil, err
	}
	if err := (&upOptions{global: o.global}).prepare(app, o.global.ResolvedNamespace()); err != nil {
		return nil, nil, err
	}
	return app, defs, nil
}

// render validates app against the files' definitions, the cluster's and
// the built-ins (as `up` does: the same messages) and renders it as the
// controller would for its next revision.
func (o *diffOptions) render(ctx context.Context, hub client.Client, reg *multicluster.Registry, app *v1beta1.Application, defs []*appfile.Definition, errOut io.Writer) (*diffInput, error) {
	return o.renderAs(ctx, hub, reg, app, defs, nil, errOut)
}

// renderAs is render with, when snapshot is set, the definitions that
// ApplicationRevision recorded instead of the files' and the cluster's.
func (o *diffOptions) renderAs(ctx context.Context, hub client.Client, reg *multicluster.Registry, app *v1beta1.Application, defs []*appfile.Definition, snapshot *v1beta1.ApplicationRevision, errOut io.Writer) (*diffInput, error) {
	builtins, err := appfile.NewFSSource(definitions.FS, ".")
	if err != nil {
		return nil, fmt.Errorf("loading built-in definitions: %w", err)
	}
	inline := make(objectSource, 0, len(defs))
	for _, d := range defs {
		inline = append(inline, d.Object)
	}
	// Offline (no hub): the files' and the built-in definitions only,
	// topology clusters taken by name, revision 1.
	src := appfile.Chain(inline, builtins)
	var clusters appfile.Clusters
	var resolver placement.Resolver
	n := int64(1)
	if hub != nil {
		src = appfile.Chain(inline, appfile.NewClusterSource(hub, app.Namespace, ""), builtins)
		clusters, resolver = reg, reg
	} else if len(o.clusterLabels) > 0 {
		r, err := parseClusterLabels(o.clusterLabels)
		if err != nil {
			return nil, err
		}
		resolver = r
	}
	if snapshot != nil {
		src = revision.Source(snapshot, builtins)
	}
	ctx = appfile.WithEngine(ctx, cuex.NewEngine())
	ctx = appfile.WithBudgets(ctx, o.budgets)
	af, warnings, err := appfile.Validate(ctx, app, src, clusters)
	printWarnings(errOut, app, warnings)
	if err != nil {
		return nil, asUserError(err)
	}
	if hub != nil {
		if n, err = nextRevision(ctx, hub, app); err != nil {
			return nil, err
		}
	}
	plans, err := render.PlanWorkflow(ctx, af, resolver)
	if err != nil {
		return nil, asUserError(err)
	}
	di := &diffInput{app: app, af: af, revision: n, items: map[string][]diffItem{}}
	var live map[string]wfv1alpha1.StepStatus
	if hub != nil {
		cur := &v1beta1.Application{}
		err := hub.Get(ctx, client.ObjectKeyFromObject(app), cur)
		switch {
		case err == nil:
			live = liveStepStatus(cur)
			di.liveFinalizers = cur.Finalizers
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading the live Application %s/%s: %w", app.Namespace, app.Name, err)
		}
	}
	conds := stepConditions(af)
	for step, c := range conds {
		if c != "" {
			conds[step] = conditionNote(step, c, live)
		}
	}
	index := map[string]int{}
	add := func(cl string, it diffItem) {
		if _, ok := di.items[cl]; !ok {
			di.clusters = append(di.clusters, cl)
		}
		// The same object applied by several steps: the last write is
		// what stays.
		key := cl + "|" + objectKey(it.obj)
		if i, ok := index[key]; ok {
			di.items[cl][i] = it
			return
		}
		index[key] = len(di.items[cl])
		di.items[cl] = append(di.items[cl], it)
	}
	byStep := map[string]render.Plan{}
	for _, p := range plans {
		for _, w := range p.Warnings {
			fmt.Fprintf(errOut, "Warning: %s/%s: %s\n", af.Namespace, af.Name, w)
		}
		byStep[p.Step] = p
	}
	rev := revision.Name(app.Name, n)
	// The steps in workflow order (a group's sub-steps after it), as
	// PlanWorkflow walks them; the objects of each in that order.
	steps := workflowSteps(af)
	if len(steps) == 0 {
		// No steps at all (a spec.workflow.ref): PlanWorkflow's one plan
		// of every component on the hub.
		steps = []*appfile.WorkflowStep{{Type: appfile.StepTypeDeploy}}
	}
	for _, st := range steps {
		if st.Type == stepTypeApplyObject {
			ci, err := applyObjectItem(af, st, rev, conds[st.Name])
			if err != nil {
				return nil, err
			}
			add(ci.cluster, ci.item)
			continue
		}
		p, ok := byStep[st.Name]
		if !ok {
			objs, why := planStep(ctx, af, st, rev, n)
			if why != "" {
				di.notPlanned = append(di.notPlanned, notPlannedStep{Step: st.Name, Type: st.Type, Message: why})
				continue
			}
			for _, o := range objs {
				ci, err := stepObjectItem(af, st, o.value, o.cluster, rev, conds[st.Name])
				if err != nil {
					return nil, err
				}
				add(ci.cluster, ci.item)
			}
			continue
		}
		for _, t := range p.Targets {
			opts := render.Options{AppRevision: rev, Cluster: t.Cluster, Namespace: t.Namespace}
			if reg != nil {
				if v, err := reg.ClusterVersion(ctx, t.Cluster); err == nil {
					opts.ClusterVersion = v
				}
			}
			res, err := render.RenderApplication(ctx, t.AppFile, opts)
			if err != nil {
				return nil, asUserError(err)
			}
			if err := appfile.CheckRenderedObjects(ctx, af, len(res)); err != nil {
				return nil, asUserError(err)
			}
			for _, r := range res {
				if r.Reference {
					continue
				}
				cl := r.Cluster
				if multicluster.IsLocal(cl) {
					cl = v1beta1.ClusterLocal
				}
				add(cl, diffItem{step: p.Step, component: r.Component, obj: r.Object, cond: conds[p.Step]})
			}
		}
	}
	return di, nil
}

// workflowSteps are af's workflow steps in order, each step group
// followed by its sub-steps.
func workflowSteps(af *appfile.AppFile) []*appfile.WorkflowStep {
	if af.Workflow == nil {
		return nil
	}
	var out []*appfile.WorkflowStep
	for _, s := range af.Workflow.Steps {
		out = append(out, s)
		out = append(out, s.SubSteps...)
	}
	return out
}

// notPlannedStep is a workflow step diff does not plan although it may
// write: what it applies is not compared.
type notPlannedStep struct {
	Step    string `json:"step"`
	Type    string `json:"type"`
	Message string `json:"message"`
}

// writingAction reports whether the provider action sel ("#Apply")
// creates, changes or deletes objects (or Helm releases) when a step runs
// it.
func writingAction(sel string) bool {
	switch sel {
	case "#Apply", "#ApplyInParallel", "#ApplyComponent", "#ApplyApplication", "#ApplyApplicationInParallel",
		"#ApplyEnvBindApp", "#Deploy", "#DeployCloudResource", "#ShareCloudResource", "#Install", "#Uninstall",
		"#Delete", "#Patch", "#PatchApplication", "#Create", "#CreateConfig", "#DeleteConfig":
		return true
	}
	return false
}

// stepObject is an object a step's kube.#Apply action applies.
type stepObject struct {
	value   map[string]any
	cluster string
}

// planStep plans st, a step diff does not know by its type (neither
// deploy, apply-component nor apply-object): when its definition's only
// writing actions are kube.#Apply (op.#Apply), the template is evaluated
// with the step's properties and the workflow's context, and each apply
// whose object and cluster are then known is planned as apply-object's
// is (the objects, in no particular order). Otherwise why says why the
// step is not planned; "" with no objects for a step that only waits,
// reads or calls out (suspend, step-group, read-object, webhook...).
func planStep(ctx context.Context, af *appfile.AppFile, st *appfile.WorkflowStep, rev string, n int64) (objs []stepObject, why string) {
	if st.Type == appfile.StepTypeSuspend || st.Type == appfile.StepTypeStepGroup {
		return nil, ""
	}
	d, err := st.Definition(ctx)
	if err != nil || d == nil {
		return nil, "its definition could not be read to tell what it applies"
	}
	eng := cuex.NewEngine()
	t, err := eng.Compile(cuex.Source{Kind: "workflow-step", Name: st.Type}, d.Template())
	if err != nil {
		return nil, "its definition does not compile: " + err.Error()
	}
	var writes, others []string
	for _, a := range t.Actions() {
		_, sel, _ := strings.Cut(a, ".")
		if !writingAction(sel) || slices.Contains(writes, a) {
			continue
		}
		writes = append(writes, a)
		if sel != "#Apply" {
			others = append(others, a)
		}
	}
	if len(writes) == 0 {
		return nil, ""
	}
	notRun := "applies at run time (" + strings.Join(writes, ", ") + "); diff does not run it, so what it applies is not compared"
	if len(others) > 0 {
		return nil, notRun
	}
	wctx := af.StepContext(rev, n)
	wctx["name"], wctx["namespace"], wctx["stepName"] = af.Name, af.Namespace, st.Name
	props := st.Properties
	if props == nil {
		props = map[string]any{}
	}
	var unknown string
	err = eng.Eval(ctx, t, map[string]any{"parameter": props, "context": wctx}, func(v cue.Value) error {
		objs, unknown = kubeApplies(v, nil, 0)
		return nil
	})
	switch {
	case err != nil:
		return nil, notRun + ": its template does not evaluate: " + oneLine(err.Error())
	case unknown != "":
		return nil, notRun + ": " + unknown
	case len(objs) == 0:
		return nil, notRun + ": no apply of it is known before it runs"
	}
	return objs, ""
}

// kubeApplies finds the kube.#Apply actions in v (a step template's value,
// at path): each gives its $params.value and $params.cluster. unknown
// says which apply's object depends on what only running the step knows
// (another action's $returns, an input).
func kubeApplies(v cue.Value, path []string, depth int) (objs []stepObject, unknown string) {
	if depth > 16 || v.IncompleteKind() != cue.StructKind {
		return nil, ""
	}
	do, _ := v.LookupPath(cue.ParsePath("#do")).String()
	prov, _ := v.LookupPath(cue.ParsePath("#provider")).String()
	if prov == "kube" && do == "apply" {
		at := strings.Join(path, ".")
		params := v.LookupPath(cue.ParsePath("$params"))
		val := params.LookupPath(cue.ParsePath("value"))
		if err := val.Validate(cue.Concrete(true)); err != nil {
			return nil, fmt.Sprintf("the object %s applies is known only when the step runs", at)
		}
		var obj map[string]any
		if err := val.Decode(&obj); err != nil {
			return nil, fmt.Sprintf("the object %s applies: %v", at, err)
		}
		cl, err := params.LookupPath(cue.ParsePath("cluster")).String()
		if err != nil {
			return nil, fmt.Sprintf("the cluster %s applies to is known only when the step runs", at)
		}
		return []stepObject{{value: obj, cluster: cl}}, ""
	}
	it, err := v.Fields()
	if err != nil {
		return nil, ""
	}
	for it.Next() {
		name := it.Selector().String()
		if depth == 0 && (name == "parameter" || name == "context") {
			continue
		}
		o, u := kubeApplies(it.Value(), append(slices.Clone(path), name), depth+1)
		if u != "" {
			return nil, u
		}
		objs = append(objs, o...)
	}
	return objs, ""
}

// stepTypeApplyObject is the built-in step applying properties.value to
// properties.cluster (definitions/workflowsteps/apply-object.cue).
const stepTypeApplyObject = "apply-object"

type clusterItem struct {
	cluster string
	item    diffItem
}

// applyObjectItem is the object the apply-object step st would apply, as
// the step applies it: the step's value, in the Application's namespace
// when it names none, with the app name, namespace and revision labels
// the workflow's kube provider adds, to the step's cluster (the hub when
// empty).
func applyObjectItem(af *appfile.AppFile, st *appfile.WorkflowStep, rev, cond string) (clusterItem, error) {
	v, ok := st.Properties["value"].(map[string]any)
	if !ok {
		return clusterItem{}, userErrorf("workflow step %q (apply-object): properties.value: expected an object (apiVersion, kind, metadata...)", st.Name)
	}
	cl, _ := st.Properties["cluster"].(string)
	return stepObjectItem(af, st, v, cl, rev, cond)
}

// stepObjectItem is the object v a step applies to cluster through the
// workflow's kube provider, as it applies it (see applyObjectItem).
func stepObjectItem(af *appfile.AppFile, st *appfile.WorkflowStep, v map[string]any, cl, rev, cond string) (clusterItem, error) {
	obj := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(v)}
	if obj.GetKind() == "" || obj.GetAPIVersion() == "" || obj.GetName() == "" {
		return clusterItem{}, userErrorf("workflow step %q (%s): the object it applies: expected apiVersion, kind and metadata.name", st.Name, st.Type)
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(af.Namespace)
	}
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1beta1.LabelAppName], labels[v1beta1.LabelAppNamespace], labels[v1beta1.LabelAppRevision] = af.Name, af.Namespace, rev
	obj.SetLabels(labels)
	if multicluster.IsLocal(cl) {
		cl = v1beta1.ClusterLocal
	}
	return clusterItem{cluster: cl, item: diffItem{step: st.Name, obj: obj, cond: cond}}, nil
}

// objectKey identifies an object by API group, kind, namespace and name.
func objectKey(obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()
	return gvk.Group + "/" + gvk.Kind + "/" + obj.GetNamespace() + "/" + obj.GetName()
}

// nextRevision is the number of the revision the controller would render
// app as: the latest one when nothing the revision records changed
// (revision.NeedsLive says the snapshot stands), else the next one.
func nextRevision(ctx context.Context, hub client.Client, app *v1beta1.Application) (int64, error) {
	live := &v1beta1.Application{}
	if err := hub.Get(ctx, client.ObjectKeyFromObject(app), live); err != nil {
		if apierrors.IsNotFound(err) {
			return 1, nil
		}
		return 0, fmt.Errorf("reading Application %s/%s: %w", app.Namespace, app.Name, err)
	}
	lr := live.Status.LatestRevision
	if lr == nil || lr.Name == "" {
		return 1, nil
	}
	n, err := revision.Number(app.Name, lr.Name)
	if err != nil {
		return 0, err
	}
	latest, err := revision.NewManager(hub, hub).Get(ctx, app.Namespace, lr.Name)
	if err != nil {
		return 0, err
	}
	if latest == nil {
		return n + 1, nil
	}
	fresh, _, err := revision.NeedsLive(app, latest, false)
	if err != nil {
		return 0, err
	}
	if fresh {
		return n + 1, nil
	}
	return n, nil
}

// compare previews every object on its cluster (clusters in parallel, up
// to o.parallel dry runs in flight per cluster) and what garbage
// collection would do, and builds the report.
func (o *diffOptions) compare(ctx context.Context, hub client.Client, reg *multicluster.Registry, di *diffInput, errOut io.Writer) (*diffReport, error) {
	pols, err := resourcekeeper.ParsePolicies(di.af.App.Spec.Policies)
	if err != nil {
		return nil, userErrorf("%v", err)
	}
	app := di.app.DeepCopy()
	for _, f := range di.liveFinalizers {
		if !slices.Contains(app.Finalizers, f) {
			app.Finalizers = append(app.Finalizers, f)
		}
	}
	k, err := resourcekeeper.New(app, di.revision, resourcekeeper.Options{Clients: reg, Trackers: hub, Policies: pols})
	if err != nil {
		return nil, err
	}
	rep := &diffReport{Application: app.Namespace + "/" + app.Name, Revision: revision.Name(app.Name, di.revision), NotPlanned: di.notPlanned}
	total := 0
	for _, cl := range di.clusters {
		total += len(di.items[cl])
	}
	prog := &diffProgress{w: errOut, on: total >= progressThreshold || len(di.clusters) > 1}
	results := make([]clusterDiff, len(di.clusters))
	var g errgroup.Group
	for i, cl := range di.clusters {
		g.Go(func() error {
			cd, err := o.compareCluster(ctx, k, reg, hub, app, cl, di.items[cl], prog)
			results[i] = cd
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	rep.Clusters = results

	var keep []common.ClusterObjectReference
	for _, cd := range results {
		keep = append(keep, cd.desired...)
	}
	gc, err := k.PreviewGC(ctx, keep)
	if err != nil {
		return nil, fmt.Errorf("reading what garbage collection would do: %w", err)
	}
	for _, ch := range gc {
		cl := ch.Object.Cluster
		if cl == "" {
			cl = v1beta1.ClusterLocal
		}
		cd := rep.cluster(cl)
		if cd.Unknown != "" {
			continue
		}
		od := diffEntry{Component: ch.Component, APIVersion: ch.Object.APIVersion, Kind: ch.Object.Kind,
			Namespace: ch.Object.Namespace, Name: ch.Object.Name}
		switch {
		case ch.Err != nil:
			od.Action, od.Message = actionUnknown, ch.Err.Error()
		case ch.Component == "" && len(di.notPlanned) > 0:
			// Applied by a workflow step, not a component: one diff does
			// not plan may apply it again, and then it is kept.
			od.Action, od.Message = actionNotCompared, notPlannedGC(di.notPlanned)
		default:
			gcEntry(&od, ch.Action, ch.To)
		}
		cd.Objects = append(cd.Objects, od)
	}
	rep.count()
	return rep, nil
}

// notPlannedGC says why an object a workflow step applied and the plan
// no longer has is not judged: a step diff does not plan may apply it.
func notPlannedGC(steps []notPlannedStep) string {
	names := make([]string, 0, len(steps))
	for _, s := range steps {
		names = append(names, s.Step)
	}
	return "applied by a workflow step, not planned now; garbage collection deletes it unless step " +
		strings.Join(names, ", ") + " (not planned) applies it again"
}

// gcEntry fills od with what garbage collection would do (to: the
// Application a hand-over gives the object to).
func gcEntry(od *diffEntry, action resourcekeeper.GCAction, to string) {
	if action == resourcekeeper.GCActionKeep {
		od.Action, od.Message = actionKept, "no longer rendered; kept by the garbage-collect policy until the Application is deleted"
		return
	}
	od.Action, od.GC = actionDelete, string(action)
	switch action {
	case resourcekeeper.GCActionOrphan:
		od.Message = "orphaned: left in place without the Application's labels"
	case resourcekeeper.GCActionHandOver:
		od.Message = "handed over to Application " + to + ", which shares it"
	case resourcekeeper.GCActionLeaveShare:
		od.Message = "owned by another Application; this one leaves its shared-by list"
	case resourcekeeper.GCActionDeleting:
		od.Message = "already being deleted"
	}
}

// progressThreshold is how many objects make diff report its progress.
const progressThreshold = 20

// diffProgress prints "diff: CLUSTER N/M objects" lines on stderr.
type diffProgress struct {
	mu sync.Mutex
	w  io.Writer
	on bool
}

func (p *diffProgress) step(cluster string, done, total int) {
	if !p.on || p.w == nil {
		return
	}
	if done != total && done%10 != 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "diff: %s %d/%d objects\n", cluster, done, total)
}

// compareCluster previews items on cluster. An unreachable cluster gives
// a report with Unknown set and no error.
func (o *diffOptions) compareCluster(ctx context.Context, k *resourcekeeper.Keeper, reg *multicluster.Registry, hub client.Reader, app *v1beta1.Application, cluster string, items []diffItem, prog *diffProgress) (clusterDiff, error) {
	cd := clusterDiff{Cluster: cluster}
	if h := reg.Health(ctx, cluster); !h.Reachable {
		cd.Unknown = h.Message
		return cd, nil
	}
	hubOrMember, err := reg.Client(ctx, cluster)
	if err != nil {
		cd.Unknown = err.Error()
		return cd, nil
	}
	type result struct {
		ch   resourcekeeper.Change
		helm *diffEntry
		ref  common.ClusterObjectReference
		err  error
	}
	results := make([]result, len(items))
	var done int
	var mu sync.Mutex
	g := errgroup.Group{}
	g.SetLimit(o.parallel)
	for i, it := range items {
		g.Go(func() error {
			r := &results[i]
			if helmspec.IsHelmRelease(it.obj) {
				od := &diffEntry{}
				r.ref, r.err = o.helmDiff(ctx, hubOrMember, hub, app.Name, app.Namespace, cluster, it, od)
				r.helm = od
			} else {
				chs, err := k.Preview(ctx, cluster, []*unstructured.Unstructured{it.obj})
				if err == nil {
					r.ch = chs[0]
				}
				r.err = err
			}
			mu.Lock()
			done++
			n := done
			mu.Unlock()
			prog.step(cluster, n, len(items))
			return nil
		})
	}
	_ = g.Wait()
	for i, it := range items {
		od := diffEntry{Step: it.step, Component: it.component, APIVersion: it.obj.GetAPIVersion(), Kind: it.obj.GetKind(),
			Namespace: it.obj.GetNamespace(), Name: it.obj.GetName()}
		r := results[i]
		if err := r.err; err != nil {
			if isUnreachable(err) {
				cd.Unknown = err.Error()
				cd.Objects, cd.desired = nil, nil
				return cd, nil
			}
			return cd, fmt.Errorf("cluster %s: %w", cluster, err)
		}
		if r.helm != nil {
			od.Action, od.Diff, od.Message, od.Owner = r.helm.Action, r.helm.Diff, r.helm.Message, r.helm.Owner
			od.Namespace, od.Name = r.helm.Namespace, r.helm.Name
			cd.desired = append(cd.desired, r.ref)
			noteCondition(&od, it)
			cd.Objects = append(cd.Objects, od)
			continue
		}
		od.Namespace = r.ch.Object.Namespace
		cd.desired = append(cd.desired, r.ch.Object)
		classify(&od, r.ch)
		noteCondition(&od, it)
		cd.Objects = append(cd.Objects, od)
	}
	return cd, nil
}

// noteCondition notes on a change that its step runs only under an if
// condition, which diff does not decide.
func noteCondition(od *diffEntry, it diffItem) {
	if it.cond == "" || od.Action == actionUnchanged {
		return
	}
	note := it.cond
	if od.Message != "" {
		note = od.Message + "; " + note
	}
	od.Message = note
}

// isUnreachable reports whether err says a cluster did not answer (as
// opposed to an answer refusing the request).
func isUnreachable(err error) bool {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsServiceUnavailable(err)
	}
	return !errors.Is(err, multicluster.ErrClusterNotFound) && !errors.Is(err, multicluster.ErrClusterMisconfigured)
}

// classify fills od from what the Keeper would do with the object.
func classify(od *diffEntry, ch resourcekeeper.Change) {
	var own *resourcekeeper.OwnershipError
	switch {
	case errors.As(ch.Err, &own):
		od.Action, od.Message = actionConflict, ch.Refused
		if own.OwnerName != "" {
			od.Owner = own.OwnerNamespace + "/" + own.OwnerName
		}
	case ch.Refused != "":
		od.Action, od.Message = actionRefused, ch.Refused
	case ch.Live == nil:
		od.Action = actionCreate
		od.Diff = createText(ch.After)
	case ch.JoinShare:
		od.Action, od.Message = actionUpdate, "joins the shared-by list of the Application that owns it"
	case ch.After == nil:
		od.Action = actionUnchanged
	default:
		live, after := managedView(ch.Live, ch.After)
		if d := unifiedDiff(live, after); d != "" {
			od.Action, od.Diff = actionUpdate, d
		} else {
			od.Action = actionUnchanged
		}
	}
	if ch.Adopt && od.Action == actionUpdate {
		od.Message = "adopted from KubeVela in place"
	}
}

// Actions of a diff entry.
const (
	actionCreate    = "create"
	actionUpdate    = "update"
	actionDelete    = "delete"
	actionUnchanged = "unchanged"
	actionKept      = "kept"
	actionConflict  = "conflict"
	actionRefused   = "refused"
	actionUnknown   = "unknown"
	// actionNotCompared: diff cannot tell (a remote Helm chart).
	actionNotCompared = "not compared"
)

// diffReport is what `oamflow diff` found; -o json|yaml prints it.
type diffReport struct {
	Application string        `json:"application"`
	Revision    string        `json:"revision"`
	Clusters    []clusterDiff `json:"clusters"`
	// NotPlanned are the workflow steps that may write but that diff
	// does not plan (what they apply is not compared).
	NotPlanned []notPlannedStep `json:"notPlanned,omitempty"`
	Summary    diffSummary      `json:"summary"`
}

// clusterDiff is the plan for one cluster.
type clusterDiff struct {
	Cluster string `json:"cluster"`
	// Unknown says why the cluster could not be compared.
	Unknown string      `json:"unknown,omitempty"`
	Objects []diffEntry `json:"objects,omitempty"`
	// desired are the objects the revision applies there.
	desired []common.ClusterObjectReference
}

// diffEntry is what would happen to one object.
type diffEntry struct {
	Action     string `json:"action"`
	GC         string `json:"gc,omitempty"`
	Step       string `json:"step,omitempty"`
	Component  string `json:"component,omitempty"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// Owner is the Application ("namespace/name") owning a conflicting object.
	Owner   string `json:"owner,omitempty"`
	Message string `json:"message,omitempty"`
	// Diff is the unified diff of an update, the object of a create.
	Diff string `json:"diff,omitempty"`
}

// diffSummary counts the entries by action.
type diffSummary struct {
	Create    int `json:"create"`
	Update    int `json:"update"`
	Delete    int `json:"delete"`
	Unchanged int `json:"unchanged"`
	Kept      int `json:"kept"`
	Conflict  int `json:"conflict"`
	Refused   int `json:"refused"`
	Unknown   int `json:"unknownClusters"`
	// UnknownObjects counts objects that could not be read.
	UnknownObjects int `json:"unknownObjects"`
	// NotCompared counts what diff cannot render (remote Helm charts).
	NotCompared int `json:"notCompared,omitempty"`
	// NotPlanned counts the steps diff does not plan (notPlanned).
	NotPlanned int `json:"notPlanned,omitempty"`
}

func (r *diffReport) cluster(name string) *clusterDiff {
	for i := range r.Clusters {
		if r.Clusters[i].Cluster == name {
			return &r.Clusters[i]
		}
	}
	r.Clusters = append(r.Clusters, clusterDiff{Cluster: name})
	return &r.Clusters[len(r.Clusters)-1]
}

func (r *diffReport) count() {
	s := diffSummary{}
	for _, cd := range r.Clusters {
		if cd.Unknown != "" {
			s.Unknown++
		}
		for _, od := range cd.Objects {
			switch od.Action {
			case actionCreate:
				s.Create++
			case actionUpdate:
				s.Update++
			case actionDelete:
				s.Delete++
			case actionUnchanged:
				s.Unchanged++
			case actionKept:
				s.Kept++
			case actionConflict:
				s.Conflict++
			case actionRefused:
				s.Refused++
			case actionUnknown:
				s.UnknownObjects++
			case actionNotCompared:
				s.NotCompared++
			}
		}
	}
	s.NotPlanned = len(r.NotPlanned)
	r.Summary = s
}

// exitCode is ExitDiffError when a refusal or an unknown cluster (unless
// ignored) leaves the plan incomplete, ExitDiffChanges when something
// would change, else ExitDiffNone.
func (r *diffReport) exitCode(ignoreUnreachable bool) int {
	s := r.Summary
	switch {
	case s.Refused > 0, !ignoreUnreachable && (s.Unknown > 0 || s.UnknownObjects > 0):
		return ExitDiffError
	case s.Create+s.Update+s.Delete+s.Conflict > 0:
		return ExitDiffChanges
	}
	return ExitDiffNone
}

// writeDiffReport prints rep as text (per cluster), JSON or YAML.
func writeDiffReport(out io.Writer, rep *diffReport, format string, verbose bool) error {
	if format != "text" {
		return printStructured(out, rep, format)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Application %s (as revision %s)\n", rep.Application, rep.Revision)
	for _, cd := range rep.Clusters {
		fmt.Fprintf(&b, "\ncluster %s:\n", cd.Cluster)
		if cd.Unknown != "" {
			fmt.Fprintf(&b, "  ? unknown: %s\n", oneLine(cd.Unknown))
			continue
		}
		objs := append([]diffEntry(nil), cd.Objects...)
		sort.SliceStable(objs, func(i, j int) bool { return actionRank(objs[i].Action) < actionRank(objs[j].Action) })
		unchanged := 0
		for _, od := range objs {
			what := od.Kind + " " + od.Name
			if od.Namespace != "" {
				what = od.Kind + " " + od.Namespace + "/" + od.Name
			}
			var where []string
			if od.Component != "" {
				where = append(where, "component "+od.Component)
			}
			if od.Step != "" {
				where = append(where, "step "+od.Step)
			}
			if len(where) > 0 {
				what += " (" + strings.Join(where, ", ") + ")"
			}
			switch od.Action {
			case actionUnchanged:
				unchanged++
				if verbose {
					fmt.Fprintf(&b, "  = unchanged %s\n", what)
				}
				continue
			case actionCreate:
				fmt.Fprintf(&b, "  + create %s\n", what)
			case actionUpdate:
				fmt.Fprintf(&b, "  ~ update %s\n", what)
			case actionDelete:
				verb := "delete (GC)"
				switch {
				case od.GC == string(resourcekeeper.GCActionOrphan):
					// Kept on the cluster, released by the Application.
					verb = "orphan (GC)"
				case od.GC != "" && od.GC != string(resourcekeeper.GCActionDelete):
					verb += " " + od.GC
				}
				fmt.Fprintf(&b, "  - %s %s\n", verb, what)
			case actionKept:
				fmt.Fprintf(&b, "  = kept (GC) %s\n", what)
			case actionConflict:
				owner := "not managed by any Application"
				if od.Owner != "" {
					owner = "owned by Application " + od.Owner
				}
				fmt.Fprintf(&b, "  ! conflict %s: %s\n", what, owner)
			case actionRefused:
				fmt.Fprintf(&b, "  ! refused %s\n", what)
			case actionUnknown:
				fmt.Fprintf(&b, "  ? unknown %s\n", what)
			case actionNotCompared:
				fmt.Fprintf(&b, "  ? not compared %s\n", what)
			}
			if od.Message != "" {
				fmt.Fprintf(&b, "      %s\n", oneLine(od.Message))
			}
			if od.Diff != "" {
				for _, l := range strings.Split(strings.TrimRight(od.Diff, "\n"), "\n") {
					fmt.Fprintf(&b, "      %s\n", l)
				}
			}
		}
		if unchanged > 0 && !verbose {
			fmt.Fprintf(&b, "  = %s unchanged\n", plural(unchanged, "object"))
		}
	}
	if len(rep.NotPlanned) > 0 {
		b.WriteString("\nnot planned:\n")
		for _, np := range rep.NotPlanned {
			fmt.Fprintf(&b, "  ? not planned: step %s (type %s) %s\n", np.Step, np.Type, oneLine(np.Message))
		}
	}
	s := rep.Summary
	fmt.Fprintf(&b, "\nPlan: %d to create, %d to update, %d to delete, %d conflict(s), %d unchanged", s.Create, s.Update, s.Delete, s.Conflict, s.Unchanged)
	if s.Kept > 0 {
		fmt.Fprintf(&b, ", %d kept", s.Kept)
	}
	if s.Refused > 0 {
		fmt.Fprintf(&b, ", %d refused", s.Refused)
	}
	if s.Unknown > 0 {
		fmt.Fprintf(&b, "; %s unknown", plural(s.Unknown, "cluster"))
	}
	if s.UnknownObjects > 0 {
		fmt.Fprintf(&b, "; %s unknown", plural(s.UnknownObjects, "object"))
	}
	if s.NotCompared > 0 {
		fmt.Fprintf(&b, "; %d not compared", s.NotCompared)
	}
	if s.NotPlanned > 0 {
		fmt.Fprintf(&b, "; %s not planned", plural(s.NotPlanned, "step"))
	}
	b.WriteString("\n")
	_, err := io.WriteString(out, b.String())
	return err
}

// actionRank sorts a cluster's entries: changes first, in the order of
// the legend.
func actionRank(action string) int {
	for i, a := range []string{actionCreate, actionUpdate, actionDelete, actionKept, actionConflict, actionRefused, actionUnknown, actionNotCompared} {
		if a == action {
			return i
		}
	}
	return 99
}
