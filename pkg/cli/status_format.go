// Formatting for `oamflow status`: the summary, the workflow line and the
// --tree view of a gathered statusReport. Nothing here reads a cluster.

package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
)

// messageWidth is how much of a message a table shows without --detail.
const messageWidth = 90

// formatStatus writes the human view of rep at now. detail shows every
// condition, service details and traits, and messages uncut.
func formatStatus(w io.Writer, rep *statusReport, detail bool, now time.Time) error {
	msg := func(s string) string {
		s = oneLine(s)
		if detail {
			return s
		}
		return clip(s, messageWidth)
	}
	tw := newTable(w)
	fmt.Fprintf(tw, "Name:\t%s\n", rep.Name)
	fmt.Fprintf(tw, "Namespace:\t%s\n", rep.Namespace)
	phase := string(rep.Phase)
	if phase == "" {
		phase = "(none yet: is oamflow-controller running?)"
	}
	fmt.Fprintf(tw, "Phase:\t%s\n", phase)
	if rep.ObservedGeneration < rep.Generation && rep.Phase != "" {
		fmt.Fprintf(tw, "Note:\tthis status is of generation %d; the controller has not caught up with generation %d yet\n", rep.ObservedGeneration, rep.Generation)
	}
	if r := rep.LatestRevision; r != nil {
		rev := r.Name
		if r.RevisionHash != "" {
			rev += " (hash " + r.RevisionHash + ")"
		}
		fmt.Fprintf(tw, "Revision:\t%s\n", rev)
	}
	if rep.PublishVersion != "" {
		fmt.Fprintf(tw, "Publish version:\t%s\n", rep.PublishVersion)
	}
	fmt.Fprintf(tw, "Age:\t%s\n", humanAge(rep.Created, now))
	if err := tw.Flush(); err != nil {
		return err
	}

	ready := meta.FindStatusCondition(rep.Conditions, common.ConditionReady)
	var conds []metav1.Condition
	for _, c := range rep.Conditions {
		if detail || (ready == nil || ready.Status != metav1.ConditionTrue) && c.Status != metav1.ConditionTrue {
			conds = append(conds, c)
		}
	}
	if len(conds) > 0 {
		fmt.Fprintln(w, "\nConditions:")
		tw = newTable(w)
		fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tMESSAGE")
		for _, c := range conds {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, orDash(msg(c.Message)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	if wf := rep.Workflow; wf != nil {
		fmt.Fprintf(w, "\nWorkflow: %s\n", workflowLine(wf, now))
		if wf.Message != "" {
			fmt.Fprintf(w, "  %s\n", msg(wf.Message))
		}
		steps := flattenSteps(wf)
		if len(steps) > 0 {
			tw = newTable(w)
			fmt.Fprintln(tw, "  STEP\tTYPE\tPHASE\tSTARTED\tDURATION\tMESSAGE")
			for _, s := range steps {
				name := s.Name
				if s.sub {
					name = "├─ " + name
					if s.last {
						name = "└─ " + s.Name
					}
				}
				started, span := "-", "-"
				if !s.FirstExecuteTime.IsZero() {
					started = humanAge(s.FirstExecuteTime, now) + " ago"
				}
				if d, ok := stepSpan(s.StepStatus, now); ok {
					span = humanSpan(d)
				}
				m := s.Message
				if s.Reason != "" && (s.Phase == "failed" || detail) {
					m = strings.TrimSpace("(" + s.Reason + ") " + m)
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", name, orDash(s.Type), orDash(string(s.Phase)), started, span, orDash(msg(m)))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}

	if len(rep.Services) > 0 {
		fmt.Fprintln(w, "\nServices:")
		tw = newTable(w)
		fmt.Fprintln(tw, "  COMPONENT\tCLUSTER\tNAMESPACE\tHEALTHY\tMESSAGE")
		for _, s := range rep.Services {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", s.Name, clusterLabel(s.Cluster), orDash(s.Namespace), yesNo(s.Healthy), orDash(msg(s.Message)))
			for _, t := range s.Traits {
				if !detail && t.Healthy {
					continue
				}
				fmt.Fprintf(tw, "    trait %s\t\t\t%s\t%s\n", t.Type, yesNo(t.Healthy), orDash(msg(t.Message)))
			}
			if detail && len(s.Details) > 0 {
				fmt.Fprintf(tw, "    details\t\t\t\t%s\n", formatLabels(s.Details))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	if rep.Resources != nil {
		fmt.Fprintln(w)
		if err := formatTree(w, rep, msg); err != nil {
			return err
		}
	}
	return nil
}

// workflowLine sums up a workflow run: status, mode, revision and timing.
func workflowLine(wf *common.WorkflowStatus, now time.Time) string {
	parts := []string{orDash(string(wf.Status))}
	if wf.Suspend && wf.Status != "suspending" {
		parts[0] += " (suspended)"
	}
	if wf.Mode != "" {
		// The controller writes "<steps>-<sub-steps>", e.g. "StepByStep-DAG".
		if steps, subs, ok := strings.Cut(wf.Mode, "-"); ok {
			parts = append(parts, "steps "+steps, "sub-steps "+subs)
		} else {
			parts = append(parts, "mode "+wf.Mode)
		}
	}
	if wf.AppRevision != "" {
		parts = append(parts, "revision "+wf.AppRevision)
	}
	if !wf.StartTime.IsZero() {
		parts = append(parts, "started "+humanAge(wf.StartTime, now)+" ago")
		if wf.Finished && !wf.EndTime.IsZero() {
			parts = append(parts, "took "+humanSpan(wf.EndTime.Sub(wf.StartTime.Time)))
		} else {
			parts = append(parts, "running for "+humanSpan(now.Sub(wf.StartTime.Time)))
		}
	}
	return strings.Join(parts, ", ")
}

// formatTree writes the resources of rep as a tree: cluster → component →
// kind → name, with namespace, state and message per resource, then a
// one-line count. msg shortens messages.
func formatTree(w io.Writer, rep *statusReport, msg func(string) string) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "RESOURCE\tNAMESPACE\tSTATE\tMESSAGE")
	rs := rep.Resources
	// Group boundaries: indexes of rs sharing cluster, then component, then kind.
	type group struct{ from, to int }
	split := func(g group, key func(liveResource) string) []group {
		var out []group
		for i := g.from; i < g.to; {
			j := i
			for j < g.to && key(rs[j]) == key(rs[i]) {
				j++
			}
			out = append(out, group{i, j})
			i = j
		}
		return out
	}
	branch := func(prefix string, last bool) (string, string) {
		if last {
			return prefix + "└── ", prefix + "    "
		}
		return prefix + "├── ", prefix + "│   "
	}
	counts := map[string]int{}
	clusters := split(group{0, len(rs)}, func(r liveResource) string { return r.Cluster })
	for _, cg := range clusters {
		cluster := rs[cg.from].Cluster
		if why, ok := rep.Unreachable[cluster]; ok {
			fmt.Fprintf(tw, "%s\t\t%s\t%s\n", cluster, "UNREACHABLE", msg("not reachable from the CLI: "+why))
		} else {
			fmt.Fprintf(tw, "%s\t\t\t\n", cluster)
		}
		comps := split(cg, func(r liveResource) string { return r.Component })
		for ci, comp := range comps {
			head, cprefix := branch("", ci == len(comps)-1)
			component := rs[comp.from].Component
			if component == "" {
				component = "(no component)"
			}
			fmt.Fprintf(tw, "%s%s\t\t\t\n", head, component)
			kinds := split(comp, func(r liveResource) string { return r.Kind })
			for ki, kg := range kinds {
				head, kprefix := branch(cprefix, ki == len(kinds)-1)
				fmt.Fprintf(tw, "%s%s\t\t\t\n", head, rs[kg.from].Kind)
				for i := kg.from; i < kg.to; i++ {
					r := rs[i]
					head, _ := branch(kprefix, i == kg.to-1)
					name := r.Name
					switch r.Trait {
					case "":
					case auxiliaryWorkload:
						name += " (output)"
					default:
						name += " (trait " + r.Trait + ")"
					}
					fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\n", head, name, orDash(r.Namespace), r.State, orDash(msg(r.Message)))
					counts[r.State]++
				}
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rs) == 0 {
		fmt.Fprintln(w, "(no resources applied yet)")
	}
	if rep.TrackerNote != "" {
		fmt.Fprintln(w, "Note: "+rep.TrackerNote)
	}
	summary := fmt.Sprintf("%d resources", len(rs))
	states := make([]string, 0, len(counts))
	for s := range counts {
		states = append(states, s)
	}
	sort.Strings(states)
	for _, s := range states {
		summary += fmt.Sprintf(", %d %s", counts[s], s)
	}
	_, err := fmt.Fprintln(w, summary)
	return err
}
