package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/revision"
)

func newRevisionCommand(g *GlobalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "revision",
		Short: "List and show an Application's revisions",
		Long: `Every change of an Application's spec (or publishVersion, or of a definition
it uses with autoUpdate) makes an ApplicationRevision "<app>-v<N>": a
snapshot of the Application and every definition it used.`,
	}
	cmd.AddCommand(newRevisionListCommand(g), newRevisionGetCommand(g))
	return cmd
}

// listRevisions returns the revisions of Application name in ns, oldest
// first. With none, a missing Application is the user's error (getApp;
// nsGiven: ns came from -n).
func listRevisions(ctx context.Context, c client.Client, ns, name string, nsGiven bool) ([]v1beta1.ApplicationRevision, error) {
	list := &v1beta1.ApplicationRevisionList{}
	if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{v1beta1.LabelAppName: name}); err != nil {
		return nil, fmt.Errorf("listing the revisions of Application %s/%s: %w", ns, name, err)
	}
	revs, err := revision.Decoded(name, list.Items)
	if err != nil {
		return nil, err
	}
	if len(revs) == 0 {
		if _, err := getApp(ctx, c, ns, name, nsGiven); err != nil {
			return nil, err
		}
	}
	return revs, nil
}

func newRevisionListCommand(g *GlobalOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:               "list APP",
		Aliases:           []string{"ls"},
		Short:             "List an Application's revisions, oldest first",
		Args:              exactlyOneApp,
		ValidArgsFunction: completeApps(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, outputTable, outputYAML, outputJSON); err != nil {
				return err
			}
			c, err := g.appClient()
			if err != nil {
				return err
			}
			ctx, ns, name := cmd.Context(), g.ResolvedNamespace(), args[0]
			revs, err := listRevisions(ctx, c, ns, name, g.Namespace != "")
			if err != nil {
				return err
			}
			rows := revisionRows(revs)
			if output != outputTable {
				return printStructured(cmd.OutOrStdout(), rows, output)
			}
			if len(rows) == 0 {
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "Application %s/%s has no revisions yet.\n", ns, name)
				return err
			}
			return formatRevisionRows(cmd.OutOrStdout(), rows, time.Now())
		},
	}
	addOutputFlag(cmd, &output, outputTable, outputTable, outputYAML, outputJSON)
	return cmd
}

// revisionRow is one line of `oamflow revision list`.
type revisionRow struct {
	Name           string      `json:"name"`
	Revision       int64       `json:"revision"`
	Hash           string      `json:"hash"`
	Succeeded      bool        `json:"succeeded"`
	PublishVersion string      `json:"publishVersion,omitempty"`
	Created        metav1.Time `json:"created"`
}

// revisionRows summarizes revs (sorted as given).
func revisionRows(revs []v1beta1.ApplicationRevision) []revisionRow {
	rows := make([]revisionRow, 0, len(revs))
	for _, r := range revs {
		n, _ := revision.Number(r.Spec.Application.Name, r.Name)
		if n == 0 {
			n, _ = revision.Number(r.Labels[v1beta1.LabelAppName], r.Name)
		}
		rows = append(rows, revisionRow{
			Name: r.Name, Revision: n, Hash: r.Labels[v1beta1.LabelAppRevisionHash], Succeeded: r.Status.Succeeded,
			PublishVersion: r.Spec.Application.Annotations[v1beta1.AnnoPublishVersion],
			Created:        r.CreationTimestamp,
		})
	}
	return rows
}

// formatRevisionRows writes rows as a table at now.
func formatRevisionRows(w io.Writer, rows []revisionRow, now time.Time) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "REVISION\tHASH\tSUCCEEDED\tPUBLISH-VERSION\tAGE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%t\t%s\t%s\n", r.Name, orDash(r.Hash), r.Succeeded, orDash(r.PublishVersion), humanAge(r.Created, now))
	}
	return tw.Flush()
}

func newRevisionGetCommand(g *GlobalOptions) *cobra.Command {
	output := outputYAML
	cmd := &cobra.Command{
		Use:   "get APP [REVISION]",
		Short: "Print a revision's snapshot (the Application and its definitions) as YAML",
		Long: `Print an ApplicationRevision: the Application as it was and every definition it
used. REVISION is N, vN or <app>-vN; the default is the newest.`,
		Example: `  oamflow revision get demo
  oamflow revision get demo 2 -o json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return userErrorf("give an Application name and optionally a revision, got %d arguments", len(args))
			}
			return nil
		},
		ValidArgsFunction: completeApps(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, outputYAML, outputJSON); err != nil {
				return err
			}
			c, err := g.appClient()
			if err != nil {
				return err
			}
			ctx, ns, name := cmd.Context(), g.ResolvedNamespace(), args[0]
			revs, err := listRevisions(ctx, c, ns, name, g.Namespace != "")
			if err != nil {
				return err
			}
			want := ""
			if len(args) == 2 {
				if want, err = revisionName(name, args[1]); err != nil {
					return err
				}
			}
			rev, err := pickRevision(revs, ns, name, want)
			if err != nil {
				return err
			}
			rev = rev.DeepCopy()
			rev.ManagedFields = nil
			rev.APIVersion, rev.Kind = v1beta1.GroupVersion.String(), "ApplicationRevision"
			return printStructured(cmd.OutOrStdout(), rev, output)
		},
	}
	addOutputFlag(cmd, &output, outputYAML, outputYAML, outputJSON)
	return cmd
}

// revisionName turns N, vN or <app>-vN into "<app>-vN".
func revisionName(app, arg string) (string, error) {
	s := strings.TrimPrefix(arg, app+"-")
	s = strings.TrimPrefix(s, "v")
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return "", userErrorf("revision %q: expected N, vN or %s-vN with N ≥ 1", arg, app)
	}
	return revision.Name(app, n), nil
}

// pickRevision returns the revision named want, or the newest when want
// is empty.
func pickRevision(revs []v1beta1.ApplicationRevision, ns, app, want string) (*v1beta1.ApplicationRevision, error) {
	if len(revs) == 0 {
		return nil, userErrorf("Application %s/%s has no revisions yet", ns, app)
	}
	if want == "" {
		return &revs[len(revs)-1], nil
	}
	for i := range revs {
		if revs[i].Name == want {
			return &revs[i], nil
		}
	}
	names := make([]string, len(revs))
	for i, r := range revs {
		names[i] = r.Name
	}
	return nil, userErrorf("Application %s/%s has no revision %s (it has %s)", ns, app, want, strings.Join(names, ", "))
}
