package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/pkg/multicluster"
)

// clusterOptions are the flags shared by the `cluster` subcommands.
type clusterOptions struct {
	global *GlobalOptions
	// systemNamespace holds the cluster Secrets.
	systemNamespace string
}

func newClusterCommand(opts *GlobalOptions) *cobra.Command {
	co := &clusterOptions{global: opts}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Manage the clusters Applications deploy to",
		Long: `Manage the member clusters of the hub (the cluster --kubeconfig/--context
point at). A member is registered as a Secret in the system namespace in the
KubeVela-compatible form: label cluster.core.oam.dev/cluster-credential-type
(X509Certificate or ServiceAccountToken), data endpoint, ca.crt and tls.crt +
tls.key or token. Its labels are the cluster's labels, which topology
policies select with clusterLabelSelector. The hub itself is always present
as "local" and is never stored.`,
	}
	cmd.PersistentFlags().StringVar(&co.systemNamespace, "system-namespace", multicluster.DefaultSystemNamespace, "namespace of the hub holding the cluster Secrets")
	cmd.AddCommand(
		newClusterJoinCommand(co),
		newClusterListCommand(co),
		newClusterDetachCommand(co),
		newClusterLabelsCommand(co),
	)
	return cmd
}

// registry connects to the hub and returns the cluster registry.
func (co *clusterOptions) registry() (*multicluster.Registry, error) {
	c, cfg, err := co.global.kubeClient()
	if err != nil {
		return nil, &UserError{Err: err}
	}
	return multicluster.NewRegistry(c, cfg, multicluster.WithSystemNamespace(co.systemNamespace))
}

// parseLabelArgs parses "k=v" items (each may hold several, comma-separated).
func parseLabelArgs(items []string, flag string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range items {
		for _, kv := range strings.Split(item, ",") {
			kv = strings.TrimSpace(kv)
			if kv == "" {
				continue
			}
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, userErrorf("%s: %q is not key=value", flag, kv)
			}
			out[k] = v
		}
	}
	if err := multicluster.ValidateLabels(out); err != nil {
		return nil, userErrorf("%s: %v", flag, err)
	}
	return out, nil
}

// formatLabels prints labels as "k=v,k2=v2" sorted, or "<none>".
func formatLabels(labels map[string]string) string {
	if len(labels) == 0 {
		return "<none>"
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	return strings.Join(parts, ",")
}

type clusterJoinOptions struct {
	*clusterOptions
	name, context string
	labels        []string
	force         bool
	settings      multicluster.ClientSettings
	probeTimeout  time.Duration
}

func newClusterJoinCommand(co *clusterOptions) *cobra.Command {
	o := &clusterJoinOptions{clusterOptions: co}
	cmd := &cobra.Command{
		Use:   "join KUBECONFIG --name NAME [--context CONTEXT] [--labels k=v,...]",
		Short: "Register a member cluster from its kubeconfig",
		Long: `Register the cluster of a kubeconfig file as a member of the hub.

The context (--context, default the file's current context) must
authenticate with a client certificate or a token (exec and auth-provider
plugins cannot be stored) and trust the server through its CA. The cluster
must answer with those credentials; nothing is stored otherwise. In this
command --context selects the context of KUBECONFIG; the hub is the current
context of --kubeconfig/$KUBECONFIG, or --hub-context.`,
		Example: `  oamflow cluster join ~/.oamflow/clusters/member-1/kubeconfig.yaml --name member-1 --labels region=east
  oamflow cluster join prod.yaml --context prod-admin --name prod --labels env=prod,region=west --timeout 20s`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return userErrorf("join takes one argument, the member's kubeconfig file (got %d)", len(args))
			}
			return o.run(cmd.Context(), args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.name, "name", "", "cluster name (required; a DNS name other than \"local\")")
	f.StringVar(&o.context, "context", "", "context of KUBECONFIG to use (default: its current context)")
	f.StringVar(&co.global.Context, "hub-context", "", "context of --kubeconfig selecting the hub (default: its current context)")
	f.StringSliceVar(&o.labels, "labels", nil, "cluster labels, k=v[,k=v…] (repeatable)")
	f.BoolVar(&o.force, "force", false, "replace an existing cluster of the same name")
	f.Float32Var(&o.settings.QPS, "qps", 0, "requests per second to this cluster (default 50)")
	f.IntVar(&o.settings.Burst, "burst", 0, "request burst to this cluster (default 100)")
	f.DurationVar(&o.settings.Timeout, "timeout", 0, "timeout of each request to this cluster (default 15s)")
	f.DurationVar(&o.probeTimeout, "check-timeout", 15*time.Second, "how long to wait for the cluster to answer before giving up")
	return cmd
}

func (o *clusterJoinOptions) run(ctx context.Context, kubeconfig string) error {
	if o.name == "" {
		return userErrorf("--name is required: the name the cluster is registered as")
	}
	if err := multicluster.ValidateName(o.name); err != nil {
		return &UserError{Err: fmt.Errorf("--name: %w", err)}
	}
	labels, err := parseLabelArgs(o.labels, "--labels")
	if err != nil {
		return err
	}
	if o.settings.QPS < 0 || o.settings.Burst < 0 || o.settings.Timeout < 0 {
		return userErrorf("--qps, --burst and --timeout must not be negative")
	}
	cred, memberCfg, err := multicluster.CredentialsFromKubeconfig(kubeconfig, o.context)
	if err != nil {
		return &UserError{Err: err}
	}
	info, err := probeVersion(ctx, memberCfg, o.probeTimeout)
	if err != nil {
		return fmt.Errorf("cluster %s does not answer with the credentials of %s (nothing was stored): %w", cred.Endpoint, kubeconfig, err)
	}
	r, err := o.registry()
	if err != nil {
		return err
	}
	c, err := r.Join(ctx, o.name, cred, multicluster.JoinOptions{Labels: labels, Settings: o.settings, Force: o.force})
	if err != nil {
		if errors.Is(err, multicluster.ErrClusterExists) || errors.Is(err, multicluster.ErrSecretConflict) || errors.Is(err, multicluster.ErrInvalid) {
			return &UserError{Err: err}
		}
		return err
	}
	fmt.Fprintf(o.global.Out, "Cluster %q joined: endpoint %s, credentials %s, Kubernetes %s, labels %s.\n",
		c.Name, c.Endpoint, c.CredentialType, info.GitVersion, formatLabels(c.Labels))
	return nil
}

// probeVersion is GET /version with cfg, bounded by timeout.
func probeVersion(ctx context.Context, cfg *rest.Config, timeout time.Duration) (*version.Info, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = timeout
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := disc.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	info := &version.Info{}
	if err := json.Unmarshal(raw, info); err != nil {
		return nil, fmt.Errorf("decoding GET /version: %w", err)
	}
	return info, nil
}

// clusterRow is one line of `cluster list`.
type clusterRow struct {
	Name           string            `json:"name"`
	Endpoint       string            `json:"endpoint"`
	CredentialType string            `json:"credentialType"`
	Labels         map[string]string `json:"labels"`
	Reachable      bool              `json:"reachable"`
	Version        string            `json:"version,omitempty"`
	Message        string            `json:"message,omitempty"`
}

func newClusterListCommand(co *clusterOptions) *cobra.Command {
	var output string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the clusters with their labels, reachability and Kubernetes version",
		Long: `List the hub ("local") and every member cluster. Each cluster is asked
for its version (in parallel, at most --timeout each); REACHABLE is false and
MESSAGE says why when it does not answer or its registration is malformed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch output {
			case "table", "yaml", "json":
			default:
				return userErrorf("--output %q: expected table, yaml or json", output)
			}
			r, err := co.registry()
			if err != nil {
				return err
			}
			rows, err := listClusters(cmd.Context(), r, timeout)
			if err != nil {
				return err
			}
			return printClusters(co.global.Out, rows, output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, yaml or json")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for each cluster's answer")
	return cmd
}

// listClusters lists the clusters and probes them in parallel.
func listClusters(ctx context.Context, r *multicluster.Registry, timeout time.Duration) ([]clusterRow, error) {
	clusters, err := r.List(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]clusterRow, len(clusters))
	var wg sync.WaitGroup
	for i, c := range clusters {
		rows[i] = clusterRow{Name: c.Name, Endpoint: c.Endpoint, CredentialType: string(c.CredentialType), Labels: c.Labels}
		if rows[i].Labels == nil {
			rows[i].Labels = map[string]string{}
		}
		if c.Err != nil {
			rows[i].Message = c.Err.Error()
			continue
		}
		wg.Add(1)
		go func(i int, name string) {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			h := r.Health(pctx, name)
			rows[i].Reachable, rows[i].Version, rows[i].Message = h.Reachable, h.Version, h.Message
		}(i, c.Name)
	}
	wg.Wait()
	return rows, nil
}

func printClusters(w io.Writer, rows []clusterRow, output string) error {
	switch output {
	case "json":
		b, err := json.MarshalIndent(rows, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal(rows)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tENDPOINT\tCREDENTIAL-TYPE\tLABELS\tREACHABLE\tVERSION\tMESSAGE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%t\t%s\t%s\n", r.Name, r.Endpoint, r.CredentialType, formatLabels(r.Labels), r.Reachable, r.Version, oneLine(r.Message))
	}
	return tw.Flush()
}

// oneLine keeps a message on one table line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func newClusterDetachCommand(co *clusterOptions) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "detach NAME",
		Short: "Unregister a member cluster",
		Long: `Unregister a member cluster (delete its Secret). Refused while an
Application's status or a ResourceTracker mentions the cluster; --force
detaches anyway, leaving the resources there in place and unmanaged.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return userErrorf("detach takes one argument, the cluster name (got %d)", len(args))
			}
			r, err := co.registry()
			if err != nil {
				return err
			}
			name := args[0]
			if force {
				if users, err := r.Usage(cmd.Context(), name); err == nil && len(users) > 0 {
					fmt.Fprintf(co.global.ErrOut, "Warning: cluster %q is still used by %s; their resources there are left behind.\n", name, strings.Join(users, ", "))
				}
			}
			if err := r.Detach(cmd.Context(), name, force); err != nil {
				var inUse *multicluster.InUseError
				if errors.As(err, &inUse) || errors.Is(err, multicluster.ErrClusterNotFound) || errors.Is(err, multicluster.ErrInvalid) {
					return &UserError{Err: err}
				}
				return err
			}
			fmt.Fprintf(co.global.Out, "Cluster %q detached.\n", name)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "detach even while Applications deploy to the cluster")
	return cmd
}

func newClusterLabelsCommand(co *clusterOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "labels",
		Short: "Add or remove labels of a member cluster",
	}
	add := &cobra.Command{
		Use:     "add NAME k=v...",
		Short:   "Set labels on a cluster (existing keys get the new value)",
		Example: "  oamflow cluster labels add member-1 region=east env=prod",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return userErrorf("labels add takes a cluster name and at least one k=v")
			}
			set, err := parseLabelArgs(args[1:], "labels")
			if err != nil {
				return err
			}
			return co.updateLabels(cmd.Context(), args[0], set, nil, nil)
		},
	}
	del := &cobra.Command{
		Use:     "del NAME k[=v]...",
		Aliases: []string{"delete", "rm"},
		Short:   "Remove labels from a cluster (k=v removes k only while its value is v)",
		Example: "  oamflow cluster labels del member-1 region env=prod",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return userErrorf("labels del takes a cluster name and at least one label key")
			}
			var keys []string
			values := map[string]string{}
			for _, a := range args[1:] {
				k, v, hasValue := strings.Cut(a, "=")
				if k == "" {
					return userErrorf("labels: %q has no key", a)
				}
				keys = append(keys, k)
				if hasValue {
					values[k] = v
				}
			}
			return co.updateLabels(cmd.Context(), args[0], nil, keys, values)
		},
	}
	cmd.AddCommand(add, del)
	return cmd
}

// updateLabels sets and removes labels; want holds the values keys to
// remove must have.
func (co *clusterOptions) updateLabels(ctx context.Context, name string, set map[string]string, remove []string, want map[string]string) error {
	r, err := co.registry()
	if err != nil {
		return err
	}
	if len(want) > 0 {
		clusters, err := r.List(ctx)
		if err != nil {
			return err
		}
		for _, c := range clusters {
			if c.Name != name {
				continue
			}
			for _, k := range sortedStrings(want) {
				if cur, ok := c.Labels[k]; ok && cur != want[k] {
					return userErrorf("cluster %q has label %s=%s, not %s=%s; nothing was changed", name, k, cur, k, want[k])
				}
			}
		}
	}
	labels, err := r.UpdateLabels(ctx, name, set, remove)
	if err != nil {
		if errors.Is(err, multicluster.ErrClusterNotFound) || errors.Is(err, multicluster.ErrInvalid) {
			return &UserError{Err: err}
		}
		return err
	}
	fmt.Fprintf(co.global.Out, "Cluster %q labels: %s\n", name, formatLabels(labels))
	return nil
}

func sortedStrings(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
