// Package cli implements the oamflow command line (cobra). Each command lives
// in its own file and is registered in NewRootCommand.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes shared by every command: 0 success, 1 user or validation error,
// 2 runtime failure (cluster unreachable, a process failed, …), 130 interrupted.
const (
	ExitOK         = 0
	ExitUserError  = 1
	ExitRuntimeErr = 2
	// ExitInterrupted: stopped by Ctrl-C or SIGTERM (128 + SIGINT, as
	// shells report it).
	ExitInterrupted = 130
)

// UserError marks an error caused by the user's input (bad flags, invalid
// files, validation failures). Commands return it wrapped to make the process
// exit with ExitUserError; every other error exits with ExitRuntimeErr.
type UserError struct{ Err error }

func (e *UserError) Error() string { return e.Err.Error() }
func (e *UserError) Unwrap() error { return e.Err }

// userErrorf builds a UserError from a format string.
func userErrorf(format string, args ...any) error {
	return &UserError{Err: fmt.Errorf(format, args...)}
}

// ExitError makes the process exit with Code (a command with its own
// exit-code contract, such as diff); Err, when set, is printed as other
// errors are.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}
func (e *ExitError) Unwrap() error { return e.Err }

// GlobalOptions are the flags every cluster-facing command shares.
type GlobalOptions struct {
	// Kubeconfig is the kubeconfig file; empty means $KUBECONFIG, then ~/.kube/config.
	Kubeconfig string
	// Context is the kubeconfig context; empty means the current context.
	Context string
	// Namespace is the namespace of namespaced objects; empty means the context's namespace, then "default".
	Namespace string
	// Out and ErrOut are where commands print.
	Out, ErrOut io.Writer
	// userAgent, when set by a command, is the User-Agent of its requests
	// (default client-go's).
	userAgent string
}

// NewRootCommand builds the oamflow command tree.
func NewRootCommand(out, errOut io.Writer) *cobra.Command {
	opts := &GlobalOptions{Out: out, ErrOut: errOut}
	root := &cobra.Command{
		Use:           "oamflow",
		Short:         "Deliver OAM Applications to Kubernetes clusters",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(out)
	root.SetErr(errOut)
	// A bad flag is the user's mistake: exit 1, like a validation error.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UserError{Err: err} })
	pf := root.PersistentFlags()
	pf.StringVar(&opts.Kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default $KUBECONFIG, then ~/.kube/config)")
	pf.StringVar(&opts.Context, "context", "", "kubeconfig context to use (default: the current context)")
	pf.StringVarP(&opts.Namespace, "namespace", "n", "", "namespace (default: the context's namespace, then \"default\")")

	root.AddCommand(newVersionCommand(opts))
	root.AddCommand(newInstallCommand(opts))
	root.AddCommand(newLocalCommand(opts))
	root.AddCommand(newDryRunCommand(opts))
	root.AddCommand(newDefCommand(opts))
	root.AddCommand(newClusterCommand(opts))
	root.AddCommand(newWorkflowCommand(opts))
	root.AddCommand(newUpCommand(opts))
	root.AddCommand(newDiffCommand(opts))
	root.AddCommand(newStatusCommand(opts))
	root.AddCommand(newLsCommand(opts))
	root.AddCommand(newDeleteCommand(opts))
	root.AddCommand(newRevisionCommand(opts))
	root.AddCommand(newMigrateCommand(opts))
	root.AddCommand(newCompletionCommand(opts))
	return root
}

// Execute runs the CLI and returns the process exit code.
func Execute(args []string) int {
	// Ctrl-C (or SIGTERM) cancels the context of every command: waits,
	// watches and requests stop and the command returns.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return execute(ctx, args, os.Stdout, os.Stderr)
}

// execute runs the command line args with ctx and returns its exit code.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := NewRootCommand(stdout, stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "Interrupted.")
			return ExitInterrupted
		}
		var ee *ExitError
		if errors.As(err, &ee) {
			if ee.Err != nil {
				fmt.Fprintln(stderr, "Error:", ee.Err)
			}
			return ee.Code
		}
		fmt.Fprintln(stderr, "Error:", err)
		var ue *UserError
		// cobra reports an unknown sub-command with a plain error.
		if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") {
			return ExitUserError
		}
		return ExitRuntimeErr
	}
	return ExitOK
}
