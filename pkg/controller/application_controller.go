// Package controller reconciles Applications: it parses an Application
// against its definitions, keeps its history as ApplicationRevisions, runs
// its workflow (package workflow), and then watches over what the workflow
// deployed — health, drift, and garbage left by older revisions — until
// the Application changes or is deleted.
//
// One Reconcile reads as a list of small phases over a scope (parse,
// revision, policy, identity, render, workflow, adopt, gc, statekeep,
// health; application_phases.go); each phase fills the scope fields the
// next ones read, sets its own condition (Parsed, Revision, Policy,
// Identity, Render, Workflow) and returns what the loop does next: go on,
// settle (write the status as it is), or reread (write nothing, start
// over from a fresh read). A deferred function sets Ready, derives
// status.status, emits an Event when the phase changed, and patches the
// status once (application_status.go holds the pure setters it uses).
// Panics are recovered there and reported. Deletion is
// application_delete.go.
package controller

import (
	"context"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
	"github.com/oamflow/oamflow/pkg/errclass"
	"github.com/oamflow/oamflow/pkg/health"
	"github.com/oamflow/oamflow/pkg/leanwrite"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/observed"
	"github.com/oamflow/oamflow/pkg/placement"
	"github.com/oamflow/oamflow/pkg/render"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
	"github.com/oamflow/oamflow/pkg/revision"
	"github.com/oamflow/oamflow/pkg/sharding"
	"github.com/oamflow/oamflow/pkg/tenancy"
)

// Finalizer holds an Application until everything it deployed is gone.
const Finalizer = "oamflow.dev/application"

// Options configure the Reconciler.
type Options struct {
	// RevisionLimit is how many ApplicationRevisions are kept per
	// Application unless a garbage-collect policy's applicationRevisionLimit
	// says otherwise (0: revision.DefaultLimit).
	RevisionLimit int
	// StepTimeout is the timeout of workflow steps that set none (0: none).
	StepTimeout time.Duration
	// UnhealthyRequeue is how soon an unhealthy Application is checked
	// again (0: 10s).
	UnhealthyRequeue time.Duration
	// ClusterUnreachableAfter is how long a target cluster may stay
	// unreachable before the components there are unhealthy with reason
	// ClusterUnreachable (0: DefaultClusterUnreachableAfter). Until then
	// their last status stands and Ready says the health check failed.
	ClusterUnreachableAfter time.Duration
	// Concurrency bounds parallel reconciles; it also sizes the pool of CUE
	// engines (0: 1).
	Concurrency int
	// Budgets bound each Application (appfile.Budgets; zero: the defaults),
	// as the webhook's do.
	Budgets appfile.Budgets
	// Abandoned counts the workers' timed-out CUE evaluations still
	// running (cuex.WithAbandoned; shared with the webhook by the manager;
	// nil: each worker's engine counts its own).
	Abandoned *cuex.Abandoned
	// Memo keeps the results of the workers' CUE evaluations
	// (cuex.WithMemo; shared with the webhook by the manager, so that an
	// Application's first reconcile finds what its admission evaluated;
	// nil: the workers share one of their own).
	Memo *cuex.Memo
	// Tenancy says who the controller acts as for each Application and
	// where it may act (package tenancy); the zero value is single-tenant
	// mode, as before tenancy existed.
	Tenancy tenancy.Config
	// Shard is the shard this controller reconciles (package sharding;
	// the manager's cache holds only its Applications): it says so in
	// each Application's Scheduled condition. Empty: no sharding.
	Shard string
}

// DefaultClusterUnreachableAfter is Options.ClusterUnreachableAfter's
// default (the controller's --cluster-unreachable-after).
const DefaultClusterUnreachableAfter = 5 * time.Minute

// Option injects a dependency.
type Option func(*Reconciler)

// Metrics observes reconciles (package metrics' Recorder implements it).
type Metrics interface {
	// ObservePhase records one phase (parse, revision, ...) of a reconcile.
	ObservePhase(phase string, d time.Duration, err error)
	// ObserveReconcile records a whole reconcile: the Application as it
	// was found (after the finalizer write) and as it is left.
	ObserveReconcile(before, after *v1beta1.Application, d time.Duration, err error)
}

type noMetrics struct{}

func (noMetrics) ObservePhase(string, time.Duration, error) {}

func (noMetrics) ObserveReconcile(_, _ *v1beta1.Application, _ time.Duration, _ error) {}

// WithMetrics makes the Reconciler report to m (default: nothing).
func WithMetrics(m Metrics) Option { return func(r *Reconciler) { r.metrics = m } }

// WithValidator replaces appfile.Validate.
func WithValidator(v Validator) Option { return func(r *Reconciler) { r.validator = v } }

// WithSources replaces the source of live definitions.
func WithSources(s SourceFactory) Option { return func(r *Reconciler) { r.sources = s } }

// WithRenderer replaces render.RenderComponent.
func WithRenderer(rd Renderer) Option { return func(r *Reconciler) { r.renderer = rd } }

// WithKeepers replaces the resourcekeeper factory.
func WithKeepers(k KeeperFactory) Option { return func(r *Reconciler) { r.keepers = k } }

// WithHealth replaces the component health checker.
func WithHealth(h HealthChecker) Option { return func(r *Reconciler) { r.health = h } }

// WithClusterClients sets the clients of target clusters (default: the hub
// only, through the Reconciler's reader-backed client).
func WithClusterClients(c multicluster.ClusterClients) Option {
	return func(r *Reconciler) { r.clients = c }
}

// WithHelm makes helm/helmchart components work: releases installs,
// upgrades and uninstalls the Helm releases behind rendered HelmRelease
// objects, and checker reports their health (default: such components fail
// with resourcekeeper.ErrNoReleaseHandler and are unhealthy).
func WithHelm(releases resourcekeeper.ReleaseHandler, checker health.ReleaseChecker) Option {
	return func(r *Reconciler) { r.releases, r.releaseHealth = releases, checker }
}

// WithFleetEvents makes changes of the cluster registry re-evaluate the
// Applications that select clusters by labels: secrets is the cache of the
// registry's cluster Secrets (multicluster.NewSecretCache). A member
// joining, detached, or whose labels changed enqueues only those
// Applications; whether their selection moved is decided by the parse
// phase (fleetMoved).
func WithFleetEvents(secrets cache.Cache) Option {
	return func(r *Reconciler) { r.fleet = secrets }
}

// WithReachabilityEvents makes a member cluster that stops answering,
// or answers again, re-check the Applications deployed there at once
// (those whose status.placement names it) instead of at their next
// resync: events carries the cluster's Secret (multicluster.Prober).
func WithReachabilityEvents(events <-chan event.TypedGenericEvent[*corev1.Secret]) Option {
	return func(r *Reconciler) { r.reachability = events }
}

// WithClock sets the clock that says how long a cluster has been
// unreachable (default: the real one).
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// WithClusterResolver sets how topology policies' clusterLabelSelector is
// resolved (default: it cannot be, and such deploy steps fail).
func WithClusterResolver(cr placement.Resolver) Option {
	return func(r *Reconciler) { r.resolver = cr }
}

// Reconciler reconciles Applications.
type Reconciler struct {
	client    client.Client
	direct    client.Client
	recorder  record.EventRecorder
	revisions *revision.Manager
	workflow  WorkflowRunner
	opts      Options

	validator Validator
	sources   SourceFactory
	renderer  Renderer
	keepers   KeeperFactory
	// releases and releaseHealth serve Helm components (WithHelm).
	releases      resourcekeeper.ReleaseHandler
	releaseHealth health.ReleaseChecker
	health        HealthChecker
	clients       multicluster.ClusterClients
	resolver      placement.Resolver
	engines       *cuex.Pool
	metrics       Metrics
	// fleet is the cache of cluster Secrets watched for registry changes
	// (WithFleetEvents; nil: none).
	fleet cache.Cache
	// reachability carries members whose reachability changed
	// (WithReachabilityEvents; nil: none).
	reachability <-chan event.TypedGenericEvent[*corev1.Secret]
	clock        clock.PassiveClock
	// hasher computes revision hashes, remembering the canonical JSON of
	// the definitions' specs across reconciles (the workers share it).
	hasher *revision.Hasher
}

// New returns a Reconciler. c reads Applications and definitions (a cached
// client is best: definitions are few and read at every parse, so the
// manager's cache serves them after the first read); direct must read
// from the API server without a cache (revisions, applied objects);
// systemNamespace is where shared definitions live (oamflow-system).
// Dependencies not given by options are the real packages: appfile.Parse
// against the cluster's definitions (then builtins, when not nil),
// render.RenderComponent, resourcekeeper.New and package health.
func New(c, direct client.Client, recorder record.EventRecorder, wf WorkflowRunner, systemNamespace string, builtins appfile.DefinitionSource, opts Options, with ...Option) *Reconciler {
	if opts.RevisionLimit <= 0 {
		opts.RevisionLimit = revision.DefaultLimit
	}
	if opts.UnhealthyRequeue <= 0 {
		opts.UnhealthyRequeue = 10 * time.Second
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 1
	}
	if opts.ClusterUnreachableAfter <= 0 {
		opts.ClusterUnreachableAfter = DefaultClusterUnreachableAfter
	}
	r := &Reconciler{
		client:    c,
		direct:    direct,
		recorder:  recorder,
		revisions: revision.NewManager(direct, direct),
		hasher:    revision.NewHasher(0),
		workflow:  wf,
		opts:      opts,
		validator: ValidatorFn(appfile.Validate),
		renderer:  RendererFn(render.RenderComponent),
		clients:   multicluster.HubOnly{Hub: direct},
		metrics:   noMetrics{},
		clock:     clock.RealClock{},
	}
	r.sources = SourceFactoryFn(func(app *v1beta1.Application) appfile.DefinitionSource {
		return appfile.Chain(appfile.NewClusterSource(c, app.Namespace, systemNamespace), builtins)
	})
	for _, o := range with {
		o(r)
	}
	if r.keepers == nil {
		clients, releases := r.clients, r.releases
		namespaces := resourcekeeper.NewKnownNamespaces(0, nil)
		r.keepers = KeeperFactoryFn(func(app *v1beta1.Application, n int64, p resourcekeeper.Policies) (Keeper, error) {
			return resourcekeeper.New(app, n, resourcekeeper.Options{Clients: clients, Trackers: direct, Policies: p, Releases: releases, Namespaces: namespaces})
		})
	}
	if r.health == nil {
		r.health = defaultHealth{clients: r.clients, releases: r.releaseHealth}
	}
	// The workers' Engines share one bounded memo of results (a resync
	// finds what any worker rendered before) and forget their CUE graphs
	// after each reconcile (see cuex.Engine.Forget).
	memo := opts.Memo
	if memo == nil {
		memo = cuex.NewMemo(0)
	}
	r.engines = cuex.NewPool(opts.Concurrency, cuex.WithAbandoned(opts.Abandoned), cuex.WithMemo(memo))
	return r
}

// SetupWithManager registers the Reconciler for Applications. Besides
// spec changes it reacts to label and annotation changes (publishVersion,
// restart), deletion, and the workflow operations users make on the
// status (suspend, resume, terminate, restart from a step); its own status
// writes do not trigger it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&v1beta1.Application{}).
		WithEventFilter(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			o, okO := e.ObjectOld.(*v1beta1.Application)
			n, okN := e.ObjectNew.(*v1beta1.Application)
			if !okO || !okN {
				return true
			}
			return needsReconcile(o, n)
		}}).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.Concurrency})
	if r.fleet != nil {
		b = b.WatchesRawSource(source.Kind(r.fleet, &corev1.Secret{},
			handler.TypedEnqueueRequestsFromMapFunc(r.appsSelectingByLabels), clusterChanged{}))
	}
	if r.reachability != nil {
		b = b.WatchesRawSource(source.Channel(r.reachability, handler.TypedEnqueueRequestsFromMapFunc(r.appsOnCluster)))
	}
	return b.Complete(r)
}

// appsOnCluster lists the Applications (from the cache) whose
// status.placement names the cluster s stands for.
func (r *Reconciler) appsOnCluster(ctx context.Context, s *corev1.Secret) []reconcile.Request {
	list := &v1beta1.ApplicationList{}
	if err := r.client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing Applications after a member cluster's reachability changed", "cluster", s.Name)
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		for _, p := range list.Items[i].Status.Placement {
			if p.Cluster == s.Name {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
				break
			}
		}
	}
	return out
}

// clusterChanged passes the registry events that can change a label
// selection: a cluster Secret created or deleted, or its labels changed.
type clusterChanged struct {
	predicate.TypedFuncs[*corev1.Secret]
}

func (clusterChanged) Create(event.TypedCreateEvent[*corev1.Secret]) bool { return true }

func (clusterChanged) Delete(event.TypedDeleteEvent[*corev1.Secret]) bool { return true }

func (clusterChanged) Update(e event.TypedUpdateEvent[*corev1.Secret]) bool {
	return !reflect.DeepEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
}

func (clusterChanged) Generic(event.TypedGenericEvent[*corev1.Secret]) bool { return false }

// appsSelectingByLabels lists the Applications (from the cache) with a
// topology policy selecting clusters by labels.
func (r *Reconciler) appsSelectingByLabels(ctx context.Context, _ *corev1.Secret) []reconcile.Request {
	list := &v1beta1.ApplicationList{}
	if err := r.client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing Applications after a cluster registry change")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if selectsByLabels(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// selectsByLabels reports whether app has a topology policy with a
// clusterLabelSelector (or clusterSelector). Policies that do not decode
// are the parse phase's to report.
func selectsByLabels(app *v1beta1.Application) bool {
	for _, p := range app.Spec.Policies {
		if p.Type != appfile.PolicyTopology {
			continue
		}
		props, err := appfile.DecodeProperties(p.Properties)
		if err != nil {
			continue
		}
		if t, err := placement.Parse(p.Name, props); err == nil && t.SelectsByLabels() {
			return true
		}
	}
	return false
}

// needsReconcile reports whether an update of an Application asks for a
// reconcile: the periodic resync, anything but a status write, or a
// workflow operation. Adding our finalizer asks for none: the reconcile
// that adds it (prepare) goes on; reconciling again on it would start
// over before the cache has that reconcile's status write (a stale read
// of the Application, read again from the API server). Its status write,
// which starts status.workflow, does ask for one, on a fresh read.
func needsReconcile(o, n *v1beta1.Application) bool {
	if o.ResourceVersion == n.ResourceVersion {
		// The periodic resync: health and drift are checked again.
		return true
	}
	if o.Generation != n.Generation || !n.DeletionTimestamp.Equal(o.DeletionTimestamp) ||
		!reflect.DeepEqual(o.Labels, n.Labels) || !reflect.DeepEqual(o.Annotations, n.Annotations) ||
		!reflect.DeepEqual(o.Finalizers, n.Finalizers) && !addsOurFinalizer(o.Finalizers, n.Finalizers) {
		return true
	}
	ow, nw := o.Status.Workflow, n.Status.Workflow
	if (ow == nil) != (nw == nil) {
		return true
	}
	if ow == nil {
		return false
	}
	return ow.Suspend != nw.Suspend || ow.Terminated != nw.Terminated || ow.Finished != nw.Finished ||
		len(nw.Steps) < len(ow.Steps) || ow.AppRevision != nw.AppRevision
}

// addsOurFinalizer reports whether after is before with Finalizer added
// (prepare's write), and nothing else.
func addsOurFinalizer(before, after []string) bool {
	return !slices.Contains(before, Finalizer) && slices.Equal(append(slices.Clone(before), Finalizer), after)
}

// scope is what one Reconcile learns; the comment on each field names the
// phase that fills it.
type scope struct {
	app    *v1beta1.Application
	before *v1beta1.Application
	log    logr.Logger
	engine *cuex.Engine

	// tenant is who acts for the Application and where (Reconcile);
	// tenantErr says why there is none (an invalid annotation).
	tenant    tenancy.Tenant
	tenantErr error

	// restart: the user asked to restart the workflow (prepare).
	restart bool
	// fresh: prepare wrote the Application (its finalizer), so app is
	// the API server's answer, not a possibly lagging cached read.
	fresh bool

	// parse: the latest revision before this reconcile, whether a new
	// revision may be made (live: the app was parsed against the live
	// definitions, or the fleet moved under its label selectors) and why,
	// the parsed app and the definitions it used.
	latest *v1beta1.ApplicationRevision
	// latestFresh: latest was read from the API server, not the cache.
	latestFresh bool
	live        bool
	why         string
	af          *appfile.AppFile
	defs        revision.Definitions
	// selection: the clusters its label selectors match, for the revision.
	selection placement.Selection
	// warnings are the validation warnings of a live parse (reported as
	// Warning events when a revision is made of it).
	warnings []string

	// revision: the revision to deploy, its number, whether it is new.
	rev    *v1beta1.ApplicationRevision
	revNum int64

	// policy: the resource policies, the revision limit and the Keeper.
	policies resourcekeeper.Policies
	revLimit int
	keeper   Keeper

	// render: the components rendered for the run's first pass.
	prerendered *renderCache

	// workflow, adopt: what this reconcile's run did.
	run runOutcome

	// gc, statekeep, health: what they found, for Ready.
	ready readyInput

	requeue time.Duration
}

// runOutcome is what the workflow and adopt phases did in this reconcile,
// for the phases after them.
type runOutcome struct {
	// finished: the workflow run finished in this reconcile (garbage
	// collection follows; drift and health wait for the next one).
	finished bool
	// applied: something may have been applied (a workflow pass ran, or
	// an adoption): the applied resources are read again.
	applied bool
}

func (s *scope) requeueAfter(d time.Duration) {
	if d > 0 && (s.requeue == 0 || d < s.requeue) {
		s.requeue = d
	}
}

// next is what a phase tells the loop to do after it.
type next int

const (
	// proceed runs the next phase.
	proceed next = iota
	// settle runs no further phase: the status computed so far is written
	// (the workflow waits, failed, or is suspended).
	settle
	// reread ends the reconcile writing nothing: the Application read was
	// older than the API server's; it is reconciled again from a fresh
	// read.
	reread
)

// phase is one step of Reconcile, named after what it reconciles.
type phase struct {
	name string
	run  func(ctx context.Context, s *scope) (next, error)
}

// phases are what Reconcile runs, in order, until one says otherwise.
func (r *Reconciler) phases() []phase {
	return []phase{
		{"parse", r.parse},
		{"revision", r.revision},
		{"policy", r.policy},
		{"identity", r.identity},
		{"render", r.render},
		{"workflow", r.runWorkflow},
		{"adopt", r.adopt},
		{"gc", r.collectGarbage},
		{"statekeep", r.keepState},
		{"health", r.checkHealth},
	}
}

// Reconcile brings one Application one step closer to what it asks for.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	log := ctrl.LoggerFrom(ctx)
	app := &v1beta1.Application{}
	if err := r.client.Get(ctx, req.NamespacedName, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// Every read and write made for the Application from here on acts as
	// its identity, within its scope (package tenancy).
	tenant, tenantErr := r.opts.Tenancy.TenantOf(app)
	if tenantErr == nil {
		ctx = tenancy.WithTenant(ctx, tenant)
	}
	if !app.DeletionTimestamp.IsZero() {
		if tenantErr != nil {
			return ctrl.Result{}, fmt.Errorf("deleting the resources of %s/%s: %w", app.Namespace, app.Name, tenantErr)
		}
		return r.reconcileDelete(ctx, app)
	}
	start := time.Now()
	s := &scope{app: app, log: log, tenant: tenant, tenantErr: tenantErr}
	if err := r.prepare(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	s.before = app.DeepCopy()
	if steady(app, s.restart) {
		// Its resync reads from the observed-state cache: nothing from
		// the API server unless something is to be written.
		ctx = observed.WithCachedReads(ctx)
	}
	if r.opts.Shard != "" {
		c := sharding.Running(r.opts.Shard)
		setCondition(app, c.Type, true, c.Reason, c.Message)
	}
	engine, err := r.engines.Get(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.engine = engine
	defer r.engines.Put(engine)
	ctx = appfile.WithEngine(ctx, s.engine)
	ctx = appfile.WithBudgets(ctx, r.opts.Budgets)

	nx := proceed
	defer func() {
		if p := recover(); p != nil {
			retErr = r.panicked(ctx, s, req, p)
			return
		}
		if nx == reread {
			return
		}
		res, retErr = r.finish(ctx, s, start, retErr)
	}()
	nx, err = r.runPhases(ctx, s)
	if nx == reread {
		return ctrl.Result{Requeue: true}, nil
	}
	return ctrl.Result{}, err
}

// steady reports whether app is in its steady state: its workflow
// succeeded for its latest revision at its current generation, and no
// restart is asked. Such a reconcile (a resync, a label edit) may read its
// revision, trackers and deployed objects from the observed-state cache
// (package observed); a spec or definition change still makes a new
// revision, and drift is repaired from fresh reads.
func steady(app *v1beta1.Application, restart bool) bool {
	st, lr := app.Status.Workflow, app.Status.LatestRevision
	return !restart && st != nil && st.Finished && st.Status == "succeeded" && lr != nil && st.AppRevision == lr.Name &&
		app.Status.ObservedGeneration == app.Generation
}

// runPhases runs the phases in order until one settles, asks to reread,
// or fails. An error that retrying cannot fix (errclass.IsTerminal: the
// Application's to fix) is in its conditions, and not retried before a
// change or the next check.
func (r *Reconciler) runPhases(ctx context.Context, s *scope) (next, error) {
	for _, p := range r.phases() {
		began := time.Now()
		nx, err := p.run(ctx, s)
		r.metrics.ObservePhase(p.name, time.Since(began), err)
		switch {
		case err != nil && errclass.IsTerminal(err):
			s.log.V(1).Info("application cannot be deployed as written", "phase", p.name, "reason", err.Error())
			return settle, nil
		case err != nil:
			return settle, fmt.Errorf("%s phase: %w", p.name, err)
		case nx != proceed:
			return nx, nil
		}
	}
	return proceed, nil
}

// finish is the one status write of a reconcile: Ready, the phase and
// its Event (summarize), then the patch. A conflict means someone (a
// workflow operation, a spec edit) wrote in between: reconcile again from
// what they wrote.
func (r *Reconciler) finish(ctx context.Context, s *scope, start time.Time, err error) (ctrl.Result, error) {
	r.summarize(s, err)
	r.metrics.ObserveReconcile(s.before, s.app, time.Since(start), err)
	if perr := r.patchStatus(ctx, s); perr != nil {
		if err != nil {
			return ctrl.Result{}, err
		}
		if apierrors.IsConflict(perr) {
			s.log.V(1).Info("status changed meanwhile; reconciling again")
			return ctrl.Result{Requeue: true}, nil
		}
		return ctrl.Result{}, perr
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: s.requeue}, nil
}

// panicked reports a panic of a phase in Ready and an Event, writes the
// status as it is, and returns the error the reconcile ends with.
func (r *Reconciler) panicked(ctx context.Context, s *scope, req ctrl.Request, p any) error {
	s.log.Error(fmt.Errorf("%v", p), "reconcile panicked", "stack", string(debug.Stack()))
	err := fmt.Errorf("internal error reconciling %s: %v", req.NamespacedName, p)
	setCondition(s.app, common.ConditionReady, false, common.ReasonReconcilePanic, err.Error())
	r.recorder.Event(s.app, "Warning", common.ReasonReconcilePanic, err.Error())
	if perr := r.patchStatus(ctx, s); perr != nil {
		s.log.Error(perr, "patching status after a panic")
	}
	return err
}

// summarize sets Ready, observedGeneration and the phase, and emits an
// Event when the phase changed (phaseEventDue).
func (r *Reconciler) summarize(s *scope, err error) {
	app := s.app
	setReadyCondition(app, s.ready)
	if err == nil {
		app.Status.ObservedGeneration = app.Generation
	}
	phase := computePhase(app)
	app.Status.Phase = phase
	if s.before != nil && phaseEventDue(s.before.Status.Phase, phase) {
		typ, reason, msg := phaseEvent(app, phase)
		r.recorder.Event(app, typ, reason, msg)
		s.log.V(1).Info("phase changed", "from", s.before.Status.Phase, "to", phase)
	}
}

// patchStatus writes the status when it changed, with optimistic locking
// so that a workflow operation made meanwhile is never overwritten.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope) error {
	if s.before == nil || equality.Semantic.DeepEqual(s.before.Status, s.app.Status) {
		return nil
	}
	if err := leanwrite.PatchStatus(ctx, r.client, s.app, s.before.Status, s.app.Status, true); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("patching status of %s/%s: %w", s.app.Namespace, s.app.Name, err)
	}
	return nil
}
