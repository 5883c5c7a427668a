package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
	"github.com/oamflow/oamflow/pkg/sharding"
	oamwebhook "github.com/oamflow/oamflow/pkg/webhook"
)

// setupWebhook registers the admission handlers on the manager's webhook
// server and makes the API server call them: certificates (generated, or
// the user's in CertDir) and the Validating- and
// MutatingWebhookConfiguration (registered with a URL, or the chart's with
// their caBundle patched). The
// registration waits until the webhook server answers; renewal, restoring
// a registration that was deleted or changed, and the removal of a URL
// registration on shutdown run with the manager.
func setupWebhook(ctx context.Context, mgr ctrl.Manager, direct client.Client, certs *oamwebhook.CertHolder, sources oamwebhook.SourceFactory, topologies appfile.Clusters, engines *cuex.Pool, scheduler *sharding.Scheduler, o Options) error {
	w := o.Webhook
	srv := mgr.GetWebhookServer()
	apps := oamwebhook.NewApplicationValidator(sources, topologies)
	apps.Budgets = o.Budgets
	apps.Engines = engines
	apps.Identity = &oamwebhook.IdentityChecker{Tenancy: o.Tenancy, Reviews: direct}
	srv.Register(oamwebhook.ApplicationPath, &admission.Webhook{Handler: apps})
	srv.Register(oamwebhook.DefinitionPath, &admission.Webhook{Handler: oamwebhook.NewDefinitionValidator()})
	srv.Register(oamwebhook.RecorderPath, &admission.Webhook{Handler: &oamwebhook.Recorder{Shards: scheduler}})
	if err := mgr.AddReadyzCheck("webhook", srv.StartedChecker()); err != nil {
		return err
	}
	target := oamwebhook.Target{URL: "https://" + net.JoinHostPort(w.URLHost, strconv.Itoa(w.Port))}
	if w.Registration == RegisterService {
		target = oamwebhook.Target{Service: &admissionregistrationv1.ServiceReference{Namespace: o.SystemNamespace, Name: w.ServiceName}}
	}
	conf := oamwebhook.ConfigurationOptions{
		Name:                     w.ConfigurationName,
		ApplicationFailurePolicy: admissionregistrationv1.FailurePolicyType(w.FailurePolicy),
	}
	log := ctrl.Log.WithName("webhook")
	if certs == nil {
		// User-supplied certificates: controller-runtime reloads them from
		// CertDir; ca.crt, when present, is the caBundle to register.
		if w.Registration == RegisterNone {
			return nil
		}
		ca, err := os.ReadFile(filepath.Join(w.CertDir, "ca.crt"))
		if err != nil {
			if w.Registration == RegisterURL {
				return fmt.Errorf("--webhook-cert-dir %s: a URL registration needs ca.crt: %w", w.CertDir, err)
			}
			log.Info("no ca.crt in --webhook-cert-dir: leaving the caBundle to the user", "certDir", w.CertDir)
			return nil
		}
		if w.Registration == RegisterURL {
			return oamwebhook.Apply(ctx, direct, oamwebhook.Configurations(conf, target, ca)...)
		}
		_, err = oamwebhook.PatchCABundle(ctx, direct, w.ConfigurationName, ca)
		return err
	}
	p := &oamwebhook.Provisioner{
		Client:        direct,
		Holder:        certs,
		Configuration: conf,
		Target:        target,
		Register:      w.Registration == RegisterURL,
		Serving:       serving(srv),
		// Tests shorten it; the binary uses the provisioner's 30 s.
		ReassertInterval: w.ReassertInterval,
	}
	switch w.Registration {
	case RegisterService:
		p.SecretNamespace, p.SecretName = o.SystemNamespace, w.SecretName
		svc, ns := w.ServiceName, o.SystemNamespace
		p.Hosts = []string{svc + "." + ns + ".svc", svc + "." + ns + ".svc.cluster.local", svc + "." + ns, svc}
	default:
		p.Hosts = []string{w.URLHost, "localhost"}
		if w.URLHost == "localhost" {
			p.Hosts = []string{"localhost", "127.0.0.1"}
		}
	}
	if w.Registration == RegisterNone {
		// Serve generated certificates without publishing the CA (tests,
		// or a configuration managed elsewhere that skips verification).
		p.NoPublish = true
	}
	if err := p.Provision(ctrl.LoggerInto(ctx, log)); err != nil {
		return fmt.Errorf("setting up the webhook: %w", err)
	}
	return mgr.Add(p)
}

// serving returns a wait for srv to answer TLS connections (polled every
// 100 ms until ctx is done).
func serving(srv webhook.Server) func(context.Context) error {
	check := srv.StartedChecker()
	return func(ctx context.Context) error {
		return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
			return check(nil) == nil, nil
		})
	}
}

// checkAddresses binds and releases every address the manager will
// listen on, so that a port taken by another process (typically a second
// oamflow-controller) fails Run before it registers anything, with the
// flag to change; "0" disables the metrics or probe endpoint.
func checkAddresses(o Options) error {
	type endpoint struct{ flag, addr, hint string }
	var eps []endpoint
	if o.Webhook.Enabled {
		eps = append(eps, endpoint{"--webhook-port " + strconv.Itoa(o.Webhook.Port), net.JoinHostPort(o.Webhook.Host, strconv.Itoa(o.Webhook.Port)), "--webhook-port"})
	}
	if o.MetricsAddr != "0" && o.MetricsAddr != "" {
		eps = append(eps, endpoint{"--metrics-bind-address " + o.MetricsAddr, o.MetricsAddr, "--metrics-bind-address"})
	}
	if o.ProbeAddr != "0" && o.ProbeAddr != "" {
		eps = append(eps, endpoint{"--health-probe-bind-address " + o.ProbeAddr, o.ProbeAddr, "--health-probe-bind-address"})
	}
	var errs []error
	for _, ep := range eps {
		l, err := net.Listen("tcp", ep.addr)
		if err == nil {
			_ = l.Close()
			continue
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			errs = append(errs, fmt.Errorf("%s: address already in use (another oamflow-controller? pass %s)", ep.flag, ep.hint))
			continue
		}
		errs = append(errs, fmt.Errorf("%s: %w", ep.flag, err))
	}
	return errors.Join(errs...)
}

// resolved turns RegisterAuto into RegisterService or RegisterURL and
// fills Host for a loopback URL registration.
func (w WebhookOptions) resolved(kubeconfig string, inCluster func() bool) WebhookOptions {
	if w.Registration == RegisterAuto {
		w.Registration = RegisterURL
		if kubeconfig == "" && os.Getenv("KUBECONFIG") == "" && inCluster() {
			w.Registration = RegisterService
		}
	}
	if w.Registration == RegisterURL && w.Host == "" && (w.URLHost == "127.0.0.1" || w.URLHost == "localhost" || w.URLHost == "::1") {
		w.Host = w.URLHost
	}
	return w
}

// inCluster reports whether the process runs in a Pod with a service
// account token mounted.
func inCluster() bool {
	_, err := rest.InClusterConfig()
	return err == nil
}
