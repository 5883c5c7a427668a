package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/oamflow/oamflow/pkg/localcluster"
)

// localOptions are the flags shared by the `local` subcommands.
type localOptions struct {
	global *GlobalOptions
	// home is --home; empty means $OAMFLOW_HOME, then ~/.oamflow.
	home string
	// binDir is --k8s-bin; empty means $OAMFLOW_K8S_BIN, then bin/k8s of the repository.
	binDir string
}

func newLocalCommand(opts *GlobalOptions) *cobra.Command {
	lo := &localOptions{global: opts}
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Run local Kubernetes control planes (a hub and members) on this machine",
		Long: `Run local Kubernetes control planes built from upstream sources, offline.

Each cluster is etcd, kube-apiserver, kube-controller-manager, kube-scheduler
and kwok (fake nodes on which pods become Running/Ready and Job pods complete),
listening on 127.0.0.1 only. The first cluster is the hub "local", the others
are "member-1", "member-2", …. State, logs and kubeconfigs live in the state
directory ($OAMFLOW_HOME, default ~/.oamflow). Build the binaries once with
` + "`" + localcluster.BuildCommand + "`" + `.`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&lo.home, "home", "", "state directory (default $"+localcluster.HomeEnv+", then ~/.oamflow)")
	pf.StringVar(&lo.binDir, "k8s-bin", "", "directory with etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, kwokctl (default $"+localcluster.BinDirEnv+", then bin/k8s of the oamflow repository)")
	cmd.AddCommand(
		newLocalUpCommand(lo),
		newLocalDownCommand(lo),
		newLocalStatusCommand(lo),
		newLocalKubeconfigCommand(lo),
	)
	return cmd
}

// manager builds the Manager. With needBinaries, failing to locate the binary
// directory is an error; otherwise it is left empty (status, down and
// kubeconfig work without binaries).
func (lo *localOptions) manager(progress io.Writer, needBinaries bool) (*localcluster.Manager, error) {
	home := lo.home
	if home == "" {
		var err error
		if home, err = localcluster.DefaultHome(os.Getenv(localcluster.HomeEnv)); err != nil {
			return nil, err
		}
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	binDir, err := localcluster.ResolveBinDir(lo.binDir, os.Getenv(localcluster.BinDirEnv), starts...)
	if err != nil && needBinaries {
		return nil, err
	}
	return localcluster.New(localcluster.Config{Home: home, BinDir: binDir, Progress: progress})
}

func newLocalUpCommand(lo *localOptions) *cobra.Command {
	o := localcluster.DefaultUpOptions()
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the local clusters, or keep them if they already run",
		Long: `Start the hub "local" and members "member-1" … "member-<N-1>", or keep the ones
already running. Clusters whose processes died are deleted and created again.
Prints progress while it works and, last, a line setting KUBECONFIG to the
clusters' kubeconfig files.

The defaults fit a benchmark of about 1,000 applications per cluster: 30 fake
nodes (110 pods each), no client QPS limits, and a /16 Service IP range.`,
		Args: localNoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return &UserError{Err: err}
			}
			m, err := lo.manager(lo.global.ErrOut, true)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := m.Up(ctx, o)
			if errors.Is(err, localcluster.ErrPrefixConflict) {
				return &UserError{Err: err}
			}
			if err != nil {
				return fmt.Errorf("local up: %w", err)
			}
			printUpResult(lo.global.Out, res)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Clusters, "clusters", o.Clusters, fmt.Sprintf("number of clusters, the hub included (1 to %d)", localcluster.MaxClusters))
	f.StringVar(&o.NamePrefix, "name-prefix", o.NamePrefix, "prefix of the kubeconfig context and kwokctl cluster names")
	f.IntVar(&o.Nodes, "nodes", o.Nodes, "fake Ready nodes per cluster (each holds 110 pods)")
	f.DurationVar(&o.Timeout, "timeout", o.Timeout, "time allowed for every cluster to become ready")
	f.IntVar(&o.APIServerPort, "api-port", o.APIServerPort, "kube-apiserver port of the hub on 127.0.0.1 (0: any free port)")
	f.BoolVar(&o.DisableQPSLimits, "disable-qps-limits", o.DisableQPSLimits, "lift client rate limits of the control-plane components")
	f.StringVar(&o.ServiceCIDR, "service-cidr", o.ServiceCIDR, "Service IP range of kube-apiserver (\"\": its default /24)")
	return cmd
}

// printUpResult prints one line per cluster, then the KUBECONFIG line last.
func printUpResult(w io.Writer, res *localcluster.UpResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	paths := make([]string, 0, len(res.Clusters))
	for _, c := range res.Clusters {
		how := fmt.Sprintf("started in %.1fs", c.ReadyAfter.Seconds())
		if c.Reused {
			how = "already running"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d nodes\t%s\tcontext %s\tkubeconfig %s\n", c.Name, c.Server, c.Nodes, how, c.Context, c.Kubeconfig)
		paths = append(paths, c.Kubeconfig)
	}
	_ = tw.Flush()
	if len(res.Extra) > 0 {
		fmt.Fprintf(w, "also running (not requested): %s\n", strings.Join(res.Extra, ", "))
	}
	fmt.Fprintf(w, "export KUBECONFIG=%s\n", strings.Join(paths, string(os.PathListSeparator)))
}

func newLocalDownCommand(lo *localOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop every local cluster and remove its state, data and logs",
		Args:  localNoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := lo.manager(lo.global.ErrOut, false)
			if err != nil {
				return err
			}
			res, err := m.Down(cmd.Context())
			if err != nil {
				return fmt.Errorf("local down: %w", err)
			}
			if len(res.Stopped) == 0 {
				fmt.Fprintf(lo.global.Out, "No local clusters in %s; nothing to stop.\n", m.Home())
				return nil
			}
			fmt.Fprintf(lo.global.Out, "Stopped %s (%d processes, none left running).\n", strings.Join(res.Stopped, ", "), len(res.PIDs))
			return nil
		},
	}
}

func newLocalStatusCommand(lo *localOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "List the local clusters, their kubeconfig files, processes and logs",
		Args:  localNoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := lo.manager(lo.global.ErrOut, false)
			if err != nil {
				return err
			}
			list, err := m.Status(cmd.Context())
			if err != nil {
				return fmt.Errorf("local status: %w", err)
			}
			printStatus(lo.global.Out, m.Home(), list)
			return nil
		},
	}
}

// clusterState summarizes a ClusterStatus in a few words.
func clusterState(c localcluster.ClusterStatus) string {
	var dead []string
	for _, comp := range c.Components {
		if !comp.Running {
			dead = append(dead, comp.Name)
		}
	}
	switch {
	case len(dead) == len(c.Components):
		return "stopped"
	case len(dead) > 0:
		return "degraded (not running: " + strings.Join(dead, ", ") + ")"
	case !c.APIReady:
		return "running, kube-apiserver not ready"
	default:
		return "running"
	}
}

// printStatus prints one block per cluster: state, server, kubeconfig, and a
// line per component with its pid and log file.
func printStatus(w io.Writer, home string, list []localcluster.ClusterStatus) {
	if len(list) == 0 {
		fmt.Fprintf(w, "No local clusters in %s; start them with `oamflow local up`.\n", home)
		return
	}
	fmt.Fprintf(w, "State dir %s\n", home)
	for _, c := range list {
		fmt.Fprintf(w, "\n%s: %s\n", c.Name, clusterState(c))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  server\t%s\n", c.Server)
		fmt.Fprintf(tw, "  context\t%s\n", c.Context)
		fmt.Fprintf(tw, "  kubeconfig\t%s\n", c.Kubeconfig)
		for _, comp := range c.Components {
			state := "not running"
			if comp.Running {
				state = fmt.Sprintf("pid %d", comp.PID)
			}
			fmt.Fprintf(tw, "  %s\t%s\tlog %s\n", comp.Name, state, comp.Log)
		}
		fmt.Fprintf(tw, "  kwokctl\t\tlog %s\n", c.KwokctlLog)
		_ = tw.Flush()
	}
}

func newLocalKubeconfigCommand(lo *localOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "kubeconfig NAME",
		Short: "Print the kubeconfig file path of a local cluster (\"local\", \"member-1\", …)",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return userErrorf("local kubeconfig takes one cluster name (\"local\", \"member-1\", …), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := localcluster.ValidateName(name); err != nil {
				return &UserError{Err: err}
			}
			m, err := lo.manager(lo.global.ErrOut, false)
			if err != nil {
				return err
			}
			p, err := m.Kubeconfig(name)
			if errors.Is(err, localcluster.ErrUnknownCluster) {
				return &UserError{Err: err}
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(lo.global.Out, p)
			return nil
		},
	}
}

// localNoArgs rejects positional arguments as a user error.
func localNoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return userErrorf("%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}
