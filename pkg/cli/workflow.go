package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/revision"
	"github.com/oamflow/oamflow/pkg/workflowops"
)

func newWorkflowCommand(g *GlobalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workflow",
		Short: "Operate an Application's workflow: suspend, resume, terminate, restart, rollback",
		Long: `Operate the workflow of an Application that the oamflow controller runs.

suspend, resume and terminate change status.workflow; the controller acts on
the next reconcile. restart asks the controller to run the workflow again from
the start (it re-reads the installed definitions first), or, with --step, from
one step on, keeping the steps before it. rollback puts back the spec of the
last revision whose workflow succeeded; it deploys as a new revision.`,
	}
	cmd.AddCommand(
		workflowOp(g, "suspend", "Pause the workflow: no further step starts until resume",
			"workflow suspended", workflowops.Suspend),
		workflowOp(g, "resume", "Continue a suspended workflow (also releases suspend steps)",
			"workflow resumed", workflowops.Resume),
		workflowOp(g, "terminate", "Stop the workflow for good (restart runs it again)",
			"workflow terminated", workflowops.Terminate),
		newWorkflowRestartCommand(g),
		newWorkflowRollbackCommand(g),
	)
	return cmd
}

// getApp reads Application ns/name. A missing one is the user's error
// (appReadError): it suggests -n only when the namespace did not come
// from -n (nsGiven false).
func getApp(ctx context.Context, c client.Client, ns, name string, nsGiven bool) (*v1beta1.Application, error) {
	app := &v1beta1.Application{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, app); err != nil {
		return nil, appReadError(err, "reading", ns, name, nsGiven)
	}
	return app, nil
}

// appWriteError is the error of a failed write of Application ns/name,
// doing saying what the write was ("updating the workflow status of"). A
// *UserError (from getApp or operationError) passes through. A write the
// API server refused because of the object (refusedInput: invalid, or
// denied by an admission webhook such as oamflow's own, or by an
// admission policy) is the user's error (exit 1) with the server's message
// as it gave it, which names the field path. Anything else (conflicts
// after the retries, RBAC, an unreachable server) is a runtime error
// (exit 2).
func appWriteError(err error, doing, ns, name string) error {
	var ue *UserError
	switch {
	case errors.As(err, &ue):
		return err
	case refusedInput(err):
		return userErrorf("%s Application %s/%s: %w", doing, ns, name, err)
	}
	return fmt.Errorf("%s Application %s/%s: %w", doing, ns, name, err)
}

// operationError turns the workflow package's refusals into user errors
// that say what to do.
func operationError(app *v1beta1.Application, err error) error {
	id := app.Namespace + "/" + app.Name
	switch {
	case errors.Is(err, workflowops.ErrNotRunning):
		return userErrorf("Application %s: %v (phase %s); `oamflow workflow restart %s` runs it again", id, err, app.Status.Phase, app.Name)
	case errors.Is(err, workflowops.ErrNotSuspended):
		return userErrorf("Application %s: %v (phase %s)", id, err, app.Status.Phase)
	case errors.Is(err, workflowops.ErrUnknownStep):
		return userErrorf("Application %s: %v; the steps are those of spec.workflow.steps (or, without steps, one per component)", id, err)
	}
	return err
}

// updateWorkflowStatus applies op to status.workflow and stores it,
// retrying when the controller wrote in between. nsGiven says whether ns
// came from -n (getApp). Errors are appWriteError's.
func updateWorkflowStatus(ctx context.Context, c client.Client, ns, name string, nsGiven bool, op func(*v1beta1.Application) error) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		app, err := getApp(ctx, c, ns, name, nsGiven)
		if err != nil {
			return err
		}
		if err := op(app); err != nil {
			return operationError(app, err)
		}
		return c.Status().Update(ctx, app)
	})
	if err != nil {
		return appWriteError(err, "updating the workflow status of", ns, name)
	}
	return nil
}

func workflowOp(g *GlobalOptions, use, short, done string, op func(*common.WorkflowStatus) error) *cobra.Command {
	return &cobra.Command{
		Use:   use + " APP",
		Short: short,
		Args:  exactlyOneApp,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.appClient()
			if err != nil {
				return err
			}
			ns := g.ResolvedNamespace()
			err = updateWorkflowStatus(cmd.Context(), c, ns, args[0], g.Namespace != "", func(app *v1beta1.Application) error {
				return op(app.Status.Workflow)
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(g.Out, "Application %s/%s: %s\n", ns, args[0], done)
			return nil
		},
	}
}

func exactlyOneApp(_ *cobra.Command, args []string) error {
	if len(args) != 1 {
		return userErrorf("give exactly one Application name, got %d arguments", len(args))
	}
	return nil
}

func newWorkflowRestartCommand(g *GlobalOptions) *cobra.Command {
	var step string
	cmd := &cobra.Command{
		Use:   "restart APP",
		Short: "Run the workflow again, from the start or from --step on",
		Args:  exactlyOneApp,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.appClient()
			if err != nil {
				return err
			}
			ctx, ns, name := cmd.Context(), g.ResolvedNamespace(), args[0]
			if step != "" {
				err := updateWorkflowStatus(ctx, c, ns, name, g.Namespace != "", func(app *v1beta1.Application) error {
					return workflowops.RestartFrom(app.Status.Workflow, workflowops.GraphOf(app), step)
				})
				if err != nil {
					return err
				}
				fmt.Fprintf(g.Out, "Application %s/%s: workflow restarts from step %s\n", ns, name, step)
				return nil
			}
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				app, err := getApp(ctx, c, ns, name, g.Namespace != "")
				if err != nil {
					return err
				}
				if app.Annotations == nil {
					app.Annotations = map[string]string{}
				}
				app.Annotations[v1beta1.AnnoRestartWorkflow] = "true"
				return c.Update(ctx, app)
			})
			if err != nil {
				return appWriteError(err, "asking to restart", ns, name)
			}
			fmt.Fprintf(g.Out, "Application %s/%s: workflow restart requested\n", ns, name)
			return nil
		},
	}
	cmd.Flags().StringVar(&step, "step", "", "restart from this step (or sub-step): it and the steps after or depending on it run again")
	return cmd
}

func newWorkflowRollbackCommand(g *GlobalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "rollback APP",
		Short: "Put back the spec of the last revision whose workflow succeeded",
		Args:  exactlyOneApp,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.appClient()
			if err != nil {
				return err
			}
			ctx, ns, name := cmd.Context(), g.ResolvedNamespace(), args[0]
			var target string
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				app, err := getApp(ctx, c, ns, name, g.Namespace != "")
				if err != nil {
					return err
				}
				list := &v1beta1.ApplicationRevisionList{}
				if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{v1beta1.LabelAppName: name}); err != nil {
					return fmt.Errorf("listing the revisions of Application %s/%s: %w", ns, name, err)
				}
				current := ""
				if app.Status.LatestRevision != nil {
					current = app.Status.LatestRevision.Name
				}
				revs, err := revision.Decoded(name, list.Items)
				if err != nil {
					return err
				}
				prev := revision.LastSucceeded(revs, current)
				if prev == nil {
					return userErrorf("Application %s/%s: no revision before %s succeeded; there is nothing to roll back to", ns, name, orNone(current))
				}
				target = prev.Name
				app.Spec = *prev.Spec.Application.Spec.DeepCopy()
				pv := prev.Spec.Application.Annotations[v1beta1.AnnoPublishVersion]
				if pv != "" {
					if app.Annotations == nil {
						app.Annotations = map[string]string{}
					}
					app.Annotations[v1beta1.AnnoPublishVersion] = pv
				} else {
					delete(app.Annotations, v1beta1.AnnoPublishVersion)
				}
				return c.Update(ctx, app)
			})
			if err != nil {
				return appWriteError(err, "rolling back", ns, name)
			}
			fmt.Fprintf(g.Out, "Application %s/%s: spec rolled back to revision %s; it deploys as a new revision\n", ns, name, target)
			return nil
		},
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
