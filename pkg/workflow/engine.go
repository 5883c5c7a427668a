// Package workflow runs an Application's workflow on
// github.com/kubevela/workflow: its executor drives the steps (StepByStep
// or DAG, sub-steps in step groups, if/always, timeout, dependsOn, inputs
// and outputs, suspend/resume/terminate), its CUE providers serve the step
// templates (vela/kube, vela/builtin, vela/http, vela/util, …), and
// oamflow adds vela/oam, whose #ApplyComponent renders, applies and waits
// for one component of the Application through a Deployer.
//
// State lives in two places, so a controller restart resumes where it
// stopped without re-running succeeded steps: the step statuses in
// Application status.workflow, and the workflow variables (step outputs,
// suspend timestamps, side-effect results) in the ConfigMap
// "workflow-<app>-context" in the Application's namespace, owned by the
// Application. That ConfigMap is written once a step keeps something in
// it: a workflow whose steps keep nothing has none (contextStore).
//
// Beyond KubeVela: every step without a timeout gets a default one, a step
// that keeps failing fails the workflow after a retry limit, a step whose
// rendering or input fails ends the workflow as failed with the reason, and
// a workflow whose remaining steps all wait for inputs nobody can produce
// fails instead of running forever.
package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/kubevela/pkg/cue/cuex"
	monitorContext "github.com/kubevela/pkg/monitor/context"
	"github.com/kubevela/pkg/util/singleton"
	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	wfContext "github.com/kubevela/workflow/pkg/context"
	"github.com/kubevela/workflow/pkg/cue/process"
	"github.com/kubevela/workflow/pkg/executor"
	"github.com/kubevela/workflow/pkg/generator"
	"github.com/kubevela/workflow/pkg/providers"
	providertypes "github.com/kubevela/workflow/pkg/providers/types"
	wftypes "github.com/kubevela/workflow/pkg/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	oamcuex "github.com/oamflow/oamflow/pkg/cuex"
	"github.com/oamflow/oamflow/pkg/egress"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/multicluster"
)

// DefaultStepTimeout is the timeout of steps that set none (not suspend
// steps nor step groups), unless the controller is told otherwise.
const DefaultStepTimeout = 10 * time.Minute

// DefaultMaxStepRetries is how many times a failing step is retried before
// the workflow fails.
const DefaultMaxStepRetries = 10

// SetupLibrary configures the process-wide state of kubevela/workflow
// v0.7.2, which has no per-instance settings for it:
//
//   - its client (singleton.KubeClient, used by its workflow context store
//     and, without a client in the context, by vela/kube): a router that
//     uses the client of the Engine whose run is calling (Execute puts it
//     in the context), falling back to c (which should read from the API
//     server, not a cache);
//   - its own step retry limit, lifted: each Engine enforces its own
//     (Options.MaxStepRetries) so that two managers in one process do not
//     share one;
//   - no loading of external CUE packages;
//   - its logs (klog, which it logs through): to controller-runtime's
//     logger named "workflow", through LibraryLogger, so that a failed
//     step's parameters (a Secret given to apply-object) are not logged.
//
// maxStepRetries (when > 0) becomes the retry limit of Engines built after
// this call without Options.MaxStepRetries. Call it at process start,
// before NewEngine; a second manager in the same process may call it again
// (its own client and default) without disturbing Engines already built,
// as long as each manager's SetupLibrary and NewEngine calls are not
// interleaved with another's.
func SetupLibrary(c client.Client, maxStepRetries int) {
	singleton.KubeClient.Set(&libraryClient{Client: c, maxStepRetries: maxStepRetries})
	providers.EnableExternalPackageForDefaultCompiler = false
	providers.EnableExternalPackageWatchForDefaultCompiler = false
	wftypes.MaxWorkflowStepErrorRetryTimes = math.MaxInt32
	klog.SetLogger(LibraryLogger(ctrl.Log.WithName("workflow")))
}

// runClientKey carries the client of the Engine running a workflow pass.
type runClientKey struct{}

// libraryClient is the library's process-wide client: every call uses the
// client of the calling run (runClientKey in the context), else Client.
type libraryClient struct {
	client.Client
	// maxStepRetries is the default of Options.MaxStepRetries (0: none).
	maxStepRetries int
}

func (l *libraryClient) pick(ctx context.Context) client.Client {
	if c, ok := ctx.Value(runClientKey{}).(client.Client); ok && c != nil {
		return c
	}
	return l.Client
}

func (l *libraryClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return l.pick(ctx).Get(ctx, key, obj, opts...)
}

func (l *libraryClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return l.pick(ctx).List(ctx, list, opts...)
}

func (l *libraryClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return l.pick(ctx).Create(ctx, obj, opts...)
}

func (l *libraryClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return l.pick(ctx).Update(ctx, obj, opts...)
}

func (l *libraryClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return l.pick(ctx).Patch(ctx, obj, patch, opts...)
}

func (l *libraryClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return l.pick(ctx).Delete(ctx, obj, opts...)
}

func (l *libraryClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	return l.pick(ctx).DeleteAllOf(ctx, obj, opts...)
}

// defaultMaxStepRetries is the retry limit of an Engine built without
// Options.MaxStepRetries: SetupLibrary's, else DefaultMaxStepRetries.
func defaultMaxStepRetries() int {
	if l, ok := singleton.KubeClient.Get().(*libraryClient); ok && l.maxStepRetries > 0 {
		return l.maxStepRetries
	}
	return DefaultMaxStepRetries
}

// Options configure an Engine.
type Options struct {
	// DefaultStepTimeout is given to steps without timeout (see PlanOf);
	// zero means none.
	DefaultStepTimeout time.Duration
	// MaxStepRetries is how many times a step failing with a retryable
	// error runs before it fails for good (reason FailedAfterRetries); 0
	// means the value given to SetupLibrary, else DefaultMaxStepRetries.
	MaxStepRetries int
	// Builtins are step templates by type, used when the Application's own
	// definitions lack the type (oamflow's embedded workflowsteps). The
	// engine always knows "suspend".
	Builtins map[string]string
	// Helm serves the vela/helm step package (nil: its actions fail saying
	// Helm is not configured).
	Helm helmspec.Releases
	// HTTP is the outbound policy of vela/http and op.#HTTPDo requests
	// (nil: egress.Default(), which refuses loopback and link-local
	// targets).
	HTTP *egress.Policy
	// Clients are the clients of target clusters acting for the
	// Application of the run (package tenancy's Clients: the Tenant is in
	// the context Execute is given); the vela/kube, vela/http and legacy
	// vela/op providers reach clusters through them. Nil: the Engine's own
	// client, hub only. Workflow contexts always use the Engine's client.
	Clients multicluster.ClusterClients
}

// Engine runs workflows. It is safe for concurrent use by reconciles of
// different Applications.
type Engine struct {
	client   client.Client
	compiler *cuex.Compiler
	// checker compiles step templates as def vet does, to find what they
	// use that oamflow does not provide (unprovided.go).
	checker  *oamcuex.Engine
	opts     Options
	failures *failureCounts
	// noContext remembers the Applications, by UID, whose running
	// workflow has no context ConfigMap (contextMemo).
	noContext *contextMemo
	// cueSteps runs every step through kubevela/workflow's CUE task
	// runner, none natively (native.go); tests compare the two.
	cueSteps bool
}

// NewEngine returns an Engine storing workflow contexts through c.
// SetupLibrary must have been called.
func NewEngine(c client.Client, opts Options) (*Engine, error) {
	comp, err := NewCompiler(WithHelm(opts.Helm), WithHTTPPolicy(opts.HTTP))
	if err != nil {
		return nil, err
	}
	if opts.MaxStepRetries <= 0 {
		opts.MaxStepRetries = defaultMaxStepRetries()
	}
	return &Engine{client: c, compiler: comp, checker: oamcuex.NewEngine(), opts: opts, failures: &failureCounts{byApp: map[string]map[string]int{}},
		noContext: &contextMemo{after: map[types.UID]string{}}}, nil
}

// Options returns the options the Engine was built with.
func (e *Engine) Options() Options { return e.opts }

// TemplateSource returns the CUE template of a step type; "" with a nil
// error means the Application has no definition of that type (the engine's
// built-ins are tried next).
type TemplateSource func(ctx context.Context, stepType string) (string, error)

// Run is one pass of an Application's workflow.
type Run struct {
	// App owns the workflow (name, namespace, UID, labels, annotations).
	App *v1beta1.Application
	// Revision is the ApplicationRevision this run deploys.
	Revision string
	// Plan is the workflow (see PlanOf).
	Plan Plan
	// Status is the current status.workflow of this run; nil starts a new
	// run. A status for another revision must be reset by the caller
	// (Reset) before it starts a new run: a new run's context ConfigMap is
	// taken as absent without reading it.
	Status *common.WorkflowStatus
	// Templates resolves step types.
	Templates TemplateSource
	// Deployer deploys the Application's components.
	Deployer Deployer
	// Context holds extra fields of the CUE `context` of step templates
	// (appName, appRevision, …); name and namespace are the Application's.
	Context map[string]any
}

// Result is what one pass did.
type Result struct {
	// Status is the new status.workflow.
	Status common.WorkflowStatus
	// RequeueAfter is when to run the next pass (0: nothing to wait for —
	// the run finished or is suspended without a resume time).
	RequeueAfter time.Duration
	// Services is the health of the components applied in this pass.
	Services []common.ApplicationComponentStatus
}

// ContextName is the name of the ConfigMap holding the workflow variables
// of Application app.
func ContextName(app string) string { return "workflow-" + app + "-context" }

func cacheKey(app *v1beta1.Application) string { return app.Name + "-" + app.Namespace }

// Reset forgets the workflow state of app so the next run starts afresh:
// it deletes the context ConfigMap and the engine's in-memory state.
func (e *Engine) Reset(ctx context.Context, app *v1beta1.Application) error {
	Forget(app)
	e.failures.forget(app)
	e.noContext.forget(app.UID)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ContextName(app.Name), Namespace: app.Namespace}}
	if err := e.client.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting workflow context ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return nil
}

// Forget drops the engine's in-memory state of app's workflow (retry
// counters, the step-count cache guarding against stale reads). Call it
// when a status computed by Execute could not be stored.
func Forget(app *v1beta1.Application) {
	executor.StepStatusCache.Delete(cacheKey(app))
	wfContext.CleanupMemoryStore(app.Name, app.Namespace)
}

// Execute runs the workflow as far as it can go now and returns the new
// status. A finished run is returned unchanged. Errors are transient
// (the API server could not be reached, …): retry the pass; everything
// about the Application itself is reported in the status.
func (e *Engine) Execute(ctx context.Context, run Run) (Result, error) {
	app := run.App
	if run.Status != nil && run.Status.Finished {
		return Result{Status: *run.Status.DeepCopy()}, nil
	}
	status := toRunStatus(run.Status)
	store := &contextStore{Client: e.client, key: client.ObjectKey{Namespace: app.Namespace, Name: ContextName(app.Name)},
		creating: func() { e.noContext.forget(app.UID) }}
	switch {
	case run.Status == nil:
		// A new run starts from an empty context, not read: Reset
		// deleted the last run's ConfigMap, and any other is replaced
		// (contextStore.assumed).
		store.absent, store.assumed = true, true
	case Started(run.Status) && e.noContext.absent(app.UID, run.Status):
		// This engine's last pass of the run ended without the
		// ConfigMap, and the status is the one that pass returned: not
		// read again (and any there all the same replaced, as above).
		store.absent, store.assumed = true, true
	case Started(run.Status):
		cm := &corev1.ConfigMap{}
		err := e.client.Get(ctx, store.key, cm)
		store.absent = apierrors.IsNotFound(err)
		switch {
		case err == nil:
			status.ContextBackend = &corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: app.Namespace, Name: cm.Name, UID: cm.UID}
			base := cm.DeepCopy()
			if pruneSideEffects(cm, &status) {
				if err := e.client.Patch(ctx, cm, client.MergeFrom(base)); err != nil {
					return Result{}, fmt.Errorf("pruning workflow context ConfigMap %s/%s: %w", app.Namespace, cm.Name, err)
				}
			}
		case !apierrors.IsNotFound(err):
			return Result{}, fmt.Errorf("reading workflow context ConfigMap %s/%s: %w", app.Namespace, ContextName(app.Name), err)
		}
	}
	instance := &wftypes.WorkflowInstance{
		WorkflowMeta: wftypes.WorkflowMeta{
			Name:        app.Name,
			Namespace:   app.Namespace,
			Annotations: app.Annotations,
			Labels:      app.Labels,
			UID:         app.UID,
			ChildOwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1beta1.GroupVersion.String(),
				Kind:       "Application",
				Name:       app.Name,
				UID:        app.UID,
				Controller: ptr.To(true),
			}},
		},
		Mode:   &run.Plan.Mode,
		Steps:  run.Plan.Steps,
		Status: status,
	}
	executor.InitializeWorkflowInstance(instance)

	services := &serviceCollector{}
	rv := &runValues{deployer: run.Deployer, services: services}
	if run.App != nil && run.Status != nil {
		// The health the earlier passes of this run reported (the
		// controller resets status.services when a run starts).
		rv.earlier = run.App.Status.Services
	}
	rctx := withRun(ctx, rv)
	// The library's context store and providers use this Engine's client,
	// writing the context ConfigMap only when it holds something.
	rctx = context.WithValue(rctx, runClientKey{}, client.Client(store))
	clients := e.opts.Clients
	if clients == nil {
		clients = multicluster.HubOnly{Hub: e.client}
	}
	rctx = context.WithValue(rctx, providertypes.KubeClientKey, &clusterRouter{Client: e.client, clients: clients})
	rctx = wftypes.SetNamespaceInCtx(rctx, app.Namespace)
	rctx = providertypes.WithLabelParams(rctx, map[string]string{
		v1beta1.LabelAppName:      app.Name,
		v1beta1.LabelAppNamespace: app.Namespace,
		v1beta1.LabelAppRevision:  run.Revision,
	})
	rctx = context.WithValue(rctx, providertypes.KubeHandlersKey, &providertypes.KubeHandlers{
		Apply: func(ctx context.Context, _ client.Client, cluster, _ string, objs ...*unstructured.Unstructured) error {
			return run.Deployer.Apply(ctx, cluster, objs)
		},
		Delete: func(ctx context.Context, _ client.Client, cluster, _ string, obj *unstructured.Unstructured) error {
			c, err := clients.Client(ctx, cluster)
			if err != nil {
				return err
			}
			return c.Delete(ctx, obj)
		},
	})
	mctx := monitorContext.NewTraceContext(rctx, "workflow/"+app.Namespace+"/"+app.Name)
	mctx.V(1)
	pctx := process.NewContext(process.ContextData{
		Name:           app.Name,
		Namespace:      app.Namespace,
		WorkflowName:   app.Name,
		PublishVersion: app.Annotations[v1beta1.AnnoPublishVersion],
		CustomData:     run.Context,
	})
	templates := loader{src: run.Templates, builtins: e.opts.Builtins}
	rv.liveReturns = readsLiveReturns(ctx, run.Plan, templates)
	runners, err := generator.GenerateRunners(mctx, instance, wftypes.StepGeneratorOptions{
		ProcessCtx:     pctx,
		TemplateLoader: templates,
		Compiler:       e.compiler,
		LogLevel:       1,
	})
	if err != nil {
		st := fromRunStatus(instance.Status, run.Revision)
		st.Status = wfv1alpha1.WorkflowStateFailed
		st.Message = fmt.Sprintf("preparing the workflow steps: %v", err)
		e.finish(&st, app)
		return Result{Status: st}, nil
	}
	runners = e.nativeRunners(ctx, instance, runners, templates, pctx)
	// Steps whose dependency failed are skipped, saying which (skip.go).
	g := newGuard(run.Plan)
	g.unprovided = e.unprovided(ctx, run.Plan, templates)
	g.flow = newDataFlow(ctx, run.Plan, run.Deployer)
	rv.flow = g.flow
	runners = g.wrap(runners)
	// The library skips a pass when the status has fewer steps than its
	// last pass saw (a stale read). Here a stale read cannot be stored (the
	// status patch is optimistic), and a restart from a step shrinks the
	// status on purpose, so the guard is turned off.
	executor.StepStatusCache.Delete(cacheKey(app))
	exec := executor.New(instance)
	state, err := exec.ExecuteRunners(mctx, runners)
	if err != nil {
		Forget(app)
		return Result{}, fmt.Errorf("running the workflow of %s/%s: %w", app.Namespace, app.Name, err)
	}
	res := Result{Services: services.list()}
	e.noContext.forget(app.UID)
	if state == wfv1alpha1.WorkflowStateSkipped {
		// The status read was older than the engine's last pass: keep it
		// and come back when the newer one is visible.
		if run.Status != nil {
			res.Status = *run.Status.DeepCopy()
		}
		res.RequeueAfter = exec.GetBackoffWaitTime()
		return res, nil
	}
	instance.Status.Phase = state
	restoreFailures(&instance.Status, rv)
	retriesSpent := e.failures.count(app, &instance.Status, e.opts.MaxStepRetries)
	if state == wfv1alpha1.WorkflowStateExecuting && failStuck(&instance.Status, g) {
		state = wfv1alpha1.WorkflowStateFailed
		instance.Status.Phase = state
	}
	st := fromRunStatus(instance.Status, run.Revision)
	switch state {
	case wfv1alpha1.WorkflowStateSucceeded, wfv1alpha1.WorkflowStateFailed, wfv1alpha1.WorkflowStateTerminated:
		e.finish(&st, app)
	case wfv1alpha1.WorkflowStateSuspending:
		res.RequeueAfter = exec.GetSuspendBackoffWaitTime()
	default:
		res.RequeueAfter = exec.GetBackoffWaitTime()
		if retriesSpent {
			// A step just failed for good: the next pass ends the run
			// (or goes on with the steps that do not depend on it).
			res.RequeueAfter = time.Second
		}
	}
	if st.Status == wfv1alpha1.WorkflowStateFailed && st.Message == "" {
		if path, step, ok := FailedStep(&st); ok {
			st.Message = fmt.Sprintf("step %s failed (%s): %s", path, step.Reason, step.Message)
		}
	}
	res.Status = st
	if store.isAbsent() && !st.Finished {
		e.noContext.remember(app.UID, &st)
	}
	return res, nil
}

// readsLiveReturns reports whether a step of plan may read the live
// objects an apply-component step returns (its provider's $returns.output
// and .outputs): unless every step is an apply-component of the built-in
// template (which reads them only for step outputs) declaring no outputs.
// A default workflow's steps never do, and filling a component's live
// objects into its step's CUE value is most of what such a step costs.
func readsLiveReturns(ctx context.Context, plan Plan, templates loader) bool {
	reads := func(typ string, outputs int) bool {
		return outputs > 0 || (typ != StepTypeStepGroup && typ != StepTypeApplyComponent)
	}
	for _, st := range plan.Steps {
		if reads(st.Type, len(st.Outputs)) {
			return true
		}
		for _, sub := range st.SubSteps {
			if reads(sub.Type, len(sub.Outputs)) {
				return true
			}
		}
	}
	return !templates.isBuiltin(ctx, StepTypeApplyComponent)
}

// outputFailure starts the message kubevela/workflow gives a failed step
// whose outputs it could not read, in place of the step's own.
const outputFailure = "failed to get output from "

// restoreFailures puts back the message a step failed with (fail) where
// kubevela/workflow replaced it because the step's outputs could not be
// read (they cannot: the step failed).
func restoreFailures(st *wfv1alpha1.WorkflowRunStatus, rv *runValues) {
	fix := func(s *wfv1alpha1.StepStatus) {
		if s.Phase != wfv1alpha1.WorkflowStepPhaseFailed || !strings.HasPrefix(s.Message, outputFailure) {
			return
		}
		if msg, ok := rv.failure(s.ID); ok {
			s.Message = msg
		}
	}
	for i := range st.Steps {
		fix(&st.Steps[i].StepStatus)
		for j := range st.Steps[i].SubStepsStatus {
			fix(&st.Steps[i].SubStepsStatus[j])
		}
	}
}

func (e *Engine) finish(st *common.WorkflowStatus, app *v1beta1.Application) {
	st.Finished = true
	st.EndTime = metav1.Now()
	Forget(app)
	e.failures.forget(app)
	e.noContext.forget(app.UID)
}

// contextMemo remembers, per Application UID, that the workflow context
// ConfigMap did not exist when this engine's last pass of the run ended,
// with the status that pass returned (as JSON: what a stored and re-read
// status compares equal to). A later pass given that same status skips
// reading the ConfigMap: nothing but a pass creates it, and a pass made
// elsewhere (another controller, a shard the Application moved to and
// back) or a status that could not be stored leaves another status. It is
// forgotten when a pass starts, tries to create the ConfigMap, the run
// finishes or is reset, so it holds the runs this engine has under way.
type contextMemo struct {
	mu sync.Mutex
	// after is the status each run's last pass returned, as JSON.
	after map[types.UID]string
}

func statusKey(st *common.WorkflowStatus) string {
	b, err := json.Marshal(st)
	if err != nil {
		return ""
	}
	return string(b)
}

// absent reports whether the ConfigMap is known absent for a pass given st.
func (m *contextMemo) absent(uid types.UID, st *common.WorkflowStatus) bool {
	if uid == "" || st == nil {
		return false
	}
	m.mu.Lock()
	want, ok := m.after[uid]
	m.mu.Unlock()
	return ok && want != "" && want == statusKey(st)
}

func (m *contextMemo) remember(uid types.UID, st *common.WorkflowStatus) {
	if uid == "" {
		return
	}
	key := statusKey(st)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.after[uid] = key
}

func (m *contextMemo) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.after, uid)
}

// failureCounts counts, per Application and step ID, the passes in which
// a step failed with a retryable error (the library's own counter is
// process-wide; see SetupLibrary). Like the library's, it lives in memory:
// a controller restart gives failing steps a fresh allowance.
type failureCounts struct {
	mu    sync.Mutex
	byApp map[string]map[string]int
}

// count adds this pass's retryable failures of st, numbering the attempt
// in the step's message, and fails for good (reason FailedAfterRetries)
// every step that reached limit, terminating the run as the library does
// with its own limit (the steps left are skipped); it reports whether any
// did.
func (f *failureCounts) count(app *v1beta1.Application, st *wfv1alpha1.WorkflowRunStatus, limit int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := cacheKey(app)
	spent := false
	check := func(s *wfv1alpha1.StepStatus) {
		if s.Phase != wfv1alpha1.WorkflowStepPhaseFailed || s.Reason != wftypes.StatusReasonExecute {
			return
		}
		if f.byApp[key] == nil {
			f.byApp[key] = map[string]int{}
		}
		f.byApp[key][s.ID]++
		n := f.byApp[key][s.ID]
		if n >= limit {
			s.Reason = wftypes.StatusReasonFailedAfterRetries
			s.Message = fmt.Sprintf("failed after %d attempts: %s", n, s.Message)
			st.Terminated = true
			spent = true
			return
		}
		// The next pass is a new attempt: it performs the step's actions
		// again (pruneSideEffects), so the message says which one failed.
		s.Message = fmt.Sprintf("attempt %d of %d failed: %s", n, limit, s.Message)
	}
	for i := range st.Steps {
		for j := range st.Steps[i].SubStepsStatus {
			check(&st.Steps[i].SubStepsStatus[j])
		}
		check(&st.Steps[i].StepStatus)
	}
	return spent
}

func (f *failureCounts) forget(app *v1beta1.Application) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.byApp, cacheKey(app))
}

// failStuck ends a run whose unfinished steps are all pending (waiting for
// inputs or dependencies that no remaining step can produce): each pending
// step that g skips (a step it depends on failed) is skipped saying so,
// every other fails with reason Input, and the run is terminated. It
// reports whether it did so.
func failStuck(st *wfv1alpha1.WorkflowRunStatus, g *guard) bool {
	var pending []*wfv1alpha1.StepStatus
	byName := map[string]wfv1alpha1.StepStatus{}
	for i := range st.Steps {
		s := &st.Steps[i]
		byName[s.Name] = s.StepStatus
		if len(s.SubStepsStatus) > 0 {
			for j := range s.SubStepsStatus {
				sub := &s.SubStepsStatus[j]
				byName[sub.Name] = *sub
				switch {
				case sub.Phase == wfv1alpha1.WorkflowStepPhasePending:
					pending = append(pending, sub)
				case !StepFinished(sub.Phase, sub.Reason):
					return false
				}
			}
			if s.Phase == wfv1alpha1.WorkflowStepPhaseSuspending {
				return false
			}
			continue
		}
		switch {
		case s.Phase == wfv1alpha1.WorkflowStepPhasePending:
			pending = append(pending, &s.StepStatus)
		case !StepFinished(s.Phase, s.Reason):
			return false
		}
	}
	if len(pending) == 0 {
		return false
	}
	var names []string
	for _, p := range pending {
		if b, blocked := g.blocked(p.Name, byName); blocked {
			*p = b.status(p.Name, byName)
			continue
		}
		what := strings.TrimPrefix(strings.TrimPrefix(p.Message, "Pending on Input: "), "Pending on DependsOn: ")
		p.Phase = wfv1alpha1.WorkflowStepPhaseFailed
		p.Reason = wftypes.StatusReasonInput
		p.Message = fmt.Sprintf("waits for %q, which no remaining step can produce", what)
		names = append(names, p.Name)
	}
	for i := range st.Steps {
		s := &st.Steps[i]
		if len(s.SubStepsStatus) > 0 && s.Phase == wfv1alpha1.WorkflowStepPhasePending {
			s.Phase, s.Reason = groupPhase(s.SubStepsStatus)
		}
	}
	st.Terminated = true
	if len(names) > 0 {
		st.Message = fmt.Sprintf("steps %s wait for inputs that no remaining step can produce", strings.Join(names, ", "))
	}
	return true
}

// groupPhase is the phase and reason of a step group whose sub-steps have
// all finished: failed (reason Input) when one failed, skipped when all
// were, else succeeded.
func groupPhase(subs []wfv1alpha1.StepStatus) (wfv1alpha1.WorkflowStepPhase, string) {
	skipped := 0
	for _, s := range subs {
		switch s.Phase {
		case wfv1alpha1.WorkflowStepPhaseFailed:
			return wfv1alpha1.WorkflowStepPhaseFailed, wftypes.StatusReasonInput
		case wfv1alpha1.WorkflowStepPhaseSkipped:
			skipped++
		}
	}
	if skipped == len(subs) {
		return wfv1alpha1.WorkflowStepPhaseSkipped, wftypes.StatusReasonSkip
	}
	return wfv1alpha1.WorkflowStepPhaseSucceeded, ""
}

// builtinSuspend is the template of the suspend step when the Application
// has no definition for it.
const builtinSuspend = `import "vela/builtin"

suspend: builtin.#Suspend & {
	$params: {
		if parameter.duration != _|_ {
			duration: parameter.duration
		}
		if parameter.message != _|_ {
			message: parameter.message
		}
	}
}

parameter: {
	duration?: string
	message?:  string
}
`

// loader resolves step templates: the Application's definitions, then the
// built-ins.
type loader struct {
	src      TemplateSource
	builtins map[string]string
}

func (l loader) LoadTemplate(ctx context.Context, name string) (string, error) {
	if l.src != nil {
		t, err := l.src(ctx, name)
		if err != nil {
			return "", err
		}
		if t != "" {
			return t, nil
		}
	}
	if t, ok := l.builtins[name]; ok && t != "" {
		return t, nil
	}
	if name == StepTypeSuspend {
		return builtinSuspend, nil
	}
	return "", fmt.Errorf("workflow step type %q: no WorkflowStepDefinition found", name)
}

// isBuiltin reports whether the template this run uses for step type typ
// is the engine's built-in one (Options.Builtins), whether it comes from
// there or from an installed definition of the same text.
func (l loader) isBuiltin(ctx context.Context, typ string) bool {
	t, err := l.LoadTemplate(ctx, typ)
	return err == nil && t != "" && t == l.builtins[typ]
}
