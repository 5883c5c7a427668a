package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/health"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/multicluster"
)

// statusOptions are the flags of `oamflow status`.
type statusOptions struct {
	global *GlobalOptions
	tree   bool
	detail bool
	output string
}

func newStatusCommand(g *GlobalOptions) *cobra.Command {
	o := &statusOptions{global: g}
	cmd := &cobra.Command{
		Use:   "status APP [--tree] [--detail] [-o table|yaml|json]",
		Short: "Show an Application's phase, workflow steps, services and (with --tree) live resources",
		Long: `Show the state of an Application: its phase; while it is not Ready, the
conditions that say why; the workflow's steps with when they started and how
long they ran; and the health of each component in each cluster.

--tree also reads every resource the Application applied (status.appliedResources
and its ResourceTrackers) from its cluster and shows them grouped by cluster,
component and kind, with their health; resources that are gone are flagged
MISSING. A Helm release is shown with the controller's verdict, followed by
the resources of its deployed revision's manifest (read from Helm's release
record, a Secret in the release namespace). Member clusters are reached
through their cluster Secrets on the hub
(see ` + "`oamflow cluster`" + `); one that cannot be reached is reported as such.

--detail shows every condition, service details, trait health and whole
messages. -o yaml|json prints the same as a document.`,
		Example: `  oamflow status demo
  oamflow status demo --tree -n prod
  oamflow status demo -o json | jq .phase`,
		Args:              exactlyOneApp,
		ValidArgsFunction: completeApps(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args[0], cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.tree, "tree", false, "read and show every live resource, grouped by cluster, component and kind")
	f.BoolVar(&o.detail, "detail", false, "show all conditions, service details, traits and whole messages")
	addOutputFlag(cmd, &o.output, outputTable, outputTable, outputYAML, outputJSON)
	return cmd
}

func (o *statusOptions) run(ctx context.Context, name string, out io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := checkOutput(o.output, outputTable, outputYAML, outputJSON); err != nil {
		return err
	}
	c, err := o.global.appClient()
	if err != nil {
		return err
	}
	ns := o.global.ResolvedNamespace()
	app := &v1beta1.Application{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, app); err != nil {
		return appReadError(err, "reading", ns, name, o.global.Namespace != "")
	}
	rep := newStatusReport(app)
	if o.tree {
		trackers, note := appTrackers(ctx, c, app)
		refs := collectResources(app, trackers)
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		rep.Resources, rep.Unreachable = readResources(rctx, o.global.clusterClients(c), refs, app.Status.Services)
		rep.TrackerNote = note
		if rep.Resources == nil {
			rep.Resources = []liveResource{}
		}
	}
	if o.output != outputTable {
		return printStructured(out, rep, o.output)
	}
	return formatStatus(out, rep, o.detail, time.Now())
}

// clusterClients reaches the hub through hub and member clusters through
// the cluster registry (pkg/multicluster), built on first use.
func (o *GlobalOptions) clusterClients(hub client.Client) multicluster.ClusterClients {
	var reg *multicluster.Registry
	var regErr error
	return multicluster.ClusterClientsFn(func(ctx context.Context, cluster string) (client.Client, error) {
		if multicluster.IsLocal(cluster) {
			return hub, nil
		}
		if reg == nil && regErr == nil {
			reg, regErr = (&clusterOptions{global: o, systemNamespace: multicluster.DefaultSystemNamespace}).registry()
		}
		if regErr != nil {
			return nil, regErr
		}
		return reg.Client(ctx, cluster)
	})
}

// statusReport is what `oamflow status` shows; -o yaml|json prints it.
type statusReport struct {
	Name               string                              `json:"name"`
	Namespace          string                              `json:"namespace"`
	Created            metav1.Time                         `json:"created"`
	Generation         int64                               `json:"generation"`
	ObservedGeneration int64                               `json:"observedGeneration"`
	Phase              common.ApplicationPhase             `json:"phase"`
	PublishVersion     string                              `json:"publishVersion,omitempty"`
	LatestRevision     *common.Revision                    `json:"latestRevision,omitempty"`
	Conditions         []metav1.Condition                  `json:"conditions,omitempty"`
	Workflow           *common.WorkflowStatus              `json:"workflow,omitempty"`
	Services           []common.ApplicationComponentStatus `json:"services,omitempty"`
	// Resources are the live resources (--tree only).
	Resources []liveResource `json:"resources,omitempty"`
	// Unreachable maps clusters that could not be read to why (--tree only).
	Unreachable map[string]string `json:"unreachableClusters,omitempty"`
	// TrackerNote says why ResourceTrackers could not be read (--tree only).
	TrackerNote string `json:"trackerNote,omitempty"`
}

// newStatusReport takes the status fields of app.
func newStatusReport(app *v1beta1.Application) *statusReport {
	st := app.Status.DeepCopy()
	return &statusReport{
		Name:               app.Name,
		Namespace:          app.Namespace,
		Created:            app.CreationTimestamp,
		Generation:         app.Generation,
		ObservedGeneration: st.ObservedGeneration,
		Phase:              st.Phase,
		PublishVersion:     app.Annotations[v1beta1.AnnoPublishVersion],
		LatestRevision:     st.LatestRevision,
		Conditions:         st.Conditions,
		Workflow:           st.Workflow,
		Services:           sortedServices(st.Services),
	}
}

// auxiliaryWorkload is the trait type recorded for the extra outputs of a
// component (the KubeVela label convention pkg/render follows).
const auxiliaryWorkload = "AuxiliaryWorkload"

// Resource states of --tree besides the health reasons of pkg/health.
const (
	stateMissing     = "MISSING"
	stateUnreachable = "Unreachable"
	stateReadError   = "ReadError"
)

// liveResource is one resource of the Application and what the cluster
// says about it.
type liveResource struct {
	Cluster    string `json:"cluster"`
	Component  string `json:"component,omitempty"`
	Trait      string `json:"trait,omitempty"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// State is a pkg/health reason (Healthy, Progressing, Failed, …) for a
	// live object, or MISSING, Unreachable, ReadError.
	State   string `json:"state"`
	Healthy bool   `json:"healthy"`
	Message string `json:"message,omitempty"`
	// Release names the Helm release whose manifest holds the resource
	// (its release namespace is the HelmRelease row's); "" for resources
	// the Application applied itself.
	Release string `json:"release,omitempty"`
}

// appTrackers lists the ResourceTrackers of app that describe what is
// deployed now: the root tracker and the current revision's (all
// versioned ones when there is no latest revision). note says why they
// could not be read ("" when they were).
func appTrackers(ctx context.Context, c client.Reader, app *v1beta1.Application) ([]v1beta1.ResourceTracker, string) {
	list := &v1beta1.ResourceTrackerList{}
	err := c.List(ctx, list, client.MatchingLabels{v1beta1.LabelAppName: app.Name, v1beta1.LabelAppNamespace: app.Namespace})
	if err != nil {
		return nil, fmt.Sprintf("ResourceTrackers not read (%v); showing status.appliedResources only", err)
	}
	var out []v1beta1.ResourceTracker
	var notes []string
	for _, rt := range list.Items {
		if err := v1beta1.DecodeTracker(&rt); err != nil {
			notes = append(notes, err.Error())
			continue
		}
		current := app.Status.LatestRevision == nil || rt.Labels[v1beta1.LabelAppRevision] == app.Status.LatestRevision.Name
		if rt.Spec.Type == v1beta1.ResourceTrackerTypeRoot || current {
			out = append(out, rt)
		}
	}
	return out, strings.Join(notes, "; ")
}

// resourceKey identifies a resource regardless of its API version.
type resourceKey struct {
	cluster, group, kind, namespace, name string
}

func keyOfResource(r liveResource) resourceKey {
	gv, _ := schema.ParseGroupVersion(r.APIVersion)
	return resourceKey{cluster: r.Cluster, group: gv.Group, kind: r.Kind, namespace: r.Namespace, name: r.Name}
}

// collectResources merges the tracked (not deleted) resources of trackers
// with status.appliedResources, once each, sorted by cluster, component,
// kind, namespace and name. The hub is "local". Component and trait come
// from the trackers; they stay empty for resources only the status lists.
func collectResources(app *v1beta1.Application, trackers []v1beta1.ResourceTracker) []liveResource {
	byKey := map[resourceKey]int{}
	var out []liveResource
	add := func(r liveResource) {
		r.Cluster = clusterLabel(r.Cluster)
		k := keyOfResource(r)
		if i, ok := byKey[k]; ok {
			if out[i].Component == "" {
				out[i].Component, out[i].Trait = r.Component, r.Trait
			}
			return
		}
		byKey[k] = len(out)
		out = append(out, r)
	}
	for _, rt := range trackers {
		for _, m := range rt.Spec.ManagedResources {
			if m.Deleted {
				continue
			}
			add(liveResource{Cluster: m.Cluster, Component: m.Component, Trait: m.Trait,
				APIVersion: m.APIVersion, Kind: m.Kind, Namespace: m.Namespace, Name: m.Name})
		}
	}
	for _, r := range app.Status.AppliedResources {
		add(liveResource{Cluster: r.Cluster, APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name})
	}
	sortResources(out)
	return out
}

func sortResources(rs []liveResource) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		for _, p := range [][2]string{{a.Cluster, b.Cluster}, {a.Component, b.Component}, {a.Kind, b.Kind}, {a.Namespace, b.Namespace}, {a.Name, b.Name}} {
			if p[0] != p[1] {
				return p[0] < p[1]
			}
		}
		return false
	})
}

// readResources reads every resource from its cluster and fills State,
// Healthy and Message (pkg/health judges live objects). A cluster whose
// client cannot be had is listed in unreachable with the reason, and its
// resources get State Unreachable. Resources whose component was unknown
// take it from the object's app.oam.dev/component label.
//
// A Helm release (virtual kind HelmRelease) is no object to read: its state
// is the controller's verdict in services[] for that component and cluster,
// and the resources of its manifest (read from Helm's release record, see
// releaseResources) follow it as rows of the same component, each read
// live like the others. When the record cannot be read, the release's
// message says why.
func readResources(ctx context.Context, clients multicluster.ClusterClients, refs []liveResource, services []common.ApplicationComponentStatus) ([]liveResource, map[string]string) {
	rd := &resourceReader{clients: clients, cache: map[string]client.Client{}, unreachable: map[string]string{}}
	seen := make(map[resourceKey]bool, len(refs))
	for _, r := range refs {
		seen[keyOfResource(r)] = true
	}
	out := make([]liveResource, 0, len(refs))
	for _, r := range refs {
		if r.APIVersion != helmspec.APIVersion || r.Kind != helmspec.Kind {
			rd.read(ctx, &r)
			out = append(out, r)
			continue
		}
		r.State, r.Message = releaseState(&r, services)
		r.Healthy = r.State == stateHealthyRelease
		var members []liveResource
		if c := rd.client(ctx, r.Cluster); c != nil {
			var err error
			if members, err = releaseResources(ctx, c, r); err != nil {
				r.Message = joinMessages(r.Message, "its resources are not listed: "+err.Error())
			}
		}
		out = append(out, r)
		for _, m := range members {
			// A resource the Application also tracks on its own is shown once.
			if k := keyOfResource(m); !seen[k] {
				seen[k] = true
				rd.read(ctx, &m)
				out = append(out, m)
			}
		}
	}
	sortResources(out)
	if len(rd.unreachable) == 0 {
		return out, nil
	}
	return out, rd.unreachable
}

// resourceReader reads resources from their clusters, with one client per
// cluster; clusters whose client cannot be had are kept in unreachable.
type resourceReader struct {
	clients     multicluster.ClusterClients
	cache       map[string]client.Client
	unreachable map[string]string
}

// client returns the client of cluster, or nil when it cannot be had (the
// reason is recorded in unreachable).
func (rd *resourceReader) client(ctx context.Context, cluster string) client.Client {
	if c, ok := rd.cache[cluster]; ok {
		return c
	}
	if _, bad := rd.unreachable[cluster]; bad {
		return nil
	}
	c, err := rd.clients.Client(ctx, cluster)
	if err != nil {
		rd.unreachable[cluster] = err.Error()
		return nil
	}
	rd.cache[cluster] = c
	return c
}

// read reads r from its cluster and fills State, Healthy and Message (and
// Component and Trait from the object's labels when unknown).
func (rd *resourceReader) read(ctx context.Context, r *liveResource) {
	c := rd.client(ctx, r.Cluster)
	if c == nil {
		r.State = stateUnreachable
		return
	}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(r.APIVersion)
	obj.SetKind(r.Kind)
	err := c.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, obj)
	switch {
	case err == nil:
		h := health.Check(ctx, obj)
		r.State, r.Healthy, r.Message = h.Reason, h.Healthy, h.Message
		if r.Component == "" {
			r.Component = obj.GetLabels()[v1beta1.LabelAppComponent]
			r.Trait = obj.GetLabels()[v1beta1.LabelTraitType]
		}
	case apierrors.IsNotFound(err):
		r.State, r.Message = stateMissing, "not found in cluster "+r.Cluster
	case meta.IsNoMatchError(err):
		r.State, r.Message = stateMissing, fmt.Sprintf("cluster %s does not serve %s %s", r.Cluster, r.APIVersion, r.Kind)
	default:
		r.State, r.Message = stateReadError, err.Error()
	}
}

// joinMessages joins two messages with "; ", either may be empty.
func joinMessages(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// stateHealthyRelease is the State of a Helm release services[] calls healthy.
const stateHealthyRelease = "Healthy"

// releaseState reads a Helm release's health from the services[] entry of
// its component and cluster ("" and "local" both name the hub).
func releaseState(r *liveResource, services []common.ApplicationComponentStatus) (string, string) {
	for _, s := range services {
		if s.Name != r.Component || multicluster.IsLocal(s.Cluster) != multicluster.IsLocal(r.Cluster) ||
			(!multicluster.IsLocal(r.Cluster) && s.Cluster != r.Cluster) {
			continue
		}
		if s.Healthy {
			return stateHealthyRelease, s.Message
		}
		return "Unhealthy", s.Message
	}
	return "Unknown", "no health reported for this release yet"
}

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

// releaseResources lists the resources of Helm release rel (a HelmRelease
// row: Name and Namespace are the release's; an empty Namespace searches
// every namespace) from its record on c: the latest deployed revision,
// else the latest revision. Each comes back as a row of rel's cluster and
// component with Release set and the namespace manifestNamespace gives
// (the release namespace is the record's). Errors say which record was
// missing or unreadable.
func releaseResources(ctx context.Context, c client.Client, rel liveResource) ([]liveResource, error) {
	list := &corev1.SecretList{}
	if err := c.List(ctx, list, client.InNamespace(rel.Namespace), client.MatchingLabels(helmspec.RecordLabels(rel.Name))); err != nil {
		return nil, fmt.Errorf("listing Helm release records (Secrets labelled %s) in namespace %s: %w",
			labels.FormatLabels(helmspec.RecordLabels(rel.Name)), rel.Namespace, err)
	}
	rec := helmspec.LatestRecord(list.Items)
	if rec == nil {
		return nil, fmt.Errorf("no Helm release record (Secret labelled %s) in namespace %s of cluster %s",
			labels.FormatLabels(helmspec.RecordLabels(rel.Name)), rel.Namespace, rel.Cluster)
	}
	hr, err := helmspec.DecodeRecord(rec)
	if err != nil {
		return nil, err
	}
	objs, err := helmspec.ParseManifest(hr.Manifest)
	if err != nil {
		return nil, fmt.Errorf("manifest of Helm release %s revision %d: %w", rel.Name, hr.Version, err)
	}
	out := make([]liveResource, 0, len(objs))
	for _, o := range objs {
		out = append(out, liveResource{Cluster: rel.Cluster, Component: rel.Component, APIVersion: o.GetAPIVersion(),
			Kind: o.GetKind(), Namespace: manifestNamespace(c, o, rec.Namespace), Name: o.GetName(), Release: rel.Name})
	}
	return out, nil
}

// manifestNamespace is the namespace object o of a Helm manifest lives in,
// as Helm installs it: for a kind the cluster's RESTMapper (scope) calls
// namespaced, the manifest's namespace, else the release namespace; for a
// cluster-scoped kind (ClusterRole, ValidatingWebhookConfiguration, a
// cluster-scoped CRD's kind) none, even when the manifest sets one (charts
// often stamp the release namespace on every object; the API server
// ignores it there). For a kind the cluster does not know, what the
// manifest says: its scope cannot be told, and reading it says MISSING.
func manifestNamespace(scope namespaceScoper, o *unstructured.Unstructured, releaseNamespace string) string {
	namespaced, err := scope.IsObjectNamespaced(o)
	switch {
	case err != nil:
		return o.GetNamespace()
	case !namespaced:
		return ""
	case o.GetNamespace() == "":
		return releaseNamespace
	}
	return o.GetNamespace()
}

// namespaceScoper tells whether an object's kind is namespaced
// (controller-runtime's client.Client, through its RESTMapper).
type namespaceScoper interface {
	IsObjectNamespaced(obj runtime.Object) (bool, error)
}

// appReadError is the error of verb ("reading", "deleting") Application
// ns/name: NotFound is the user's (exit 1), suggesting -n unless the
// namespace came from -n (nsGiven); other errors are wrapped as they are.
func appReadError(err error, verb, ns, name string, nsGiven bool) error {
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("%s Application %s/%s: %w", verb, ns, name, err)
	}
	if nsGiven {
		return userErrorf("Application %s/%s not found", ns, name)
	}
	return userErrorf("Application %s/%s not found (set the namespace with -n)", ns, name)
}
