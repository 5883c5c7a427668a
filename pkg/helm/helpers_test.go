package helm

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// moduleRoot walks up from the working directory to oamflow's go.mod.
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "go.mod not found above the working directory")
		dir = parent
	}
}

// testChartDir returns charts/testdata/<name>.
func testChartDir(t testing.TB, name string) string {
	return filepath.Join(moduleRoot(t), "charts", "testdata", name)
}

// packageChart packages charts/testdata/<name> as a .tgz, with version
// (when not empty) replacing the chart's version.
func packageChart(t testing.TB, name, version string) []byte {
	t.Helper()
	return packageDir(t, testChartDir(t, name), version)
}

func packageDir(t testing.TB, dir, version string) []byte {
	t.Helper()
	ch, err := loader.LoadDir(dir)
	require.NoError(t, err)
	if version != "" {
		ch.Metadata.Version = version
	}
	out := t.TempDir()
	p, err := chartutil.Save(ch, out)
	require.NoError(t, err)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	return data
}

func chartMeta(t testing.TB, data []byte) *chart.Metadata {
	t.Helper()
	ch, err := loader.LoadArchive(strings.NewReader(string(data)))
	require.NoError(t, err)
	return ch.Metadata
}

// repoServer is a Helm chart repository served by httptest: GET
// /index.yaml and /charts/<name>-<version>.tgz.
type repoServer struct {
	*httptest.Server

	mu       sync.Mutex
	charts   map[string][]byte // file name → archive
	metas    map[string]*chart.Metadata
	digests  map[string]string // file name → hex sha256 listed in index.yaml
	requests map[string]int    // path → count

	// auth, when set, must accept a request or it gets 401.
	auth func(*http.Request) bool
}

type repoOption func(*repoServer, *httptest.Server)

func withBasicAuth(user, pass string) repoOption {
	return func(r *repoServer, _ *httptest.Server) {
		r.auth = func(req *http.Request) bool {
			u, p, ok := req.BasicAuth()
			return ok && u == user && p == pass
		}
	}
}

func withBearer(token string) repoOption {
	return func(r *repoServer, _ *httptest.Server) {
		r.auth = func(req *http.Request) bool { return req.Header.Get("Authorization") == "Bearer "+token }
	}
}

// withClientCA makes the server TLS and require client certificates
// signed by ca.
func withClientCA(ca *x509.Certificate) repoOption {
	return func(_ *repoServer, s *httptest.Server) {
		pool := x509.NewCertPool()
		pool.AddCert(ca)
		s.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	}
}

func newRepoServer(t testing.TB, opts ...repoOption) *repoServer {
	t.Helper()
	r := &repoServer{charts: map[string][]byte{}, metas: map[string]*chart.Metadata{}, digests: map[string]string{}, requests: map[string]int{}}
	s := httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	for _, o := range opts {
		o(r, s)
	}
	if s.TLS != nil {
		s.StartTLS()
	} else {
		s.Start()
	}
	r.Server = s
	t.Cleanup(s.Close)
	return r
}

func (r *repoServer) add(t testing.TB, data []byte) string {
	t.Helper()
	md := chartMeta(t, data)
	file := fmt.Sprintf("%s-%s.tgz", md.Name, md.Version)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.charts[file] = data
	r.metas[file] = md
	r.digests[file] = helmspec.SHA256Digest(data)[len("sha256:"):]
	return file
}

func (r *repoServer) count(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[path]
}

func (r *repoServer) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests[req.URL.Path]++
	if r.auth != nil && !r.auth(req) {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	switch {
	case req.URL.Path == "/index.yaml":
		idx := repo.NewIndexFile()
		for file, md := range r.metas {
			if err := idx.MustAdd(md, "charts/"+file, "", r.digests[file]); err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
		}
		idx.SortEntries()
		out, err := yaml.Marshal(idx)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		_, _ = w.Write(out)
	case strings.HasPrefix(req.URL.Path, "/charts/"):
		data, ok := r.charts[strings.TrimPrefix(req.URL.Path, "/charts/")]
		if !ok {
			http.NotFound(w, req)
			return
		}
		_, _ = w.Write(data)
	default:
		http.NotFound(w, req)
	}
}

// caPEM returns the PEM of the server's certificate (its own CA).
func (r *repoServer) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate().Raw})
}

// testCA is a throwaway certificate authority issuing client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "oamflow test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key}
}

// clientPair issues a client certificate and returns cert and key PEM.
func (ca *testCA) clientPair(t testing.TB) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "oamflow test client"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// spec builds a defaulted Spec for tests.
func spec(t testing.TB, props map[string]any, name, namespace string) *helmspec.Spec {
	t.Helper()
	s, err := helmspec.ParseSpecMap(props, helmspec.Defaults{Name: name, Namespace: namespace})
	require.NoError(t, err)
	return s
}

// nopLogger discards the test registry's request log.
func nopLogger() *log.Logger { return log.New(io.Discard, "", 0) }
