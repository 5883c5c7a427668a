// Command oamflow-controller runs the Application controller: a
// controller-runtime manager that reconciles core.oam.dev Applications
// (parse, revision, workflow, health, garbage collection) against the
// cluster it runs in.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/controller"
	"github.com/oamflow/oamflow/pkg/health"
	"github.com/oamflow/oamflow/pkg/helm"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
	"github.com/oamflow/oamflow/pkg/revision"
	"github.com/oamflow/oamflow/pkg/workflow"
)

// Options are the controller's flags.
type Options struct {
	Kubeconfig             string
	Concurrency            int
	QPS                    float64
	Burst                  int
	ResyncPeriod           time.Duration
	RevisionLimit          int
	SystemNamespace        string
	MetricsAddr            string
	ProbeAddr              string
	LeaderElect            bool
	LeaderElectionID       string
	LeaderElectionNS       string
	MaxStepRetries         int
	DefaultStepTimeout     time.Duration
	UnhealthyRequeuePeriod time.Duration
	// ChartRoot is the folder of bundled Helm charts ("" disables them).
	ChartRoot string
	// ChartCacheBytes bounds the in-memory chart cache.
	ChartCacheBytes int64
}

// bindFlags registers the flags on fs with their defaults.
func bindFlags(fs *flag.FlagSet, o *Options) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file; empty means in-cluster config, then $KUBECONFIG, then ~/.kube/config")
	fs.IntVar(&o.Concurrency, "concurrent-reconciles", 4, "Applications reconciled in parallel")
	fs.Float64Var(&o.QPS, "kube-api-qps", 50, "sustained requests per second to the API server")
	fs.IntVar(&o.Burst, "kube-api-burst", 100, "burst of requests to the API server")
	fs.DurationVar(&o.ResyncPeriod, "resync-period", 5*time.Minute, "how often every Application is reconciled even without changes (health, drift)")
	fs.IntVar(&o.RevisionLimit, "application-revision-limit", revision.DefaultLimit, "ApplicationRevisions kept per Application (a garbage-collect policy's applicationRevisionLimit overrides it)")
	fs.StringVar(&o.SystemNamespace, "system-namespace", appfile.SystemNamespace, "namespace of the definitions shared by all namespaces")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables it)")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":9440", "address of the /healthz and /readyz endpoints (0 disables them)")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "elect a leader so that only one replica reconciles")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", "oamflow-controller.oamflow.dev", "name of the leader election Lease")
	fs.StringVar(&o.LeaderElectionNS, "leader-election-namespace", "", "namespace of the leader election Lease (default: the system namespace)")
	fs.IntVar(&o.MaxStepRetries, "max-step-retries", workflow.DefaultMaxStepRetries, "times a failing workflow step is retried before the workflow fails")
	fs.DurationVar(&o.DefaultStepTimeout, "default-step-timeout", workflow.DefaultStepTimeout, "timeout of workflow steps that set none (suspend steps and step groups excepted; 0 disables it)")
	fs.StringVar(&o.ChartRoot, "chart-root", "", "folder of Helm charts bundled with the controller, used by helm components whose chart.source is a relative path (empty: disabled)")
	fs.Int64Var(&o.ChartCacheBytes, "chart-cache-bytes", 256<<20, "bytes of fetched Helm chart archives kept in memory, keyed by digest")
	fs.DurationVar(&o.UnhealthyRequeuePeriod, "unhealthy-requeue-period", 10*time.Second, "how soon an unhealthy Application is checked again")
}

// validate reports flag values that cannot work.
func (o *Options) validate() error {
	var errs []error
	if o.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("--concurrent-reconciles must be at least 1, got %d", o.Concurrency))
	}
	if o.QPS <= 0 || o.Burst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive, got %v and %d", o.QPS, o.Burst))
	}
	if o.ResyncPeriod <= 0 {
		errs = append(errs, fmt.Errorf("--resync-period must be positive, got %s", o.ResyncPeriod))
	}
	if o.RevisionLimit < 1 {
		errs = append(errs, fmt.Errorf("--application-revision-limit must be at least 1, got %d", o.RevisionLimit))
	}
	if o.SystemNamespace == "" {
		errs = append(errs, errors.New("--system-namespace must not be empty"))
	}
	if o.MaxStepRetries < 1 {
		errs = append(errs, fmt.Errorf("--max-step-retries must be at least 1, got %d", o.MaxStepRetries))
	}
	if o.DefaultStepTimeout < 0 {
		errs = append(errs, fmt.Errorf("--default-step-timeout must not be negative, got %s", o.DefaultStepTimeout))
	}
	return errors.Join(errs...)
}

func main() {
	o := &Options{}
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	bindFlags(fs, o)
	zo := zap.Options{}
	zo.BindFlags(fs)
	_ = fs.Parse(os.Args[1:])
	logger := zap.New(zap.UseFlagOptions(&zo))
	ctrl.SetLogger(logger)
	// kubevela/workflow logs through klog; send it to the same place.
	klog.SetLogger(logger.WithName("workflow"))
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
	cfg, err := restConfig(o.Kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
	if err := Run(ctrl.SetupSignalHandler(), cfg, *o); err != nil {
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

// Scheme returns the types the controller reads and writes.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1beta1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Run builds the manager and blocks until ctx is done or the manager
// fails. The manager caches Applications only; everything else (revisions,
// definitions, deployed objects, workflow contexts) is read from the API
// server directly, so memory does not grow with what Applications deploy.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	if err := o.validate(); err != nil {
		return err
	}
	log := ctrl.Log.WithName("setup")
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = float32(o.QPS), o.Burst
	scheme, err := Scheme()
	if err != nil {
		return fmt.Errorf("building the scheme: %w", err)
	}
	leNS := o.LeaderElectionNS
	if leNS == "" {
		leNS = o.SystemNamespace
	}
	resync := o.ResyncPeriod
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:  o.ProbeAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        o.LeaderElectionID,
		LeaderElectionNamespace: leNS,
		Cache:                   cache.Options{SyncPeriod: &resync},
	})
	if err != nil {
		return fmt.Errorf("building the manager: %w", err)
	}
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("building the API client: %w", err)
	}
	workflow.SetupLibrary(direct, o.MaxStepRetries)
	steps, err := workflow.BuiltinTemplates(definitions.FS, "workflowsteps")
	if err != nil {
		return fmt.Errorf("reading the built-in workflow steps: %w", err)
	}
	builtins, err := appfile.NewFSSource(definitions.FS, ".")
	if err != nil {
		return fmt.Errorf("reading the built-in definitions: %w", err)
	}
	engine, err := workflow.NewEngine(direct, workflow.Options{DefaultStepTimeout: o.DefaultStepTimeout, Builtins: steps})
	if err != nil {
		return fmt.Errorf("building the workflow engine: %w", err)
	}
	// Member clusters are Secrets in the system namespace; the registry gives
	// a cached client per cluster and resolves topology label selectors.
	secrets, err := multicluster.NewSecretCache(cfg, scheme, o.SystemNamespace)
	if err != nil {
		return fmt.Errorf("building the cluster Secret cache: %w", err)
	}
	if err := mgr.Add(secrets); err != nil {
		return fmt.Errorf("starting the cluster Secret cache: %w", err)
	}
	clusters, err := multicluster.NewRegistry(direct, cfg, multicluster.WithSystemNamespace(o.SystemNamespace),
		multicluster.WithSecretReader(secrets))
	if err != nil {
		return fmt.Errorf("building the cluster registry: %w", err)
	}
	// Helm components: one action factory per target cluster (the test
	// seam), charts fetched with size guards and cached by digest.
	fetchOpts := []helm.FetcherOption{helm.WithCache(helm.NewCache(o.ChartCacheBytes))}
	if o.ChartRoot != "" {
		fetchOpts = append(fetchOpts, helm.WithChartRoot(o.ChartRoot))
	}
	helmConfigs := helm.RESTConfigsFn(func(ctx context.Context, cluster string) (*rest.Config, error) {
		_, c, err := clusters.Clients(ctx, cluster)
		return c, err
	})
	helmClient := helm.NewClient(helm.NewFactory(helmConfigs), helm.NewFetcher(direct, fetchOpts...), direct)
	r := controller.New(mgr.GetClient(), direct, mgr.GetEventRecorderFor("oamflow-controller"), engine, o.SystemNamespace, builtins,
		controller.Options{
			RevisionLimit:    o.RevisionLimit,
			StepTimeout:      o.DefaultStepTimeout,
			UnhealthyRequeue: o.UnhealthyRequeuePeriod,
			Concurrency:      o.Concurrency,
		},
		controller.WithClusterClients(clusters),
		controller.WithClusterResolver(clusters),
		controller.WithHelm(resourcekeeper.NewHelmReleases(helmClient), health.NewHelmReleases(helmClient)))
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("registering the Application controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	log.Info("starting", "concurrentReconciles", o.Concurrency, "resyncPeriod", o.ResyncPeriod.String(),
		"systemNamespace", o.SystemNamespace, "leaderElection", o.LeaderElect, "defaultStepTimeout", o.DefaultStepTimeout.String())
	return mgr.Start(ctx)
}
