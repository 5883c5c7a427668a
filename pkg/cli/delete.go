package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// deleteOptions are the flags of `oamflow delete`.
type deleteOptions struct {
	global       *GlobalOptions
	orphan       bool
	wait         bool
	timeout      time.Duration
	pollInterval time.Duration
}

func newDeleteCommand(g *GlobalOptions) *cobra.Command {
	o := &deleteOptions{global: g}
	cmd := &cobra.Command{
		Use:   "delete APP [--orphan] [--wait]",
		Short: "Delete an Application and, through the controller, everything it deployed",
		Long: `Delete an Application. The controller then deletes the resources it deployed
(in every cluster, as its garbage-collect policy says), its revisions and
workflow state, and removes its finalizer; only then is the Application gone.
With --orphan, the resources are kept instead, without the Application's
ownership labels (KubeVela's app.oam.dev/orphan-resource finalizer, which
--orphan sets before deleting). With --wait, wait for that (exit 2 after
--timeout).`,
		Args:              exactlyOneApp,
		ValidArgsFunction: completeApps(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args[0], cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.orphan, "orphan", false, "keep the resources the Application deployed (without its ownership labels) instead of deleting them")
	f.BoolVarP(&o.wait, "wait", "w", false, "wait until the Application and its resources are gone")
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "with --wait, give up after this long (exit 2)")
	f.DurationVar(&o.pollInterval, "poll-interval", defaultPollInterval, "with --wait, how often to read the Application")
	_ = f.MarkHidden("poll-interval")
	return cmd
}

func (o *deleteOptions) run(ctx context.Context, name string, out io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.wait && o.timeout <= 0 {
		return userErrorf("--timeout must be positive, not %s", o.timeout)
	}
	if o.pollInterval <= 0 {
		o.pollInterval = defaultPollInterval
	}
	c, err := o.global.appClient()
	if err != nil {
		return err
	}
	key := client.ObjectKey{Namespace: o.global.ResolvedNamespace(), Name: name}
	app := &v1beta1.Application{}
	app.Namespace, app.Name = key.Namespace, key.Name
	if o.orphan {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, key, app); err != nil {
				return err
			}
			if !controllerutil.AddFinalizer(app, v1beta1.FinalizerOrphanResource) {
				return nil
			}
			return c.Update(ctx, app)
		})
		if apierrors.IsNotFound(err) {
			return appReadError(err, "deleting", key.Namespace, key.Name, o.global.Namespace != "")
		}
		if err != nil {
			return appWriteError(err, "setting the finalizer "+v1beta1.FinalizerOrphanResource+" of", key.Namespace, key.Name)
		}
	}
	if err := c.Delete(ctx, app, client.PropagationPolicy("Background")); err != nil {
		return appReadError(err, "deleting", key.Namespace, key.Name, o.global.Namespace != "")
	}
	done := "the controller removes its resources"
	if o.orphan {
		done = "the controller releases its resources, which are kept"
	}
	if !o.wait {
		fmt.Fprintf(out, "Application %s deleted; %s\n", key, done)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	p := newProgress(out, os.Getenv)
	defer p.Done()
	start := time.Now()
	var last *v1beta1.Application
	for {
		cur := &v1beta1.Application{}
		err := c.Get(ctx, key, cur)
		switch {
		case apierrors.IsNotFound(err):
			fmt.Fprintf(out, "Application %s and its resources deleted after %s\n", key, humanSpan(time.Since(start)))
			return nil
		case err == nil:
			last = cur
			p.Update(cur, time.Since(start))
		}
		select {
		case <-ctx.Done():
			where := "it still exists"
			if last != nil && len(last.Finalizers) > 0 {
				where = fmt.Sprintf("it still has finalizers %v (oamflow-controller removes its own once the resources are deleted: is it running?)", last.Finalizers)
			}
			return fmt.Errorf("timed out after %s waiting for Application %s to be deleted: %s", o.timeout, key, where)
		case <-time.After(o.pollInterval):
		}
	}
}
