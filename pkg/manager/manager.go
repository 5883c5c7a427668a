// Package manager builds the oamflow controller manager: the
// controller-runtime manager with the Application controller, the workflow
// engine, the cluster registry and Helm support wired together. The
// oamflow-controller binary and the end-to-end tests both start the
// controller through Run, so they run the same code.
package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
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

// DefaultOptions returns the defaults of the oamflow-controller flags:
// 4 concurrent reconciles, 50 QPS / 100 burst, a 5-minute resync, 10
// revisions kept, system namespace oamflow-system, metrics on :8080,
// probes on :9440, no leader election, 10 step retries, a 10-minute
// default step timeout, no bundled chart root, a 256 MiB chart cache and
// a 10-second re-check of unhealthy Applications.
func DefaultOptions() Options {
	return Options{
		Concurrency:            4,
		QPS:                    50,
		Burst:                  100,
		ResyncPeriod:           5 * time.Minute,
		RevisionLimit:          revision.DefaultLimit,
		SystemNamespace:        appfile.SystemNamespace,
		MetricsAddr:            ":8080",
		ProbeAddr:              ":9440",
		LeaderElectionID:       "oamflow-controller.oamflow.dev",
		MaxStepRetries:         workflow.DefaultMaxStepRetries,
		DefaultStepTimeout:     workflow.DefaultStepTimeout,
		ChartCacheBytes:        256 << 20,
		UnhealthyRequeuePeriod: 10 * time.Second,
	}
}

// Validate reports every flag value out of range, joined; the messages name
// the command-line flag.
func (o *Options) Validate() error {
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
	if err := o.Validate(); err != nil {
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
	// Workflow steps serve vela/helm (helm-install) with the same client.
	engine, err := workflow.NewEngine(direct, workflow.Options{DefaultStepTimeout: o.DefaultStepTimeout, Builtins: steps, Helm: helmClient})
	if err != nil {
		return fmt.Errorf("building the workflow engine: %w", err)
	}
	recorder := mgr.GetEventRecorderFor("oamflow-controller")
	r := controller.New(mgr.GetClient(), direct, recorder, engine, o.SystemNamespace, builtins,
		controller.Options{
			RevisionLimit:    o.RevisionLimit,
			StepTimeout:      o.DefaultStepTimeout,
			UnhealthyRequeue: o.UnhealthyRequeuePeriod,
			Concurrency:      o.Concurrency,
		},
		controller.WithClusterClients(clusters),
		controller.WithClusterResolver(clusters),
		controller.WithHelm(resourcekeeper.NewHelmReleases(helmClient, resourcekeeper.WithReleaseEvents(recorder, mgr.GetClient())),
			health.NewHelmReleases(helmClient)))
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
