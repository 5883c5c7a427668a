package webhook

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"sync"
	"time"
)

// Certificates is a CA and a serving certificate it signed, PEM-encoded:
// the API server trusts CA (the caBundle of the webhook configuration),
// the webhook server presents Cert/Key.
type Certificates struct {
	CA   []byte
	Cert []byte
	Key  []byte
	// NotAfter is when the serving certificate expires.
	NotAfter time.Time
}

// GenerateCertificates makes a self-signed ECDSA P-256 CA and a serving
// certificate for hosts (DNS names or IP addresses) valid from now (minus
// a minute of clock skew) for validity.
func GenerateCertificates(hosts []string, validity time.Duration, now time.Time) (*Certificates, error) {
	if len(hosts) == 0 {
		return nil, errors.New("generating webhook certificates: no host names")
	}
	if validity <= 0 {
		return nil, fmt.Errorf("generating webhook certificates: validity must be positive, got %s", validity)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the webhook CA key: %w", err)
	}
	notBefore, notAfter := now.Add(-time.Minute), now.Add(validity)
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "oamflow-webhook-ca"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing the webhook CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the webhook serving key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing the webhook serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &Certificates{
		CA:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		Cert:     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:      pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		NotAfter: notAfter,
	}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

// ParseCertificates checks that cert/key form a key pair and reads the
// serving certificate's expiry.
func ParseCertificates(ca, cert, key []byte) (*Certificates, error) {
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("webhook certificate and key: %w", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("webhook certificate: %w", err)
	}
	return &Certificates{CA: ca, Cert: cert, Key: key, NotAfter: leaf.NotAfter}, nil
}

// CertHolder serves the current serving certificate to the TLS server
// (GetCertificate) so that it can be replaced without a restart.
type CertHolder struct {
	mu   sync.RWMutex
	cert *tls.Certificate
	cur  *Certificates
}

// Set makes c the certificate served from now on.
func (h *CertHolder) Set(c *Certificates) error {
	pair, err := tls.X509KeyPair(c.Cert, c.Key)
	if err != nil {
		return fmt.Errorf("webhook certificate and key: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cert, h.cur = &pair, c
	return nil
}

// Current returns the certificates served now (nil before Set).
func (h *CertHolder) Current() *Certificates {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.cur
}

// GetCertificate is a tls.Config.GetCertificate.
func (h *CertHolder) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.cert == nil {
		return nil, errors.New("no webhook serving certificate yet")
	}
	return h.cert, nil
}

// TLSOption sets GetCertificate on a webhook server's TLS config.
func (h *CertHolder) TLSOption(c *tls.Config) { c.GetCertificate = h.GetCertificate }
