package manager_test

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	oamwebhook "github.com/oamflow/oamflow/pkg/webhook"
)

// TestCertificateRenewal: two replicas share the generated certificate
// through the Secret; near expiry one renews it, the caBundle then holds
// the new and the previous CA, and the other replica picks the new
// certificate up.
func TestCertificateRenewal(t *testing.T) {
	c := env.Client
	ctx := context.Background()
	const ns, name = "renewal", "renewal-webhook"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	conf := oamwebhook.ConfigurationOptions{Name: name, ApplicationFailurePolicy: admissionregistrationv1.Ignore}
	target := oamwebhook.Target{Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "svc"}}
	require.NoError(t, c.Create(ctx, oamwebhook.Configuration(conf, target, nil)))
	t.Cleanup(func() { _ = c.Delete(ctx, oamwebhook.Configuration(conf, target, nil)) })

	now := time.Now()
	clock := func() time.Time { return now }
	replica := func() *oamwebhook.Provisioner {
		return &oamwebhook.Provisioner{
			Client: c, Holder: &oamwebhook.CertHolder{}, Configuration: conf, Target: target,
			Hosts: []string{"svc." + ns + ".svc"}, SecretNamespace: ns, SecretName: "certs",
			Validity: time.Hour, RenewBefore: 20 * time.Minute, Now: clock,
		}
	}
	a, b := replica(), replica()
	require.NoError(t, a.Provision(ctx))
	require.NoError(t, b.Provision(ctx))
	assert.Equal(t, a.Holder.Current().Cert, b.Holder.Current().Cert, "replicas serve the same certificate")
	first := a.Holder.Current()

	bundle := func() string {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: name}, vwc))
		return string(vwc.Webhooks[0].ClientConfig.CABundle)
	}
	assert.Contains(t, bundle(), strings.TrimSpace(string(first.CA)))

	// 45 minutes later the certificate expires within RenewBefore.
	now = now.Add(45 * time.Minute)
	require.NoError(t, a.Provision(ctx))
	renewed := a.Holder.Current()
	assert.NotEqual(t, first.Cert, renewed.Cert)
	assert.Contains(t, bundle(), strings.TrimSpace(string(renewed.CA)), "the new CA is trusted")
	assert.Contains(t, bundle(), strings.TrimSpace(string(first.CA)), "the previous CA stays trusted while replicas switch")
	require.NoError(t, b.Provision(ctx))
	assert.Equal(t, renewed.Cert, b.Holder.Current().Cert, "the other replica takes the renewed certificate")
	_, err := tls.X509KeyPair(renewed.Cert, renewed.Key)
	require.NoError(t, err)
}
