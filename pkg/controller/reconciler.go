// Package controller reconciles Applications: it parses an Application
// against its definitions, keeps its history as ApplicationRevisions, runs
// its workflow (package workflow), and then watches over what the workflow
// deployed — health, drift, and garbage left by older revisions — until
// the Application changes or is deleted.
//
// One Reconcile reads as a list of small phases over a scope; each phase
// fills the scope fields the next ones read and sets its own condition
// (Parsed, Revision, Policy, Render, Workflow); a deferred function sets Ready,
// derives status.status, emits an Event when the phase changed, and
// patches the status once. Panics are recovered there and reported.
package controller

import (
	"context"
	"fmt"
	"reflect"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
	"github.com/oamflow/oamflow/pkg/errclass"
	"github.com/oamflow/oamflow/pkg/health"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/placement"
	"github.com/oamflow/oamflow/pkg/render"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
	"github.com/oamflow/oamflow/pkg/revision"
	"github.com/oamflow/oamflow/pkg/sharding"
	"github.com/oamflow/oamflow/pkg/tenancy"
	"github.com/oamflow/oamflow/pkg/workflow"
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
	// Tenancy says who the controller acts as for each Application and
	// where it may act (package tenancy); the zero value is single-tenant
	// mode, as before tenancy existed.
	Tenancy tenancy.Config
	// Shard is the shard this controller reconciles (package sharding;
	// the manager's cache holds only its Applications): it says so in
	// each Application's Scheduled condition. Empty: no sharding.
	Shard string
}

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
	engines       chan *cuex.Engine
	metrics       Metrics
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
	r := &Reconciler{
		client:    c,
		direct:    direct,
		recorder:  recorder,
		revisions: revision.NewManager(direct, direct),
		workflow:  wf,
		opts:      opts,
		validator: ValidatorFn(appfile.Validate),
		renderer:  RendererFn(render.RenderComponent),
		clients:   multicluster.HubOnly{Hub: direct},
		metrics:   noMetrics{},
	}
	r.sources = SourceFactoryFn(func(app *v1beta1.Application) appfile.DefinitionSource {
		return appfile.Chain(appfile.NewClusterSource(c, app.Namespace, systemNamespace), builtins)
	})
	for _, o := range with {
		o(r)
	}
	if r.keepers == nil {
		clients, releases := r.clients, r.releases
		r.keepers = KeeperFactoryFn(func(app *v1beta1.Application, n int64, p resourcekeeper.Policies) (Keeper, error) {
			return resourcekeeper.New(app, n, resourcekeeper.Options{Clients: clients, Trackers: direct, Policies: p, Releases: releases})
		})
	}
	if r.health == nil {
		r.health = defaultHealth{clients: r.clients, releases: r.releaseHealth}
	}
	r.engines = make(chan *cuex.Engine, opts.Concurrency)
	for i := 0; i < opts.Concurrency; i++ {
		r.engines <- cuex.NewEngine(cuex.WithAbandoned(opts.Abandoned))
	}
	return r
}

// SetupWithManager registers the Reconciler for Applications. Besides
// spec changes it reacts to label and annotation changes (publishVersion,
// restart), deletion, and the workflow operations users make on the
// status (suspend, resume, terminate, restart from a step); its own status
// writes do not trigger it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1beta1.Application{}).
		WithEventFilter(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			o, okO := e.ObjectOld.(*v1beta1.Application)
			n, okN := e.ObjectNew.(*v1beta1.Application)
			if !okO || !okN {
				return true
			}
			return needsReconcile(o, n)
		}}).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.Concurrency}).
		Complete(r)
}

// needsReconcile reports whether an update of an Application asks for a
// reconcile: the periodic resync, anything but a status write, or a
// workflow operation.
func needsReconcile(o, n *v1beta1.Application) bool {
	if o.ResourceVersion == n.ResourceVersion {
		// The periodic resync: health and drift are checked again.
		return true
	}
	if o.Generation != n.Generation || !n.DeletionTimestamp.Equal(o.DeletionTimestamp) ||
		!reflect.DeepEqual(o.Labels, n.Labels) || !reflect.DeepEqual(o.Annotations, n.Annotations) ||
		!reflect.DeepEqual(o.Finalizers, n.Finalizers) {
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

	// parse: the latest revision before this reconcile, whether the app was
	// parsed against the live definitions and why, the parsed app and the
	// definitions it used.
	latest *v1beta1.ApplicationRevision
	live   bool
	why    string
	af     *appfile.AppFile
	defs   revision.Definitions
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

	// workflow: whether the run finished in this reconcile, or ran at all.
	justFinished bool
	ran          bool

	// health: what the health phase found.
	ready readyInput

	requeue time.Duration
	stop    bool
	// stale: the Application read was older than the API server's
	// (workflow); reconcile again from a fresh read, writing nothing.
	stale bool
}

func (s *scope) requeueAfter(d time.Duration) {
	if d > 0 && (s.requeue == 0 || d < s.requeue) {
		s.requeue = d
	}
}

type phase struct {
	name string
	run  func(ctx context.Context, s *scope) error
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
	if r.opts.Shard != "" {
		c := sharding.Running(r.opts.Shard)
		setCondition(app, c.Type, true, c.Reason, c.Message)
	}
	s.engine = <-r.engines
	defer func() { r.engines <- s.engine }()
	ctx = appfile.WithEngine(ctx, s.engine)
	ctx = appfile.WithBudgets(ctx, r.opts.Budgets)

	defer func() {
		if p := recover(); p != nil {
			log.Error(fmt.Errorf("%v", p), "reconcile panicked", "stack", string(debug.Stack()))
			retErr = fmt.Errorf("internal error reconciling %s: %v", req.NamespacedName, p)
			setCondition(app, common.ConditionReady, false, common.ReasonReconcilePanic, retErr.Error())
			r.recorder.Event(app, "Warning", common.ReasonReconcilePanic, retErr.Error())
			if err := r.patchStatus(ctx, s); err != nil {
				log.Error(err, "patching status after a panic")
			}
			return
		}
		if s.stale && retErr == nil {
			res = ctrl.Result{Requeue: true}
			return
		}
		r.summarize(s, retErr)
		r.metrics.ObserveReconcile(s.before, app, time.Since(start), retErr)
		if err := r.patchStatus(ctx, s); err != nil {
			if apierrors.IsConflict(err) && retErr == nil {
				// Someone (a workflow operation, a spec edit) wrote in
				// between; start over from what they wrote.
				log.V(1).Info("status changed meanwhile; reconciling again")
				res = ctrl.Result{Requeue: true}
				return
			}
			if retErr == nil {
				retErr = err
			}
			return
		}
		if retErr == nil {
			res = ctrl.Result{RequeueAfter: s.requeue}
		}
	}()

	for _, p := range []phase{
		{"parse", r.parse},
		{"revision", r.revision},
		{"policy", r.policy},
		{"identity", r.identity},
		{"render", r.render},
		{"workflow", r.runWorkflow},
		{"adopt", r.adopt},
		{"health", r.checkHealth},
	} {
		began := time.Now()
		err := p.run(ctx, s)
		r.metrics.ObservePhase(p.name, time.Since(began), err)
		if err != nil {
			if isUserError(err) {
				log.V(1).Info("application cannot be deployed as written", "phase", p.name, "reason", err.Error())
				return ctrl.Result{}, nil
			}
			return ctrl.Result{}, fmt.Errorf("%s phase: %w", p.name, err)
		}
		if s.stop {
			break
		}
	}
	return ctrl.Result{}, nil
}

// prepare adds the finalizer and consumes the restart annotation; these
// are metadata writes, done before the status is touched.
func (r *Reconciler) prepare(ctx context.Context, s *scope) error {
	app := s.app
	base := app.DeepCopy()
	changed := controllerutil.AddFinalizer(app, Finalizer)
	if v, ok := app.Annotations[v1beta1.AnnoRestartWorkflow]; ok && v == "true" {
		delete(app.Annotations, v1beta1.AnnoRestartWorkflow)
		s.restart = true
		changed = true
	}
	if !changed {
		return nil
	}
	if err := r.client.Patch(ctx, app, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating finalizers and annotations of %s/%s: %w", app.Namespace, app.Name, err)
	}
	return nil
}

// parse reads the latest revision and parses the Application: against the
// live definitions when it changed (or asks for autoUpdate, or a
// restart), else from the latest revision's snapshot.
func (r *Reconciler) parse(ctx context.Context, s *scope) error {
	app := s.app
	if lr := app.Status.LatestRevision; lr != nil && lr.Name != "" {
		latest, err := r.revisions.Get(ctx, app.Namespace, lr.Name)
		if err != nil {
			setParsedCondition(app, "", err)
			return err
		}
		s.latest = latest
	}
	live, why, err := revision.NeedsLive(app, s.latest, s.restart)
	if err != nil {
		setParsedCondition(app, "", err)
		return err
	}
	s.live, s.why = live, why
	if !live {
		// The revision's clusters were checked when it was made; a cluster
		// detached since fails its deploy step instead.
		snap := revision.Application(s.latest, app)
		af, _, err := r.validator.Validate(ctx, snap, revision.Source(s.latest, r.sources.Source(app)), nil)
		if err != nil {
			err = invalidIsUsers(err)
			setParsedCondition(app, "", err)
			return err
		}
		s.af, s.defs = af, revision.FromRevision(s.latest)
		setParsedCondition(app, "rendering revision "+s.latest.Name, nil)
		return nil
	}
	rec := revision.NewRecorder(r.sources.Source(app))
	af, warnings, err := r.validator.Validate(ctx, app, rec, r.clusters())
	if err != nil {
		err = invalidIsUsers(err)
		setParsedCondition(app, "", err)
		return err
	}
	s.warnings = warnings
	defs, err := rec.Definitions()
	if err != nil {
		setParsedCondition(app, "", err)
		return err
	}
	s.af, s.defs = af, defs
	setParsedCondition(app, "parsed against the installed definitions ("+why+")", nil)
	return nil
}

// invalidIsUsers marks an Application that cannot be deployed as
// written (appfile.IsInvalid) as the user's to fix.
func invalidIsUsers(err error) error {
	if appfile.IsInvalid(err) {
		return &userError{err: err}
	}
	return err
}

// clusters returns the cluster check of topology policies: the cluster
// resolver's (multicluster.Registry implements it), or nil.
func (r *Reconciler) clusters() appfile.Clusters {
	c, _ := r.resolver.(appfile.Clusters)
	return c
}

// revision picks the revision to deploy: the latest one when the app was
// rendered from it or its content hash is unchanged, else a new one.
func (r *Reconciler) revision(ctx context.Context, s *scope) error {
	app := s.app
	created := false
	if !s.live {
		s.rev = s.latest
	} else {
		hash, err := revision.Hash(app, s.defs)
		if err != nil {
			setRevisionCondition(app, "", false, "", err)
			return err
		}
		if s.latest != nil && s.latest.Labels[v1beta1.LabelAppRevisionHash] == hash {
			s.rev = s.latest
		} else {
			rev, err := r.revisions.Create(ctx, app, s.defs, hash)
			if err != nil {
				setRevisionCondition(app, "", false, "", err)
				return err
			}
			s.rev, created = rev, true
			s.log.Info("created application revision", "revision", rev.Name, "reason", s.why)
			for _, w := range s.warnings {
				r.recorder.Event(app, "Warning", common.ReasonValidationWarning, w)
			}
		}
	}
	n, err := revision.Number(app.Name, s.rev.Name)
	if err != nil {
		setRevisionCondition(app, "", false, "", err)
		return err
	}
	if !created && sharding.Propagate(app, s.rev.DeepCopy()) {
		// The Application moved to this shard (or out of sharding): its
		// revisions and trackers follow, nothing else changes.
		if err := sharding.Relabel(ctx, r.direct, app); err != nil {
			setRevisionCondition(app, "", false, "", err)
			return err
		}
		sharding.Propagate(app, s.rev)
		s.log.Info("took over the Application's revisions and trackers", "shard", app.Labels[sharding.LabelScheduledShardID])
	}
	s.revNum = n
	app.Status.LatestRevision = &common.Revision{Name: s.rev.Name, Revision: n, RevisionHash: s.rev.Labels[v1beta1.LabelAppRevisionHash]}
	setRevisionCondition(app, s.rev.Name, created, s.why, nil)
	return nil
}

// policy reads the resource policies and builds the revision's Keeper.
func (r *Reconciler) policy(ctx context.Context, s *scope) error {
	app := s.app
	pols, err := resourcekeeper.ParsePolicies(s.af.App.Spec.Policies)
	if err != nil {
		err = &userError{err: err}
		setPolicyCondition(app, 0, err)
		return err
	}
	s.policies = pols
	s.revLimit = r.opts.RevisionLimit
	if gc := pols.GarbageCollect; gc != nil && gc.ApplicationRevisionLimit != nil {
		s.revLimit = *gc.ApplicationRevisionLimit
	}
	k, err := r.keepers.Keeper(app, s.revNum, pols)
	if err != nil {
		setPolicyCondition(app, 0, err)
		return err
	}
	if err := k.CheckTrackers(ctx); err != nil {
		// An unreadable record (e.g. KubeVela's tracker, corrupt): applying
		// or collecting without it could delete or steal; stop here.
		setCondition(app, common.ConditionPolicy, false, common.ReasonResourceTrackerUnreadable, err.Error())
		return err
	}
	s.keeper = k
	setPolicyCondition(app, len(s.af.Policies), nil)
	return nil
}

// identity records who acts for the Application (the Identity
// condition). An annotation that names no ServiceAccount stops the
// reconcile; so does, when a workflow run starts, a ServiceAccount that
// does not exist (checked as the ServiceAccount itself: when it may not
// read ServiceAccounts the run goes on, and its first request says what
// it may not do). Nothing is deployed then; the check is repeated every
// 30 s and on every change.
func (r *Reconciler) identity(ctx context.Context, s *scope) error {
	app := s.app
	if s.tenantErr != nil {
		err := &userError{err: s.tenantErr}
		setIdentityCondition(app, tenancy.Identity{}, common.ReasonInvalidIdentity, "", err)
		return err
	}
	id := s.tenant.Identity
	note := ""
	if c := meta.FindStatusCondition(app.Status.Conditions, common.ConditionIdentity); !s.startsRun() && c != nil &&
		c.Status == metav1.ConditionTrue && strings.HasPrefix(c.Message, id.Describe()) {
		return nil // the same identity, as checked when the run started
	}
	if !id.IsController() && s.startsRun() {
		c, err := r.clients.Client(ctx, "")
		if err != nil {
			return err
		}
		err = c.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, &corev1.ServiceAccount{})
		switch {
		case apierrors.IsNotFound(err):
			uerr := &userError{err: fmt.Errorf("ServiceAccount %s/%s does not exist: nothing is deployed until it does (%s)", id.Namespace, id.Name, id.Describe())}
			setIdentityCondition(app, id, common.ReasonServiceAccountNotFound, "", uerr)
			s.requeueAfter(30 * time.Second)
			return uerr
		case err != nil && !apierrors.IsForbidden(err):
			return fmt.Errorf("reading ServiceAccount %s/%s: %w", id.Namespace, id.Name, err)
		case err != nil:
			s.log.V(1).Info("the Application's ServiceAccount may not read itself; not checking it exists", "serviceAccount", id.Namespace+"/"+id.Name)
			note = "not checked that it exists: it may not read ServiceAccounts"
		}
	}
	setIdentityCondition(app, id, "", note, nil)
	return nil
}

// render checks, when a run starts (or Render is not yet True), that
// every component renders with its own properties for the hub before
// anything is applied: a template failing at run time ends the run as
// workflowFailed with the component and the field, and nothing of the
// revision is applied. Components taking workflow inputs render in their
// step (so do per-cluster overrides, in deploy steps). The results serve
// the run's first pass.
func (r *Reconciler) render(ctx context.Context, s *scope) error {
	app := s.app
	if c := meta.FindStatusCondition(app.Status.Conditions, common.ConditionRender); !s.startsRun() && !adopting(app) && c != nil && c.Status == metav1.ConditionTrue {
		return nil
	}
	d := r.deployer(s)
	cache := newRenderCache(s.af)
	deferred, objects := 0, 0
	for i, comp := range s.af.Components {
		// Components taking workflow inputs, or missing a property their
		// override policies supply, render in their step.
		if len(comp.Inputs) > 0 || comp.Pending {
			deferred++
			continue
		}
		res, err := r.renderer.RenderComponent(ctx, s.af, comp.Name, d.options(ctx, workflow.ComponentRequest{Name: comp.Name}))
		if err != nil {
			err = &userError{err: fmt.Errorf("spec.components[%d]: %w", i, err)}
			setRenderCondition(app, 0, 0, err)
			return err
		}
		cache.put(comp.Name, res)
		for _, w := range render.AppliesToWarnings(s.af, res) {
			r.recorder.Event(app, "Warning", common.ReasonValidationWarning, w)
		}
		objects += len(res)
		if err := appfile.CheckRenderedObjects(ctx, s.af, objects); err != nil {
			err = &userError{err: err}
			setRenderCondition(app, 0, 0, err)
			return err
		}
	}
	s.prerendered = cache
	setRenderCondition(app, len(s.af.Components)-deferred, deferred, nil)
	return nil
}

// runWorkflow runs the workflow of the revision as far as it can go now.
// A run for another revision (or a restart) starts over.
func (r *Reconciler) runWorkflow(ctx context.Context, s *scope) error {
	app := s.app
	st := app.Status.Workflow
	if s.startsRun() && !s.restart {
		// A run starts on what the cache says; the cache can lag behind
		// this controller's own last status write (the reconcile queued by
		// prepare's finalizer patch runs right after the one that finished
		// the workflow). Starting a run on such a stale read repeats its
		// side effects (e.g. one more Helm upgrade of a failed release)
		// before the optimistic status patch is refused, so the API
		// server is asked first: one read per new run.
		live := &v1beta1.Application{}
		if err := r.direct.Get(ctx, client.ObjectKeyFromObject(app), live); err != nil {
			return client.IgnoreNotFound(err)
		}
		if live.ResourceVersion != app.ResourceVersion {
			s.log.V(1).Info("stale read of the Application; not starting a workflow run", "cached", app.ResourceVersion, "live", live.ResourceVersion)
			s.stale = true
			s.stop = true
			return nil
		}
	}
	if s.startsRun() {
		// A first run has no state to forget (the context ConfigMap of a
		// deleted namesake went with it): no request.
		if st != nil || s.restart {
			if err := r.workflow.Reset(ctx, app); err != nil {
				setWorkflowCondition(app, err)
				return err
			}
		}
		app.Status.Workflow = &common.WorkflowStatus{AppRevision: s.rev.Name}
		app.Status.Services = nil
		st = nil
		s.log.Info("starting workflow", "revision", s.rev.Name, "restart", s.restart)
	}
	if st != nil && st.Finished {
		setWorkflowCondition(app, nil)
		return s.stopUnlessSucceeded()
	}
	plan, err := workflow.PlanOf(s.af.Workflow, r.opts.StepTimeout)
	if err != nil {
		err = &userError{err: err}
		setWorkflowCondition(app, err)
		return err
	}
	res, err := r.workflow.Execute(ctx, workflow.Run{
		App:       app,
		Revision:  s.rev.Name,
		Plan:      plan,
		Status:    st,
		Templates: stepTemplates(s.af),
		Deployer:  r.deployer(s),
		Context:   stepContext(s.af, s.rev.Name, s.revNum),
	})
	if err != nil {
		setWorkflowCondition(app, err)
		return err
	}
	s.ran = true
	app.Status.Workflow = &res.Status
	app.Status.Services = workflow.MergeServices(app.Status.Services, res.Services)
	s.requeueAfter(res.RequeueAfter)
	s.justFinished = res.Status.Finished
	setWorkflowCondition(app, nil)
	if s.justFinished {
		s.log.Info("workflow finished", "revision", s.rev.Name, "result", res.Status.Status)
		if res.Status.Status == "succeeded" {
			if err := r.revisions.MarkSucceeded(ctx, s.rev, res.Status.EndTime); err != nil {
				return err
			}
		}
	}
	return s.stopUnlessSucceeded()
}

func (r *Reconciler) deployer(s *scope) *appDeployer {
	return &appDeployer{af: s.af, revision: s.rev.Name, renderer: r.renderer, keeper: s.keeper, health: r.health,
		resolver: r.resolver, clients: r.clients, prerendered: s.prerendered, app: s.app, recorder: r.recorder}
}

// startsRun reports whether this reconcile starts a new workflow run: the
// first, one for a new revision, or a restart.
func (s *scope) startsRun() bool {
	st := s.app.Status.Workflow
	return st == nil || st.AppRevision != s.rev.Name || s.restart
}

func (s *scope) stopUnlessSucceeded() error {
	if st := s.app.Status.Workflow; st == nil || !st.Finished || st.Status != "succeeded" {
		s.stop = true
	}
	return nil
}

// checkHealth runs after the workflow succeeded: garbage collection of
// what older revisions left (when the run just finished, or a previous
// collection failed), drift repair, and the health of every service.
func (r *Reconciler) checkHealth(ctx context.Context, s *scope) error {
	app := s.app
	s.ready.checked = true
	if s.justFinished || readyReason(app) == common.ReasonGarbageCollectFailed {
		done, err := s.keeper.GarbageCollect(ctx)
		if err != nil {
			s.ready.gcErr = err
			s.log.Error(err, "garbage collection failed", "revision", s.rev.Name)
			s.requeueAfter(10 * time.Second)
		} else if !done {
			s.requeueAfter(2 * time.Second)
		}
		if _, err := r.revisions.Prune(ctx, app, s.revNum, s.revLimit, s.rev.Name); err != nil {
			s.log.Error(err, "pruning old revisions")
		}
	}
	if !s.justFinished {
		if err := s.keeper.StateKeep(ctx); err != nil {
			s.ready.driftErr = err
			if !errclass.IsTerminal(err) {
				return fmt.Errorf("repairing drift: %w", err)
			}
			// Retrying as the same identity is refused the same way:
			// say so in Ready and check again at the next resync.
			s.log.Info("drift cannot be repaired", "reason", err.Error())
			s.requeueAfter(r.opts.UnhealthyRequeue)
		}
	}
	if s.ran || s.justFinished || s.ready.gcErr != nil || app.Status.AppliedResources == nil {
		refs, err := s.keeper.AppliedResources(ctx)
		if err != nil {
			return err
		}
		app.Status.AppliedResources = refs
	}
	if !s.justFinished {
		// Each service is judged against what was deployed where it runs:
		// the deploy target's AppFile, override policies applied.
		services := make([]common.ApplicationComponentStatus, 0, len(app.Status.Services))
		for _, pl := range r.placements(ctx, s) {
			svc, req, d := pl.svc, pl.req, pl.d
			res, err := d.Render(ctx, req)
			if err != nil {
				s.ready.healthErr = fmt.Errorf("rendering component %q for its health check: %w", svc.Name, err)
				services = append(services, svc)
				continue
			}
			h, err := d.Health(ctx, req, res)
			if err != nil {
				s.ready.healthErr = err
				services = append(services, svc)
				continue
			}
			h.Status.Name = svc.Name
			services = append(services, h.Status)
		}
		app.Status.Services = services
	}
	if unhealthyMessage(app.Status.Services) != "" || s.ready.healthErr != nil {
		s.requeueAfter(r.opts.UnhealthyRequeue)
	}
	return nil
}

// servicePlacement is a service of the status with the request and the Deployer
// of where it runs.
type servicePlacement struct {
	svc common.ApplicationComponentStatus
	req workflow.ComponentRequest
	d   *appDeployer
}

// placements pairs each service of the status whose component is in the
// revision with where it was deployed (render.ServicePlacements) and the
// Deployer rendering it there.
func (r *Reconciler) placements(ctx context.Context, s *scope) []servicePlacement {
	base := r.deployer(s)
	pls, planErr := render.ServicePlacements(ctx, s.af, s.app.Status.Services, r.resolver)
	if planErr != nil {
		s.log.V(1).Info("services are rendered with the Application's own properties", "reason", planErr.Error())
	}
	out := make([]servicePlacement, 0, len(pls))
	for _, p := range pls {
		d := base
		if p.AppFile != s.af {
			td := *base
			td.af = p.AppFile
			d = &td
		}
		out = append(out, servicePlacement{svc: p.Service, req: workflow.ComponentRequest{Name: p.Service.Name, Cluster: p.Cluster, Namespace: p.Namespace}, d: d})
	}
	return out
}

// adopting reports whether app is one KubeVela deployed that oamflow has
// not yet taken over: it still carries KubeVela's finalizer.
func adopting(app *v1beta1.Application) bool {
	return controllerutil.ContainsFinalizer(app, v1beta1.FinalizerResourceTracker)
}

// adopt takes over an Application KubeVela deployed, once its workflow has
// succeeded for the current revision (KubeVela's run or oamflow's): every
// service of the status is rendered from the revision and applied where
// it runs, as its apply-component step would, without running any step
// (side effects are not repeated). The keeper adopts what KubeVela applied
// in place (resourcekeeper: labels naming this Application and listed by
// its tracker); nothing is re-created. Then KubeVela's finalizer is
// removed: until then, a failure (or a controller killed midway) starts
// over at the next reconcile, re-applying what is already in sync as a
// no-op. Components taking workflow inputs cannot render outside their
// step: they stay as KubeVela left them until their next run.
func (r *Reconciler) adopt(ctx context.Context, s *scope) error {
	app := s.app
	if !adopting(app) {
		return nil
	}
	objects := 0
	for _, pl := range r.placements(ctx, s) {
		if comp := s.af.Component(pl.req.Name); comp == nil || len(comp.Inputs) > 0 || comp.Pending {
			continue
		}
		res, err := pl.d.Render(ctx, pl.req)
		if err != nil {
			err = fmt.Errorf("rendering component %q to adopt it: %w", pl.req.Name, err)
			setCondition(app, common.ConditionAdopted, false, common.ReasonAdoptionFailed, err.Error())
			return err
		}
		for _, b := range render.Batches(res) {
			if err := pl.d.Apply(ctx, b.Cluster, b.Objects); err != nil {
				err = fmt.Errorf("adopting component %q: %w", pl.req.Name, err)
				setCondition(app, common.ConditionAdopted, false, common.ReasonAdoptionFailed, err.Error())
				return err
			}
			objects += len(b.Objects)
		}
	}
	cp := app.DeepCopy()
	base := cp.DeepCopy()
	controllerutil.RemoveFinalizer(cp, v1beta1.FinalizerResourceTracker)
	if err := r.client.Patch(ctx, cp, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			s.stale, s.stop = true, true
			return nil
		}
		return fmt.Errorf("removing KubeVela's finalizer %s of %s/%s: %w", v1beta1.FinalizerResourceTracker, app.Namespace, app.Name, err)
	}
	// The status write at the end of the reconcile goes on from the new
	// metadata; the status computed so far is kept.
	app.ResourceVersion, app.Finalizers = cp.ResourceVersion, cp.Finalizers
	s.before.ResourceVersion, s.before.Finalizers = cp.ResourceVersion, cp.Finalizers
	s.ran = true
	setCondition(app, common.ConditionAdopted, true, common.ReasonAdoptedFromKubeVela,
		fmt.Sprintf("took over what KubeVela applied for revision %s (%d objects) without running a workflow step", s.rev.Name, objects))
	s.log.Info("adopted an Application KubeVela deployed", "revision", s.rev.Name, "objects", objects)
	return nil
}

func readyReason(app *v1beta1.Application) string {
	for _, c := range app.Status.Conditions {
		if c.Type == common.ConditionReady {
			return c.Reason
		}
	}
	return ""
}

// summarize sets Ready, observedGeneration and the phase, and emits an
// Event when the phase changed.
func (r *Reconciler) summarize(s *scope, err error) {
	app := s.app
	setReadyCondition(app, s.ready)
	if err == nil {
		app.Status.ObservedGeneration = app.Generation
	}
	phase := computePhase(app)
	app.Status.Phase = phase
	if s.before != nil && s.before.Status.Phase != phase {
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
	if err := r.client.Status().Patch(ctx, s.app, client.MergeFromWithOptions(s.before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("patching status of %s/%s: %w", s.app.Namespace, s.app.Name, err)
	}
	return nil
}

// reconcileDelete deletes everything the Application deployed (or, with
// the orphan-resource finalizer, releases it: see resourcekeeper's
// Delete), then its workflow context and revisions, then lets it go.
func (r *Reconciler) reconcileDelete(ctx context.Context, app *v1beta1.Application) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if !controllerutil.ContainsFinalizer(app, Finalizer) && !adopting(app) {
		// Never deployed by this controller (it adds its finalizer
		// first) nor by KubeVela: nothing to orphan, and nobody else would
		// release it.
		if controllerutil.ContainsFinalizer(app, v1beta1.FinalizerOrphanResource) {
			base := app.DeepCopy()
			controllerutil.RemoveFinalizer(app, v1beta1.FinalizerOrphanResource)
			if err := r.client.Patch(ctx, app, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
				return ctrl.Result{}, fmt.Errorf("removing the finalizer %s of %s/%s: %w", v1beta1.FinalizerOrphanResource, app.Namespace, app.Name, err)
			}
		}
		return ctrl.Result{}, nil
	}
	if app.Status.Phase != common.ApplicationDeleting {
		what := "deleting the resources of the Application"
		if controllerutil.ContainsFinalizer(app, v1beta1.FinalizerOrphanResource) {
			what = "releasing the resources of the Application (" + v1beta1.FinalizerOrphanResource + "): they are kept"
		}
		before := app.DeepCopy()
		app.Status.Phase = common.ApplicationDeleting
		setCondition(app, common.ConditionReady, false, common.ReasonDeleting, what)
		r.recorder.Event(app, "Normal", phaseReason(common.ApplicationDeleting), what)
		if err := r.client.Status().Patch(ctx, app, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("patching status of %s/%s: %w", app.Namespace, app.Name, err)
		}
	}
	pols, err := resourcekeeper.ParsePolicies(app.Spec.Policies)
	if err != nil {
		log.Error(err, "ignoring invalid resource policies while deleting")
		pols = resourcekeeper.Policies{}
	}
	var n int64 = 1
	if lr := app.Status.LatestRevision; lr != nil && lr.Revision > 0 {
		n = lr.Revision
	}
	k, err := r.keepers.Keeper(app, n, pols)
	if err != nil {
		return ctrl.Result{}, err
	}
	done, err := k.Delete(ctx)
	if err != nil {
		err = fmt.Errorf("deleting the resources of %s/%s: %w", app.Namespace, app.Name, err)
		r.reportDeleteFailure(ctx, app, err)
		return ctrl.Result{}, err
	}
	if !done {
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
	}
	if err := r.workflow.Reset(ctx, app); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.revisions.DeleteAll(ctx, app); err != nil {
		return ctrl.Result{}, err
	}
	base := app.DeepCopy()
	controllerutil.RemoveFinalizer(app, Finalizer)
	// KubeVela's orphan finalizer has done its work (the keeper orphaned
	// the resources): nobody else removes it.
	controllerutil.RemoveFinalizer(app, v1beta1.FinalizerOrphanResource)
	// An Application KubeVela deployed and oamflow did not yet adopt: its
	// resources were collected (or released) through KubeVela's trackers
	// above, which is what KubeVela's finalizer waits for.
	controllerutil.RemoveFinalizer(app, v1beta1.FinalizerResourceTracker)
	if err := r.client.Patch(ctx, app, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("removing the finalizer of %s/%s: %w", app.Namespace, app.Name, err)
	}
	log.Info("application deleted", "application", klog.KObj(app))
	return ctrl.Result{}, nil
}

// stepTemplates resolves step types through the parsed app's definitions.
func stepTemplates(af *appfile.AppFile) workflow.TemplateSource {
	return func(ctx context.Context, typ string) (string, error) {
		if af.Workflow == nil {
			return "", nil
		}
		for _, s := range af.Workflow.Steps {
			for _, cand := range append([]*appfile.WorkflowStep{s}, s.SubSteps...) {
				if cand.Type != typ {
					continue
				}
				d, err := cand.Definition(ctx)
				if err != nil {
					return "", err
				}
				if d == nil {
					return "", nil
				}
				return d.Template(), nil
			}
		}
		return "", nil
	}
}

// stepContext is the CUE `context` of step templates beyond name and
// namespace.
func stepContext(af *appfile.AppFile, rev string, n int64) map[string]any {
	labels := map[string]any{}
	for k, v := range af.Labels {
		labels[k] = v
	}
	annos := map[string]any{}
	for k, v := range af.Annotations {
		annos[k] = v
	}
	return map[string]any{
		"appName":        af.Name,
		"appRevision":    rev,
		"appRevisionNum": n,
		"appLabels":      labels,
		"appAnnotations": annos,
	}
}

// reportDeleteFailure says in Ready (and once in a Warning Event) why the
// resources of a deleted Application cannot be deleted yet, so that a
// deletion that waits is not silent; it is retried.
func (r *Reconciler) reportDeleteFailure(ctx context.Context, app *v1beta1.Application, err error) {
	msg := "deleting the resources failed (retrying): " + err.Error()
	if c := meta.FindStatusCondition(app.Status.Conditions, common.ConditionReady); c != nil && c.Message == msg {
		return
	}
	before := app.DeepCopy()
	setCondition(app, common.ConditionReady, false, common.ReasonDeleting, msg)
	r.recorder.Event(app, "Warning", common.ReasonDeleting, msg)
	if perr := r.client.Status().Patch(ctx, app, client.MergeFrom(before)); perr != nil && !apierrors.IsNotFound(perr) {
		ctrl.LoggerFrom(ctx).Error(perr, "patching status after a failed deletion")
	}
}
