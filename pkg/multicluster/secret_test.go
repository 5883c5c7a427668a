package multicluster

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

const testToken = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2VuLXZhbHVl.sig"

func TestParseSecret(t *testing.T) {
	pki := newPKI(t)
	other := newPKI(t)
	cases := []struct {
		reason string
		secret *corev1.Secret
		// wantErr is a substring of the MisconfiguredError's reason; "" means valid.
		wantErr string
		check   func(t *testing.T, p parsed)
	}{
		{
			reason: "a client certificate registration gives a TLS config with the CA",
			secret: clusterSecret("east", pki, withLabel("region", "east")),
			check: func(t *testing.T, p parsed) {
				assert.Equal(t, "https://127.0.0.1:6443", p.config.Host)
				assert.Equal(t, pki.CA, p.config.CAData)
				assert.Equal(t, pki.Cert, p.config.CertData)
				assert.Empty(t, p.config.BearerToken)
				assert.Equal(t, map[string]string{"region": "east"}, p.cluster.Labels, "the credential-type label is not a cluster label")
				assert.Equal(t, DefaultClientSettings(), p.cluster.Settings)
				assert.Equal(t, float32(50), p.config.QPS)
			},
		},
		{
			reason: "a token registration gives a bearer token",
			secret: clusterSecret("west", pki, tokenSecret(testToken+"\n")),
			check: func(t *testing.T, p parsed) {
				assert.Equal(t, testToken, p.config.BearerToken, "surrounding white space is trimmed")
				assert.Empty(t, p.config.CertData)
				assert.Equal(t, CredentialToken, p.cluster.CredentialType)
			},
		},
		{
			reason: "without ca.crt the system roots are used",
			secret: clusterSecret("noca", pki, withData(KeyCA, nil)),
			check:  func(t *testing.T, p parsed) { assert.Empty(t, p.config.CAData) },
		},
		{
			reason: "annotations override the client settings",
			secret: clusterSecret("tuned", pki, withAnnotation(AnnoQPS, "7.5"), withAnnotation(AnnoBurst, "9"), withAnnotation(AnnoTimeout, "3s")),
			check: func(t *testing.T, p parsed) {
				assert.Equal(t, ClientSettings{QPS: 7.5, Burst: 9, Timeout: 3 * time.Second}, p.cluster.Settings)
				assert.Equal(t, float32(7.5), p.config.QPS)
				assert.Equal(t, 9, p.config.Burst)
				assert.Equal(t, 3*time.Second, p.config.Timeout)
			},
		},
		{reason: "endpoint missing", secret: clusterSecret("a", pki, withData(KeyEndpoint, nil)), wantErr: `data "endpoint" is missing`},
		{reason: "plain http endpoint", secret: clusterSecret("a", pki, withData(KeyEndpoint, []byte("http://1.2.3.4"))), wantErr: `scheme "http" is not https`},
		{reason: "endpoint without host", secret: clusterSecret("a", pki, withData(KeyEndpoint, []byte("https://"))), wantErr: "no host"},
		{reason: "endpoint with user info", secret: clusterSecret("a", pki, withData(KeyEndpoint, []byte("https://admin:hunter2hunter2@h:6443"))), wantErr: "user info"},
		{reason: "not a URL", secret: clusterSecret("a", pki, withData(KeyEndpoint, []byte("https://h:port:x\x7f"))), wantErr: "not a URL"},
		{reason: "CA is not PEM", secret: clusterSecret("a", pki, withData(KeyCA, []byte("garbage"))), wantErr: `data "ca.crt": no PEM certificate`},
		{reason: "client key missing", secret: clusterSecret("a", pki, withData(KeyKey, nil)), wantErr: `data "tls.key" is missing`},
		{reason: "client certificate missing", secret: clusterSecret("a", pki, withData(KeyCert, nil)), wantErr: `data "tls.crt" is missing`},
		{reason: "key of another certificate", secret: clusterSecret("a", pki, withData(KeyKey, other.Key)), wantErr: "do not form a client certificate and its key"},
		{reason: "token missing", secret: clusterSecret("a", pki, tokenSecret("")), wantErr: `data "token" is missing`},
		{reason: "two tokens", secret: clusterSecret("a", pki, tokenSecret(testToken+"\n"+testToken)), wantErr: "white space"},
		{reason: "unknown credential type", secret: clusterSecret("a", pki, withLabel(v1beta1.LabelClusterCredType, "Password")), wantErr: `is "Password" (expected X509Certificate or ServiceAccountToken)`},
		{reason: "negative QPS", secret: clusterSecret("a", pki, withAnnotation(AnnoQPS, "-1")), wantErr: AnnoQPS + ` is "-1"`},
		{reason: "burst not a number", secret: clusterSecret("a", pki, withAnnotation(AnnoBurst, "lots")), wantErr: AnnoBurst},
		{reason: "timeout without unit", secret: clusterSecret("a", pki, withAnnotation(AnnoTimeout, "30")), wantErr: "positive duration"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			p := parseSecret(tc.secret, DefaultClientSettings())
			if tc.wantErr == "" {
				require.NoError(t, p.cluster.Err)
				require.NotNil(t, p.config)
				assert.NotEmpty(t, p.fingerprint)
				tc.check(t, p)
				return
			}
			require.Error(t, p.cluster.Err)
			assert.Nil(t, p.config)
			assert.True(t, errors.Is(p.cluster.Err, ErrClusterMisconfigured))
			assert.Contains(t, p.cluster.Err.Error(), tc.wantErr)
			assert.Contains(t, p.cluster.Err.Error(), fmt.Sprintf("cluster %q (Secret %s/%s)", tc.secret.Name, tc.secret.Namespace, tc.secret.Name))
			assertNoSecrets(t, p.cluster.Err.Error(), tc.secret)
		})
	}
}

// assertNoSecrets fails when text contains the token, key or certificate
// of s (or a recognisable part of them).
func assertNoSecrets(t testing.TB, text string, s *corev1.Secret) {
	t.Helper()
	for _, k := range []string{KeyToken, KeyKey, KeyCert} {
		v := strings.TrimSpace(string(s.Data[k]))
		if len(v) < 12 {
			continue
		}
		for _, part := range strings.Fields(v) {
			if len(part) >= 12 && !strings.HasPrefix(part, "-----") {
				assert.NotContains(t, text, part, "the text shows data %q", k)
			}
		}
	}
}

func TestFingerprint(t *testing.T) {
	pki := newPKI(t)
	base := parseSecret(clusterSecret("a", pki), DefaultClientSettings()).fingerprint
	cases := []struct {
		reason string
		opt    secretOpt
		same   bool
	}{
		{reason: "a new cluster label keeps the client", opt: withLabel("region", "east"), same: true},
		{reason: "an unrelated annotation keeps the client", opt: withAnnotation("note", "x"), same: true},
		{reason: "a new endpoint changes it", opt: withData(KeyEndpoint, []byte("https://127.0.0.1:7443"))},
		{reason: "a new key pair changes it", opt: func(s *corev1.Secret) { o := newPKI(t); s.Data[KeyCert], s.Data[KeyKey] = o.Cert, o.Key }},
		{reason: "a new timeout changes it", opt: withAnnotation(AnnoTimeout, "1s")},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			got := parseSecret(clusterSecret("a", pki, tc.opt), DefaultClientSettings()).fingerprint
			assert.Equal(t, tc.same, got == base)
		})
	}
}

func TestNewClusterSecret(t *testing.T) {
	pki := newPKI(t)
	certs := Credentials{Endpoint: "https://10.0.0.1:6443", CAData: pki.CA, CertData: pki.Cert, KeyData: pki.Key}
	token := Credentials{Endpoint: "https://10.0.0.1:6443", CAData: pki.CA, Token: testToken}
	cases := []struct {
		reason   string
		name     string
		cred     Credentials
		labels   map[string]string
		settings ClientSettings
		wantErr  string
		check    func(t *testing.T, s *corev1.Secret)
	}{
		{
			reason: "certificates: the KubeVela form with labels and settings annotations",
			name:   "east", cred: certs, labels: map[string]string{"region": "east"}, settings: ClientSettings{QPS: 20, Timeout: 5 * time.Second},
			check: func(t *testing.T, s *corev1.Secret) {
				assert.Equal(t, map[string]string{"region": "east", v1beta1.LabelClusterCredType: "X509Certificate"}, s.Labels)
				assert.Equal(t, []string{KeyCA, KeyEndpoint, KeyCert, KeyKey}, sortedKeys(s.Data))
				assert.Equal(t, map[string]string{AnnoQPS: "20", AnnoTimeout: "5s"}, s.Annotations)
				assert.Equal(t, "ns", s.Namespace)
			},
		},
		{
			reason: "token",
			name:   "west", cred: token,
			check: func(t *testing.T, s *corev1.Secret) {
				assert.Equal(t, "ServiceAccountToken", s.Labels[v1beta1.LabelClusterCredType])
				assert.Equal(t, []byte(testToken), s.Data[KeyToken])
				assert.NotContains(t, s.Data, KeyCert)
				assert.Nil(t, s.Annotations)
			},
		},
		{reason: "the hub's name is reserved", name: "local", cred: certs, wantErr: `"local" is reserved for the hub`},
		{reason: "not a DNS name", name: "East_1", cred: certs, wantErr: `cluster name "East_1" is invalid`},
		{reason: "the credential-type label cannot be given", name: "a", cred: certs, labels: map[string]string{v1beta1.LabelClusterCredType: "x"}, wantErr: "set by oamflow"},
		{reason: "invalid label value", name: "a", cred: certs, labels: map[string]string{"region": "east west"}, wantErr: `label region value "east west" is invalid`},
		{reason: "invalid label key", name: "a", cred: certs, labels: map[string]string{"-bad": "x"}, wantErr: `label key "-bad" is invalid`},
		{reason: "both a certificate and a token", name: "a", cred: Credentials{Endpoint: certs.Endpoint, CertData: pki.Cert, KeyData: pki.Key, Token: testToken}, wantErr: "both"},
		{reason: "no credentials", name: "a", cred: Credentials{Endpoint: certs.Endpoint}, wantErr: "neither"},
		{reason: "broken key pair is caught before storing", name: "a", cred: Credentials{Endpoint: certs.Endpoint, CertData: pki.Cert, KeyData: []byte("nope")}, wantErr: `credentials for cluster "a": data "tls.crt" and "tls.key"`},
		{reason: "http endpoint", name: "a", cred: Credentials{Endpoint: "http://h", Token: testToken}, wantErr: "not https"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			s, err := NewClusterSecret("ns", tc.name, tc.cred, tc.labels, tc.settings)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.NotContains(t, err.Error(), testToken)
				return
			}
			require.NoError(t, err)
			tc.check(t, s)
			p := parseSecret(s, DefaultClientSettings())
			require.NoError(t, p.cluster.Err, "what NewClusterSecret builds, the registry reads")
		})
	}
}

func TestCredentialsNeverPrinted(t *testing.T) {
	pki := newPKI(t)
	c := Credentials{Endpoint: "https://h:1", CertData: pki.Cert, KeyData: pki.Key, Token: testToken}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c)} {
		assert.NotContains(t, s, testToken)
		assert.False(t, bytes.Contains([]byte(s), pki.Key[30:60]))
	}
}

// FuzzParseSecret feeds arbitrary Secret contents to the parser: it must
// not panic, must either yield a config or a MisconfiguredError, and its
// error never shows the token or key.
func FuzzParseSecret(f *testing.F) {
	pki := newPKI(f)
	f.Add("X509Certificate", "https://127.0.0.1:6443", pki.CA, pki.Cert, pki.Key, "", "", "")
	f.Add("ServiceAccountToken", "https://h", []byte(nil), []byte(nil), []byte(nil), testToken, "2", "1s")
	f.Add("ServiceAccountToken", "http://u:p@h", []byte("x"), []byte("y"), []byte("z"), "a b", "-1", "x")
	f.Fuzz(func(t *testing.T, credType, endpoint string, ca, cert, key []byte, token, qps, timeout string) {
		s := &corev1.Secret{}
		s.Name, s.Namespace = "fuzz", "ns"
		s.Labels = map[string]string{v1beta1.LabelClusterCredType: credType}
		s.Annotations = map[string]string{AnnoQPS: qps, AnnoTimeout: timeout}
		s.Data = map[string][]byte{KeyEndpoint: []byte(endpoint), KeyCA: ca, KeyCert: cert, KeyKey: key, KeyToken: []byte(token)}
		p := parseSecret(s, DefaultClientSettings())
		if p.cluster.Err == nil {
			require.NotNil(t, p.config)
			return
		}
		require.Nil(t, p.config)
		require.ErrorIs(t, p.cluster.Err, ErrClusterMisconfigured)
		msg := p.cluster.Err.Error()
		if tok := strings.TrimSpace(token); len(tok) >= 16 && !strings.Contains(endpoint+credType+qps+timeout, tok) {
			require.NotContains(t, msg, tok)
		}
		if k := strings.TrimSpace(string(key)); len(k) >= 16 && !strings.Contains(endpoint+credType+qps+timeout, k) {
			require.NotContains(t, msg, k)
		}
	})
}
