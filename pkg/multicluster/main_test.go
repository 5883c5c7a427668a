package multicluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

// hub and member are two real kube-apiservers shared by the package's
// tests: hub has the oamflow CRDs and holds the cluster Secrets, member is
// registered as a cluster. Each test uses a system namespace of its own.
var hub, member *envtest.Environment

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		// Fuzz targets need no API server; every fuzz worker process runs
		// TestMain, so starting one each would only cost time.
		return m.Run()
	}
	if os.Getenv(envtest.SkipEnv) == "1" {
		fmt.Fprintf(os.Stderr, "SKIP: %s=1: not running tests that need kube-apiserver and etcd\n", envtest.SkipEnv)
		return 0
	}
	ctrl.SetLogger(logr.Discard())
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1beta1.AddToScheme(s); err != nil {
		panic(err)
	}
	var err error
	if hub, err = envtest.Start(envtest.WithCRDs("charts/oamflow/crds"), envtest.WithScheme(s)); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: hub: %v\n", err)
		return 1
	}
	defer stop(hub)
	if member, err = envtest.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: member: %v\n", err)
		return 1
	}
	defer stop(member)
	return m.Run()
}

func stop(e *envtest.Environment) {
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
	}
}

var nsCounter atomic.Int64

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// newRegistry returns a registry over the hub with a fresh system namespace.
func newRegistry(t testing.TB, opts ...Option) *Registry {
	t.Helper()
	if hub == nil {
		t.Skip("no API server: envtest is not started while fuzzing")
	}
	name := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 40 {
		name = name[:40]
	}
	ns := fmt.Sprintf("sys-%s-%d", name, nsCounter.Add(1))
	r, err := NewRegistry(hub.Client, hub.Config, append([]Option{WithSystemNamespace(ns)}, opts...)...)
	require.NoError(t, err)
	return r
}

// memberCredentials are the member apiserver's admin credentials.
func memberCredentials(t testing.TB) Credentials {
	t.Helper()
	cfg := member.Config
	require.NotEmpty(t, cfg.CertData, "envtest gives the admin a client certificate")
	return Credentials{Endpoint: cfg.Host, CAData: cfg.CAData, CertData: cfg.CertData, KeyData: cfg.KeyData}
}

// join registers the member as name with labels.
func join(t testing.TB, r *Registry, name string, labels map[string]string) {
	t.Helper()
	cred := memberCredentials(t)
	if !strings.HasPrefix(cred.Endpoint, "https://") {
		cred.Endpoint = "https://" + cred.Endpoint
	}
	_, err := r.Join(context.Background(), name, cred, JoinOptions{Labels: labels})
	require.NoError(t, err)
}

// putSecret creates or replaces a raw Secret in r's namespace.
func putSecret(t testing.TB, r *Registry, s *corev1.Secret) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, r.ensureNamespace(ctx))
	s.Namespace = r.namespace
	cur := &corev1.Secret{}
	if err := hub.Client.Get(ctx, client.ObjectKeyFromObject(s), cur); err == nil {
		s.ResourceVersion = cur.ResourceVersion
		require.NoError(t, hub.Client.Update(ctx, s))
		return
	}
	require.NoError(t, hub.Client.Create(ctx, s))
}

// testPKI is a CA and a client certificate signed by it, PEM-encoded.
type testPKI struct {
	CA, Cert, Key []byte
}

// newPKI generates a throw-away CA and client certificate.
func newPKI(t testing.TB) testPKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "admin"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &key.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return testPKI{
		CA:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
}

// secretOpt modifies a cluster Secret fixture.
type secretOpt func(*corev1.Secret)

// clusterSecret is a valid X509 cluster Secret fixture named name.
func clusterSecret(name string, pki testPKI, opts ...secretOpt) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: DefaultSystemNamespace,
			Labels:    map[string]string{v1beta1.LabelClusterCredType: string(CredentialX509)},
		},
		Data: map[string][]byte{
			KeyEndpoint: []byte("https://127.0.0.1:6443"),
			KeyCA:       pki.CA,
			KeyCert:     pki.Cert,
			KeyKey:      pki.Key,
		},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func withData(k string, v []byte) secretOpt {
	return func(s *corev1.Secret) {
		if v == nil {
			delete(s.Data, k)
			return
		}
		s.Data[k] = v
	}
}

func withLabel(k, v string) secretOpt {
	return func(s *corev1.Secret) {
		if v == "" {
			delete(s.Labels, k)
			return
		}
		s.Labels[k] = v
	}
}

func withAnnotation(k, v string) secretOpt {
	return func(s *corev1.Secret) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[k] = v
	}
}

// tokenSecret turns the fixture into a ServiceAccountToken Secret.
func tokenSecret(token string) secretOpt {
	return func(s *corev1.Secret) {
		s.Labels[v1beta1.LabelClusterCredType] = string(CredentialToken)
		delete(s.Data, KeyCert)
		delete(s.Data, KeyKey)
		s.Data[KeyToken] = []byte(token)
	}
}
