package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

func TestAppEvents(t *testing.T) {
	running := fixtureApp(withPhase(common.ApplicationRunningWorkflow),
		withSteps(step("apply-web", "apply-component", wfv1alpha1.WorkflowStepPhaseRunning, 10*time.Second, 0, "")))
	cases := []struct {
		reason string
		prev   *v1beta1.Application
		cur    *v1beta1.Application
		want   []string
	}{
		{
			reason: "the first reading names the Application and its phase",
			cur:    fixtureApp(),
			want:   []string{"Application default/demo: waiting for the controller to pick it up"},
		},
		{
			reason: "the first reading says where things stand, not how an earlier run went",
			cur:    runningFixture(),
			want:   []string{"Application default/demo: running (revision demo-v2)"},
		},
		{
			reason: "a new run announces its revision and the steps that started; pending steps without a message stay quiet",
			prev:   fixtureApp(withPhase(common.ApplicationRendering)),
			cur: fixtureApp(withPhase(common.ApplicationRunningWorkflow), withSteps(
				step("apply-web", "apply-component", wfv1alpha1.WorkflowStepPhaseRunning, 10*time.Second, 0, ""),
				step("apply-worker", "apply-component", wfv1alpha1.WorkflowStepPhasePending, 0, 0, ""))),
			want: []string{"workflow started for revision demo-v2", "step apply-web (apply-component) started", "phase runningWorkflow"},
		},
		{
			reason: "a finished step says how long it ran; a step message change while running is shown",
			prev: fixtureApp(withPhase(common.ApplicationRunningWorkflow), withSteps(
				step("apply-web", "apply-component", wfv1alpha1.WorkflowStepPhaseRunning, 10*time.Second, 0, ""),
				step("apply-worker", "apply-component", wfv1alpha1.WorkflowStepPhaseRunning, 5*time.Second, 0, "waiting for web"))),
			cur: fixtureApp(withPhase(common.ApplicationRunningWorkflow), withSteps(
				step("apply-web", "apply-component", wfv1alpha1.WorkflowStepPhaseSucceeded, 10*time.Second, 3*time.Second, ""),
				step("apply-worker", "apply-component", wfv1alpha1.WorkflowStepPhaseRunning, 5*time.Second, 0, "1/2 replicas ready"))),
			want: []string{"step apply-web succeeded in 3s", "step apply-worker: 1/2 replicas ready"},
		},
		{
			reason: "a failed step gives its reason and message; sub-steps are named group/sub",
			prev: fixtureApp(withPhase(common.ApplicationRunningWorkflow), withSteps(
				withSubSteps(step("deploy", "step-group", wfv1alpha1.WorkflowStepPhaseRunning, 10*time.Second, 0, ""),
					step("hz", "deploy", wfv1alpha1.WorkflowStepPhaseRunning, 10*time.Second, 0, "")))),
			cur: fixtureApp(withPhase(common.ApplicationWorkflowFailed), withSteps(
				withSubSteps(step("deploy", "step-group", wfv1alpha1.WorkflowStepPhaseFailed, 10*time.Second, 9*time.Second, ""),
					failed(step("hz", "deploy", wfv1alpha1.WorkflowStepPhaseFailed, 10*time.Second, 9*time.Second, "cluster hz\nunreachable"), "Timeout")))),
			want: []string{"step deploy failed", "step deploy/hz failed (Timeout): cluster hz unreachable", "phase workflowFailed"},
		},
		{
			reason: "a step failing with the retryable reason Execute says it is retried, not that the workflow failed (a typo'd repoURL printed 'failed (Execute)' 25 s before the retries ran out)",
			prev: fixtureApp(withPhase(common.ApplicationRunningWorkflow), withSteps(
				step("chart", "apply-component", wfv1alpha1.WorkflowStepPhaseRunning, 10*time.Second, 0, ""))),
			cur: fixtureApp(withPhase(common.ApplicationRunningWorkflow), withSteps(
				failed(step("chart", "apply-component", wfv1alpha1.WorkflowStepPhaseFailed, 10*time.Second, 1*time.Second, "fetching chart: connection refused"), "Execute"))),
			want: []string{"step chart failed, retrying: fetching chart: connection refused"},
		},
		{
			reason: "services are reported when new and when their health or message changes",
			prev:   fixtureApp(withPhase(common.ApplicationRunning), withServices(service("web", "", true, "Ready:1/1"), service("web", "hz", true, ""))),
			cur: fixtureApp(withPhase(common.ApplicationUnhealthy), withServices(service("web", "", false, "0/1 replicas ready"),
				service("web", "hz", true, ""), service("worker", "", true, ""))),
			want: []string{"web@local: unhealthy (0/1 replicas ready)", "worker@local: healthy", "phase unhealthy"},
		},
		{
			reason: "a suspended step says so with its message",
			prev:   running,
			cur: fixtureApp(withPhase(common.ApplicationWorkflowSuspending), withSteps(
				step("apply-web", "apply-component", wfv1alpha1.WorkflowStepPhaseSucceeded, 10*time.Second, 2*time.Second, ""),
				step("approve", "suspend", wfv1alpha1.WorkflowStepPhaseSuspending, 1*time.Second, 0, "waiting for approval"))),
			want: []string{"step apply-web succeeded in 2s", "step approve suspended: waiting for approval", "phase workflowSuspending"},
		},
		{
			reason: "nothing changed, nothing printed",
			prev:   running,
			cur:    running.DeepCopy(),
			want:   nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, appEvents(tc.prev, tc.cur))
		})
	}
}

func TestRenderFrameGolden(t *testing.T) {
	cases := []struct {
		name string
		app  *v1beta1.Application
		tick int
	}{
		{name: "starting", app: fixtureApp()},
		{name: "running-workflow", tick: 3, app: fixtureApp(withPhase(common.ApplicationRunningWorkflow),
			withCondition("Ready", false, "WorkflowRunning", "step apply-worker is running: waiting for web"),
			withSteps(
				step("apply-web", "apply-component", wfv1alpha1.WorkflowStepPhaseSucceeded, 40*time.Second, 3*time.Second, ""),
				withSubSteps(step("deploy", "step-group", wfv1alpha1.WorkflowStepPhaseRunning, 30*time.Second, 0, ""),
					step("hz", "deploy", wfv1alpha1.WorkflowStepPhaseRunning, 30*time.Second, 0, "1/2 replicas ready"),
					step("sh", "deploy", wfv1alpha1.WorkflowStepPhasePending, 0, 0, "")),
				step("notify", "notification", wfv1alpha1.WorkflowStepPhasePending, 0, 0, "")),
			withServices(service("web", "", true, "Ready:1/1"), service("web", "hz", false, "1/2 replicas ready")))},
		{name: "running", app: fixtureApp(withPhase(common.ApplicationRunning),
			withSteps(step("apply-web", "apply-component", wfv1alpha1.WorkflowStepPhaseSucceeded, 40*time.Second, 3*time.Second, "")),
			withServices(service("web", "", true, "Ready:1/1")))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines := renderFrame(tc.app, 75*time.Second, goldenNow, tc.tick)
			assertGolden(t, "progress/"+tc.name+".golden", strings.Join(lines, "\n")+"\n")
		})
	}
}

func TestLinePrinterPrintsOnlyChanges(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, func(string) string { return "" })
	require.IsType(t, &linePrinter{}, p, "a buffer is not a terminal: plain lines")
	a := fixtureApp(withPhase(common.ApplicationRunningWorkflow))
	p.Update(a, 0)
	p.Update(a, 500*time.Millisecond)
	p.Update(fixtureApp(withPhase(common.ApplicationRunning)), 61*time.Second)
	p.Done()
	assert.Equal(t, "[00:00] Application default/demo: runningWorkflow\n[01:01] phase running\n", b.String())
}

func TestFramePrinterRedrawsInPlace(t *testing.T) {
	var b bytes.Buffer
	p := &framePrinter{w: &b, width: 30, now: func() time.Time { return goldenNow }}
	p.Update(fixtureApp(withPhase(common.ApplicationRunningWorkflow), withServices(service("web", "", false, "a message far too long to fit on the line"))), time.Second)
	first := b.String()
	assert.Equal(t, 2, strings.Count(first, "\n"), "one header and one service line")
	for _, l := range strings.Split(strings.TrimSuffix(first, "\n"), "\n") {
		assert.LessOrEqual(t, len([]rune(l)), 29, "lines are clipped to the terminal width so that none wraps")
	}
	b.Reset()
	p.Update(fixtureApp(withPhase(common.ApplicationRunning)), 2*time.Second)
	assert.True(t, strings.HasPrefix(b.String(), "\x1b[2A\x1b[J"), "the second frame first moves up over the two lines of the first and clears them: %q", b.String())
}

func TestTerminalWidthNeedsATerminal(t *testing.T) {
	cases := []struct {
		reason string
		env    map[string]string
	}{
		{reason: "a buffer is never a terminal"},
		{reason: "CI forces plain lines", env: map[string]string{"CI": "true"}},
		{reason: "a dumb terminal gets plain lines", env: map[string]string{"TERM": "dumb"}},
	}
	for _, tc := range cases {
		_, ok := terminalWidth(&bytes.Buffer{}, func(k string) string { return tc.env[k] })
		assert.False(t, ok, tc.reason)
	}
}
