package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// lsOptions are the flags of `oamflow ls`.
type lsOptions struct {
	global        *GlobalOptions
	allNamespaces bool
	output        string
}

func newLsCommand(g *GlobalOptions) *cobra.Command {
	o := &lsOptions{global: g}
	cmd := &cobra.Command{
		Use:     "ls [-A]",
		Aliases: []string{"list"},
		Short:   "List Applications with their phase and health",
		Long: `List the Applications of -n NAMESPACE (default: the context's namespace), or of
every namespace with -A: name, namespace, components, phase, healthy
services out of all (component × cluster), and age.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list the Applications of every namespace")
	addOutputFlag(cmd, &o.output, outputTable, outputTable, outputYAML, outputJSON)
	return cmd
}

func (o *lsOptions) run(ctx context.Context, out io.Writer) error {
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
	var opts []client.ListOption
	if !o.allNamespaces {
		opts = append(opts, client.InNamespace(ns))
	}
	list := &v1beta1.ApplicationList{}
	if err := c.List(ctx, list, opts...); err != nil {
		return fmt.Errorf("listing Applications: %w", err)
	}
	rows := appRows(list.Items)
	if o.output != outputTable {
		return printStructured(out, rows, o.output)
	}
	if len(rows) == 0 {
		where := "in namespace " + ns
		if o.allNamespaces {
			where = "in any namespace"
		}
		_, err := fmt.Fprintf(out, "No Applications %s.\n", where)
		return err
	}
	return formatAppRows(out, rows, time.Now())
}

// appRow is one line of `oamflow ls`; -o yaml|json prints the rows.
type appRow struct {
	Name       string                  `json:"name"`
	Namespace  string                  `json:"namespace"`
	Components []string                `json:"components"`
	Phase      common.ApplicationPhase `json:"phase"`
	// Healthy and Services count status.services entries (component ×
	// cluster) that are healthy, and all of them.
	Healthy  int         `json:"healthy"`
	Services int         `json:"services"`
	Created  metav1.Time `json:"created"`
}

// appRows summarizes apps, sorted by namespace then name.
func appRows(apps []v1beta1.Application) []appRow {
	rows := make([]appRow, 0, len(apps))
	for _, a := range apps {
		r := appRow{Name: a.Name, Namespace: a.Namespace, Phase: a.Status.Phase, Created: a.CreationTimestamp,
			Services: len(a.Status.Services), Components: []string{}}
		for _, c := range a.Spec.Components {
			r.Components = append(r.Components, c.Name)
		}
		for _, s := range a.Status.Services {
			if s.Healthy {
				r.Healthy++
			}
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Namespace != rows[j].Namespace {
			return rows[i].Namespace < rows[j].Namespace
		}
		return rows[i].Name < rows[j].Name
	})
	return rows
}

// formatAppRows writes rows as a table at now.
func formatAppRows(w io.Writer, rows []appRow, now time.Time) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "NAME\tNAMESPACE\tCOMPONENTS\tPHASE\tHEALTHY\tAGE")
	for _, r := range rows {
		healthy := "-"
		if r.Services > 0 {
			healthy = fmt.Sprintf("%d/%d", r.Healthy, r.Services)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Namespace, orDash(clip(strings.Join(r.Components, ","), 40)),
			orDash(string(r.Phase)), healthy, humanAge(r.Created, now))
	}
	return tw.Flush()
}
