package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// appMod changes a fixture Application.
type appMod func(*v1beta1.Application)

// fixtureApp is Application default/demo (components web and worker,
// generation 2, observed, created two hours before goldenNow) with mods.
func fixtureApp(mods ...appMod) *v1beta1.Application {
	app := &v1beta1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default", Generation: 2, CreationTimestamp: ago(2 * time.Hour)},
		Spec: v1beta1.ApplicationSpec{Components: []common.ApplicationComponent{
			{Name: "web", Type: "webservice"},
			{Name: "worker", Type: "worker", DependsOn: []string{"web"}},
		}},
	}
	app.Status.ObservedGeneration = 2
	for _, m := range mods {
		m(app)
	}
	return app
}

func withPhase(p common.ApplicationPhase) appMod {
	return func(a *v1beta1.Application) { a.Status.Phase = p }
}

func withCondition(typ string, ok bool, reason, msg string) appMod {
	return func(a *v1beta1.Application) {
		st := metav1.ConditionFalse
		if ok {
			st = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg,
			LastTransitionTime: ago(time.Minute)})
	}
}

// withSteps sets a workflow run of revision demo-v2 (the latest revision),
// executing, with steps; it started with its first step (or a minute ago).
func withSteps(steps ...wfv1alpha1.WorkflowStepStatus) appMod {
	return func(a *v1beta1.Application) {
		start := ago(time.Minute)
		for _, s := range steps {
			if !s.FirstExecuteTime.IsZero() && s.FirstExecuteTime.Before(&start) {
				start = s.FirstExecuteTime
			}
		}
		a.Status.LatestRevision = &common.Revision{Name: "demo-v2", Revision: 2, RevisionHash: "5f2c0a9e"}
		a.Status.Workflow = &common.WorkflowStatus{AppRevision: "demo-v2", Mode: "StepByStep-DAG", Status: wfv1alpha1.WorkflowStateExecuting,
			StartTime: start, Steps: steps}
	}
}

// withWorkflowDone marks the workflow run finished with status after took.
func withWorkflowDone(status wfv1alpha1.WorkflowRunPhase, took time.Duration) appMod {
	return func(a *v1beta1.Application) {
		wf := a.Status.Workflow
		wf.Status, wf.Finished = status, true
		wf.EndTime = metav1.NewTime(wf.StartTime.Add(took))
	}
}

func withServices(s ...common.ApplicationComponentStatus) appMod {
	return func(a *v1beta1.Application) { a.Status.Services = s }
}

func service(name, cluster string, healthy bool, msg string) common.ApplicationComponentStatus {
	return common.ApplicationComponentStatus{Name: name, Namespace: "default", Cluster: cluster, Healthy: healthy, Message: msg}
}

// step is a step that started startedAgo before goldenNow (never when 0)
// and last ran ranFor after it started.
func step(name, typ string, phase wfv1alpha1.WorkflowStepPhase, startedAgo, ranFor time.Duration, msg string) wfv1alpha1.WorkflowStepStatus {
	s := wfv1alpha1.WorkflowStepStatus{StepStatus: wfv1alpha1.StepStatus{ID: name + "-id", Name: name, Type: typ, Phase: phase, Message: msg}}
	if startedAgo > 0 {
		s.FirstExecuteTime = ago(startedAgo)
		s.LastExecuteTime = metav1.NewTime(s.FirstExecuteTime.Add(ranFor))
	}
	return s
}

func withSubSteps(parent wfv1alpha1.WorkflowStepStatus, subs ...wfv1alpha1.WorkflowStepStatus) wfv1alpha1.WorkflowStepStatus {
	for _, s := range subs {
		parent.SubStepsStatus = append(parent.SubStepsStatus, s.StepStatus)
	}
	return parent
}

func failed(s wfv1alpha1.WorkflowStepStatus, reason string) wfv1alpha1.WorkflowStepStatus {
	s.Reason = reason
	return s
}

func runningFixture() *v1beta1.Application {
	web := service("web", "", true, "Ready:3/3")
	web.Traits = []common.ApplicationTraitStatus{{Type: "scaler", Healthy: true}, {Type: "expose", Healthy: true, Message: "service web: 10.0.0.12"}}
	web.Details = map[string]string{"replicas": "3", "image": "nginx:1.27"}
	return fixtureApp(withPhase(common.ApplicationRunning),
		withCondition("Parsed", true, "Parsed", "parsed against live definitions"),
		withCondition("Workflow", true, "WorkflowSucceeded", "revision demo-v2 deployed"),
		withCondition("Ready", true, "Running", "3 components healthy"),
		withSteps(
			step("apply-web", "apply-component", wfv1alpha1.WorkflowStepPhaseSucceeded, 60*time.Second, 4*time.Second, ""),
			step("apply-worker", "apply-component", wfv1alpha1.WorkflowStepPhaseSucceeded, 56*time.Second, 12*time.Second, ""),
		),
		withWorkflowDone(wfv1alpha1.WorkflowStateSucceeded, 16*time.Second),
		withServices(service("worker", "", true, ""), web, service("web", "hz-1", true, "Ready:3/3")),
		func(a *v1beta1.Application) { a.Annotations = map[string]string{v1beta1.AnnoPublishVersion: "v2"} },
	)
}

func failedFixture() *v1beta1.Application {
	web := service("web", "hz-1", false, "0/3 replicas ready: ImagePullBackOff")
	web.Traits = []common.ApplicationTraitStatus{{Type: "scaler", Healthy: true}, {Type: "gateway", Healthy: false, Message: "no address yet"}}
	return fixtureApp(withPhase(common.ApplicationWorkflowFailed),
		withCondition("Parsed", true, "Parsed", "parsed against live definitions"),
		withCondition("Workflow", false, "WorkflowFailed", "step deploy/hz-1 failed (Timeout): web did not become healthy within 5m0s"),
		withCondition("Ready", false, "WorkflowFailed", "step deploy/hz-1 failed (Timeout): web did not become healthy within 5m0s"),
		withSteps(
			step("apply-config", "apply-object", wfv1alpha1.WorkflowStepPhaseSucceeded, 6*time.Minute, 800*time.Millisecond, ""),
			withSubSteps(failed(step("deploy", "step-group", wfv1alpha1.WorkflowStepPhaseFailed, 6*time.Minute, 5*time.Minute, ""), "Timeout"),
				step("local", "deploy", wfv1alpha1.WorkflowStepPhaseSucceeded, 6*time.Minute, 20*time.Second, ""),
				failed(step("hz-1", "deploy", wfv1alpha1.WorkflowStepPhaseFailed, 6*time.Minute, 5*time.Minute, "web did not become healthy within 5m0s; the last thing it said was that the image registry.example.com/web:v2 could not be pulled"), "Timeout")),
			step("notify", "notification", wfv1alpha1.WorkflowStepPhasePending, 0, 0, ""),
		),
		withWorkflowDone(wfv1alpha1.WorkflowStateFailed, 5*time.Minute+time.Second),
		withServices(service("web", "", true, "Ready:1/1"), web),
	)
}

func TestFormatStatusGolden(t *testing.T) {
	cases := []struct {
		name   string
		app    *v1beta1.Application
		detail bool
	}{
		{name: "running", app: runningFixture()},
		{name: "running-detail", app: runningFixture(), detail: true},
		{name: "failed", app: failedFixture()},
		{name: "failed-detail", app: failedFixture(), detail: true},
		{name: "invalid", app: fixtureApp(withPhase(common.ApplicationWorkflowFailed),
			withCondition("Parsed", false, "InvalidApplication", `component "web": type "webservic" not found: no ComponentDefinition "webservic" in default, oamflow-system or vela-system`),
			withCondition("Ready", false, "InvalidApplication", `component "web": type "webservic" not found`))},
		{name: "suspended", app: fixtureApp(withPhase(common.ApplicationWorkflowSuspending),
			withCondition("Workflow", false, "WorkflowSuspended", "step approve is suspended; resume it with `oamflow workflow resume demo` (a suspend step with a duration also resumes by itself)"),
			withCondition("Ready", false, "WorkflowSuspended", "step approve is suspended"),
			withSteps(step("apply-web", "apply-component", wfv1alpha1.WorkflowStepPhaseSucceeded, 50*time.Second, 3*time.Second, ""),
				step("approve", "suspend", wfv1alpha1.WorkflowStepPhaseSuspending, 45*time.Second, 0, "")))},
		{name: "not-reconciled", app: fixtureApp(func(a *v1beta1.Application) { a.Generation, a.Status.ObservedGeneration = 1, 0 })},
		{name: "stale", app: fixtureApp(withPhase(common.ApplicationRunning), withCondition("Ready", true, "Running", "1 components healthy"),
			func(a *v1beta1.Application) { a.Generation = 3 })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, formatStatus(&b, newStatusReport(tc.app), tc.detail, goldenNow))
			assertGolden(t, "status/"+tc.name+".golden", b.String())
		})
	}
}

func TestFormatTreeGolden(t *testing.T) {
	rep := newStatusReport(runningFixture())
	rep.Resources = []liveResource{
		{Cluster: "hz-1", Component: "web", APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "web", State: stateUnreachable},
		{Cluster: "local", Component: "web", APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "web", State: "Healthy", Healthy: true, Message: "3/3 replicas ready"},
		{Cluster: "local", Component: "web", Trait: "expose", APIVersion: "v1", Kind: "Service", Namespace: "default", Name: "web", State: "Healthy", Healthy: true},
		{Cluster: "local", Component: "web", Trait: auxiliaryWorkload, APIVersion: "v1", Kind: "Service", Namespace: "default", Name: "web-internal", State: "Healthy", Healthy: true, Message: "ClusterIP 10.96.0.7"},
		{Cluster: "local", Component: "web", Trait: "config", APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "web-a", State: "Healthy", Healthy: true},
		{Cluster: "local", Component: "web", Trait: "config", APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "web-b", State: stateMissing, Message: "not found in cluster local"},
		{Cluster: "local", Component: "worker", APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "worker", State: "Progressing", Message: "1/2 replicas ready"},
		{Cluster: "local", APIVersion: "v1", Kind: "Secret", Namespace: "default", Name: "stray", State: "Healthy", Healthy: true},
	}
	sortResources(rep.Resources)
	rep.Unreachable = map[string]string{"hz-1": `cluster "hz-1" is not registered`}
	var b bytes.Buffer
	require.NoError(t, formatStatus(&b, rep, false, goldenNow))
	assertGolden(t, "status/tree.golden", b.String())
}

func TestCollectResources(t *testing.T) {
	ref := func(cluster, apiVersion, kind, name string) common.ClusterObjectReference {
		return common.ClusterObjectReference{Cluster: cluster, APIVersion: apiVersion, Kind: kind, Namespace: "default", Name: name}
	}
	managed := func(r common.ClusterObjectReference, component, trait string, deleted bool) v1beta1.ManagedResource {
		return v1beta1.ManagedResource{ClusterObjectReference: r, Component: component, Trait: trait, Deleted: deleted}
	}
	tracker := func(entries ...v1beta1.ManagedResource) v1beta1.ResourceTracker {
		return v1beta1.ResourceTracker{Spec: v1beta1.ResourceTrackerSpec{Type: v1beta1.ResourceTrackerTypeVersioned, ManagedResources: entries}}
	}
	cases := []struct {
		reason   string
		applied  []common.ClusterObjectReference
		trackers []v1beta1.ResourceTracker
		want     []liveResource
	}{
		{
			reason:  "status-only resources have no component; the hub is named local",
			applied: []common.ClusterObjectReference{ref("", "apps/v1", "Deployment", "web")},
			want:    []liveResource{{Cluster: "local", APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "web"}},
		},
		{
			reason:   "a resource both tracked and in the status appears once, with the tracker's component, whatever its API version",
			applied:  []common.ClusterObjectReference{ref("local", "apps/v1", "Deployment", "web")},
			trackers: []v1beta1.ResourceTracker{tracker(managed(ref("", "apps/v1beta2", "Deployment", "web"), "web", "", false))},
			want:     []liveResource{{Cluster: "local", Component: "web", APIVersion: "apps/v1beta2", Kind: "Deployment", Namespace: "default", Name: "web"}},
		},
		{
			reason: "deleted entries are left out; the rest is sorted by cluster, component, kind and name",
			trackers: []v1beta1.ResourceTracker{
				tracker(managed(ref("hz", "v1", "Service", "web"), "web", "expose", false), managed(ref("", "v1", "ConfigMap", "old"), "web", "", true)),
				tracker(managed(ref("", "v1", "Service", "web"), "web", "expose", false), managed(ref("", "apps/v1", "Deployment", "web"), "web", "", false)),
			},
			want: []liveResource{
				{Cluster: "hz", Component: "web", Trait: "expose", APIVersion: "v1", Kind: "Service", Namespace: "default", Name: "web"},
				{Cluster: "local", Component: "web", APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "web"},
				{Cluster: "local", Component: "web", Trait: "expose", APIVersion: "v1", Kind: "Service", Namespace: "default", Name: "web"},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			app := fixtureApp(func(a *v1beta1.Application) { a.Status.AppliedResources = tc.applied })
			assert.Equal(t, tc.want, collectResources(app, tc.trackers))
		})
	}
}

// testStatus drives `oamflow status` against the API server: a table
// view, -o json, and --tree with a live, a MISSING and an unreachable
// resource.
func testStatus(t *testing.T, e *cliEnv) {
	ctx := context.Background()
	app := runningFixture()
	app.ObjectMeta = metav1.ObjectMeta{Name: "shop", Namespace: "default"}
	st := app.Status
	require.NoError(t, e.c.Create(ctx, app))
	app.Status = st
	app.Status.ObservedGeneration = app.Generation
	app.Status.AppliedResources = []common.ClusterObjectReference{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "shop-config"},
		{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "shop-web"},
		{Cluster: "hz-1", APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "shop-web"},
	}
	app.Status.LatestRevision = &common.Revision{Name: "shop-v2", Revision: 2}
	require.NoError(t, e.c.Status().Update(ctx, app))
	require.NoError(t, e.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shop-config", Namespace: "default",
		Labels: map[string]string{v1beta1.LabelAppComponent: "web", v1beta1.LabelTraitType: "config"}}}))
	trackers := []*v1beta1.ResourceTracker{
		{ObjectMeta: metav1.ObjectMeta{Name: "shop-v2-default", Labels: map[string]string{v1beta1.LabelAppName: "shop", v1beta1.LabelAppNamespace: "default", v1beta1.LabelAppRevision: "shop-v2"}},
			Spec: v1beta1.ResourceTrackerSpec{Type: v1beta1.ResourceTrackerTypeVersioned, ManagedResources: []v1beta1.ManagedResource{
				{ClusterObjectReference: common.ClusterObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "shop-web"}, Component: "web"},
				{ClusterObjectReference: common.ClusterObjectReference{APIVersion: "v1", Kind: "Service", Namespace: "default", Name: "shop-web"}, Component: "web", Trait: "expose"},
			}}},
		// An older revision's tracker: what it lists is not shown.
		{ObjectMeta: metav1.ObjectMeta{Name: "shop-v1-default", Labels: map[string]string{v1beta1.LabelAppName: "shop", v1beta1.LabelAppNamespace: "default", v1beta1.LabelAppRevision: "shop-v1"}},
			Spec: v1beta1.ResourceTrackerSpec{Type: v1beta1.ResourceTrackerTypeVersioned, ManagedResources: []v1beta1.ManagedResource{
				{ClusterObjectReference: common.ClusterObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "shop-old"}, Component: "web"},
			}}},
	}
	for _, rt := range trackers {
		require.NoError(t, e.c.Create(ctx, rt))
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "shop-web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	require.NoError(t, e.c.Create(ctx, svc))

	t.Run("table", func(t *testing.T) {
		r := e.run("", "status", "shop")
		require.Equal(t, ExitOK, r.code, r.err)
		assert.Regexp(t, `Phase:\s+running`, r.out)
		assert.Contains(t, r.out, "apply-worker")
		assert.Contains(t, r.out, "hz-1")
		assert.NotContains(t, r.out, "RESOURCE", "no tree without --tree")
	})
	t.Run("tree", func(t *testing.T) {
		r := e.run("", "status", "shop", "--tree")
		require.Equal(t, ExitOK, r.code, r.err)
		for _, want := range []string{
			"shop-config (trait config)", // component and trait from the object's labels
			"shop-web (trait expose)",
			"MISSING", "not found in cluster local",
			"not reachable from the CLI", `cluster "hz-1"`,
		} {
			assert.Contains(t, r.out, want)
		}
		assert.NotContains(t, r.out, "shop-old", "resources of older revisions are not shown")
	})
	t.Run("json", func(t *testing.T) {
		r := e.run("", "status", "shop", "--tree", "-o", "json")
		require.Equal(t, ExitOK, r.code, r.err)
		var rep statusReport
		require.NoError(t, json.Unmarshal([]byte(r.out), &rep))
		assert.Equal(t, common.ApplicationRunning, rep.Phase)
		states := map[string]string{}
		for _, res := range rep.Resources {
			states[res.Cluster+"/"+res.Kind+"/"+res.Name] = res.State
		}
		assert.Equal(t, map[string]string{
			"local/ConfigMap/shop-config": "Healthy",
			"local/Deployment/shop-web":   stateMissing,
			"local/Service/shop-web":      "Healthy",
			"hz-1/Deployment/shop-web":    stateUnreachable,
		}, states)
		assert.Contains(t, rep.Unreachable, "hz-1")
	})
	t.Run("tree of a Helm release", func(t *testing.T) { testStatusHelmTree(t, e) })
	t.Run("errors", func(t *testing.T) {
		cases := []struct {
			reason string
			args   []string
			want   string
			// absent must not be in the error ("" = not checked).
			absent string
		}{
			{reason: "a missing Application", args: []string{"status", "nope"}, want: "not found (set the namespace with -n)"},
			{reason: "a wrong namespace given with -n is not answered with 'set -n'", args: []string{"status", "shop", "-n", "elsewhere"},
				want: "elsewhere/shop not found", absent: "-n"},
			{reason: "an unknown output format", args: []string{"status", "shop", "-o", "wide"}, want: "--output"},
			{reason: "no Application name", args: []string{"status"}, want: "exactly one"},
		}
		for _, tc := range cases {
			r := e.run("", tc.args...)
			assert.Equal(t, ExitUserError, r.code, tc.reason)
			if assert.Error(t, r.err, tc.reason) {
				assert.Contains(t, r.err.Error(), tc.want, tc.reason)
				if tc.absent != "" {
					assert.NotContains(t, r.err.Error(), tc.absent, tc.reason)
				}
			}
		}
	})
}

// testStatusHelmTree: `status --tree` lists the resources of a Helm
// release under its component (examples/helm-repo showed only the
// HelmRelease row), read from the release record Helm's own Secret driver
// wrote: the deployed revision's manifest, each resource read live (one
// MISSING, one cluster-scoped), not those of superseded or pending
// revisions; a release without a record says so on its row.
func testStatusHelmTree(t *testing.T, e *cliEnv) {
	ctx := context.Background()
	const healthMsg = "release charted revision 2, chart simple-0.1.0: 2/3 resources ready"
	app := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: "charted", Namespace: "default"},
		Spec: v1beta1.ApplicationSpec{Components: []common.ApplicationComponent{{Name: "chart", Type: "helm"}, {Name: "lost", Type: "helm"}}}}
	require.NoError(t, e.c.Create(ctx, app))
	app.Status.Phase = common.ApplicationRunning
	app.Status.ObservedGeneration = app.Generation
	app.Status.LatestRevision = &common.Revision{Name: "charted-v1", Revision: 1}
	app.Status.Services = []common.ApplicationComponentStatus{
		{Name: "chart", Namespace: "default", Healthy: true, Message: healthMsg},
		{Name: "lost", Namespace: "default", Healthy: true, Message: "release lost revision 1: 0/0 resources ready"},
	}
	require.NoError(t, e.c.Status().Update(ctx, app))
	releaseRef := func(name string) common.ClusterObjectReference {
		return common.ClusterObjectReference{APIVersion: helmspec.APIVersion, Kind: helmspec.Kind, Namespace: "default", Name: name}
	}
	require.NoError(t, e.c.Create(ctx, &v1beta1.ResourceTracker{
		ObjectMeta: metav1.ObjectMeta{Name: "charted-v1-default", Labels: map[string]string{v1beta1.LabelAppName: "charted", v1beta1.LabelAppNamespace: "default", v1beta1.LabelAppRevision: "charted-v1"}},
		Spec: v1beta1.ResourceTrackerSpec{Type: v1beta1.ResourceTrackerTypeVersioned, ManagedResources: []v1beta1.ManagedResource{
			{ClusterObjectReference: releaseRef("charted"), Component: "chart"},
			{ClusterObjectReference: releaseRef("lost"), Component: "lost"},
		}}}))

	// Release records as Helm writes them (its Secret driver).
	cs, err := kubernetes.NewForConfig(e.env.Config)
	require.NoError(t, err)
	records := driver.NewSecrets(cs.CoreV1().Secrets("default"))
	doc := func(apiVersion, kind, name string) string {
		return "---\n# Source: simple/templates/" + strings.ToLower(kind) + ".yaml\napiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata:\n  name: " + name + "\n"
	}
	for _, r := range []*release.Release{
		{Version: 1, Info: &release.Info{Status: release.StatusSuperseded}, Manifest: doc("v1", "ConfigMap", "charted-old")},
		{Version: 2, Info: &release.Info{Status: release.StatusDeployed}, Manifest: doc("v1", "ConfigMap", "charted-config") +
			doc("apps/v1", "Deployment", "charted") + doc("v1", "Service", "charted") + doc("rbac.authorization.k8s.io/v1", "ClusterRole", "charted-reader")},
		{Version: 3, Info: &release.Info{Status: release.StatusPendingUpgrade}, Manifest: doc("v1", "ConfigMap", "charted-next")},
	} {
		r.Name, r.Namespace = "charted", "default"
		require.NoError(t, records.Create(fmt.Sprintf("sh.helm.release.v1.%s.v%d", r.Name, r.Version), r))
	}
	// Live: the ConfigMap, the Service and the ClusterRole; the Deployment is gone.
	require.NoError(t, e.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "charted-config", Namespace: "default"}}))
	require.NoError(t, e.c.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "charted", Namespace: "default"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}))
	require.NoError(t, e.c.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "charted-reader"}}))

	r := e.run("", "status", "charted", "--tree", "-o", "json")
	require.Equal(t, ExitOK, r.code, r.err)
	var rep statusReport
	require.NoError(t, json.Unmarshal([]byte(r.out), &rep))
	type row struct{ Component, Kind, Namespace, Name, State, Release string }
	var got []row
	msgs := map[string]string{}
	for _, res := range rep.Resources {
		assert.Equal(t, "local", res.Cluster)
		got = append(got, row{res.Component, res.Kind, res.Namespace, res.Name, res.State, res.Release})
		msgs[res.Kind+"/"+res.Name] = res.Message
	}
	assert.Equal(t, []row{
		{"chart", "ClusterRole", "", "charted-reader", "Healthy", "charted"},
		{"chart", "ConfigMap", "default", "charted-config", "Healthy", "charted"},
		{"chart", "Deployment", "default", "charted", stateMissing, "charted"},
		{"chart", "HelmRelease", "default", "charted", "Healthy", ""},
		{"chart", "Service", "default", "charted", "Healthy", "charted"},
		{"lost", "HelmRelease", "default", "lost", "Healthy", ""},
	}, got, "the deployed revision's resources, grouped under the release's component")
	assert.Equal(t, healthMsg, msgs["HelmRelease/charted"])
	assert.Equal(t, "not found in cluster local", msgs["Deployment/charted"])
	assert.Contains(t, msgs["HelmRelease/lost"], "its resources are not listed: no Helm release record")

	r = e.run("", "status", "charted", "--tree")
	require.Equal(t, ExitOK, r.code, r.err)
	for _, want := range []string{"ClusterRole", "charted-reader", "Deployment", "MISSING", "HelmRelease", "6 resources"} {
		assert.Contains(t, r.out, want)
	}
	assert.NotContains(t, r.out, "charted-old", "a superseded revision's resources are not shown")
	assert.NotContains(t, r.out, "charted-next", "a pending revision's resources are not shown while one is deployed")
}
