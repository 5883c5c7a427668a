package cli

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/workflowops"
)

// progress shows an Application's state while a command waits on it
// (`up --wait`, `delete --wait`).
type progress interface {
	// Update shows app as read elapsed after the wait began.
	Update(app *v1beta1.Application, elapsed time.Duration)
	// Done ends the display; what was shown stays on screen.
	Done()
}

// newProgress picks the display for w: a frame redrawn in place when w is
// a terminal, or one plain line per change when w is not a terminal, $CI
// is set (any value) or $TERM is "dumb". getenv reads the environment
// (os.Getenv outside tests).
func newProgress(w io.Writer, getenv func(string) string) progress {
	if width, ok := terminalWidth(w, getenv); ok {
		return &framePrinter{w: w, width: width, now: time.Now}
	}
	return &linePrinter{w: w}
}

// terminalWidth returns the width of w when it is an interactive terminal
// (see newProgress), else ok false.
func terminalWidth(w io.Writer, getenv func(string) string) (int, bool) {
	f, ok := w.(*os.File)
	if !ok || getenv("CI") != "" || getenv("TERM") == "dumb" {
		return 0, false
	}
	fd := int(f.Fd())
	if !term.IsTerminal(fd) {
		return 0, false
	}
	width, _, err := term.GetSize(fd)
	if err != nil || width <= 0 {
		width = 80
	}
	return width, true
}

// linePrinter prints one timestamped line per change (appEvents).
type linePrinter struct {
	w    io.Writer
	prev *v1beta1.Application
}

// Update prints what changed since the previous Update.
func (p *linePrinter) Update(app *v1beta1.Application, elapsed time.Duration) {
	for _, e := range appEvents(p.prev, app) {
		fmt.Fprintf(p.w, "[%s] %s\n", clock(elapsed), e)
	}
	p.prev = app.DeepCopy()
}

// Done prints nothing: every change is already on its own line.
func (p *linePrinter) Done() {}

// framePrinter redraws renderFrame in place with ANSI cursor movement.
type framePrinter struct {
	w     io.Writer
	width int
	now   func() time.Time
	// drawn is how many lines the last frame took.
	drawn int
	tick  int
}

// Update replaces the last frame by the frame of app.
func (p *framePrinter) Update(app *v1beta1.Application, elapsed time.Duration) {
	lines := renderFrame(app, elapsed, p.now(), p.tick)
	p.tick++
	var b strings.Builder
	if p.drawn > 0 {
		// Cursor up to the frame's first line, then clear to the end of
		// the screen.
		fmt.Fprintf(&b, "\x1b[%dA\x1b[J", p.drawn)
	}
	for _, l := range lines {
		// Lines are clipped so that none wraps: a wrapped line would
		// throw off the count of lines to move up by.
		b.WriteString(clip(l, p.width-1))
		b.WriteByte('\n')
	}
	_, _ = io.WriteString(p.w, b.String())
	p.drawn = len(lines)
}

// Done leaves the last frame on screen.
func (p *framePrinter) Done() {}

// clock formats an elapsed time as mm:ss (hh:mm:ss from an hour on).
func clock(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	if s >= 3600 {
		return fmt.Sprintf("%02d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%02d:%02d", s/60, s%60)
}

// stepView is one step or sub-step of a workflow status, flattened.
type stepView struct {
	// path is "step" or "group/sub".
	path string
	// sub is true for a sub-step.
	sub bool
	// last is true for the last sub-step of its group.
	last bool
	wfv1alpha1.StepStatus
}

// flattenSteps lists the steps of st in order, each followed by its
// sub-steps.
func flattenSteps(st *common.WorkflowStatus) []stepView {
	if st == nil {
		return nil
	}
	var out []stepView
	for _, s := range st.Steps {
		out = append(out, stepView{path: s.Name, StepStatus: s.StepStatus})
		for i, sub := range s.SubStepsStatus {
			out = append(out, stepView{path: s.Name + "/" + sub.Name, sub: true, last: i == len(s.SubStepsStatus)-1, StepStatus: sub})
		}
	}
	return out
}

// stepSpan is how long a step ran: until its last execution when it
// finished, until now while it runs; ok false before it started.
func stepSpan(s wfv1alpha1.StepStatus, now time.Time) (time.Duration, bool) {
	if s.FirstExecuteTime.IsZero() {
		return 0, false
	}
	switch s.Phase {
	case wfv1alpha1.WorkflowStepPhaseSucceeded, wfv1alpha1.WorkflowStepPhaseFailed, wfv1alpha1.WorkflowStepPhaseSkipped:
		if s.LastExecuteTime.Before(&s.FirstExecuteTime) {
			return 0, true
		}
		return s.LastExecuteTime.Sub(s.FirstExecuteTime.Time), true
	}
	return now.Sub(s.FirstExecuteTime.Time), true
}

// serviceKey names a service entry: "component@cluster" plus "/namespace"
// when it is not the Application's namespace.
func serviceKey(s common.ApplicationComponentStatus, appNamespace string) string {
	k := s.Name + "@" + clusterLabel(s.Cluster)
	if s.Namespace != "" && s.Namespace != appNamespace {
		k += "/" + s.Namespace
	}
	return k
}

// appEvents describes, one line each, how cur differs from prev:
// workflow steps starting and finishing, step messages, service health,
// and last the phase. For the first reading (prev nil) it is one line with
// the phase and revision. Lines carry no timestamps; the same
// pair always gives the same lines.
func appEvents(prev, cur *v1beta1.Application) []string {
	if prev == nil {
		// The first reading may describe an earlier run (before the
		// controller saw what was just applied): say where things stand
		// and report changes from there.
		line := fmt.Sprintf("Application %s/%s: %s", cur.Namespace, cur.Name, phaseText(cur))
		if r := cur.Status.LatestRevision; r != nil && cur.Status.Phase != "" {
			line += " (revision " + r.Name + ")"
		}
		return []string{line}
	}
	var out []string

	prevWF, curWF := prev.Status.Workflow, cur.Status.Workflow
	if curWF != nil && curWF.AppRevision != "" && (prevWF == nil || prevWF.AppRevision != curWF.AppRevision) {
		out = append(out, "workflow started for revision "+curWF.AppRevision)
		prevWF = nil
	}
	prevSteps := map[string]wfv1alpha1.StepStatus{}
	for _, s := range flattenSteps(prevWF) {
		prevSteps[s.path] = s.StepStatus
	}
	for _, s := range flattenSteps(curWF) {
		before, seen := prevSteps[s.path]
		if e := stepEvent(s, before, seen); e != "" {
			out = append(out, e)
		}
	}

	prevSvc := map[string]common.ApplicationComponentStatus{}
	for _, s := range prev.Status.Services {
		prevSvc[serviceKey(s, prev.Namespace)] = s
	}
	for _, s := range sortedServices(cur.Status.Services) {
		k := serviceKey(s, cur.Namespace)
		before, seen := prevSvc[k]
		if seen && before.Healthy == s.Healthy && before.Message == s.Message {
			continue
		}
		line := k + ": " + map[bool]string{true: "healthy", false: "unhealthy"}[s.Healthy]
		if s.Message != "" {
			line += " (" + oneLine(s.Message) + ")"
		}
		out = append(out, line)
	}
	// The phase comes last: it sums up the changes above it.
	if prev.Status.Phase != cur.Status.Phase {
		out = append(out, "phase "+phaseText(cur))
	}
	return out
}

// stepEvent describes a step whose phase or message changed ("" when
// nothing worth a line changed). before is its previous state when seen.
func stepEvent(s stepView, before wfv1alpha1.StepStatus, seen bool) string {
	name := "step " + s.path
	msg := oneLine(s.Message)
	if seen && before.Phase == s.Phase {
		if msg == "" || before.Message == s.Message {
			return ""
		}
		switch s.Phase {
		case wfv1alpha1.WorkflowStepPhaseRunning, wfv1alpha1.WorkflowStepPhasePending, wfv1alpha1.WorkflowStepPhaseSuspending:
			return name + ": " + msg
		}
		return ""
	}
	withMsg := func(line string) string {
		if msg != "" {
			line += ": " + msg
		}
		return line
	}
	switch s.Phase {
	case wfv1alpha1.WorkflowStepPhaseRunning:
		line := name + " started"
		if s.Type != "" {
			line = name + " (" + s.Type + ") started"
		}
		return withMsg(line)
	case wfv1alpha1.WorkflowStepPhaseSucceeded:
		if d, ok := stepSpan(s.StepStatus, time.Time{}); ok {
			return fmt.Sprintf("%s succeeded in %s", name, humanSpan(d))
		}
		return name + " succeeded"
	case wfv1alpha1.WorkflowStepPhaseFailed:
		line := name + " failed"
		if s.Reason == workflowops.ReasonExecute {
			// Retryable: the controller runs the step again until its
			// retry limit; the workflow has not failed (yet).
			line += ", retrying"
		} else if s.Reason != "" {
			line += " (" + s.Reason + ")"
		}
		return withMsg(line)
	case wfv1alpha1.WorkflowStepPhaseSkipped:
		return name + " skipped"
	case wfv1alpha1.WorkflowStepPhaseSuspending:
		return withMsg(name + " suspended")
	case wfv1alpha1.WorkflowStepPhasePending:
		if seen || msg != "" {
			return withMsg(name + " pending")
		}
	}
	return ""
}

// phaseText is the phase with a hint when the controller has not written
// one yet.
func phaseText(app *v1beta1.Application) string {
	if app.Status.Phase == "" {
		return "waiting for the controller to pick it up"
	}
	return string(app.Status.Phase)
}

// sortedServices orders services by component, then cluster, then
// namespace.
func sortedServices(in []common.ApplicationComponentStatus) []common.ApplicationComponentStatus {
	out := append([]common.ApplicationComponentStatus(nil), in...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		if clusterLabel(a.Cluster) != clusterLabel(b.Cluster) {
			return clusterLabel(a.Cluster) < clusterLabel(b.Cluster)
		}
		return a.Namespace < b.Namespace
	})
	return out
}

// spinner frames of the header of a running wait.
var spinnerFrames = [...]string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// stepGlyph marks a step's phase in a frame.
func stepGlyph(p wfv1alpha1.WorkflowStepPhase, tick int) string {
	switch p {
	case wfv1alpha1.WorkflowStepPhaseSucceeded:
		return "✓"
	case wfv1alpha1.WorkflowStepPhaseFailed:
		return "✗"
	case wfv1alpha1.WorkflowStepPhaseSkipped:
		return "↷"
	case wfv1alpha1.WorkflowStepPhaseSuspending:
		return "‖"
	case wfv1alpha1.WorkflowStepPhaseRunning:
		return spinnerFrames[tick%len(spinnerFrames)]
	}
	return "·"
}

// phaseGlyph marks the Application's phase in a frame's header.
func phaseGlyph(p common.ApplicationPhase, tick int) string {
	switch p {
	case common.ApplicationRunning:
		return "✓"
	case common.ApplicationWorkflowFailed, common.ApplicationWorkflowTerminated:
		return "✗"
	case common.ApplicationWorkflowSuspending:
		return "‖"
	}
	return spinnerFrames[tick%len(spinnerFrames)]
}

// renderFrame is what a terminal shows while waiting on app at now: a
// header with the phase and the time elapsed since the wait began, the
// Ready message while not ready, one line per step (and sub-step) with how
// long it ran and its message, and one line per service with its health.
// tick animates the spinners. Lines are not clipped.
func renderFrame(app *v1beta1.Application, elapsed time.Duration, now time.Time, tick int) []string {
	lines := []string{fmt.Sprintf("%s %s/%s  %s  %s", phaseGlyph(app.Status.Phase, tick), app.Namespace, app.Name, phaseText(app), clock(elapsed))}
	if r := meta.FindStatusCondition(app.Status.Conditions, common.ConditionReady); r != nil && r.Status != metav1.ConditionTrue && r.Message != "" {
		lines = append(lines, "  "+oneLine(r.Message))
	}
	var b strings.Builder
	tw := newTable(&b)
	for _, s := range flattenSteps(app.Status.Workflow) {
		indent := "  "
		if s.sub {
			indent = "    "
		}
		span := ""
		if d, ok := stepSpan(s.StepStatus, now); ok {
			span = humanSpan(d)
		}
		fmt.Fprintf(tw, "%s%s %s\t%s\t%s\n", indent, stepGlyph(s.Phase, tick), s.Name, span, oneLine(s.Message))
	}
	for _, s := range sortedServices(app.Status.Services) {
		g := "✗"
		if s.Healthy {
			g = "✓"
		}
		fmt.Fprintf(tw, "  %s %s\t\t%s\n", g, serviceKey(s, app.Namespace), oneLine(s.Message))
	}
	_ = tw.Flush()
	for _, l := range strings.Split(b.String(), "\n") {
		if l = strings.TrimRight(l, " "); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}
