package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
	"github.com/oamflow/oamflow/pkg/definition"
	"github.com/oamflow/oamflow/pkg/multicluster"
)

// FieldManager is the field manager of the CLI's writes: `oamflow up`'s
// server-side apply of Applications, and the definitions `def apply`,
// `install` and `up` create or update.
const FieldManager = "oamflow-cli"

// defaultPollInterval is how often --wait reads the Application.
const defaultPollInterval = 500 * time.Millisecond

// upOptions are the flags of `oamflow up`.
type upOptions struct {
	global         *GlobalOptions
	files          []string
	wait           bool
	timeout        time.Duration
	publishVersion string
	pollInterval   time.Duration
	validate       bool
	budgets        appfile.Budgets
	// diff shows the plan (as `oamflow diff`) before applying; yes skips
	// the confirmation.
	diff, yes bool
}

func newUpCommand(g *GlobalOptions) *cobra.Command {
	o := &upOptions{global: g}
	cmd := &cobra.Command{
		Use:   "up -f FILE [-f FILE]... [--wait] [--timeout D] [--publish-version V]",
		Short: "Apply Applications (and the definitions in the same files) and optionally wait until they run",
		Long: `Apply the Applications of the -f files with server-side apply (field manager
"oamflow-cli"; fields another manager set are taken over). Files may hold
several YAML documents: definitions (ComponentDefinition, TraitDefinition,
PolicyDefinition, WorkflowStepDefinition, or .cue definition files as
` + "`oamflow def`" + ` reads them) are vetted and installed first, in their own
metadata.namespace or else -n or else oamflow-system; standalone Policy and
Workflow objects are folded into the one Application of the files (as
dry-run --merge does). "-" reads standard input.

An Application without metadata.namespace goes to -n (else the context's
namespace). --publish-version sets the app.oam.dev/publishVersion
annotation: the workflow runs again only when it changes.

With --wait, follow the workflow until the Application is running: steps as
they start and finish and services as their health changes, redrawn in place
on a terminal, one line per change otherwise (or when $CI is set).

With --diff, the plan of ` + "`oamflow diff`" + ` is printed first and nothing is
applied until it is confirmed (--yes confirms without asking, for CI); a
plan that cannot be made (an unreachable cluster, a refusal) stops up.

Exit codes: 0 applied (with --wait: running); 1 invalid input, or the
controller found the Application invalid (phase workflowFailed with an
Invalid* reason); 2 any other failure: the workflow failed or was
terminated, the wait timed out, the cluster is unreachable.`,
		Example: `  oamflow up -f app.yaml --wait
  cat app.yaml | oamflow up -f - -n staging
  oamflow up -f defs.yaml -f app.yaml --publish-version v2 --wait --timeout 10m`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.files, "file", "f", nil, "file(s) to apply, comma-separated or repeated; \"-\" reads stdin (required)")
	f.BoolVarP(&o.wait, "wait", "w", false, "wait until every Application is running, showing the workflow's progress")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "with --wait, give up after this long (exit 2)")
	f.StringVar(&o.publishVersion, "publish-version", "", "set the app.oam.dev/publishVersion annotation on every Application")
	f.DurationVar(&o.pollInterval, "poll-interval", defaultPollInterval, "with --wait, how often to read the Application")
	_ = f.MarkHidden("poll-interval")
	f.BoolVar(&o.validate, "validate", true, "check every Application against the cluster's definitions (and those in the files) before applying anything")
	f.BoolVar(&o.diff, "diff", false, "print the plan (as `oamflow diff`) and apply only after confirmation")
	f.BoolVarP(&o.yes, "yes", "y", false, "with --diff, apply without asking")
	addBudgetFlags(f, &o.budgets)
	return cmd
}

// noArgs refuses positional arguments with a user error.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return userErrorf("unexpected arguments %q (pass files with -f)", args)
	}
	return nil
}

func (o *upOptions) run(ctx context.Context, stdin io.Reader, out io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(o.files) == 0 {
		return userErrorf("give the files to apply with -f (\"-\" reads stdin)")
	}
	if o.wait && o.timeout <= 0 {
		return userErrorf("--timeout must be positive, not %s", o.timeout)
	}
	if o.pollInterval <= 0 {
		o.pollInterval = defaultPollInterval
	}
	if err := o.budgets.Validate(); err != nil {
		return userErrorf("%v", err)
	}
	in, cueDefs, err := readUpInputs(o.files, stdin)
	if err != nil {
		return err
	}
	if len(in.apps) == 0 && len(in.defs) == 0 && len(cueDefs) == 0 {
		return userErrorf("no Application or definition found in %s", strings.Join(o.files, ", "))
	}
	if len(in.policies) > 0 || len(in.workflows) > 0 {
		if len(in.apps) != 1 {
			return userErrorf("%d standalone Policy and %d Workflow object(s) need exactly one Application in the files to fold into, found %d",
				len(in.policies), len(in.workflows), len(in.apps))
		}
		if err := mergeStandalone(in.apps[0], in.policies, in.workflows); err != nil {
			return err
		}
	}
	defs, err := vetInlineDefinitions(ctx, out, in.defs, cueDefs)
	if err != nil {
		return err
	}
	ns := o.global.ResolvedNamespace()
	for _, app := range in.apps {
		if err := o.prepare(app, ns); err != nil {
			return err
		}
	}

	c, cfg, err := o.global.kubeClient()
	if err != nil {
		return err
	}
	if o.validate {
		// The registry only reads cluster Secrets here; when it cannot be
		// built the clusters are left for the controller to check.
		var clusters appfile.Clusters
		if reg, err := multicluster.NewRegistry(c, cfg); err == nil {
			clusters = reg
		}
		if err := validateApps(appfile.WithBudgets(ctx, o.budgets), out, c, clusters, in.apps, defs); err != nil {
			return err
		}
	}
	if o.diff {
		ok, err := o.confirmPlan(ctx, c, cfg, stdin, out, in.apps, defs)
		if err != nil || !ok {
			return err
		}
	}
	for _, d := range defs {
		dns := d.Object.GetNamespace()
		if dns == "" {
			dns = o.global.defNamespace()
		}
		verb, err := applyDefinition(ctx, c, d.Object, dns)
		if err != nil {
			if refusedInput(err) {
				return &UserError{Err: err}
			}
			return err
		}
		fmt.Fprintf(out, "%s/%s %s in %s\n", d.Kind.CRDKind(), d.Name, verb, dns)
	}
	type applied struct {
		app    *v1beta1.Application
		target waitTarget
	}
	var done []applied
	for _, app := range in.apps {
		res, err := applyApplication(ctx, c, app)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "Application %s/%s %s\n", app.Namespace, app.Name, res.verb)
		done = append(done, applied{app: res.applied, target: res.target})
	}
	if !o.wait {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	for _, a := range done {
		w := appWaiter{
			reader:   c,
			key:      client.ObjectKeyFromObject(a.app),
			target:   a.target,
			interval: o.pollInterval,
			progress: newProgress(out, os.Getenv),
			timeout:  o.timeout,
		}
		app, took, err := w.wait(ctx)
		if err != nil {
			return err
		}
		rev := ""
		if app.Status.LatestRevision != nil {
			rev = " (revision " + app.Status.LatestRevision.Name + ")"
		}
		fmt.Fprintf(out, "Application %s/%s is running%s after %s\n", app.Namespace, app.Name, rev, humanSpan(took))
	}
	return nil
}

// confirmPlan prints the plan of every Application (as `oamflow diff`)
// and asks on stdin whether to go on, unless --yes; ok is false when the
// user said no (nothing is applied then, and up succeeds).
func (o *upOptions) confirmPlan(ctx context.Context, c client.Client, cfg *rest.Config, stdin io.Reader, out io.Writer, apps []*v1beta1.Application, defs []*appfile.Definition) (bool, error) {
	reg, err := multicluster.NewRegistry(c, cfg)
	if err != nil {
		return false, err
	}
	ctx = logf.IntoContext(ctx, logr.Discard())
	d := &diffOptions{global: o.global, output: "text", budgets: o.budgets, parallel: defaultDiffParallel}
	changes := false
	for _, app := range apps {
		rep, err := d.plan(ctx, c, reg, app.DeepCopy(), defs, out)
		if err != nil {
			return false, fmt.Errorf("making the plan of Application %s/%s (nothing was applied): %w", app.Namespace, app.Name, err)
		}
		if err := writeDiffReport(out, rep, "text", false); err != nil {
			return false, err
		}
		switch rep.exitCode(false) {
		case ExitDiffError:
			return false, fmt.Errorf("the plan of Application %s/%s is incomplete (see above); nothing was applied (`oamflow diff --ignore-unreachable` shows the rest)", app.Namespace, app.Name)
		case ExitDiffChanges:
			changes = true
		}
	}
	if !changes {
		fmt.Fprintln(out, "No object would change; applying the Application.")
		return true, nil
	}
	if o.yes {
		return true, nil
	}
	if slices.Contains(o.files, "-") {
		return false, userErrorf("--diff reads the confirmation from standard input, which holds the files (-f -): pass --yes")
	}
	fmt.Fprint(out, "Apply? Only \"yes\" applies: ")
	answer, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("reading the confirmation: %w", err)
	}
	if a := strings.TrimSpace(answer); a != "yes" && a != "y" {
		fmt.Fprintln(out, "Nothing was applied.")
		return false, nil
	}
	return true, nil
}

// validateApps asks appfile.Validate about every Application, against
// the definitions in the files, then the cluster's (app namespace,
// oamflow-system, vela-system), then the built-ins — as the controller
// will — so that an invalid Application is refused with all its
// field-path errors before anything is written (exit 1), word for word as
// the controller and the webhook would refuse it; clusters checks the
// topology policies' clusters (nil: not checked). Warnings are printed to
// out and change nothing. Problems that are not about the input (the
// cluster cannot be read) are left for the controller to report.
func validateApps(ctx context.Context, out io.Writer, c client.Client, clusters appfile.Clusters, apps []*v1beta1.Application, defs []*appfile.Definition) error {
	builtins, err := appfile.NewFSSource(definitions.FS, ".")
	if err != nil {
		return err
	}
	inline := make(objectSource, 0, len(defs))
	for _, d := range defs {
		inline = append(inline, d.Object)
	}
	for _, app := range apps {
		src := appfile.Chain(inline, appfile.NewClusterSource(c, app.Namespace, ""), builtins)
		_, warnings, err := appfile.Validate(ctx, app, src, clusters)
		printWarnings(out, app, warnings)
		if appfile.IsInvalid(err) {
			return &UserError{Err: err}
		}
	}
	return nil
}

// printWarnings prints validation warnings, one a line.
func printWarnings(w io.Writer, app *v1beta1.Application, warnings []string) {
	ns := app.Namespace
	if ns == "" {
		ns = "default"
	}
	for _, msg := range warnings {
		fmt.Fprintf(w, "Warning: application %s/%s: %s\n", ns, app.Name, msg)
	}
}

// readUpInputs reads every document of files ("-" is stdin): YAML
// documents into in, and .cue definition files (the `def` format) into
// cueDefs. Any problem is the user's.
func readUpInputs(files []string, stdin io.Reader) (in *dryRunInputs, cueDefs []*appfile.Definition, err error) {
	in = &dryRunInputs{}
	for _, f := range files {
		if strings.EqualFold(filepath.Ext(f), ".cue") {
			defs, _, err := readDefFile(defFile{path: f})
			if err != nil {
				return nil, nil, err
			}
			cueDefs = append(cueDefs, defs...)
			continue
		}
		var data []byte
		if f == "-" {
			data, err = io.ReadAll(stdin)
		} else {
			data, err = os.ReadFile(f)
		}
		if err != nil {
			return nil, nil, &UserError{Err: fmt.Errorf("reading %s: %w", f, err)}
		}
		if err := in.add(f, data); err != nil {
			return nil, nil, &UserError{Err: err}
		}
	}
	return in, cueDefs, nil
}

// vetInlineDefinitions checks the definitions of the files (objects from
// YAML documents, then those of .cue files) as `def vet` does; nothing is
// applied when one is invalid.
func vetInlineDefinitions(ctx context.Context, out io.Writer, objs []client.Object, cueDefs []*appfile.Definition) ([]*appfile.Definition, error) {
	defs := make([]*appfile.Definition, 0, len(objs)+len(cueDefs))
	for _, obj := range objs {
		defs = append(defs, &appfile.Definition{Kind: definition.KindOf(obj), Name: obj.GetName(), Origin: "-f", Object: obj})
	}
	defs = append(defs, cueDefs...)
	if len(defs) == 0 {
		return nil, nil
	}
	engine := cuex.NewEngine()
	for _, d := range defs {
		problems, warnings := vetDefinition(ctx, engine, d)
		if len(problems) > 0 {
			return nil, userErrorf("%s %q is invalid:\n  %s", d.Kind, d.Name, strings.Join(problems, "\n  "))
		}
		for _, w := range warnings {
			fmt.Fprintf(out, "warning: %s\n", w)
		}
	}
	return defs, nil
}

// prepare sets the Application's namespace (ns unless the file names one;
// a file namespace that contradicts -n is refused) and --publish-version.
func (o *upOptions) prepare(app *v1beta1.Application, ns string) error {
	switch {
	case app.Namespace == "":
		app.Namespace = ns
	case o.global.Namespace != "" && app.Namespace != o.global.Namespace:
		return userErrorf("Application %s: metadata.namespace is %q but -n says %q; remove one of them", app.Name, app.Namespace, o.global.Namespace)
	}
	if o.publishVersion != "" {
		if app.Annotations == nil {
			app.Annotations = map[string]string{}
		}
		app.Annotations[v1beta1.AnnoPublishVersion] = o.publishVersion
	}
	return nil
}

// applyResult is what applyApplication did.
type applyResult struct {
	// verb is "created", "configured" or "unchanged".
	verb string
	// applied is the Application as stored after the apply.
	applied *v1beta1.Application
	// target says when a wait on the Application is over.
	target waitTarget
}

// applyApplication server-side applies app as FieldManager, forcing
// ownership of the fields it sets. Errors the API server blames on the
// object (invalid, bad request, refused by an admission webhook, missing
// namespace) are *UserError.
func applyApplication(ctx context.Context, c client.Client, app *v1beta1.Application) (*applyResult, error) {
	id := app.Namespace + "/" + app.Name
	before := &v1beta1.Application{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(app), before); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading Application %s: %w", id, err)
		}
		before = nil
	}
	u, err := applyObject(app)
	if err != nil {
		return nil, fmt.Errorf("Application %s: %w", id, err)
	}
	if err := c.Patch(ctx, u, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		switch {
		case refusedInput(err):
			return nil, userErrorf("applying Application %s: %w", id, err)
		case apierrors.IsNotFound(err):
			return nil, userErrorf("applying Application %s: %w (create the namespace first, or pick another with -n)", id, err)
		}
		return nil, fmt.Errorf("applying Application %s: %w", id, err)
	}
	after := &v1beta1.Application{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, after); err != nil {
		return nil, fmt.Errorf("reading the applied Application %s: %w", id, err)
	}
	res := &applyResult{verb: "configured", applied: after, target: waitTarget{generation: after.Generation}}
	switch {
	case before == nil:
		res.verb = "created"
	case before.ResourceVersion == after.ResourceVersion:
		res.verb = "unchanged"
	}
	if before != nil && before.Annotations[v1beta1.AnnoPublishVersion] != after.Annotations[v1beta1.AnnoPublishVersion] {
		// A new publishVersion makes a new revision even when the spec
		// (and so the generation) is unchanged.
		res.target.newRevision = true
		if before.Status.LatestRevision != nil {
			res.target.prevRevision = before.Status.LatestRevision.Name
		}
	}
	return res, nil
}

// refusedInput reports whether the API server refused a write because of
// the object itself: Invalid (422) or BadRequest (400), or Forbidden (403)
// from an admission webhook or policy that denied it — the apiserver
// words those "admission webhook %q denied the request" and
// "ValidatingAdmissionPolicy ... denied request". Forbidden by RBAC is
// not the input's fault and stays an error of the environment (exit 2).
func refusedInput(err error) bool {
	switch {
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return true
	case apierrors.IsForbidden(err):
		msg := err.Error()
		return strings.Contains(msg, "admission webhook") && strings.Contains(msg, "denied the request") ||
			strings.Contains(msg, "denied request")
	}
	return false
}

// applyObject is app as a server-side apply request: apiVersion, kind,
// metadata (name, namespace, labels, annotations) and spec; no status.
func applyObject(app *v1beta1.Application) (*unstructured.Unstructured, error) {
	a := &v1beta1.Application{
		TypeMeta: metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "Application"},
		ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace, Labels: app.Labels,
			Annotations: app.Annotations, Finalizers: app.Finalizers},
		Spec: app.Spec,
	}
	b, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	obj := map[string]any{}
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, err
	}
	delete(obj, "status")
	if m, ok := obj["metadata"].(map[string]any); ok {
		delete(m, "creationTimestamp")
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

// waitTarget says which status answers a wait: one written for at least
// generation, and, when newRevision, about a revision other than
// prevRevision ("" when there was none).
type waitTarget struct {
	generation   int64
	newRevision  bool
	prevRevision string
}

// verdict is what a status says about a wait.
type verdict int

const (
	// keepWaiting: not settled yet.
	keepWaiting verdict = iota
	// isRunning: the workflow succeeded and every service is healthy.
	isRunning
	// isInvalid: the controller refused the Application as written.
	isInvalid
	// hasFailed: the workflow failed or was terminated, or the Application
	// is being deleted.
	hasFailed
)

// invalidReasonPrefix starts the condition reasons the controller uses for
// problems only an edit can fix (pkg/controller: "Reasons starting with
// "Invalid" are the user's to fix").
const invalidReasonPrefix = "Invalid"

// judge decides what app's status says about a wait for target, with a
// message for the final verdicts. It is pure.
func judge(app *v1beta1.Application, target waitTarget) (verdict, string) {
	st := app.Status
	if st.ObservedGeneration < target.generation {
		return keepWaiting, ""
	}
	if st.Phase == common.ApplicationWorkflowFailed {
		for _, c := range st.Conditions {
			if c.Status != metav1.ConditionTrue && strings.HasPrefix(c.Reason, invalidReasonPrefix) {
				// The controller's message may already say which
				// Application is invalid; the CLI's error says it once.
				msg := oneLine(c.Message)
				prefix := fmt.Sprintf("application %s/%s is invalid: ", app.Namespace, app.Name)
				if len(msg) > len(prefix) && strings.EqualFold(msg[:len(prefix)], prefix) {
					msg = msg[len(prefix):]
				}
				return isInvalid, fmt.Sprintf("(%s) %s", c.Reason, msg)
			}
		}
	}
	latest := ""
	if st.LatestRevision != nil {
		latest = st.LatestRevision.Name
	}
	if target.newRevision && (latest == "" || latest == target.prevRevision) {
		return keepWaiting, ""
	}
	if wf := st.Workflow; wf != nil && wf.AppRevision != "" && latest != "" && wf.AppRevision != latest {
		return keepWaiting, ""
	}
	switch st.Phase {
	case common.ApplicationRunning:
		return isRunning, ""
	case common.ApplicationWorkflowFailed:
		return hasFailed, "the workflow failed: " + notReadyMessage(app, common.ConditionWorkflow)
	case common.ApplicationWorkflowTerminated:
		return hasFailed, "the workflow was terminated (`oamflow workflow restart " + app.Name + "` runs it again)"
	case common.ApplicationDeleting:
		return hasFailed, "the Application is being deleted"
	}
	return keepWaiting, ""
}

// notReadyMessage is the message of condition typ when it is not True,
// else of Ready, else the phase.
func notReadyMessage(app *v1beta1.Application, typ string) string {
	for _, t := range []string{typ, common.ConditionReady} {
		if c := meta.FindStatusCondition(app.Status.Conditions, t); c != nil && c.Status != metav1.ConditionTrue && c.Message != "" {
			return oneLine(c.Message)
		}
	}
	return "phase " + phaseText(app)
}

// appWaiter follows one Application until judge settles.
type appWaiter struct {
	reader   client.Reader
	key      client.ObjectKey
	target   waitTarget
	interval time.Duration
	progress progress
	// timeout is only quoted in the timeout error; ctx enforces it.
	timeout time.Duration
}

// wait reads the Application every interval, shows it on progress, and
// returns once it runs (nil error), is invalid (*UserError), failed or is
// gone (error), or ctx ends (error saying where it was stuck). took is
// the time spent.
func (w *appWaiter) wait(ctx context.Context) (*v1beta1.Application, time.Duration, error) {
	start := time.Now()
	defer w.progress.Done()
	id := w.key.String()
	var last *v1beta1.Application
	var lastErr error
	for {
		app := &v1beta1.Application{}
		err := w.reader.Get(ctx, w.key, app)
		switch {
		case err == nil:
			last, lastErr = app, nil
			w.progress.Update(app, time.Since(start))
			switch v, msg := judge(app, w.target); v {
			case isRunning:
				return app, time.Since(start), nil
			case isInvalid:
				return app, time.Since(start), userErrorf("Application %s is invalid %s", id, msg)
			case hasFailed:
				return app, time.Since(start), fmt.Errorf("Application %s: %s", id, msg)
			}
		case apierrors.IsNotFound(err):
			return nil, time.Since(start), fmt.Errorf("Application %s was deleted while waiting for it", id)
		case ctx.Err() == nil:
			// A transient read error: keep trying until the deadline.
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return last, time.Since(start), w.timeoutError(ctx, last, lastErr)
		case <-time.After(w.interval):
		}
	}
}

// timeoutError says how far the Application got when the wait ended.
func (w *appWaiter) timeoutError(ctx context.Context, last *v1beta1.Application, lastErr error) error {
	why := "timed out after " + w.timeout.String()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		why = "interrupted"
	}
	where := "never read"
	if last != nil {
		where = "phase " + phaseText(last)
		if last.Status.ObservedGeneration < w.target.generation {
			where += fmt.Sprintf(", the controller has not seen generation %d yet (is oamflow-controller running?)", w.target.generation)
		} else if msg := notReadyMessage(last, common.ConditionReady); !strings.HasPrefix(msg, "phase ") {
			where += ": " + msg
		}
	}
	if lastErr != nil {
		where += fmt.Sprintf(" (last read failed: %v)", lastErr)
	}
	return fmt.Errorf("%s waiting for Application %s: %s; `oamflow status %s -n %s` shows more", why, w.key, where, w.key.Name, w.key.Namespace)
}
