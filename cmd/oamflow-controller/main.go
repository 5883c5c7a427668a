// Command oamflow-controller runs the Application controller: a
// controller-runtime manager that reconciles core.oam.dev Applications
// (parse, revision, workflow, health, garbage collection) against the
// cluster it runs in.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/egress"
	"github.com/oamflow/oamflow/pkg/manager"
	"github.com/oamflow/oamflow/pkg/sharding"
	"github.com/oamflow/oamflow/pkg/workflow"
)

// bindFlags registers the flags on fs with manager.DefaultOptions as
// defaults.
func bindFlags(fs *flag.FlagSet, o *manager.Options) {
	d := manager.DefaultOptions()
	fs.StringVar(&o.Kubeconfig, "kubeconfig", d.Kubeconfig, "kubeconfig file; empty means in-cluster config, then $KUBECONFIG, then ~/.kube/config")
	fs.IntVar(&o.Concurrency, "concurrent-reconciles", d.Concurrency, "Applications reconciled in parallel")
	fs.Float64Var(&o.QPS, "kube-api-qps", d.QPS, "sustained requests per second to the API server")
	fs.IntVar(&o.Burst, "kube-api-burst", d.Burst, "burst of requests to the API server")
	fs.DurationVar(&o.ResyncPeriod, "resync-period", d.ResyncPeriod, "how often every Application is reconciled even without changes (health, drift)")
	fs.IntVar(&o.RevisionLimit, "application-revision-limit", d.RevisionLimit, "ApplicationRevisions kept per Application (a garbage-collect policy's applicationRevisionLimit overrides it)")
	fs.StringVar(&o.SystemNamespace, "system-namespace", d.SystemNamespace, "namespace of the definitions shared by all namespaces")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", d.MetricsAddr, "address of the Prometheus metrics endpoint (0 disables it)")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", d.MetricsSecure, "serve /metrics over HTTPS, only to clients with a bearer token the API server accepts (TokenReview) that may get the non-resource URL /metrics (SubjectAccessReview)")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", d.MetricsCertDir, "folder with tls.crt and tls.key for --metrics-secure (reloaded when they change); empty: a self-signed certificate")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", d.ProbeAddr, "address of the /healthz and /readyz endpoints (0 disables them)")
	fs.BoolVar(&o.LeaderElect, "leader-elect", d.LeaderElect, "elect a leader so that only one replica reconciles")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", d.LeaderElectionID, "name of the leader election Lease")
	fs.StringVar(&o.LeaderElectionNS, "leader-election-namespace", d.LeaderElectionNS, "namespace of the leader election Lease (default: the system namespace)")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", 15*time.Second, "how long followers wait before taking over a leader that stopped renewing")
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it gives up leading (and exits)")
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", 2*time.Second, "how often candidates try to acquire or renew the Lease")
	fs.IntVar(&o.MaxStepRetries, "max-step-retries", d.MaxStepRetries, "times a failing workflow step is retried before the workflow fails")
	fs.DurationVar(&o.DefaultStepTimeout, "default-step-timeout", d.DefaultStepTimeout, "timeout of workflow steps that set none (suspend steps and step groups excepted; 0 disables it)")
	fs.StringVar(&o.ChartRoot, "chart-root", d.ChartRoot, "folder of Helm charts bundled with the controller, used by helm components whose chart.source is a relative path (empty: disabled)")
	fs.Int64Var(&o.ChartCacheBytes, "chart-cache-bytes", d.ChartCacheBytes, "bytes of fetched Helm chart archives kept in memory, keyed by digest")
	fs.DurationVar(&o.UnhealthyRequeuePeriod, "unhealthy-requeue-period", d.UnhealthyRequeuePeriod, "how soon an unhealthy Application is checked again")
	fs.DurationVar(&o.ClusterUnreachableAfter, "cluster-unreachable-after", d.ClusterUnreachableAfter, "how long a member cluster may stay unreachable before the components there are unhealthy (reason ClusterUnreachable); nothing is ever deleted on an unreachable member")
	fs.IntVar(&o.Budgets.MaxComponents, appfile.FlagMaxComponents, d.Budgets.MaxComponents, "components one Application may have; more are refused by the webhook and the controller")
	fs.IntVar(&o.Budgets.MaxTraitsPerComponent, appfile.FlagMaxTraitsPerComponent, d.Budgets.MaxTraitsPerComponent, "traits one component may have; more are refused by the webhook and the controller")
	fs.IntVar(&o.Budgets.MaxApplicationBytes, appfile.FlagMaxApplicationBytes, d.Budgets.MaxApplicationBytes, "bytes of an Application's spec (as JSON); a larger one is refused by the webhook and the controller")
	fs.IntVar(&o.Budgets.MaxRenderedObjects, appfile.FlagMaxRenderedObjects, d.Budgets.MaxRenderedObjects, "objects one rendering of an Application (all its components and traits) may produce; more fail its run before anything is applied")
	fs.Func(egress.FlagAllow, "networks (CIDRs), addresses or host names that requests made for Applications (request, webhook and notification steps, Helm chart sources) may reach although they are loopback or link-local; comma-separated or repeated (the controller's own ports stay refused)", func(v string) error {
		for _, a := range strings.Split(v, ",") {
			if a = strings.TrimSpace(a); a != "" {
				o.Outbound.Allow = append(o.Outbound.Allow, a)
			}
		}
		return nil
	})
	fs.Int64Var(&o.Outbound.MaxResponseBytes, egress.FlagMaxResponseBytes, d.Outbound.MaxResponseBytes, "bytes of a response body a workflow step's HTTP request reads; a larger response fails the step")
	fs.DurationVar(&o.Outbound.MaxTimeout, egress.FlagMaxTimeout, d.Outbound.MaxTimeout, "longest time a workflow step's HTTP request may take (a longer request.timeout is cut to it)")
	fs.StringVar(&o.Tenancy.DefaultServiceAccount, "default-service-account", "", "lockdown: ServiceAccount, in each Application's namespace, that Applications without the app.oam.dev/service-account-name annotation act as (a namespace without it deploys nothing); empty: such Applications act as the controller itself (single-tenant mode)")
	fs.Var(optionalBool{&o.Tenancy.AllowCrossNamespace}, "allow-cross-namespace-resources", "let Applications read and write other namespaces than their own (and, on member clusters, their topology's) and cluster-scoped objects (default: false with --default-service-account, true without)")
	fs.Var(optionalBool{&o.Tenancy.AllowCrossNamespace}, "allow-cross-namespace-resource", "KubeVela's name of --allow-cross-namespace-resources")
	fs.BoolVar(&o.Sharding.Enabled, "enable-sharding", false, "run as one shard of several controllers (KubeVela's scheme): reconcile only the Applications labelled "+sharding.LabelScheduledShardID+"=<--shard-id>; needs --leader-elect (each shard holds its own Lease)")
	fs.StringVar(&o.Sharding.ShardID, "shard-id", sharding.MasterShardID, "this controller's shard with --enable-sharding; the master shard also serves the webhooks, labels new Applications with a shard and tells Applications whose shard does not run")
	fs.Func("schedulable-shards", "shards the master assigns new Applications to, round-robin, comma-separated (empty: the shards whose Lease is held, the master excepted)", func(v string) error {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				o.Sharding.SchedulableShards = append(o.Sharding.SchedulableShards, s)
			}
		}
		return nil
	})
	w, dw := &o.Webhook, d.Webhook
	// The binary serves the webhook by default (manager.DefaultOptions,
	// used by tests embedding the controller, does not).
	fs.BoolVar(&w.Enabled, "webhook", true, "serve the validating admission webhook (Applications and definitions are checked at apply time)")
	fs.StringVar(&w.Host, "webhook-host", dw.Host, "address the webhook server listens on (empty: all interfaces; 127.0.0.1 with a url registration)")
	fs.IntVar(&w.Port, "webhook-port", dw.Port, "port of the webhook server")
	fs.StringVar(&w.CertDir, "webhook-cert-dir", dw.CertDir, "folder with a user-supplied tls.crt, tls.key and ca.crt (reloaded when they change); empty: the controller generates and renews its own CA and certificate")
	fs.StringVar(&w.Registration, "webhook-registration", manager.RegisterAuto, "how the API server learns to call the webhook: url (register the validating and mutating webhook configurations pointing at https://<webhook-url-host>:<port>), service (patch the caBundle of the chart's configuration), none (leave it to the user), auto (service inside a cluster, url outside)")
	fs.StringVar(&w.URLHost, "webhook-url-host", dw.URLHost, "host the API server reaches the controller at, with a url registration")
	fs.StringVar(&w.ServiceName, "webhook-service-name", dw.ServiceName, "Service in front of the controller in the system namespace, with a service registration (its DNS names go into the generated certificate)")
	fs.StringVar(&w.ConfigurationName, "webhook-configuration-name", dw.ConfigurationName, "name of the ValidatingWebhookConfiguration and of the MutatingWebhookConfiguration")
	fs.StringVar(&w.SecretName, "webhook-secret-name", dw.SecretName, "Secret in the system namespace keeping the generated certificates shared by replicas (service registration)")
	fs.StringVar(&w.FailurePolicy, "webhook-failure-policy", dw.FailurePolicy, "failure policy for Applications of a url registration: Ignore (a stopped controller blocks nothing) or Fail")
}

// optionalBool is a boolean flag that stays nil until it is given.
type optionalBool struct{ p **bool }

func (b optionalBool) String() string {
	if b.p == nil || *b.p == nil {
		return ""
	}
	return strconv.FormatBool(**b.p)
}

func (b optionalBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b.p = &v
	return nil
}

func (b optionalBool) IsBoolFlag() bool { return true }

// setMemoryLimit gives the Go runtime a soft memory limit of 90% of the
// container's (its cgroup's memory limit, e.g. the chart's
// resources.limits.memory), so that near the limit the garbage collector
// runs more often instead of letting the heap grow to twice what is live
// and the container be OOM-killed. GOMEMLIMIT, when set, is used as it
// is; AUTOMEMLIMIT sets another ratio (0.5) or turns this off ("off").
// Without a cgroup limit (a developer's machine) nothing changes.
func setMemoryLimit() {
	log := ctrl.Log.WithName("setup")
	limit, err := memlimit.Set(memlimit.WithProvider(memlimit.FromCgroup))
	switch {
	case err != nil:
		log.V(1).Info("no Go memory limit from the container's limit", "reason", err.Error())
	case limit > 0 && limit < math.MaxInt64:
		log.Info("Go memory limit", "bytes", limit)
	}
}

func main() {
	o := &manager.Options{}
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	bindFlags(fs, o)
	zo := zap.Options{}
	zo.BindFlags(fs)
	_ = fs.Parse(os.Args[1:])
	logger := zap.New(zap.UseFlagOptions(&zo))
	ctrl.SetLogger(logger)
	// klog (client-go, kubevela/workflow) logs to the same place; the
	// workflow engine's setup (manager.Run) redacts the library's logs.
	klog.SetLogger(workflow.LibraryLogger(logger.WithName("workflow")))
	if err := o.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
	setMemoryLimit()
	cfg, err := restConfig(o.Kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
	if o.WrapTransport, err = faultTransport(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
	if err := manager.Run(ctrl.SetupSignalHandler(), cfg, *o); err != nil {
		ctrl.Log.Error(err, "controller stopped")
		os.Exit(2)
	}
}

// restConfig loads --kubeconfig, else the in-cluster or default config.
func restConfig(path string) (*rest.Config, error) {
	if path != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("loading --kubeconfig %s: %w", path, err)
		}
		return cfg, nil
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("finding a cluster (set --kubeconfig or $KUBECONFIG, or run in a Pod): %w", err)
	}
	return cfg, nil
}
