package helm

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// Keys of a chart-source auth Secret. A Secret may combine them: basic
// (username+password) or bearer (token), plus a TLS client certificate
// (tls.crt+tls.key) and a CA bundle (ca.crt).
const (
	SecretKeyUsername = "username"
	SecretKeyPassword = "password"
	SecretKeyToken    = "token"
	SecretKeyCert     = "tls.crt"
	SecretKeyKey      = "tls.key"
	SecretKeyCA       = "ca.crt"
)

// credentials are read from an auth Secret. They never appear in errors,
// logs or status: String redacts them.
type credentials struct {
	username, password, token string
	cert, key, ca             []byte
}

func (c *credentials) String() string { return "<redacted credentials>" }

// readCredentials reads ref from namespace (the application's namespace;
// ParseSpec has already refused other namespaces). A nil ref gives nil.
func readCredentials(ctx context.Context, r client.Reader, namespace string, ref *helmspec.SecretRef) (*credentials, error) {
	if ref == nil {
		return nil, nil
	}
	if ref.Namespace != "" && ref.Namespace != namespace {
		return nil, fmt.Errorf("chart.auth.secretRef: cross-namespace reference to %q refused: only %q may be read", ref.Namespace, namespace)
	}
	if r == nil {
		return nil, errors.New("chart.auth.secretRef: no Secret reader configured")
	}
	var s corev1.Secret
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("chart.auth.secretRef: Secret %s/%s not found", namespace, ref.Name)
		}
		return nil, fmt.Errorf("chart.auth.secretRef: read Secret %s/%s: %w", namespace, ref.Name, err)
	}
	c := &credentials{
		username: string(s.Data[SecretKeyUsername]),
		password: string(s.Data[SecretKeyPassword]),
		token:    string(s.Data[SecretKeyToken]),
		cert:     s.Data[SecretKeyCert],
		key:      s.Data[SecretKeyKey],
		ca:       s.Data[SecretKeyCA],
	}
	switch {
	case (c.username == "") != (c.password == ""):
		return nil, fmt.Errorf("chart.auth.secretRef: Secret %s/%s must have both %q and %q, or neither", namespace, ref.Name, SecretKeyUsername, SecretKeyPassword)
	case c.username != "" && c.token != "":
		return nil, fmt.Errorf("chart.auth.secretRef: Secret %s/%s has both basic auth and %q; keep one", namespace, ref.Name, SecretKeyToken)
	case (len(c.cert) == 0) != (len(c.key) == 0):
		return nil, fmt.Errorf("chart.auth.secretRef: Secret %s/%s must have both %q and %q, or neither", namespace, ref.Name, SecretKeyCert, SecretKeyKey)
	}
	return c, nil
}

// tlsConfig returns the TLS settings of c, or nil when c sets none.
func (c *credentials) tlsConfig() (*tls.Config, error) {
	if c == nil || (len(c.cert) == 0 && len(c.ca) == 0) {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(c.cert) > 0 {
		pair, err := tls.X509KeyPair(c.cert, c.key)
		if err != nil {
			return nil, errors.New("chart.auth.secretRef: tls.crt/tls.key are not a valid PEM key pair")
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if len(c.ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(c.ca) {
			return nil, errors.New("chart.auth.secretRef: ca.crt holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// httpClient returns an HTTP client using base's transport (cloned) with
// c's TLS settings.
func (c *credentials) httpClient(base http.RoundTripper) (*http.Client, error) {
	tc, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	if base == nil {
		base = http.DefaultTransport
	}
	rt := base
	if tc != nil {
		t, ok := base.(*http.Transport)
		if !ok {
			return nil, errors.New("chart.auth.secretRef: TLS settings need an *http.Transport")
		}
		t = t.Clone()
		t.TLSClientConfig = tc
		rt = t
	}
	return &http.Client{Transport: rt}, nil
}

// authorize sets the Authorization header of req from c.
func (c *credentials) authorize(req *http.Request) {
	switch {
	case c == nil:
	case c.token != "":
		req.Header.Set("Authorization", "Bearer "+c.token)
	case c.username != "":
		req.SetBasicAuth(c.username, c.password)
	}
}
