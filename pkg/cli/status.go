package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
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
