package controller

import (
	"fmt"
	"strings"
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/errclass"
	"github.com/oamflow/oamflow/pkg/placement"
	"github.com/oamflow/oamflow/pkg/tenancy"
	"github.com/oamflow/oamflow/pkg/workflow"
)

func setCondition(app *v1beta1.Application, typ string, ok bool, reason, msg string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{
		Type:               typ,
		Status:             status,
		Reason:             reason,
		Message:            msg,
		ObservedGeneration: app.Generation,
	})
}

// setParsedCondition records the parse phase: err nil means the app was
// parsed (source says against what); an error retrying cannot fix
// (errclass.IsTerminal; an appfile.InvalidError is one) is the
// Application's fault (InvalidApplication); other errors are transient
// (ParseError).
func setParsedCondition(app *v1beta1.Application, source string, err error) {
	switch {
	case err == nil:
		setCondition(app, common.ConditionParsed, true, common.ReasonParsed, source)
	case errclass.IsTerminal(err):
		setCondition(app, common.ConditionParsed, false, common.ReasonInvalidApplication, err.Error())
	default:
		setCondition(app, common.ConditionParsed, false, common.ReasonParseError, err.Error())
	}
}

// parsedLive is how the Parsed message of a reconcile that parsed the
// spec itself begins (setParsedCondition's source).
const parsedLive = "parsed against the installed definitions"

// setParsedFromRevision records that the app is rendered from its latest
// revision rev, not parsed again. The message of the reconcile that
// parsed this generation's spec stands in the reconciles after it: it is
// still true, and a message flip alone would cost a status write.
func setParsedFromRevision(app *v1beta1.Application, rev string) {
	prev := meta.FindStatusCondition(app.Status.Conditions, common.ConditionParsed)
	if prev != nil && prev.Status == metav1.ConditionTrue && prev.Reason == common.ReasonParsed &&
		prev.ObservedGeneration == app.Generation && strings.HasPrefix(prev.Message, parsedLive) {
		return
	}
	setParsedCondition(app, "rendering revision "+rev, nil)
}

// setRevisionCondition records the revision phase: the revision deployed,
// whether it was created for the app's current spec, or the error. A
// revision keeps RevisionCreated in the reconciles after the one that
// created it (so an app's very first revision never reads
// RevisionUnchanged); RevisionUnchanged is for a spec that went back to
// an existing revision, or a condition lost since.
func setRevisionCondition(app *v1beta1.Application, rev string, created bool, why string, err error) {
	prev := meta.FindStatusCondition(app.Status.Conditions, common.ConditionRevision)
	switch {
	case err != nil:
		setCondition(app, common.ConditionRevision, false, common.ReasonRevisionError, err.Error())
	case created:
		setCondition(app, common.ConditionRevision, true, common.ReasonRevisionCreated, fmt.Sprintf("created revision %s (%s)", rev, why))
	case prev != nil && prev.Status == metav1.ConditionTrue && prev.Reason == common.ReasonRevisionCreated &&
		strings.HasPrefix(prev.Message, "created revision "+rev+" "):
		setCondition(app, common.ConditionRevision, true, common.ReasonRevisionCreated, prev.Message)
	default:
		setCondition(app, common.ConditionRevision, true, common.ReasonRevisionUnchanged, fmt.Sprintf("deploying revision %s", rev))
	}
}

// setPolicyCondition records the policy phase: how many policies the app
// has, or why they cannot be used.
func setPolicyCondition(app *v1beta1.Application, policies int, err error) {
	switch {
	case err == nil:
		setCondition(app, common.ConditionPolicy, true, common.ReasonPoliciesReady, fmt.Sprintf("%d policies", policies))
	case errclass.IsTerminal(err):
		setCondition(app, common.ConditionPolicy, false, common.ReasonInvalidPolicy, err.Error())
	default:
		setCondition(app, common.ConditionPolicy, false, common.ReasonPolicyError, err.Error())
	}
}

// setIdentityCondition records who the controller acts as for the
// Application (id.Describe(), then note when not empty), or why it acts as
// no one: err is terminal, its reason one of
// common.ReasonInvalidIdentity and common.ReasonServiceAccountNotFound.
func setIdentityCondition(app *v1beta1.Application, id tenancy.Identity, reason, note string, err error) {
	switch {
	case err != nil:
		setCondition(app, common.ConditionIdentity, false, reason, err.Error())
	case id.IsController():
		setCondition(app, common.ConditionIdentity, true, common.ReasonSingleTenant, id.Describe())
	default:
		msg := id.Describe()
		if note != "" {
			msg += "; " + note
		}
		setCondition(app, common.ConditionIdentity, true, common.ReasonServiceAccount, msg)
	}
}

// identityChecked reports whether the Identity condition says the
// controller acts as id (as setIdentityCondition wrote it: id.Describe(),
// then an optional note).
func identityChecked(app *v1beta1.Application, id tenancy.Identity) bool {
	c := meta.FindStatusCondition(app.Status.Conditions, common.ConditionIdentity)
	if c == nil || c.Status != metav1.ConditionTrue {
		return false
	}
	d := id.Describe()
	return c.Message == d || strings.HasPrefix(c.Message, d+"; ")
}

// identityRefused returns the Identity condition when it is False.
func identityRefused(app *v1beta1.Application) *metav1.Condition {
	if c := meta.FindStatusCondition(app.Status.Conditions, common.ConditionIdentity); c != nil && c.Status != metav1.ConditionTrue {
		return c
	}
	return nil
}

// setRenderCondition records the render phase: how many components were
// rendered and how many wait for workflow inputs (rendered by their
// step), or the component that failed (always the user's: a template
// evaluated with the revision's properties and definitions fails the same
// way every time).
func setRenderCondition(app *v1beta1.Application, rendered, deferred int, err error) {
	if err != nil {
		setCondition(app, common.ConditionRender, false, common.ReasonRenderFailed, err.Error())
		return
	}
	msg := fmt.Sprintf("%d components rendered", rendered)
	if deferred > 0 {
		msg += fmt.Sprintf("; %d wait for workflow inputs or override policies and render in their step", deferred)
	}
	setCondition(app, common.ConditionRender, true, common.ReasonRendered, msg)
}

// setWorkflowCondition records the workflow phase from status.workflow, or
// the error that stopped it (terminal: InvalidWorkflow).
func setWorkflowCondition(app *v1beta1.Application, err error) {
	st := app.Status.Workflow
	switch {
	case err != nil && errclass.IsTerminal(err):
		setCondition(app, common.ConditionWorkflow, false, common.ReasonInvalidWorkflow, err.Error())
	case err != nil:
		setCondition(app, common.ConditionWorkflow, false, common.ReasonWorkflowError, err.Error())
	case st == nil:
		setCondition(app, common.ConditionWorkflow, false, common.ReasonWorkflowRunning, "the workflow has not started")
	case st.Status == wfv1alpha1.WorkflowStateSucceeded:
		setCondition(app, common.ConditionWorkflow, true, common.ReasonWorkflowSucceeded, fmt.Sprintf("revision %s deployed", st.AppRevision))
	case st.Status == wfv1alpha1.WorkflowStateFailed:
		setCondition(app, common.ConditionWorkflow, false, common.ReasonWorkflowFailed, failureMessage(st))
	case st.Status == wfv1alpha1.WorkflowStateTerminated:
		setCondition(app, common.ConditionWorkflow, false, common.ReasonWorkflowTerminated, "the workflow was terminated; restart it to deploy again")
	case st.Suspend || st.Status == wfv1alpha1.WorkflowStateSuspending:
		msg := "the workflow is suspended; resume it to go on"
		if path, step, ok := workflow.CurrentStep(st); ok && step.Phase == wfv1alpha1.WorkflowStepPhaseSuspending {
			msg = fmt.Sprintf("step %s is suspended", path)
			if step.Message != "" {
				msg += ": " + step.Message
			}
			msg += fmt.Sprintf("; resume it with `oamflow workflow resume %s` (a suspend step with a duration also resumes by itself)", app.Name)
		}
		setCondition(app, common.ConditionWorkflow, false, common.ReasonWorkflowSuspended, msg)
	default:
		msg := "the workflow is running"
		if path, step, ok := workflow.CurrentStep(st); ok {
			msg = fmt.Sprintf("step %s is %s", path, step.Phase)
			if step.Message != "" {
				msg += ": " + step.Message
			}
		}
		setCondition(app, common.ConditionWorkflow, false, common.ReasonWorkflowRunning, msg)
	}
}

// failureMessage says which step failed and why.
func failureMessage(st *common.WorkflowStatus) string {
	if path, step, ok := workflow.FailedStep(st); ok {
		msg := fmt.Sprintf("step %s failed", path)
		if step.Reason != "" {
			msg += " (" + step.Reason + ")"
		}
		if step.Message != "" {
			msg += ": " + step.Message
		}
		return msg
	}
	if st.Message != "" {
		return st.Message
	}
	return "the workflow failed"
}

// phaseConditions are the conditions of the reconcile phases in order;
// Ready sums them up.
func phaseConditions() []string {
	return []string{common.ConditionParsed, common.ConditionRevision, common.ConditionPolicy, common.ConditionRender, common.ConditionWorkflow}
}

// readyInput is what the health phase learned.
type readyInput struct {
	// checked is true when the health phase ran (workflow succeeded).
	checked bool
	// gcErr is the last garbage collection error.
	gcErr error
	// healthErr is an error checking health.
	healthErr error
	// driftErr is why what drifted from the revision could not be put
	// back (the identity may no longer write it, say).
	driftErr error
}

// setReadyCondition is the one place Ready is set: True when every phase
// succeeded and every service is healthy; otherwise False with the reason
// of the first phase that is not done.
func setReadyCondition(app *v1beta1.Application, in readyInput) {
	if c := identityRefused(app); c != nil {
		setCondition(app, common.ConditionReady, false, c.Reason, c.Message)
		return
	}
	for _, typ := range phaseConditions() {
		c := meta.FindStatusCondition(app.Status.Conditions, typ)
		if c == nil {
			setCondition(app, common.ConditionReady, false, common.ReasonNotReady, fmt.Sprintf("%s has not been checked yet", typ))
			return
		}
		if c.Status != metav1.ConditionTrue {
			setCondition(app, common.ConditionReady, false, c.Reason, c.Message)
			return
		}
	}
	if !in.checked {
		setCondition(app, common.ConditionReady, false, common.ReasonNotReady, "health has not been checked yet")
		return
	}
	if in.healthErr != nil {
		setCondition(app, common.ConditionReady, false, common.ReasonHealthCheckError, in.healthErr.Error())
		return
	}
	if in.driftErr != nil {
		setCondition(app, common.ConditionReady, false, common.ReasonDriftRepairFailed, "resources drifted from the revision and could not be repaired: "+in.driftErr.Error())
		return
	}
	if msg := unhealthyMessage(app.Status.Services); msg != "" {
		reason := common.ReasonClusterUnreachable
		for _, svc := range app.Status.Services {
			if !svc.Healthy && svc.Details[detailReason] != common.ReasonClusterUnreachable {
				reason = common.ReasonUnhealthy
			}
		}
		setCondition(app, common.ConditionReady, false, reason, msg)
		return
	}
	if in.gcErr != nil {
		setCondition(app, common.ConditionReady, false, common.ReasonGarbageCollectFailed, "garbage collection of resources the new revision dropped failed (retrying): "+in.gcErr.Error())
		return
	}
	setCondition(app, common.ConditionReady, true, common.ReasonRunning, fmt.Sprintf("%d components healthy", len(app.Status.Services)))
}

// unhealthyMessage lists the unhealthy services ("" when all are healthy).
func unhealthyMessage(services []common.ApplicationComponentStatus) string {
	var parts []string
	for _, s := range services {
		if s.Healthy {
			continue
		}
		where := s.Name
		if s.Cluster != "" && s.Cluster != v1beta1.ClusterLocal {
			where += "@" + s.Cluster
		}
		if s.Message != "" {
			where += ": " + s.Message
		}
		parts = append(parts, where)
	}
	if len(parts) == 0 {
		return ""
	}
	return "unhealthy: " + strings.Join(parts, "; ")
}

// computePhase derives status.status from the conditions and
// status.workflow. It is the only writer of the phase.
func computePhase(app *v1beta1.Application) common.ApplicationPhase {
	if app.DeletionTimestamp != nil {
		return common.ApplicationDeleting
	}
	cond := func(t string) *metav1.Condition { return meta.FindStatusCondition(app.Status.Conditions, t) }
	if identityRefused(app) != nil {
		return common.ApplicationWorkflowFailed
	}
	parsed := cond(common.ConditionParsed)
	if parsed == nil {
		return common.ApplicationStarting
	}
	if parsed.Status != metav1.ConditionTrue {
		if parsed.Reason == common.ReasonInvalidApplication {
			return common.ApplicationWorkflowFailed
		}
		return common.ApplicationRendering
	}
	if c := cond(common.ConditionRevision); c == nil || c.Status != metav1.ConditionTrue {
		return common.ApplicationRendering
	}
	if c := cond(common.ConditionPolicy); c == nil || c.Status != metav1.ConditionTrue {
		if c != nil && c.Reason == common.ReasonInvalidPolicy {
			return common.ApplicationWorkflowFailed
		}
		return common.ApplicationPolicyGenerating
	}
	if c := cond(common.ConditionRender); c == nil || c.Status != metav1.ConditionTrue {
		if c != nil && c.Reason == common.ReasonRenderFailed {
			return common.ApplicationWorkflowFailed
		}
		return common.ApplicationRendering
	}
	wf := cond(common.ConditionWorkflow)
	if wf == nil {
		return common.ApplicationRunningWorkflow
	}
	switch wf.Reason {
	case common.ReasonWorkflowFailed, common.ReasonInvalidWorkflow:
		return common.ApplicationWorkflowFailed
	case common.ReasonWorkflowTerminated:
		return common.ApplicationWorkflowTerminated
	case common.ReasonWorkflowSuspended:
		return common.ApplicationWorkflowSuspending
	case common.ReasonWorkflowSucceeded:
	default:
		return common.ApplicationRunningWorkflow
	}
	if r := cond(common.ConditionReady); r != nil && r.Status == metav1.ConditionTrue {
		return common.ApplicationRunning
	}
	return common.ApplicationUnhealthy
}

// phaseEvent returns the event type and reason announcing a change to
// phase, and a message from the condition that explains it.
func phaseEvent(app *v1beta1.Application, phase common.ApplicationPhase) (eventType, reason, msg string) {
	eventType = corev1.EventTypeNormal
	switch phase {
	case common.ApplicationWorkflowFailed, common.ApplicationUnhealthy, common.ApplicationWorkflowTerminated:
		eventType = corev1.EventTypeWarning
	}
	reason = phaseReason(phase)
	msg = fmt.Sprintf("phase %s", phase)
	for _, typ := range append([]string{common.ConditionIdentity}, append(phaseConditions(), common.ConditionReady)...) {
		c := meta.FindStatusCondition(app.Status.Conditions, typ)
		if c != nil && c.Status != metav1.ConditionTrue {
			return eventType, reason, msg + ": " + c.Message
		}
	}
	if c := meta.FindStatusCondition(app.Status.Conditions, common.ConditionReady); c != nil {
		msg += ": " + c.Message
	}
	return eventType, reason, msg
}

// phaseEventDue reports whether a change of phase from one reconcile to
// the next is an Event: every change is, except a new Application's first
// phase when it is runningWorkflow — its creation (creationTimestamp, the
// user's own action) marks that moment, and the Event would be one more
// write per Application for nothing the status does not say. A new
// Application failing, suspended or unhealthy still has its Event, and so
// has every later change (an update starting its workflow again).
func phaseEventDue(from, to common.ApplicationPhase) bool {
	if from == to {
		return false
	}
	return from != "" || to != common.ApplicationRunningWorkflow
}

// phaseReason is the CamelCase event reason of a phase ("runningWorkflow"
// → "RunningWorkflow").
func phaseReason(p common.ApplicationPhase) string {
	s := string(p)
	if s == "" {
		return "Unknown"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// readyReason is the reason of the Ready condition ("" when it has none).
func readyReason(app *v1beta1.Application) string {
	for _, c := range app.Status.Conditions {
		if c.Type == common.ConditionReady {
			return c.Reason
		}
	}
	return ""
}

// setPlacementStatus sets status.placement to targets (a workflow run's,
// in the order its steps place them): one entry per cluster and
// namespace, the first target placing it saying why; the hub is named
// "local" and an empty namespace is the Application's. A cluster's
// UnreachableSince is kept from the entries it replaces.
func setPlacementStatus(app *v1beta1.Application, targets []placement.Target) {
	since := map[string]*metav1.Time{}
	for _, p := range app.Status.Placement {
		if p.UnreachableSince != nil && since[p.Cluster] == nil {
			since[p.Cluster] = p.UnreachableSince
		}
	}
	type key struct{ cluster, namespace string }
	seen := map[key]bool{}
	var out []common.PlacementStatus
	for _, t := range targets {
		k := key{clusterLabel(t.Cluster), t.Namespace}
		if k.namespace == "" {
			k.namespace = app.Namespace
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, common.PlacementStatus{Cluster: k.cluster, Namespace: k.namespace, Policy: t.Policy, Reason: t.Reason, UnreachableSince: since[k.cluster]})
	}
	app.Status.Placement = out
}

// setReachability records in status.placement what a health check found:
// a cluster it reached has no UnreachableSince; one it could not reach
// (and did not reach otherwise) keeps the time it was first found so, or
// gets now. Clusters it did not try keep theirs. It returns, for every
// unreachable cluster, since when it is (now for one without a placement
// entry to keep the time in).
//
// The time is stored to the second (RFC 3339), rounded up: rounded down it
// could precede the first failure by up to a second, and a cluster would
// turn unhealthy that much before ClusterUnreachableAfter.
func setReachability(app *v1beta1.Application, reached, unreachable map[string]bool, now time.Time) map[string]time.Time {
	stamp := metav1.NewTime(ceilSecond(now)).Rfc3339Copy()
	since := map[string]time.Time{}
	for i := range app.Status.Placement {
		p := &app.Status.Placement[i]
		switch {
		case reached[p.Cluster]:
			p.UnreachableSince = nil
		case unreachable[p.Cluster]:
			if p.UnreachableSince == nil {
				p.UnreachableSince = stamp.DeepCopy()
			}
			if t, ok := since[p.Cluster]; !ok || p.UnreachableSince.Time.Before(t) {
				since[p.Cluster] = p.UnreachableSince.Time
			}
		}
	}
	for c := range unreachable {
		if _, ok := since[c]; !ok && !reached[c] {
			since[c] = stamp.Time
		}
	}
	return since
}

// ceilSecond is t rounded up to a whole second.
func ceilSecond(t time.Time) time.Time {
	if down := t.Truncate(time.Second); !down.Equal(t) {
		return down.Add(time.Second)
	}
	return t
}

// detailReason is the key of status.services[].details saying why a
// component is unhealthy when oamflow, not its definition, judged it
// (common.ReasonClusterUnreachable).
const detailReason = "reason"

// unreachableService is svc, in a cluster unreachable since since, as the
// health check reports it once that is longer than after: unhealthy,
// details.reason ClusterUnreachable, the message naming the cluster, since
// when, and the last error. Its definition's details and traits cannot be
// evaluated and are left out.
func unreachableService(svc common.ApplicationComponentStatus, since time.Time, after time.Duration, cause error) common.ApplicationComponentStatus {
	msg := fmt.Sprintf("cluster %s has been unreachable since %s (longer than %s)", clusterLabel(svc.Cluster), since.UTC().Format(time.RFC3339), after)
	if cause != nil {
		msg += ": " + cause.Error()
	}
	return common.ApplicationComponentStatus{
		Name: svc.Name, Namespace: svc.Namespace, Cluster: svc.Cluster, WorkloadDefinition: svc.WorkloadDefinition,
		Healthy: false, Message: msg, Details: map[string]string{detailReason: common.ReasonClusterUnreachable},
	}
}
