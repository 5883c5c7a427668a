package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Keys of the certificate Secret (the kubernetes.io/tls layout plus the CA
// and, after a rotation, the previous CA that replicas still serving the
// old certificate chain to).
const (
	SecretCAKey         = "ca.crt"
	SecretPreviousCAKey = "ca-previous.crt"
)

// Provisioner makes the webhook server's certificate and the API server's
// configuration agree, and keeps them so: it generates a CA and serving
// certificate (or reads them from a Secret shared by all replicas), hands
// them to the CertHolder, registers the configuration (Register: the whole
// configuration with a URL target) or patches the caBundle of the chart's,
// and renews the certificate RenewBefore its expiry.
type Provisioner struct {
	// Client reads and writes the Secret and the configuration; it must
	// not be a cached client (Provision runs before caches start).
	Client client.Client
	Holder *CertHolder
	// Configuration and Target describe the configuration to register.
	Configuration ConfigurationOptions
	Target        Target
	// Register creates or takes over the whole configuration (outside a
	// cluster); false only patches the caBundle of an existing one.
	Register bool
	// NoPublish serves the certificates without touching any
	// configuration (the user manages it).
	NoPublish bool
	// Hosts are the serving certificate's names (127.0.0.1; or the
	// Service's DNS names).
	Hosts []string
	// SecretNamespace/SecretName, when set, keep the certificates in a
	// Secret so that replicas share one CA; else they live in memory.
	SecretNamespace, SecretName string
	// Validity of generated certificates (1 year when 0); renewed
	// RenewBefore expiry (a third of Validity when 0), checked every
	// CheckInterval (1 hour when 0).
	Validity, RenewBefore, CheckInterval time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Serving, when set, delays the registration from Provision to Start:
	// Start calls it and publishes only once it returns nil, i.e. once the
	// webhook server answers, so that a controller that fails to start
	// (its port taken by another) never points the API server at itself.
	Serving func(ctx context.Context) error
	// ReassertInterval is how often Start checks that the registration is
	// still ours and restores it if it was deleted or changed (30 s when
	// 0); with Register false it re-patches an emptied caBundle.
	ReassertInterval time.Duration

	// caBundle is the bundle last published (nil until then); pending is
	// the one Start publishes once the server answers.
	caBundle, pending []byte
}

func (p *Provisioner) defaults() {
	if p.Validity <= 0 {
		p.Validity = 365 * 24 * time.Hour
	}
	if p.RenewBefore <= 0 {
		p.RenewBefore = p.Validity / 3
	}
	if p.CheckInterval <= 0 {
		p.CheckInterval = time.Hour
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	if p.ReassertInterval <= 0 {
		p.ReassertInterval = 30 * time.Second
	}
	if p.Configuration.Name == "" {
		p.Configuration.Name = DefaultConfigurationName
	}
}

// CABundle returns the PEM bundle last registered.
func (p *Provisioner) CABundle() []byte { return p.caBundle }

// Provision gets certificates (new, or from the Secret), serves them, and
// registers or patches the configuration (unless Serving is set: then
// Start registers once the server answers). Call it once before the
// webhook server starts.
func (p *Provisioner) Provision(ctx context.Context) error {
	p.defaults()
	if p.Client == nil || p.Holder == nil {
		return errors.New("webhook provisioner: Client and Holder are required")
	}
	certs, bundle, err := p.certificates(ctx)
	if err != nil {
		return err
	}
	if err := p.Holder.Set(certs); err != nil {
		return err
	}
	if p.Serving != nil {
		p.pending = bundle
		return nil
	}
	return p.publish(ctx, bundle)
}

func (p *Provisioner) publish(ctx context.Context, bundle []byte) error {
	log := ctrl.LoggerFrom(ctx)
	switch {
	case p.NoPublish:
	case p.Register:
		if err := Apply(ctx, p.Client, Configurations(p.Configuration, p.Target, bundle)...); err != nil {
			return err
		}
		log.Info("registered the validating and mutating webhooks", "configuration", p.Configuration.Name, "url", p.Target.URL)
	default:
		found, err := PatchCABundle(ctx, p.Client, p.Configuration.Name, bundle)
		if err != nil {
			return err
		}
		if !found {
			log.Info("no ValidatingWebhookConfiguration to give the CA to; admission checks are off until it exists", "configuration", p.Configuration.Name)
		}
	}
	p.caBundle = bundle
	return nil
}

// certificates returns the serving certificates and the caBundle to
// register.
func (p *Provisioner) certificates(ctx context.Context) (*Certificates, []byte, error) {
	if p.SecretName == "" {
		if cur := p.Holder.Current(); cur != nil && !p.expiring(cur) {
			return cur, p.caBundle, nil
		}
		c, err := GenerateCertificates(p.Hosts, p.Validity, p.Now())
		if err != nil {
			return nil, nil, err
		}
		return c, c.CA, nil
	}
	for attempt := 0; attempt < 5; attempt++ {
		c, bundle, err := p.fromSecret(ctx)
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			return c, bundle, err
		}
	}
	return nil, nil, fmt.Errorf("webhook certificate Secret %s/%s keeps changing under us", p.SecretNamespace, p.SecretName)
}

func (p *Provisioner) expiring(c *Certificates) bool {
	return !p.Now().Add(p.RenewBefore).Before(c.NotAfter)
}

// fromSecret reads the Secret's certificates, creating or renewing them
// when missing, broken or expiring; the first replica to write wins.
func (p *Provisioner) fromSecret(ctx context.Context) (*Certificates, []byte, error) {
	key := client.ObjectKey{Namespace: p.SecretNamespace, Name: p.SecretName}
	s := &corev1.Secret{}
	err := p.Client.Get(ctx, key, s)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, nil, fmt.Errorf("reading the webhook certificate Secret %s: %w", key, err)
	}
	exists := err == nil
	if exists {
		c, perr := ParseCertificates(s.Data[SecretCAKey], s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
		if perr == nil && len(c.CA) > 0 && !p.expiring(c) {
			return c, bundleOf(s.Data[SecretCAKey], s.Data[SecretPreviousCAKey]), nil
		}
	}
	c, err := GenerateCertificates(p.Hosts, p.Validity, p.Now())
	if err != nil {
		return nil, nil, err
	}
	var previous []byte
	if exists {
		previous = s.Data[SecretCAKey]
	}
	s.Type = corev1.SecretTypeTLS
	s.Data = map[string][]byte{
		SecretCAKey: c.CA, corev1.TLSCertKey: c.Cert, corev1.TLSPrivateKeyKey: c.Key, SecretPreviousCAKey: previous,
	}
	if exists {
		err = p.Client.Update(ctx, s)
	} else {
		s.ObjectMeta = metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{"app.kubernetes.io/name": "oamflow", "app.kubernetes.io/component": "webhook"}}
		err = p.Client.Create(ctx, s)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("writing the webhook certificate Secret %s: %w", key, err)
	}
	return c, bundleOf(c.CA, previous), nil
}

// bundleOf concatenates PEM CAs, skipping empty ones.
func bundleOf(cas ...[]byte) []byte {
	var b bytes.Buffer
	for _, ca := range cas {
		if len(bytes.TrimSpace(ca)) == 0 {
			continue
		}
		b.Write(bytes.TrimSpace(ca))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// Start publishes the registration once the server answers (when Serving
// is set), then renews the certificate when it nears expiry (and, with a
// Secret, picks up one another replica renewed) and every
// ReassertInterval restores the registration if it was deleted or
// changed, until ctx is done; outside a cluster it then deletes the
// configuration if it is still ours (our URL and caBundle), so that a
// stopped local controller leaves no webhook behind and never removes
// another's. It implements controller-runtime's manager.Runnable; every
// replica runs it.
func (p *Provisioner) Start(ctx context.Context) error {
	p.defaults()
	log := ctrl.LoggerFrom(ctx).WithName("webhook-certs")
	if p.Serving != nil {
		if err := p.Serving(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("waiting for the webhook server before registering it: %w", err)
		}
		if err := p.publish(ctrl.LoggerInto(ctx, log), p.pending); err != nil {
			return err
		}
	}
	t := time.NewTicker(p.CheckInterval)
	defer t.Stop()
	reassert := time.NewTicker(p.ReassertInterval)
	defer reassert.Stop()
	for {
		select {
		case <-ctx.Done():
			if p.Register && len(p.caBundle) > 0 {
				cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := DeleteIfOurs(cctx, p.Client, p.Configuration.Name, p.Target.URL, p.caBundle); err != nil {
					log.Error(err, "removing the webhook registration")
				}
			}
			return nil
		case <-t.C:
			if err := p.renew(ctx); err != nil {
				log.Error(err, "renewing the webhook certificate")
			}
		case <-reassert.C:
			if err := p.reassert(ctrl.LoggerInto(ctx, log)); err != nil {
				log.Error(err, "restoring the webhook registration")
			}
		}
	}
}

// reassert publishes the registration again when a configuration no
// longer matches what this controller registered (deleted, or changed by
// another controller or a user).
func (p *Provisioner) reassert(ctx context.Context) error {
	if p.NoPublish || len(p.caBundle) == 0 {
		return nil
	}
	for _, want := range Configurations(p.Configuration, p.Target, p.caBundle) {
		got, kind := emptyLike(want)
		err := p.Client.Get(ctx, client.ObjectKey{Name: want.GetName()}, got)
		switch {
		case apierrors.IsNotFound(err):
			if !p.Register {
				continue // the chart's configuration is gone: nothing to patch.
			}
		case err != nil:
			return fmt.Errorf("reading %s %s: %w", kind, want.GetName(), err)
		case sameClientConfigs(got, want, p.Register):
			continue
		}
		ctrl.LoggerFrom(ctx).Info("the webhook registration was deleted or changed; restoring it", "configuration", want.GetName(), "kind", kind)
		return p.publish(ctx, p.caBundle)
	}
	return nil
}

// sameClientConfigs reports whether got calls every webhook of want the
// same way: with whole (a URL registration), the same webhook names,
// target and caBundle; without (the chart's configuration), a caBundle
// on every webhook.
func sameClientConfigs(got, want client.Object, whole bool) bool {
	gs, ws := hooksOf(got), hooksOf(want)
	if !whole {
		// Replicas sharing a Secret hold different bundles for a while
		// after one renews: only an emptied bundle (the chart's
		// configuration applied again) is restored.
		for _, g := range gs {
			if len(g.config.CABundle) == 0 {
				return false
			}
		}
		return true
	}
	if len(gs) != len(ws) {
		return false
	}
	for i := range ws {
		g, w := gs[i], ws[i]
		if g.name != w.name || !bytes.Equal(g.config.CABundle, w.config.CABundle) ||
			!equality.Semantic.DeepEqual(g.config.URL, w.config.URL) ||
			!equality.Semantic.DeepEqual(g.config.Service, w.config.Service) {
			return false
		}
	}
	return true
}

// renew replaces the served certificate when the source has a newer one.
func (p *Provisioner) renew(ctx context.Context) error {
	certs, bundle, err := p.certificates(ctx)
	if err != nil {
		return err
	}
	if cur := p.Holder.Current(); cur != nil && bytes.Equal(cur.Cert, certs.Cert) && bytes.Equal(bundle, p.caBundle) {
		return nil
	}
	if err := p.Holder.Set(certs); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("webhook certificate renewed", "notAfter", certs.NotAfter.UTC().Format(time.RFC3339))
	return p.publish(ctx, bundle)
}

// NeedLeaderElection is false: every replica serves the webhook.
func (p *Provisioner) NeedLeaderElection() bool { return false }
