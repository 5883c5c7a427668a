package controller

import (
	"errors"
	"testing"
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/errclass"
	"github.com/oamflow/oamflow/pkg/placement"
	"github.com/oamflow/oamflow/pkg/tenancy"
)

type statusMod func(*v1beta1.Application)

func appWith(mods ...statusMod) *v1beta1.Application {
	app := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default", Generation: 3}}
	for _, m := range mods {
		m(app)
	}
	return app
}

var (
	parsedOK  statusMod = func(a *v1beta1.Application) { setParsedCondition(a, "src", nil) }
	revOK     statusMod = func(a *v1beta1.Application) { setRevisionCondition(a, "shop-v1", true, "FirstRevision", nil) }
	policyOK  statusMod = func(a *v1beta1.Application) { setPolicyCondition(a, 0, nil) }
	renderOK  statusMod = func(a *v1beta1.Application) { setRenderCondition(a, 1, 0, nil) }
	wfSuccess statusMod = func(a *v1beta1.Application) {
		a.Status.Workflow = &common.WorkflowStatus{AppRevision: "shop-v1", Status: wfv1alpha1.WorkflowStateSucceeded, Finished: true}
		setWorkflowCondition(a, nil)
	}
)

func wfStatus(st common.WorkflowStatus) statusMod {
	return func(a *v1beta1.Application) {
		a.Status.Workflow = &st
		setWorkflowCondition(a, nil)
	}
}

func services(s ...common.ApplicationComponentStatus) statusMod {
	return func(a *v1beta1.Application) { a.Status.Services = s }
}

func ready(in readyInput) statusMod {
	return func(a *v1beta1.Application) { setReadyCondition(a, in) }
}

func TestComputePhase(t *testing.T) {
	now := metav1.Now()
	cases := []struct {
		reason string
		app    *v1beta1.Application
		want   common.ApplicationPhase
	}{
		{"nothing done yet", appWith(), common.ApplicationStarting},
		{"deleting wins", appWith(parsedOK, func(a *v1beta1.Application) { a.DeletionTimestamp = &now }), common.ApplicationDeleting},
		{"an invalid application fails for good", appWith(func(a *v1beta1.Application) {
			setParsedCondition(a, "", errclass.Terminal(errors.New("spec.components[0].type: unknown")))
		}), common.ApplicationWorkflowFailed},
		{"a transient parse error keeps rendering", appWith(func(a *v1beta1.Application) { setParsedCondition(a, "", errors.New("timeout")) }), common.ApplicationRendering},
		{"revision not made yet", appWith(parsedOK), common.ApplicationRendering},
		{"policies not ready", appWith(parsedOK, revOK, func(a *v1beta1.Application) { setPolicyCondition(a, 0, errors.New("api down")) }), common.ApplicationPolicyGenerating},
		{"an invalid policy fails", appWith(parsedOK, revOK, func(a *v1beta1.Application) {
			setPolicyCondition(a, 0, errclass.Terminal(errors.New("spec.policies[0].properties.rules: want a list")))
		}), common.ApplicationWorkflowFailed},
		{"components not rendered yet", appWith(parsedOK, revOK, policyOK), common.ApplicationRendering},
		{"a component that fails to render fails the run", appWith(parsedOK, revOK, policyOK, func(a *v1beta1.Application) {
			setRenderCondition(a, 0, 0, errclass.Terminal(errors.New(`spec.components[0]: component "web": output.spec.replicas: conflicting values`)))
		}), common.ApplicationWorkflowFailed},
		{"workflow running", appWith(parsedOK, revOK, policyOK, renderOK, wfStatus(common.WorkflowStatus{Status: wfv1alpha1.WorkflowStateExecuting})), common.ApplicationRunningWorkflow},
		{"workflow suspended", appWith(parsedOK, revOK, policyOK, renderOK, wfStatus(common.WorkflowStatus{Status: wfv1alpha1.WorkflowStateSuspending, Suspend: true})), common.ApplicationWorkflowSuspending},
		{"workflow terminated", appWith(parsedOK, revOK, policyOK, renderOK, wfStatus(common.WorkflowStatus{Status: wfv1alpha1.WorkflowStateTerminated, Finished: true})), common.ApplicationWorkflowTerminated},
		{"workflow failed", appWith(parsedOK, revOK, policyOK, renderOK, wfStatus(common.WorkflowStatus{Status: wfv1alpha1.WorkflowStateFailed, Finished: true})), common.ApplicationWorkflowFailed},
		{"an invalid workflow fails", appWith(parsedOK, revOK, policyOK, renderOK, func(a *v1beta1.Application) {
			setWorkflowCondition(a, errclass.Terminal(errors.New("spec.workflow.ref: unsupported")))
		}), common.ApplicationWorkflowFailed},
		{"succeeded and healthy", appWith(parsedOK, revOK, policyOK, renderOK, wfSuccess, services(common.ApplicationComponentStatus{Name: "web", Healthy: true}), ready(readyInput{checked: true})), common.ApplicationRunning},
		{"succeeded but unhealthy", appWith(parsedOK, revOK, policyOK, renderOK, wfSuccess, services(common.ApplicationComponentStatus{Name: "web"}), ready(readyInput{checked: true})), common.ApplicationUnhealthy},
		{"succeeded, garbage collection failing", appWith(parsedOK, revOK, policyOK, renderOK, wfSuccess, ready(readyInput{checked: true, gcErr: errors.New("forbidden")})), common.ApplicationUnhealthy},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, computePhase(tc.app))
		})
	}
}

func TestSetReadyCondition(t *testing.T) {
	cases := []struct {
		reason     string
		app        *v1beta1.Application
		in         readyInput
		status     metav1.ConditionStatus
		wantReason string
		msg        string
	}{
		{"nothing checked", appWith(), readyInput{}, metav1.ConditionFalse, common.ReasonNotReady, "Parsed has not been checked yet"},
		{"the first failing phase explains", appWith(func(a *v1beta1.Application) {
			setParsedCondition(a, "", errclass.Terminal(errors.New(`spec.components[0].type: component type "nope" not found`)))
		}), readyInput{}, metav1.ConditionFalse, common.ReasonInvalidApplication, `spec.components[0].type: component type "nope" not found`},
		{"render failure explains", appWith(parsedOK, revOK, policyOK, func(a *v1beta1.Application) {
			setRenderCondition(a, 0, 0, errclass.Terminal(errors.New(`spec.components[1]: component "db": output.spec.image: incomplete value string`)))
		}), readyInput{}, metav1.ConditionFalse, common.ReasonRenderFailed, `spec.components[1]: component "db"`},
		{"workflow still running", appWith(parsedOK, revOK, policyOK, renderOK, wfStatus(common.WorkflowStatus{Status: wfv1alpha1.WorkflowStateExecuting})), readyInput{}, metav1.ConditionFalse, common.ReasonWorkflowRunning, "the workflow is running"},
		{"healthy", appWith(parsedOK, revOK, policyOK, renderOK, wfSuccess, services(common.ApplicationComponentStatus{Name: "web", Healthy: true})), readyInput{checked: true}, metav1.ConditionTrue, common.ReasonRunning, "1 components healthy"},
		{"unhealthy names the components", appWith(parsedOK, revOK, policyOK, renderOK, wfSuccess, services(
			common.ApplicationComponentStatus{Name: "web", Healthy: true},
			common.ApplicationComponentStatus{Name: "db", Cluster: "east", Message: "0/1 replicas ready"},
		)), readyInput{checked: true}, metav1.ConditionFalse, common.ReasonUnhealthy, "unhealthy: db@east: 0/1 replicas ready"},
		{"health check error", appWith(parsedOK, revOK, policyOK, renderOK, wfSuccess), readyInput{checked: true, healthErr: errors.New("reading Deployment default/web: timeout")}, metav1.ConditionFalse, common.ReasonHealthCheckError, "reading Deployment default/web: timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			setReadyCondition(tc.app, tc.in)
			c := meta.FindStatusCondition(tc.app.Status.Conditions, common.ConditionReady)
			if assert.NotNil(t, c) {
				assert.Equal(t, tc.status, c.Status)
				assert.Equal(t, tc.wantReason, c.Reason)
				assert.Contains(t, c.Message, tc.msg)
				assert.Equal(t, int64(3), c.ObservedGeneration)
			}
		})
	}
}

func TestSetWorkflowCondition(t *testing.T) {
	cases := []struct {
		reason string
		st     *common.WorkflowStatus
		err    error
		want   string
		msg    string
	}{
		{"not started", nil, nil, common.ReasonWorkflowRunning, "has not started"},
		{"running step", &common.WorkflowStatus{Status: wfv1alpha1.WorkflowStateExecuting, Steps: []wfv1alpha1.WorkflowStepStatus{
			{StepStatus: wfv1alpha1.StepStatus{Name: "web", Phase: wfv1alpha1.WorkflowStepPhaseSucceeded}},
			{StepStatus: wfv1alpha1.StepStatus{Name: "db", Phase: wfv1alpha1.WorkflowStepPhaseRunning, Message: `waiting for component "db" to become healthy`}},
		}}, nil, common.ReasonWorkflowRunning, `step db is running: waiting for component "db" to become healthy`},
		{"failed step with reason", &common.WorkflowStatus{Status: wfv1alpha1.WorkflowStateFailed, Finished: true, Steps: []wfv1alpha1.WorkflowStepStatus{
			{StepStatus: wfv1alpha1.StepStatus{Name: "g", Phase: wfv1alpha1.WorkflowStepPhaseFailed}, SubStepsStatus: []wfv1alpha1.StepStatus{
				{Name: "web", Phase: wfv1alpha1.WorkflowStepPhaseFailed, Reason: "Action", Message: "rendering component \"web\": spec.components[0].properties.port: conflicting values"},
			}},
		}}, nil, common.ReasonWorkflowFailed, `step g/web failed (Action): rendering component "web": spec.components[0].properties.port`},
		{"suspended step", &common.WorkflowStatus{Status: wfv1alpha1.WorkflowStateSuspending, Suspend: true, Steps: []wfv1alpha1.WorkflowStepStatus{
			{StepStatus: wfv1alpha1.StepStatus{Name: "approve", Phase: wfv1alpha1.WorkflowStepPhaseSuspending}},
		}}, nil, common.ReasonWorkflowSuspended, "step approve is suspended; resume it with `oamflow workflow resume"},
		{"suspended step with its message (a manual approval has no duration to promise)", &common.WorkflowStatus{Status: wfv1alpha1.WorkflowStateSuspending, Suspend: true, Steps: []wfv1alpha1.WorkflowStepStatus{
			{StepStatus: wfv1alpha1.StepStatus{Name: "approve", Phase: wfv1alpha1.WorkflowStepPhaseSuspending, Message: "approve the frontend"}},
		}}, nil, common.ReasonWorkflowSuspended, "step approve is suspended: approve the frontend; resume it with"},
		{"transient error", nil, errors.New("etcd timeout"), common.ReasonWorkflowError, "etcd timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			app := appWith(func(a *v1beta1.Application) { a.Status.Workflow = tc.st })
			setWorkflowCondition(app, tc.err)
			c := meta.FindStatusCondition(app.Status.Conditions, common.ConditionWorkflow)
			assert.Equal(t, tc.want, c.Reason)
			assert.Contains(t, c.Message, tc.msg)
		})
	}
}

func TestPhaseEvent(t *testing.T) {
	app := appWith(func(a *v1beta1.Application) {
		setParsedCondition(a, "", errclass.Terminal(errors.New("spec.components[0].type: not found")))
	})
	typ, reason, msg := phaseEvent(app, common.ApplicationWorkflowFailed)
	assert.Equal(t, corev1.EventTypeWarning, typ)
	assert.Equal(t, "WorkflowFailed", reason)
	assert.Equal(t, "phase workflowFailed: spec.components[0].type: not found", msg)

	ok := appWith(parsedOK, revOK, policyOK, renderOK, wfSuccess, ready(readyInput{checked: true}))
	typ, reason, _ = phaseEvent(ok, common.ApplicationRunning)
	assert.Equal(t, corev1.EventTypeNormal, typ)
	assert.Equal(t, "Running", reason)
	assert.Equal(t, "RunningWorkflow", phaseReason(common.ApplicationRunningWorkflow))
}

func TestPhaseEventDue(t *testing.T) {
	cases := []struct {
		reason   string
		from, to common.ApplicationPhase
		want     bool
	}{
		{reason: "a new Application starting its workflow: its creation says so", from: "", to: common.ApplicationRunningWorkflow},
		{reason: "a new Application failing at once", from: "", to: common.ApplicationWorkflowFailed, want: true},
		{reason: "a new Application running at once", from: "", to: common.ApplicationRunning, want: true},
		{reason: "a new Application suspended", from: "", to: common.ApplicationWorkflowSuspending, want: true},
		{reason: "an update starts the workflow again", from: common.ApplicationRunning, to: common.ApplicationRunningWorkflow, want: true},
		{reason: "the workflow finished", from: common.ApplicationRunningWorkflow, to: common.ApplicationRunning, want: true},
		{reason: "no change", from: common.ApplicationRunning, to: common.ApplicationRunning},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, phaseEventDue(tc.from, tc.to))
		})
	}
}

func TestNeedsReconcile(t *testing.T) {
	base := appWith(func(a *v1beta1.Application) {
		a.ResourceVersion = "10"
		a.Status.Workflow = &common.WorkflowStatus{AppRevision: "shop-v1", Steps: []wfv1alpha1.WorkflowStepStatus{{}, {}}}
	})
	cases := []struct {
		reason string
		mod    func(*v1beta1.Application)
		want   bool
	}{
		{"a status write of ours", func(a *v1beta1.Application) {
			a.Status.Phase = common.ApplicationRunning
			a.Status.Services = nil
		}, false},
		{"the periodic resync (same object)", func(a *v1beta1.Application) { a.ResourceVersion = "10" }, true},
		{"spec change", func(a *v1beta1.Application) { a.Generation++ }, true},
		{"annotation (publishVersion, restart)", func(a *v1beta1.Application) { a.Annotations = map[string]string{"x": "y"} }, true},
		{"suspend", func(a *v1beta1.Application) { a.Status.Workflow.Suspend = true }, true},
		{"terminate", func(a *v1beta1.Application) { a.Status.Workflow.Terminated = true }, true},
		{"restart from a step drops step statuses", func(a *v1beta1.Application) { a.Status.Workflow.Steps = a.Status.Workflow.Steps[:1] }, true},
		{"deletion", func(a *v1beta1.Application) { now := metav1.Now(); a.DeletionTimestamp = &now }, true},
		{"our finalizer added (a first reconcile goes on)", func(a *v1beta1.Application) { a.Finalizers = append(a.Finalizers, Finalizer) }, false},
		{"another finalizer added", func(a *v1beta1.Application) { a.Finalizers = append(a.Finalizers, "example.com/keep") }, true},
		{"ours and another finalizer added", func(a *v1beta1.Application) { a.Finalizers = []string{Finalizer, "example.com/keep"} }, true},
		{"status.workflow dropped", func(a *v1beta1.Application) { a.Status.Workflow = nil }, true},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			n := base.DeepCopy()
			n.ResourceVersion = "11"
			tc.mod(n)
			assert.Equal(t, tc.want, needsReconcile(base, n))
		})
	}
	t.Run("the first status write starts status.workflow", func(t *testing.T) {
		o, n := base.DeepCopy(), base.DeepCopy()
		o.Status.Workflow = nil
		n.ResourceVersion = "11"
		assert.True(t, needsReconcile(o, n))
	})
	t.Run("our finalizer removed", func(t *testing.T) {
		o, n := base.DeepCopy(), base.DeepCopy()
		o.Finalizers = []string{Finalizer}
		n.ResourceVersion = "11"
		assert.True(t, needsReconcile(o, n))
	})
}

func TestSetRenderCondition(t *testing.T) {
	cases := []struct {
		reason             string
		rendered, deferred int
		err                error
		status             metav1.ConditionStatus
		wantReason         string
		msg                string
	}{
		{"all rendered", 2, 0, nil, metav1.ConditionTrue, common.ReasonRendered, "2 components rendered"},
		{"some wait for inputs", 1, 1, nil, metav1.ConditionTrue, common.ReasonRendered, "1 components rendered; 1 wait for workflow inputs or override policies and render in their step"},
		{"a failure names the component and field", 0, 0, errclass.Terminal(errors.New(`spec.components[0]: component "web": output.spec.replicas: conflicting values 1 and "x"`)),
			metav1.ConditionFalse, common.ReasonRenderFailed, `spec.components[0]: component "web": output.spec.replicas`},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			app := appWith()
			setRenderCondition(app, tc.rendered, tc.deferred, tc.err)
			c := meta.FindStatusCondition(app.Status.Conditions, common.ConditionRender)
			if assert.NotNil(t, c) {
				assert.Equal(t, tc.status, c.Status)
				assert.Equal(t, tc.wantReason, c.Reason)
				assert.Equal(t, tc.msg, c.Message[:min(len(c.Message), len(tc.msg))])
				assert.Equal(t, int64(3), c.ObservedGeneration)
			}
		})
	}
}

func TestSetParsedFromRevision(t *testing.T) {
	live := func(a *v1beta1.Application) { setParsedCondition(a, parsedLive+" (FirstRevision)", nil) }
	bump := func(a *v1beta1.Application) { a.Generation++ }
	failed := func(a *v1beta1.Application) { setParsedCondition(a, "", errors.New("definitions cache not synced")) }
	cases := []struct {
		reason      string
		before      []statusMod
		wantMessage string
	}{
		{"the reconcile after the one that parsed this generation keeps its message (no status write for it)",
			[]statusMod{live}, parsedLive + " (FirstRevision)"},
		{"no parse recorded: rendering the revision",
			nil, "rendering revision shop-v1"},
		{"parsed for an older generation: rendering the revision",
			[]statusMod{live, bump}, "rendering revision shop-v1"},
		{"a parse error before: rendering the revision",
			[]statusMod{failed}, "rendering revision shop-v1"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			app := appWith(tc.before...)
			setParsedFromRevision(app, "shop-v1")
			got := meta.FindStatusCondition(app.Status.Conditions, common.ConditionParsed)
			require.NotNil(t, got)
			assert.Equal(t, metav1.ConditionTrue, got.Status)
			assert.Equal(t, common.ReasonParsed, got.Reason)
			assert.Equal(t, tc.wantMessage, got.Message)
			assert.Equal(t, app.Generation, got.ObservedGeneration)
		})
	}
}

func TestSetRevisionCondition(t *testing.T) {
	type call struct {
		rev     string
		created bool
	}
	cases := []struct {
		reason      string
		calls       []call
		wantReason  string
		wantMessage string
	}{
		{"the reconcile creating the first revision",
			[]call{{"shop-v1", true}}, common.ReasonRevisionCreated, "created revision shop-v1 (FirstRevision)"},
		{"the next reconciles of an app's first revision still say created",
			[]call{{"shop-v1", true}, {"shop-v1", false}, {"shop-v1", false}}, common.ReasonRevisionCreated, "created revision shop-v1 (FirstRevision)"},
		{"a new revision after an update",
			[]call{{"shop-v1", true}, {"shop-v2", true}, {"shop-v2", false}}, common.ReasonRevisionCreated, "created revision shop-v2 (FirstRevision)"},
		{"a spec back to an existing revision is unchanged",
			[]call{{"shop-v1", true}, {"shop-v2", true}, {"shop-v1", false}}, common.ReasonRevisionUnchanged, "deploying revision shop-v1"},
		{"no record of the creation (condition lost) is unchanged",
			[]call{{"shop-v1", false}}, common.ReasonRevisionUnchanged, "deploying revision shop-v1"},
		{"a revision whose name extends the created one's is not confused with it",
			[]call{{"shop-v1", true}, {"shop-v10", false}}, common.ReasonRevisionUnchanged, "deploying revision shop-v10"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			app := appWith()
			for _, c := range tc.calls {
				setRevisionCondition(app, c.rev, c.created, "FirstRevision", nil)
			}
			got := meta.FindStatusCondition(app.Status.Conditions, common.ConditionRevision)
			if assert.NotNil(t, got) {
				assert.Equal(t, metav1.ConditionTrue, got.Status)
				assert.Equal(t, tc.wantReason, got.Reason)
				assert.Equal(t, tc.wantMessage, got.Message)
			}
		})
	}
}

func TestIdentityChecked(t *testing.T) {
	sa := tenancy.Identity{Namespace: "team-a", Name: "deployer", Source: tenancy.FromAnnotation}
	other := tenancy.Identity{Namespace: "team-a", Name: "deployer2", Source: tenancy.FromAnnotation}
	cases := []struct {
		reason string
		app    *v1beta1.Application
		id     tenancy.Identity
		want   bool
	}{
		{"no Identity condition yet", appWith(), sa, false},
		{"the same ServiceAccount, as written", appWith(func(a *v1beta1.Application) { setIdentityCondition(a, sa, "", "", nil) }), sa, true},
		{"the same ServiceAccount with a note", appWith(func(a *v1beta1.Application) {
			setIdentityCondition(a, sa, "", "not checked that it exists", nil)
		}), sa, true},
		{"another ServiceAccount", appWith(func(a *v1beta1.Application) { setIdentityCondition(a, other, "", "", nil) }), sa, false},
		{"a refused identity is not a checked one", appWith(func(a *v1beta1.Application) {
			setIdentityCondition(a, sa, common.ReasonServiceAccountNotFound, "", errors.New("ServiceAccount team-a/deployer does not exist"))
		}), sa, false},
		{"the controller itself", appWith(func(a *v1beta1.Application) { setIdentityCondition(a, tenancy.Identity{}, "", "", nil) }), tenancy.Identity{}, true},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, identityChecked(tc.app, tc.id), tc.reason)
	}
}

func TestSetPlacementStatus(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 12, 2, 1, 50, 0, 0, time.UTC))
	target := func(cluster, ns, policy, reason string) placement.Target {
		return placement.Target{Placement: placement.Placement{Cluster: cluster, Namespace: ns}, Policy: policy, Reason: reason}
	}
	cases := []struct {
		reason  string
		before  []common.PlacementStatus
		targets []placement.Target
		want    []common.PlacementStatus
	}{
		{"the hub, in the app's namespace", nil, []placement.Target{target("", "", "", "no topology policy: the hub")},
			[]common.PlacementStatus{{Cluster: "local", Namespace: "default", Reason: "no topology policy: the hub"}}},
		{"members by labels and by name, the topology's namespace", nil, []placement.Target{
			target("east", "team-x", "spread", "labels match policy spread {region=us}"),
			target("local", "", "hub", "named in policy hub clusters"),
		}, []common.PlacementStatus{
			{Cluster: "east", Namespace: "team-x", Policy: "spread", Reason: "labels match policy spread {region=us}"},
			{Cluster: "local", Namespace: "default", Policy: "hub", Reason: "named in policy hub clusters"},
		}},
		{"the first step placing a cluster and namespace says why", nil, []placement.Target{
			target("east", "", "a", "named in policy a clusters"),
			target("east", "default", "b", "labels match policy b {x=y}"),
			target("", "", "", "named by apply-component step s"),
			target("local", "", "", "no deploy step: the hub"),
		}, []common.PlacementStatus{
			{Cluster: "east", Namespace: "default", Policy: "a", Reason: "named in policy a clusters"},
			{Cluster: "local", Namespace: "default", Reason: "named by apply-component step s"},
		}},
		{"a cluster's unreachable time is kept, a cluster that left goes", []common.PlacementStatus{
			{Cluster: "east", Namespace: "default", Reason: "old", UnreachableSince: &since},
			{Cluster: "west", Namespace: "default", Reason: "old"},
		}, []placement.Target{target("east", "team-x", "spread", "labels match policy spread {region=us}")},
			[]common.PlacementStatus{{Cluster: "east", Namespace: "team-x", Policy: "spread", Reason: "labels match policy spread {region=us}", UnreachableSince: &since}}},
		{"no targets", []common.PlacementStatus{{Cluster: "east"}}, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			app := appWith(func(a *v1beta1.Application) { a.Status.Placement = tc.before })
			setPlacementStatus(app, tc.targets)
			assert.Equal(t, tc.want, app.Status.Placement)
		})
	}
}

func TestSetReachability(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 12, 2, 1, 50, 0, 0, time.UTC))
	now := time.Date(2026, 12, 2, 1, 53, 20, 123, time.UTC)
	nowStamp := metav1.NewTime(now.Truncate(time.Second).Add(time.Second)) // rounded up: never before the first failure
	pl := func(cluster string, since *metav1.Time) common.PlacementStatus {
		return common.PlacementStatus{Cluster: cluster, Namespace: "default", UnreachableSince: since}
	}
	cases := []struct {
		reason      string
		before      []common.PlacementStatus
		reached     []string
		unreachable []string
		want        []common.PlacementStatus
		since       map[string]time.Time
	}{
		{"first failure: since now", []common.PlacementStatus{pl("east", nil), pl("local", nil)}, []string{"local"}, []string{"east"},
			[]common.PlacementStatus{pl("east", &nowStamp), pl("local", nil)}, map[string]time.Time{"east": nowStamp.Time}},
		{"still unreachable: since kept", []common.PlacementStatus{pl("east", &then)}, nil, []string{"east"},
			[]common.PlacementStatus{pl("east", &then)}, map[string]time.Time{"east": then.Time}},
		{"reachable again: cleared", []common.PlacementStatus{pl("east", &then)}, []string{"east"}, nil,
			[]common.PlacementStatus{pl("east", nil)}, map[string]time.Time{}},
		{"reached by one check, not another: reachable", []common.PlacementStatus{pl("east", &then)}, []string{"east"}, []string{"east"},
			[]common.PlacementStatus{pl("east", nil)}, map[string]time.Time{}},
		{"not checked: kept", []common.PlacementStatus{pl("east", &then), pl("west", nil)}, []string{"west"}, nil,
			[]common.PlacementStatus{pl("east", &then), pl("west", nil)}, map[string]time.Time{}},
		{"a cluster without a placement entry: since now, every time", nil, nil, []string{"east"},
			nil, map[string]time.Time{"east": nowStamp.Time}},
		{"one cluster in two namespaces: one time", []common.PlacementStatus{pl("east", &then), {Cluster: "east", Namespace: "other"}}, nil, []string{"east"},
			[]common.PlacementStatus{pl("east", &then), {Cluster: "east", Namespace: "other", UnreachableSince: &nowStamp}}, map[string]time.Time{"east": then.Time}},
	}
	set := func(names []string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			app := appWith(func(a *v1beta1.Application) { a.Status.Placement = tc.before })
			since := setReachability(app, set(tc.reached), set(tc.unreachable), now)
			assert.Equal(t, tc.want, app.Status.Placement)
			assert.Equal(t, tc.since, since)
		})
	}
}

func TestUnreachableService(t *testing.T) {
	since := time.Date(2026, 12, 2, 1, 50, 0, 0, time.UTC)
	prev := common.ApplicationComponentStatus{Name: "db", Namespace: "team-x", Cluster: "east", Healthy: true, Message: "ready",
		WorkloadDefinition: common.WorkloadGVK{APIVersion: "apps/v1", Kind: "Deployment"}, Details: map[string]string{"replicas": "1"},
		Traits: []common.ApplicationTraitStatus{{Type: "scaler", Healthy: true}}}
	got := unreachableService(prev, since, 5*time.Minute, errors.New("dial tcp 10.0.0.7:6443: connect: connection refused"))
	assert.Equal(t, common.ApplicationComponentStatus{Name: "db", Namespace: "team-x", Cluster: "east", Healthy: false,
		WorkloadDefinition: prev.WorkloadDefinition,
		Message:            "cluster east has been unreachable since 2026-12-02T01:50:00Z (longer than 5m0s): dial tcp 10.0.0.7:6443: connect: connection refused",
		Details:            map[string]string{"reason": common.ReasonClusterUnreachable}}, got)
}

func TestReadyWhenClustersAreUnreachable(t *testing.T) {
	down := common.ApplicationComponentStatus{Name: "db", Cluster: "east", Message: "cluster east has been unreachable since …", Details: map[string]string{"reason": common.ReasonClusterUnreachable}}
	cases := []struct {
		reason     string
		services   []common.ApplicationComponentStatus
		wantReason string
	}{
		{"only components of unreachable clusters are unhealthy", []common.ApplicationComponentStatus{down, {Name: "web", Healthy: true}}, common.ReasonClusterUnreachable},
		{"another component is unhealthy too", []common.ApplicationComponentStatus{down, {Name: "web", Message: "0/1 ready"}}, common.ReasonUnhealthy},
		{"a definition's own details.reason is not the controller's", []common.ApplicationComponentStatus{down, {Name: "web", Details: map[string]string{"reason": "CrashLoop"}}}, common.ReasonUnhealthy},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			app := appWith(parsedOK, revOK, policyOK, renderOK, wfSuccess, services(tc.services...))
			setReadyCondition(app, readyInput{checked: true})
			c := meta.FindStatusCondition(app.Status.Conditions, common.ConditionReady)
			if assert.NotNil(t, c) {
				assert.Equal(t, metav1.ConditionFalse, c.Status)
				assert.Equal(t, tc.wantReason, c.Reason)
				assert.Contains(t, c.Message, "db@east: cluster east has been unreachable")
			}
			assert.Equal(t, common.ApplicationUnhealthy, computePhase(app))
		})
	}
}
