package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/errclass"
	"github.com/oamflow/oamflow/pkg/observed"
	"github.com/oamflow/oamflow/pkg/placement"
	"github.com/oamflow/oamflow/pkg/render"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
	"github.com/oamflow/oamflow/pkg/revision"
	"github.com/oamflow/oamflow/pkg/sharding"
	"github.com/oamflow/oamflow/pkg/tenancy"
	"github.com/oamflow/oamflow/pkg/workflow"
)

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
	// The optimistic patch went through: app is what the API server
	// holds now, as it answered.
	s.fresh = true
	return nil
}

// parse reads the latest revision and parses the Application: against the
// live definitions when it changed (or asks for autoUpdate, or a
// restart), else from the latest revision's snapshot.
func (r *Reconciler) parse(ctx context.Context, s *scope) (next, error) {
	app := s.app
	if lr := app.Status.LatestRevision; lr != nil && lr.Name != "" {
		// A revision's spec never changes once made, so the observed-state
		// cache's copy serves when it has one (fleetMoved reads it again
		// before acting on its mutable placement record).
		latest, err := r.revisions.Get(observed.MayLag(ctx), app.Namespace, lr.Name)
		if err != nil {
			setParsedCondition(app, "", err)
			return proceed, err
		}
		s.latest = latest
	}
	live, why, err := revision.NeedsLive(app, s.latest, s.restart)
	if err != nil {
		setParsedCondition(app, "", err)
		return proceed, err
	}
	s.live, s.why = live, why
	if !live {
		// The revision's clusters were checked when it was made; a cluster
		// detached since fails its deploy step instead.
		snap := revision.Application(s.latest, app)
		af, _, err := r.validator.Validate(ctx, snap, revision.Source(s.latest, r.sources.Source(app)), nil)
		if err != nil {
			setParsedCondition(app, "", err)
			return proceed, err
		}
		sel, moved := r.fleetMoved(ctx, s, af, why)
		s.af, s.defs, s.selection = af, revision.FromRevision(s.latest), sel
		if !moved {
			setParsedFromRevision(app, s.latest.Name)
			return proceed, nil
		}
		// The fleet changed under a label selector: a new revision is made
		// of the same spec and definitions for the new set (a new run,
		// then garbage collection of what a member that left no longer
		// gets). Definitions changed or deleted since are not picked up:
		// the spec did not change, so the app keeps its snapshot.
		s.live, s.why = true, revision.ReasonPlacementChanged
		setParsedCondition(app, "rendering revision "+s.latest.Name+" for a new placement", nil)
		return proceed, nil
	}
	rec := revision.NewRecorder(r.sources.Source(app))
	af, warnings, err := r.validator.Validate(ctx, app, rec, r.clusters())
	if err != nil {
		setParsedCondition(app, "", err)
		return proceed, err
	}
	s.warnings = warnings
	defs, err := rec.Definitions()
	if err != nil {
		setParsedCondition(app, "", err)
		return proceed, err
	}
	sel, err := r.selection(ctx, af)
	if err != nil {
		setParsedCondition(app, "", err)
		return proceed, err
	}
	s.af, s.defs, s.selection = af, defs, sel
	setParsedCondition(app, parsedLive+" ("+s.why+")", nil)
	return proceed, nil
}

// selection is the clusters the Application's topology policies select by
// labels now (nil without a cluster resolver or label selectors).
func (r *Reconciler) selection(ctx context.Context, af *appfile.AppFile) (placement.Selection, error) {
	if r.resolver == nil {
		return nil, nil
	}
	var tops []placement.Topology
	for _, p := range af.Policies {
		if p.Type != appfile.PolicyTopology {
			continue
		}
		t, err := placement.Parse(p.Name, p.Properties)
		if err != nil {
			return nil, errclass.Terminal(fmt.Errorf("topology policy %q: %w", p.Name, err))
		}
		tops = append(tops, t)
	}
	return placement.Select(ctx, tops, r.resolver)
}

// fleetMoved reports whether the clusters the Application's label
// selectors match differ from those its latest revision was made for (a
// member joined, lost its labels, or was detached), and returns the
// selection the revision goes on with otherwise. Unreachable members are
// still selected: only the registry's labels count. A pinned
// publishVersion, or a registry that cannot be read now, keeps the
// revision as it is. A revision made before selections were recorded, or
// whose record cannot be read, is given the current one, once.
func (r *Reconciler) fleetMoved(ctx context.Context, s *scope, af *appfile.AppFile, why string) (placement.Selection, bool) {
	if why == revision.ReasonPublishVersionPinned {
		recorded, _, _ := revision.SelectionOf(s.latest)
		return recorded, false
	}
	recorded, ok, err := revision.SelectionOf(s.latest)
	if err != nil {
		// An unreadable record (edited by hand) is replaced by the
		// current selection, as one made before selections were
		// recorded; left as it is, the Application would never follow
		// the fleet again.
		s.log.Error(err, "the placement recorded on the latest revision cannot be read; recording the current one")
		ok = false
	}
	now, err := r.selection(ctx, af)
	if err != nil {
		s.log.V(1).Info("not checking whether the fleet moved: the cluster registry cannot be read", "reason", err.Error())
		return recorded, false
	}
	if !ok {
		if len(now) > 0 {
			if err := r.revisions.RecordSelection(ctx, s.latest, now); err != nil {
				s.log.Error(err, "recording the placement of the latest revision")
			}
		}
		return now, false
	}
	changes := now.Changes(recorded)
	if len(changes) == 0 {
		return recorded, false
	}
	if refreshed, err := r.refreshLatest(ctx, s); err == nil && refreshed {
		// The record read may have lagged behind this controller's own
		// last one: judge again on the API server's.
		return r.fleetMoved(ctx, s, af, why)
	}
	msg := "placement changed: " + strings.Join(changes, ", ")
	s.log.Info("the clusters selected by labels changed; deploying to the new set", "changes", changes)
	r.recorder.Event(s.app, "Normal", revision.ReasonPlacementChanged, msg)
	return now, true
}

// refreshLatest reads the latest revision again from the API server when
// parse took it from the observed-state cache, before a decision on what
// can change on it (its placement record, its succeeded mark); it reports
// whether it read it. The revision being worked on (s.rev), when it is
// the latest, is replaced too.
func (r *Reconciler) refreshLatest(ctx context.Context, s *scope) (bool, error) {
	if s.latest == nil || s.latestFresh {
		return false, nil
	}
	fresh, err := r.revisions.Get(observed.Direct(ctx), s.latest.Namespace, s.latest.Name)
	if err != nil || fresh == nil {
		return false, err
	}
	if s.rev == s.latest {
		s.rev = fresh
	}
	s.latest, s.latestFresh = fresh, true
	return true, nil
}

// clusters returns the cluster check of topology policies: the cluster
// resolver's (multicluster.Registry implements it), or nil.
func (r *Reconciler) clusters() appfile.Clusters {
	c, _ := r.resolver.(appfile.Clusters)
	return c
}

// revision picks the revision to deploy: the latest one when the app was
// rendered from it or its content hash is unchanged, else a new one.
func (r *Reconciler) revision(ctx context.Context, s *scope) (next, error) {
	app := s.app
	created := false
	if !s.live {
		s.rev = s.latest
	} else {
		hash, err := r.hasher.Hash(app, s.defs, s.selection)
		if err != nil {
			setRevisionCondition(app, "", false, "", err)
			return proceed, err
		}
		if s.latest != nil && s.latest.Labels[v1beta1.LabelAppRevisionHash] == hash {
			s.rev = s.latest
		} else {
			rev, err := r.revisions.Create(ctx, app, s.defs, s.selection, hash)
			if err != nil {
				setRevisionCondition(app, "", false, "", err)
				return proceed, err
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
		return proceed, err
	}
	if !created && sharding.Propagate(app, s.rev.DeepCopy()) {
		// The Application moved to this shard (or out of sharding): its
		// revisions and trackers follow, nothing else changes.
		if err := sharding.Relabel(ctx, r.direct, app); err != nil {
			setRevisionCondition(app, "", false, "", err)
			return proceed, err
		}
		sharding.Propagate(app, s.rev)
		s.log.Info("took over the Application's revisions and trackers", "shard", app.Labels[sharding.LabelScheduledShardID])
	}
	s.revNum = n
	app.Status.LatestRevision = &common.Revision{Name: s.rev.Name, Revision: n, RevisionHash: s.rev.Labels[v1beta1.LabelAppRevisionHash]}
	setRevisionCondition(app, s.rev.Name, created, s.why, nil)
	return proceed, nil
}

// policy reads the resource policies and builds the revision's Keeper.
func (r *Reconciler) policy(ctx context.Context, s *scope) (next, error) {
	app := s.app
	pols, err := resourcekeeper.ParsePolicies(s.af.App.Spec.Policies)
	if err != nil {
		err = errclass.Terminal(err)
		setPolicyCondition(app, 0, err)
		return proceed, err
	}
	s.policies = pols
	s.revLimit = r.opts.RevisionLimit
	if gc := pols.GarbageCollect; gc != nil && gc.ApplicationRevisionLimit != nil {
		s.revLimit = *gc.ApplicationRevisionLimit
	}
	k, err := r.keepers.Keeper(app, s.revNum, pols)
	if err != nil {
		setPolicyCondition(app, 0, err)
		return proceed, err
	}
	if err := k.CheckTrackers(ctx); err != nil {
		// An unreadable record (e.g. KubeVela's tracker, corrupt): applying
		// or collecting without it could delete or steal; stop here.
		setCondition(app, common.ConditionPolicy, false, common.ReasonResourceTrackerUnreadable, err.Error())
		return proceed, err
	}
	s.keeper = k
	setPolicyCondition(app, len(s.af.Policies), nil)
	return proceed, nil
}

// identity records who acts for the Application (the Identity
// condition). An annotation that names no ServiceAccount stops the
// reconcile; so does, when a workflow run starts, a ServiceAccount that
// does not exist (checked as the ServiceAccount itself: when it may not
// read ServiceAccounts the run goes on, and its first request says what
// it may not do). Nothing is deployed then; the check is repeated every
// 30 s and on every change.
func (r *Reconciler) identity(ctx context.Context, s *scope) (next, error) {
	app := s.app
	if s.tenantErr != nil {
		err := errclass.Terminal(s.tenantErr)
		setIdentityCondition(app, tenancy.Identity{}, common.ReasonInvalidIdentity, "", err)
		return proceed, err
	}
	id := s.tenant.Identity
	note := ""
	if !s.startsRun() && identityChecked(app, id) {
		return proceed, nil // the same identity, as checked when the run started
	}
	if !id.IsController() && s.startsRun() {
		c, err := r.clients.Client(ctx, "")
		if err != nil {
			return proceed, err
		}
		err = c.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, &corev1.ServiceAccount{})
		switch {
		case apierrors.IsNotFound(err):
			uerr := errclass.Terminal(fmt.Errorf("ServiceAccount %s/%s does not exist: nothing is deployed until it does (%s)", id.Namespace, id.Name, id.Describe()))
			setIdentityCondition(app, id, common.ReasonServiceAccountNotFound, "", uerr)
			s.requeueAfter(30 * time.Second)
			return proceed, uerr
		case err != nil && !apierrors.IsForbidden(err):
			return proceed, fmt.Errorf("reading ServiceAccount %s/%s: %w", id.Namespace, id.Name, err)
		case err != nil:
			s.log.V(1).Info("the Application's ServiceAccount may not read itself; not checking it exists", "serviceAccount", id.Namespace+"/"+id.Name)
			note = "not checked that it exists: it may not read ServiceAccounts"
		}
	}
	setIdentityCondition(app, id, "", note, nil)
	return proceed, nil
}

// render checks, when a run starts (or Render is not yet True), that
// every component renders with its own properties for the hub before
// anything is applied: a template failing at run time ends the run as
// workflowFailed with the component and the field, and nothing of the
// revision is applied. Components taking workflow inputs render in their
// step (so do per-cluster overrides, in deploy steps). The results serve
// the run's first pass.
func (r *Reconciler) render(ctx context.Context, s *scope) (next, error) {
	app := s.app
	if c := meta.FindStatusCondition(app.Status.Conditions, common.ConditionRender); !s.startsRun() && !adopting(app) && c != nil && c.Status == metav1.ConditionTrue {
		return proceed, nil
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
			err = errclass.Terminal(fmt.Errorf("spec.components[%d]: %w", i, err))
			setRenderCondition(app, 0, 0, err)
			return proceed, err
		}
		cache.put(comp.Name, res)
		for _, w := range render.AppliesToWarnings(s.af, res) {
			r.recorder.Event(app, "Warning", common.ReasonValidationWarning, w)
		}
		objects += len(res)
		if err := appfile.CheckRenderedObjects(ctx, s.af, objects); err != nil {
			err = errclass.Terminal(err)
			setRenderCondition(app, 0, 0, err)
			return proceed, err
		}
	}
	s.prerendered = cache
	setRenderCondition(app, len(s.af.Components)-deferred, deferred, nil)
	return proceed, nil
}

// runWorkflow runs the workflow of the revision as far as it can go now.
// A run for another revision (or a restart) starts over.
func (r *Reconciler) runWorkflow(ctx context.Context, s *scope) (next, error) {
	app := s.app
	st := app.Status.Workflow
	if s.startsRun() && !s.restart && !s.fresh {
		// A run starts on what the cache says; the cache can lag behind
		// this controller's own last status write (the reconcile queued by
		// prepare's finalizer patch runs right after the one that finished
		// the workflow). Starting a run on such a stale read repeats its
		// side effects (e.g. one more Helm upgrade of a failed release)
		// before the optimistic status patch is refused, so the API
		// server is asked first: one read per new run (none when prepare
		// has just written the Application and holds the answer).
		live := &v1beta1.Application{}
		if err := r.direct.Get(ctx, client.ObjectKeyFromObject(app), live); err != nil {
			return proceed, client.IgnoreNotFound(err)
		}
		if live.ResourceVersion != app.ResourceVersion {
			s.log.V(1).Info("stale read of the Application; not starting a workflow run", "cached", app.ResourceVersion, "live", live.ResourceVersion)
			return reread, nil
		}
	}
	if s.startsRun() {
		// A first run has no state to forget (the context ConfigMap of a
		// deleted namesake went with it): no request.
		if st != nil || s.restart {
			if err := r.workflow.Reset(ctx, app); err != nil {
				setWorkflowCondition(app, err)
				return proceed, err
			}
		}
		app.Status.Workflow = &common.WorkflowStatus{AppRevision: s.rev.Name}
		app.Status.Services = nil
		r.recordPlacement(ctx, s)
		st = nil
		s.expectApplies()
		s.log.Info("starting workflow", "revision", s.rev.Name, "restart", s.restart)
	}
	if st != nil && st.Finished {
		setWorkflowCondition(app, nil)
		// The reconcile that finished the run may have failed to mark
		// the revision (the mark is what rollback trusts): mark it now.
		if st.Status == "succeeded" {
			if !s.rev.Status.Succeeded && s.rev == s.latest {
				// The cached copy may not show the mark made meanwhile.
				if _, err := r.refreshLatest(ctx, s); err != nil {
					return proceed, err
				}
			}
			if err := r.revisions.MarkSucceeded(ctx, s.rev, st.EndTime); err != nil {
				return proceed, err
			}
		}
		return afterRun(s.app), nil
	}
	plan, err := workflow.PlanOf(s.af.Workflow, r.opts.StepTimeout)
	if err != nil {
		err = errclass.Terminal(err)
		setWorkflowCondition(app, err)
		return proceed, err
	}
	res, err := r.workflow.Execute(ctx, workflow.Run{
		App:       app,
		Revision:  s.rev.Name,
		Plan:      plan,
		Status:    st,
		Templates: stepTemplates(s.af),
		Deployer:  r.deployer(s),
		Context:   s.af.StepContext(s.rev.Name, s.revNum),
	})
	if err != nil {
		setWorkflowCondition(app, err)
		return proceed, err
	}
	s.run.applied = true
	app.Status.Workflow = &res.Status
	app.Status.Services = workflow.MergeServices(app.Status.Services, res.Services)
	s.requeueAfter(res.RequeueAfter)
	s.run.finished = res.Status.Finished
	setWorkflowCondition(app, nil)
	if s.run.finished {
		s.log.Info("workflow finished", "revision", s.rev.Name, "result", res.Status.Status)
		if res.Status.Status == "succeeded" {
			if err := r.revisions.MarkSucceeded(ctx, s.rev, res.Status.EndTime); err != nil {
				return proceed, err
			}
		}
	}
	return afterRun(s.app), nil
}

func (r *Reconciler) deployer(s *scope) *appDeployer {
	return &appDeployer{af: s.af, revision: s.rev.Name, renderer: r.renderer, keeper: s.keeper, health: r.health,
		resolver: r.resolver, clients: r.clients, prerendered: s.prerendered, app: s.app, recorder: r.recorder}
}

// expectApplies tells the Keeper, when a run starts, what the run will
// apply of the render phase's results, so that its first apply records
// the objects of every component in one tracker write (Keeper.Expect)
// rather than one per step. Only the default workflow is sure to apply
// them all before it succeeds: one apply-component step per component,
// without conditions, each applying what the render phase rendered (a
// step's own properties, inputs, or an if could make it apply something
// else, or nothing).
func (s *scope) expectApplies() {
	wf := s.af.Workflow
	if s.prerendered == nil || s.keeper == nil || wf == nil || !wf.Default {
		return
	}
	for _, st := range wf.Steps {
		if st.Type != appfile.StepTypeApplyComponent || st.If != "" || len(st.SubSteps) > 0 {
			return
		}
	}
	s.prerendered.mu.Lock()
	defer s.prerendered.mu.Unlock()
	for _, c := range s.af.Components {
		for _, b := range render.Batches(s.prerendered.res[c.Name]) {
			s.keeper.Expect(b.Cluster, b.Objects)
		}
	}
}

// startsRun reports whether this reconcile starts a new workflow run: the
// first, one for a new revision, or a restart.
func (s *scope) startsRun() bool {
	st := s.app.Status.Workflow
	return st == nil || st.AppRevision != s.rev.Name || s.restart
}

// afterRun says whether the phases after the workflow run: only once
// it succeeded for this revision; until then the workflow's status is
// what there is to write.
func afterRun(app *v1beta1.Application) next {
	if st := app.Status.Workflow; st == nil || !st.Finished || st.Status != "succeeded" {
		return settle
	}
	return proceed
}

// collectGarbage runs once the workflow succeeded: when a tracker of an
// older revision is still there (the run just finished, or a reconcile
// that finished it failed before collecting, e.g. its revision write was
// refused) or a previous collection failed, it deletes what older
// revisions applied and this one dropped (under the garbage-collect
// policy); when the run just finished it prunes revisions beyond the
// limit, and after every collection. A failure is said in Ready and
// retried; it stops nothing. Whether older trackers remain is asked of
// the observed-state cache first (Keeper.HasGarbage): a first revision's
// run finishes without listing trackers.
func (r *Reconciler) collectGarbage(ctx context.Context, s *scope) (next, error) {
	// From here on Ready is decided by what gc, statekeep and health find.
	s.ready.checked = true
	if readyReason(s.app) != common.ReasonGarbageCollectFailed {
		pending, err := s.keeper.HasGarbage(ctx)
		if err != nil {
			return proceed, err
		}
		if !pending {
			if s.run.finished {
				r.prune(ctx, s)
			}
			return proceed, nil
		}
		if !s.run.finished {
			s.log.Info("collecting what an earlier reconcile left to collect", "revision", s.rev.Name)
		}
	}
	done, err := s.keeper.GarbageCollect(ctx)
	if msg := s.keeper.RebuiltTracker(); msg != "" {
		r.recorder.Event(s.app, "Warning", common.ReasonTrackerRebuilt, msg)
	}
	switch {
	case err != nil:
		s.ready.gcErr = err
		s.log.Error(err, "garbage collection failed", "revision", s.rev.Name)
		s.requeueAfter(10 * time.Second)
	case !done:
		s.requeueAfter(2 * time.Second)
	}
	r.prune(ctx, s)
	return proceed, nil
}

// prune deletes the revisions beyond the limit; a failure is logged and
// retried at the next collection.
func (r *Reconciler) prune(ctx context.Context, s *scope) {
	if _, err := r.revisions.Prune(ctx, s.app, s.revNum, s.revLimit, s.rev.Name); err != nil {
		s.log.Error(err, "pruning old revisions")
	}
}

// keepState puts back what drifted from the revision (resourcekeeper's
// StateKeep), except in the reconcile whose run just applied it. A
// refusal retrying cannot fix is said in Ready and checked again later;
// other failures are retried.
func (r *Reconciler) keepState(ctx context.Context, s *scope) (next, error) {
	if s.run.finished {
		return proceed, nil
	}
	err := s.keeper.StateKeep(ctx)
	if err == nil {
		return proceed, nil
	}
	if onlyUnreachable(err) {
		// A member that cannot be reached cannot have drifted from what we
		// know: the health check says how long it has been so, and the
		// next reconcile repairs what drifted meanwhile.
		s.log.V(1).Info("drift not checked: a target cluster is unreachable", "reason", err.Error())
		s.requeueAfter(r.opts.UnhealthyRequeue)
		return proceed, nil
	}
	s.ready.driftErr = err
	if !errclass.IsTerminal(err) {
		return proceed, fmt.Errorf("repairing drift: %w", err)
	}
	// Retrying as the same identity is refused the same way: say so in
	// Ready and check again at the next resync.
	s.log.Info("drift cannot be repaired", "reason", err.Error())
	s.requeueAfter(r.opts.UnhealthyRequeue)
	return proceed, nil
}

// checkHealth refreshes status.appliedResources when something was
// applied or collected, and judges the health of every service (except in
// the reconcile whose run just finished: its steps judged it). Without a
// tracker of the current revision (none yet, or lost and not rebuilt yet)
// the status keeps what it says: it is what bounds the rebuild of a lost
// tracker (resourcekeeper's rebuildLost), which a failed collection
// retries.
func (r *Reconciler) checkHealth(ctx context.Context, s *scope) (next, error) {
	app := s.app
	if s.run.applied || s.run.finished || s.ready.gcErr != nil || app.Status.AppliedResources == nil {
		refs, err := s.keeper.AppliedResources(ctx)
		if err != nil {
			return proceed, err
		}
		if refs != nil {
			app.Status.AppliedResources = refs
		}
	}
	if app.Status.Placement == nil {
		// Deployed before status.placement was kept.
		r.recordPlacement(ctx, s)
	}
	if !s.run.finished {
		app.Status.Services = r.serviceHealth(ctx, s)
	}
	if unhealthyMessage(app.Status.Services) != "" || s.ready.healthErr != nil {
		s.requeueAfter(r.opts.UnhealthyRequeue)
	}
	return proceed, nil
}

// serviceHealth judges each service against what was deployed where it
// runs: the deploy target's AppFile, override policies applied. A service
// that cannot be judged keeps its last status; the error is said in Ready.
// A cluster that cannot be reached is recorded in status.placement
// (UnreachableSince); once it has been so for longer than
// ClusterUnreachableAfter its services are unhealthy (ClusterUnreachable),
// and back reachable they are judged again as usual.
func (r *Reconciler) serviceHealth(ctx context.Context, s *scope) []common.ApplicationComponentStatus {
	services := make([]common.ApplicationComponentStatus, 0, len(s.app.Status.Services))
	reached, unreachable := map[string]bool{}, map[string]bool{}
	causes := map[string]error{}
	var down []int // services in clusters that could not be reached
	for _, pl := range r.placements(ctx, s) {
		cluster := clusterLabel(pl.req.Cluster)
		res, err := pl.d.Render(ctx, pl.req)
		if err != nil && !workflow.Unreachable(err) {
			s.ready.healthErr = fmt.Errorf("rendering component %q for its health check: %w", pl.svc.Name, err)
			services = append(services, pl.svc)
			continue
		}
		var h workflow.ComponentHealth
		if err == nil {
			h, err = pl.d.Health(ctx, pl.req, res)
		}
		switch {
		case err != nil && workflow.Unreachable(err):
			unreachable[cluster] = true
			if causes[cluster] == nil {
				causes[cluster] = err
			}
			down = append(down, len(services))
			services = append(services, pl.svc)
		case err != nil:
			s.ready.healthErr = err
			services = append(services, pl.svc)
		default:
			reached[cluster] = true
			h.Status.Name = pl.svc.Name
			services = append(services, h.Status)
		}
	}
	now := r.clock.Now()
	since := setReachability(s.app, reached, unreachable, now)
	after := r.opts.ClusterUnreachableAfter
	for _, i := range down {
		cluster := clusterLabel(services[i].Cluster)
		first, ok := since[cluster]
		switch {
		case ok && now.Sub(first) >= after:
			services[i] = unreachableService(services[i], first, after, causes[cluster])
		case ok:
			s.ready.healthErr = fmt.Errorf("cluster %s unreachable since %s (its components turn unhealthy after %s): %w",
				cluster, first.UTC().Format(time.RFC3339), after, causes[cluster])
			s.requeueAfter(first.Add(after).Sub(now))
		default:
			// Reached by another check meanwhile: judged again next time.
			s.ready.healthErr = causes[cluster]
		}
	}
	return services
}

// recordPlacement sets status.placement to where the workflow of the
// revision deploys (render.PlanWorkflow); when that cannot be worked out
// it is emptied (the deploy step says why).
func (r *Reconciler) recordPlacement(ctx context.Context, s *scope) {
	plans, err := render.PlanWorkflow(ctx, s.af, r.resolver)
	if err != nil {
		s.log.V(1).Info("placement unknown", "reason", err.Error())
		setPlacementStatus(s.app, nil)
		return
	}
	var targets []placement.Target
	for _, p := range plans {
		for _, t := range p.Targets {
			if !t.Placeholder {
				targets = append(targets, t.Target)
			}
		}
	}
	setPlacementStatus(s.app, targets)
}

// onlyUnreachable reports whether err (errors.Join'ed ones each) says a
// cluster could not be reached (workflow.Unreachable).
func onlyUnreachable(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyUnreachable(e) {
				return false
			}
		}
		return len(j.Unwrap()) > 0
	}
	return workflow.Unreachable(err)
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
func (r *Reconciler) adopt(ctx context.Context, s *scope) (next, error) {
	app := s.app
	if !adopting(app) {
		return proceed, nil
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
			return proceed, err
		}
		for _, b := range render.Batches(res) {
			if err := pl.d.Apply(ctx, b.Cluster, b.Objects); err != nil {
				err = fmt.Errorf("adopting component %q: %w", pl.req.Name, err)
				setCondition(app, common.ConditionAdopted, false, common.ReasonAdoptionFailed, err.Error())
				return proceed, err
			}
			objects += len(b.Objects)
		}
	}
	cp := app.DeepCopy()
	base := cp.DeepCopy()
	controllerutil.RemoveFinalizer(cp, v1beta1.FinalizerResourceTracker)
	if err := r.client.Patch(ctx, cp, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return reread, nil
		}
		return proceed, fmt.Errorf("removing KubeVela's finalizer %s of %s/%s: %w", v1beta1.FinalizerResourceTracker, app.Namespace, app.Name, err)
	}
	// The status write at the end of the reconcile goes on from the new
	// metadata; the status computed so far is kept.
	app.ResourceVersion, app.Finalizers = cp.ResourceVersion, cp.Finalizers
	s.before.ResourceVersion, s.before.Finalizers = cp.ResourceVersion, cp.Finalizers
	s.run.applied = true
	setCondition(app, common.ConditionAdopted, true, common.ReasonAdoptedFromKubeVela,
		fmt.Sprintf("took over what KubeVela applied for revision %s (%d objects) without running a workflow step", s.rev.Name, objects))
	s.log.Info("adopted an Application KubeVela deployed", "revision", s.rev.Name, "objects", objects)
	return proceed, nil
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
