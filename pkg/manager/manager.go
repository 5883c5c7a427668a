// Package manager builds the oamflow controller manager: the
// controller-runtime manager with the Application controller, the workflow
// engine, the cluster registry and Helm support wired together. The
// oamflow-controller binary and the end-to-end tests both start the
// controller through Run, so they run the same code.
//
// # Memory model
//
// What the controller keeps in memory, and what bounds it (Run configures
// all of it; the figures are for a webservice with three traits):
//
//   - The manager's informer cache: Applications (of the shard, with
//     sharding) and the definitions read while parsing (Component, Trait,
//     Policy, WorkflowStep definitions and DefinitionRevisions), cluster
//     wide, with metadata.managedFields dropped on arrival
//     (cache.TransformStripManagedFields: nothing the controller does reads
//     them on these kinds). Grows with the number of Applications, about
//     the size of each one's JSON.
//   - Member cluster Secrets of the system namespace (multicluster's
//     Secret cache): a handful.
//   - The observed-state cache (package observed): the ResourceTrackers
//     and ApplicationRevisions of Applications and, of the kinds the
//     built-in definitions deploy (observed.DefaultKinds), the objects
//     labelled app.oam.dev/name, informers started on first use, kept
//     as Go types (not unstructured maps; built-in kinds watched as
//     protobuf), without managedFields' fieldsV1 and with revisions'
//     templates interned (one copy per distinct template). It serves the resync of
//     Applications in their steady state (0 API reads), and in every
//     reconcile the reads a lagging answer cannot make wrong (an
//     Application's latest revision, whose spec never changes; the first
//     read of a tracker, whose update is optimistic); it grows with what
//     Applications deploy, about each object's JSON.
//   - Nothing else is watched: workflow contexts, other kinds, and the
//     other reads deciding a write go to the API server. Within one
//     reconcile, what the ResourceTracker keeper read or wrote is not read
//     again (its health check takes the apply's answer), and a running
//     workflow with no context ConfigMap is remembered as such (one flag
//     per running workflow), so its later passes do not read it.
//   - CUE: one Engine per worker (--concurrent-reconciles) and, with the
//     webhook, one per CPU (at most as many as workers) lent to admission
//     reviews (cuex.Pool). Each keeps its compiled templates (one per
//     definition content) and, during one reconcile or review only, the
//     CUE graphs it evaluated (cuex.Engine.Forget drops them when the work
//     is done: they are hundreds of KiB each). The workers and the
//     webhook share one memo of evaluation results (cuex.Memo,
//     cuex.DefaultMemoEntries results, about twelve per Application:
//     renders and status evaluations, each keyed by the parts of context
//     its CUE reads; a resync renders and evaluates nothing it did
//     before).
//   - Revision hashes: the canonical JSON of the spec of each definition
//     read (revision.Hasher, one per controller: the latest version of
//     each, at most revision.DefaultHasherSize definitions, about each
//     spec's JSON, a few to tens of KiB), so that hashing an
//     Application's revision does not encode every template again.
//   - Helm chart archives fetched for Applications, by digest, up to
//     --chart-cache-bytes (32 MiB).
//
// Beyond these, a reconcile holds one Application's parse, render and
// workflow state while it runs, --concurrent-reconciles at a time: mostly
// short-lived CUE values (a few MiB per reconcile, garbage when it ends).
//
// What the process's resident memory is, beyond the live heap: the Go
// garbage collector lets the heap grow to about twice what is live
// (GOGC=100) before collecting, up to the soft limit oamflow-controller
// sets at 90% of its container's memory limit (GOMEMLIMIT, from the
// cgroup; see its setMemoryLimit); and the binary's own pages
// (file-backed, shared, reclaimable): of its ~80 MB of text, read-only
// data and function tables, 55-60 MiB resident while it works (most
// packages' init code and its neighbours are touched at start).
// hack/bench/apps reports the anonymous and file-backed parts apart: at
// 200 Applications the live heap is ~30 MiB, the anonymous peak ~60-95
// MiB. A lower GOGC (the chart's controller.extraEnv; its doc gives the
// measured trade) collects after a smaller share of growth: less memory,
// more CPU.
package manager

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	goruntime "runtime"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/controller"
	"github.com/oamflow/oamflow/pkg/cuex"
	"github.com/oamflow/oamflow/pkg/egress"
	"github.com/oamflow/oamflow/pkg/health"
	"github.com/oamflow/oamflow/pkg/helm"
	"github.com/oamflow/oamflow/pkg/leanwrite"
	"github.com/oamflow/oamflow/pkg/metrics"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/observed"
	"github.com/oamflow/oamflow/pkg/render"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
	"github.com/oamflow/oamflow/pkg/revision"
	"github.com/oamflow/oamflow/pkg/sharding"
	"github.com/oamflow/oamflow/pkg/tenancy"
	oamwebhook "github.com/oamflow/oamflow/pkg/webhook"
	"github.com/oamflow/oamflow/pkg/workflow"
)

// Options are the controller's flags.
type Options struct {
	Kubeconfig      string
	Concurrency     int
	QPS             float64
	Burst           int
	ResyncPeriod    time.Duration
	RevisionLimit   int
	SystemNamespace string
	MetricsAddr     string
	// MetricsSecure serves /metrics over HTTPS to clients authenticated by
	// a bearer token (TokenReview) and allowed to get the non-resource URL
	// /metrics (SubjectAccessReview): controller-runtime's secure metrics
	// serving (--metrics-secure; on in the chart).
	MetricsSecure bool
	// MetricsCertDir holds tls.crt and tls.key for the secure metrics
	// endpoint (reloaded when they change); empty: a self-signed
	// certificate (--metrics-cert-dir).
	MetricsCertDir         string
	ProbeAddr              string
	LeaderElect            bool
	LeaderElectionID       string
	LeaderElectionNS       string
	MaxStepRetries         int
	DefaultStepTimeout     time.Duration
	UnhealthyRequeuePeriod time.Duration
	// ClusterUnreachableAfter is how long a member cluster may stay
	// unreachable before the components there are unhealthy with reason
	// ClusterUnreachable (--cluster-unreachable-after).
	ClusterUnreachableAfter time.Duration
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election
	// (controller-runtime's defaults, 15s/10s/2s, when zero).
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// ChartRoot is the folder of bundled Helm charts ("" disables them).
	ChartRoot string
	// ChartCacheBytes bounds the in-memory chart cache.
	ChartCacheBytes int64
	// Budgets bound each Application, in the controller and the webhook
	// alike (--max-components, --max-traits-per-component,
	// --max-application-bytes).
	Budgets appfile.Budgets
	// Outbound is the policy of the HTTP requests made for Applications
	// (request, webhook and notification steps, Helm chart sources):
	// --outbound-allow, --outbound-max-response-bytes,
	// --outbound-max-timeout. Its Listeners are filled in by Run from the
	// metrics, probe and webhook addresses.
	Outbound egress.Config
	// Webhook configures the validating admission webhook (off in
	// DefaultOptions, on in the oamflow-controller binary).
	Webhook WebhookOptions
	// Tenancy: who the controller acts as for Applications, and where they
	// may act (--default-service-account, --allow-cross-namespace-resources).
	Tenancy tenancy.Config
	// Sharding splits Applications between controllers (package sharding:
	// --enable-sharding, --shard-id, --schedulable-shards). A shard other
	// than the master serves no webhook; every shard needs LeaderElect.
	Sharding sharding.Config
	// ShardingInterval is how often the master looks at the shards
	// (sharding.DefaultInterval when 0; not a flag, tests shorten it).
	ShardingInterval time.Duration
	// ControllerOptions are applied after the manager's own options to
	// the Application controller (controller.New): a seam for tests and
	// embedders, not a flag.
	ControllerOptions []controller.Option
	// WrapTransport, when set, wraps the HTTP transport of every client
	// of the hub and of member clusters: a seam for the fault suite
	// (e2e/faults), not a flag.
	WrapTransport transport.WrapperFunc
}

// Webhook registration modes (WebhookOptions.Registration).
const (
	// RegisterURL creates (or takes over) the ValidatingWebhookConfiguration
	// with a URL client config https://<URLHost>:<Port>: the controller
	// runs outside the cluster, next to a local API server.
	RegisterURL = "url"
	// RegisterService patches the caBundle of the configuration the chart
	// installed (whose clientConfig is the chart's Service).
	RegisterService = "service"
	// RegisterAuto is RegisterService when the controller runs in a Pod
	// without a kubeconfig (no Options.Kubeconfig, no $KUBECONFIG, a
	// service account mounted), RegisterURL otherwise.
	RegisterAuto = "auto"
	// RegisterNone leaves the configuration alone (certificates and
	// caBundle managed by the user, e.g. cert-manager).
	RegisterNone = "none"
)

// WebhookOptions configure the validating admission webhook served by the
// controller (package webhook).
type WebhookOptions struct {
	Enabled bool
	// Host and Port the webhook server listens on ("" = all interfaces,
	// except with a URL registration on a loopback URLHost: that host).
	Host string
	Port int
	// CertDir holds user-supplied tls.crt and tls.key (and ca.crt, the
	// caBundle to register); empty: the controller generates a CA and a
	// serving certificate and renews them.
	CertDir string
	// Registration is RegisterURL, RegisterService or RegisterNone.
	Registration string
	// URLHost is the host of the URL registration (127.0.0.1).
	URLHost string
	// ServiceName is the Service in front of the controller (in the system
	// namespace); its DNS names go into the generated certificate.
	ServiceName string
	// ConfigurationName is the ValidatingWebhookConfiguration's name.
	ConfigurationName string
	// SecretName keeps generated certificates in a Secret of the system
	// namespace (RegisterService), so that every replica serves the same
	// CA; RegisterURL keeps them in memory.
	SecretName string
	// FailurePolicy for Applications of a URL registration: "Ignore"
	// (default: a stopped local controller must not block writes) or "Fail".
	FailurePolicy string
	// ReassertInterval is how often the controller restores its
	// registration when it was deleted or changed (30 s when 0; not a
	// flag, tests shorten it).
	ReassertInterval time.Duration
}

// DefaultOptions returns the defaults of the oamflow-controller flags:
// 4 concurrent reconciles, 100 QPS / 200 burst, a 5-minute resync, 10
// revisions kept, system namespace oamflow-system, metrics on :8080,
// probes on :9440, no leader election, 10 step retries, a 10-minute
// default step timeout, no bundled chart root, a 32 MiB chart cache and
// a 10-second re-check of unhealthy Applications, members unreachable for
// 5 minutes making their components unhealthy; the webhook is off
// (Webhook.Enabled false) so that tests embedding the controller need not
// serve admission reviews, with port 9443, URL registration on 127.0.0.1,
// failure policy Ignore and the names oamflow-webhook (Service and
// configuration) and oamflow-webhook-tls (certificate Secret).
func DefaultOptions() Options {
	return Options{
		Concurrency:             4,
		QPS:                     100,
		Burst:                   200,
		ResyncPeriod:            5 * time.Minute,
		RevisionLimit:           revision.DefaultLimit,
		SystemNamespace:         appfile.SystemNamespace,
		MetricsAddr:             ":8080",
		ProbeAddr:               ":9440",
		LeaderElectionID:        "oamflow-controller.oamflow.dev",
		MaxStepRetries:          workflow.DefaultMaxStepRetries,
		DefaultStepTimeout:      workflow.DefaultStepTimeout,
		ChartCacheBytes:         helm.DefaultCacheBytes,
		UnhealthyRequeuePeriod:  10 * time.Second,
		ClusterUnreachableAfter: controller.DefaultClusterUnreachableAfter,
		Budgets:                 appfile.DefaultBudgets(),
		Outbound:                egress.Config{MaxResponseBytes: egress.DefaultMaxResponseBytes, MaxTimeout: egress.DefaultMaxTimeout},
		Webhook: WebhookOptions{
			Port:              9443,
			Registration:      RegisterURL,
			URLHost:           "127.0.0.1",
			ServiceName:       "oamflow-webhook",
			ConfigurationName: oamwebhook.DefaultConfigurationName,
			SecretName:        "oamflow-webhook-tls",
			FailurePolicy:     string(admissionregistrationv1.Ignore),
		},
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
	if err := o.Budgets.Validate(); err != nil {
		errs = append(errs, err)
	}
	if _, err := egress.New(o.Outbound); err != nil {
		errs = append(errs, err)
	}
	if o.ClusterUnreachableAfter <= 0 {
		errs = append(errs, fmt.Errorf("--cluster-unreachable-after must be positive, got %s", o.ClusterUnreachableAfter))
	}
	if o.DefaultStepTimeout < 0 {
		errs = append(errs, fmt.Errorf("--default-step-timeout must not be negative, got %s", o.DefaultStepTimeout))
	}
	if err := o.Tenancy.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := o.Sharding.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.Sharding.Enabled && !o.LeaderElect {
		errs = append(errs, errors.New("--enable-sharding needs --leader-elect: a shard runs while it holds its own Lease, which the master reads"))
	}
	if w := o.Webhook; w.Enabled {
		if w.Port < 1 || w.Port > 65535 {
			errs = append(errs, fmt.Errorf("--webhook-port must be a port number, got %d", w.Port))
		}
		switch w.Registration {
		case RegisterURL, RegisterService, RegisterNone, RegisterAuto:
		default:
			errs = append(errs, fmt.Errorf("--webhook-registration must be url, service or none, got %q", w.Registration))
		}
		if w.FailurePolicy != string(admissionregistrationv1.Ignore) && w.FailurePolicy != string(admissionregistrationv1.Fail) {
			errs = append(errs, fmt.Errorf("--webhook-failure-policy must be Ignore or Fail, got %q", w.FailurePolicy))
		}
		if w.ConfigurationName == "" && w.Registration != RegisterNone {
			errs = append(errs, errors.New("--webhook-configuration-name must not be empty"))
		}
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
// fails. What it caches is in the package doc (Memory model).
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	log := ctrl.Log.WithName("setup")
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = float32(o.QPS), o.Burst
	if cfg.UserAgent == "" {
		// The controller's identity in the API server's audit log and its
		// default field manager: set here, once, because the HTTP client
		// shared below (rest.HTTPClientFor) puts it on every request, and
		// a client given that HTTP client does not.
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	var registryOpts []multicluster.Option
	if o.WrapTransport != nil {
		cfg.Wrap(o.WrapTransport)
		registryOpts = append(registryOpts, multicluster.WithTransportWrapper(o.WrapTransport))
	}
	scheme, err := Scheme()
	if err != nil {
		return fmt.Errorf("building the scheme: %w", err)
	}
	leNS := o.LeaderElectionNS
	if leNS == "" {
		leNS = o.SystemNamespace
	}
	resync := o.ResyncPeriod
	shard := o.Sharding
	leaderID := o.LeaderElectionID
	// See the package doc (Memory model) for what is cached.
	cacheOpts := cache.Options{SyncPeriod: &resync, DefaultTransform: cache.TransformStripManagedFields()}
	if shard.Enabled {
		leaderID = sharding.LeaseName(o.LeaderElectionID, shard.ID())
		if !shard.IsMaster() && o.Webhook.Enabled {
			log.Info("the admission webhooks are served by the master shard only: not serving them", "shard", shard.ID())
			o.Webhook.Enabled = false
		}
		// This shard caches its own Applications (and, should they ever be
		// cached, their revisions and trackers) only: its memory grows with
		// its shard, not the fleet.
		sel := shard.Selector()
		cacheOpts.ByObject = map[client.Object]cache.ByObject{
			&v1beta1.Application{}:         {Label: sel},
			&v1beta1.ApplicationRevision{}: {Label: sel},
			&v1beta1.ResourceTracker{}:     {Label: sel},
		}
	}
	var certs *oamwebhook.CertHolder
	var webhookServer webhook.Server
	if o.Webhook.Enabled {
		o.Webhook = o.Webhook.resolved(o.Kubeconfig, inCluster)
		wo := webhook.Options{Host: o.Webhook.Host, Port: o.Webhook.Port, CertDir: o.Webhook.CertDir}
		if o.Webhook.CertDir == "" {
			certs = &oamwebhook.CertHolder{}
			wo.TLSOpts = []func(*tls.Config){certs.TLSOption}
		}
		webhookServer = webhook.NewServer(wo)
	}
	// Fail before registering anything when a port is taken: the
	// manager would otherwise only report it after its caches time out.
	if err := checkAddresses(o); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		WebhookServer:           webhookServer,
		Scheme:                  scheme,
		Metrics:                 metricsOptions(o),
		HealthProbeBindAddress:  o.ProbeAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        leaderID,
		LeaderElectionNamespace: leNS,
		// A stopping leader hands over at once instead of after the lease
		// expires; Run returns only after every reconcile has ended.
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 durationOrNil(o.LeaseDuration),
		RenewDeadline:                 durationOrNil(o.RenewDeadline),
		RetryPeriod:                   durationOrNil(o.RetryPeriod),
		Cache:                         cacheOpts,
		// Tests run several managers one after another in one process;
		// each manager has one controller per kind, so the process-wide
		// unique-name check only gets in their way.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return fmt.Errorf("building the manager: %w", err)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("building the API client: %w", err)
	}
	plain, err := client.New(cfg, client.Options{Scheme: scheme, HTTPClient: httpClient})
	if err != nil {
		return fmt.Errorf("building the API client: %w", err)
	}
	// The controller's own records are created as sent: their answer is
	// read as metadata only (package leanwrite).
	direct := leanwrite.Creating(plain, cfg, httpClient,
		schema.GroupKind{Group: v1beta1.GroupVersion.Group, Kind: "ApplicationRevision"},
		schema.GroupKind{Group: v1beta1.GroupVersion.Group, Kind: "ResourceTracker"})
	// The resync of an Application in its steady state reads its revision,
	// trackers and deployed objects from the observed-state cache (package
	// observed); every other read, and every read deciding a write, goes
	// to the API server through direct.
	obsOpts := observed.Options{}
	if shard.Enabled {
		// A shard caches its own records, and no deployed objects (they
		// carry no shard label: caching them would grow with the fleet).
		obsOpts.Records = shard.Selector()
		obsOpts.Kinds = []schema.GroupKind{{Group: v1beta1.GroupVersion.Group, Kind: "ResourceTracker"}, {Group: v1beta1.GroupVersion.Group, Kind: "ApplicationRevision"}}
	}
	obs, err := observed.New(cfg, scheme, mgr.GetRESTMapper(), obsOpts)
	if err != nil {
		return err
	}
	if err := mgr.Add(obs); err != nil {
		return fmt.Errorf("starting the observed-state cache: %w", err)
	}
	own := obs.Client(direct)
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
	clusters, err := multicluster.NewRegistry(direct, cfg, append(registryOpts, multicluster.WithSystemNamespace(o.SystemNamespace),
		multicluster.WithSecretReader(secrets))...)
	if err != nil {
		return fmt.Errorf("building the cluster registry: %w", err)
	}
	// A member that stops answering (or answers again) re-checks the
	// Applications deployed there at once: one GET /version per member
	// every --unhealthy-requeue-period.
	reachability := make(chan event.TypedGenericEvent[*corev1.Secret])
	if err := mgr.Add(&multicluster.Prober{Fleet: clusters, Interval: o.UnhealthyRequeuePeriod, Events: reachability, Namespace: o.SystemNamespace}); err != nil {
		return fmt.Errorf("starting the member cluster prober: %w", err)
	}
	// Helm components: one action factory per target cluster (the test
	// seam), charts fetched with size guards and cached by digest.
	// Outbound requests made for Applications (steps, chart sources) never
	// reach loopback, link-local or the controller's own listeners unless
	// allow-listed (package egress).
	outbound := o.Outbound
	outbound.Listeners = append(append([]string(nil), outbound.Listeners...), o.MetricsAddr, o.ProbeAddr)
	if o.Webhook.Enabled {
		outbound.Listeners = append(outbound.Listeners, net.JoinHostPort(o.Webhook.Host, strconv.Itoa(o.Webhook.Port)))
	}
	policy, err := egress.New(outbound)
	if err != nil {
		return err
	}
	fetchOpts := []helm.FetcherOption{helm.WithCache(helm.NewCache(o.ChartCacheBytes)), helm.WithTransport(policy.Transport(nil))}
	if o.ChartRoot != "" {
		fetchOpts = append(fetchOpts, helm.WithChartRoot(o.ChartRoot))
	}
	// What the controller does for an Application — applies, deletes,
	// reads, Helm actions, workflow providers — goes through clients
	// acting as the Application's identity within its scope (package
	// tenancy; the Tenant travels in the reconcile's context). Its own
	// objects (trackers, revisions, workflow contexts, status) use direct.
	appClients := tenancy.NewClients(observedHub{Impersonator: clusters, obs: obs})
	helmClient := helm.NewClient(helm.NewFactory(appClients), helm.NewFetcher(appClients.HubReader(), fetchOpts...), appClients.HubReader())
	// Metrics: controller-runtime's registry (served at /metrics); the
	// Application phase gauge counts from the manager's cache.
	rec, err := metrics.New(ctrlmetrics.Registry, mgr.GetClient())
	if err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	timed := timedHelm{Client: helmClient, rec: rec}
	// Workflow steps serve vela/helm (helm-install) with the same client.
	engine, err := workflow.NewEngine(direct, workflow.Options{DefaultStepTimeout: o.DefaultStepTimeout, MaxStepRetries: o.MaxStepRetries, Builtins: steps, Helm: timed,
		Clients: appClients, HTTP: policy})
	if err != nil {
		return fmt.Errorf("building the workflow engine: %w", err)
	}
	// CUE cannot be interrupted: the workers and the webhook together let
	// at most cuex.DefaultMaxAbandoned timed-out evaluations run on.
	abandoned := cuex.NewAbandoned(0)
	// The workers and the webhook remember CUE results in one memo: an
	// Application's first reconcile finds what its admission evaluated.
	memo := cuex.NewMemo(0)
	recorder := mgr.GetEventRecorderFor("oamflow-controller")
	releases := resourcekeeper.NewHelmReleases(timed, resourcekeeper.WithReleaseEvents(recorder, mgr.GetClient()))
	r := controller.New(mgr.GetClient(), own, recorder, engine, o.SystemNamespace, builtins,
		controller.Options{
			RevisionLimit:           o.RevisionLimit,
			StepTimeout:             o.DefaultStepTimeout,
			UnhealthyRequeue:        o.UnhealthyRequeuePeriod,
			ClusterUnreachableAfter: o.ClusterUnreachableAfter,
			Concurrency:             o.Concurrency,
			Budgets:                 o.Budgets,
			Abandoned:               abandoned,
			Memo:                    memo,
			Tenancy:                 o.Tenancy,
			Shard:                   shardName(shard),
		},
		append([]controller.Option{
			controller.WithClusterClients(appClients),
			controller.WithClusterResolver(clusters),
			controller.WithFleetEvents(secrets),
			controller.WithReachabilityEvents(reachability),
			controller.WithHelm(releases, health.NewHelmReleases(helmClient)),
			controller.WithRenderer(timedRenderer{next: controller.RendererFn(render.RenderComponent), rec: rec}),
			controller.WithKeepers(keepers(appClients, own, releases, rec)),
			controller.WithMetrics(rec),
		}, o.ControllerOptions...)...)
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("registering the Application controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	var scheduler *sharding.Scheduler
	if shard.Enabled && shard.IsMaster() {
		scheduler = sharding.NewScheduler(shard.SchedulableShards)
		if err := mgr.Add(&sharding.Supervisor{Client: direct, Scheduler: scheduler, LeaseNamespace: leNS,
			LeaseBase: o.LeaderElectionID, Interval: o.ShardingInterval}); err != nil {
			return err
		}
	}
	if o.Webhook.Enabled {
		sources := oamwebhook.SourceFactoryFn(func(ns string) appfile.DefinitionSource {
			return appfile.Chain(appfile.NewClusterSource(mgr.GetClient(), ns, o.SystemNamespace), builtins)
		})
		// Admission reviews borrow Engines that keep their compiled
		// templates: as many as can run at once (the CPUs, at most the
		// workers' count).
		engines := cuex.NewPool(min(goruntime.GOMAXPROCS(0), o.Concurrency), cuex.WithAbandoned(abandoned), cuex.WithMemo(memo))
		if err := setupWebhook(ctx, mgr, direct, certs, sources, clusters, engines, scheduler, o); err != nil {
			return err
		}
	}
	log.Info("tenancy "+o.Tenancy.Describe(), "lockdown", o.Tenancy.Lockdown(), "defaultServiceAccount", o.Tenancy.DefaultServiceAccount,
		"allowCrossNamespaceResources", o.Tenancy.CrossNamespace())
	if shard.Enabled {
		log.Info("sharding", "shard", shard.ID(), "master", shard.IsMaster(), "schedulableShards", shard.SchedulableShards, "lease", leaderID)
	}
	log.Info("starting", "concurrentReconciles", o.Concurrency, "resyncPeriod", o.ResyncPeriod.String(),
		"systemNamespace", o.SystemNamespace, "leaderElection", o.LeaderElect, "defaultStepTimeout", o.DefaultStepTimeout.String())
	return mgr.Start(ctx)
}

// observedHub gives, for the hub acting as the controller, clients whose
// reads under observed.WithCachedReads may come from the observed-state
// cache; an Application acting as its own ServiceAccount reads (and is
// refused) as itself, through the API server.
type observedHub struct {
	tenancy.Impersonator
	obs *observed.Cache
}

func (h observedHub) Clients(ctx context.Context, cluster string) (client.Client, *rest.Config, error) {
	c, cfg, err := h.Impersonator.Clients(ctx, cluster)
	if err == nil && multicluster.IsLocal(cluster) {
		c = h.obs.Client(c)
	}
	return c, cfg, err
}

// metricsOptions serves /metrics on o.MetricsAddr: plain HTTP, or with
// --metrics-secure HTTPS with authentication and authorization through the
// API server (the controller creates TokenReviews and SubjectAccessReviews).
func metricsOptions(o Options) metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.MetricsAddr}
	if o.MetricsSecure {
		m.SecureServing = true
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
		m.CertDir = o.MetricsCertDir
	}
	return m
}

func durationOrNil(d time.Duration) *time.Duration {
	if d <= 0 {
		return nil
	}
	return &d
}

// shardName is the shard the controller reconciles, "" without sharding.
func shardName(c sharding.Config) string {
	if !c.Enabled {
		return ""
	}
	return c.ID()
}
