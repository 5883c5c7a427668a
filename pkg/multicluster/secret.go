package multicluster

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// DefaultSystemNamespace is where cluster Secrets live unless
// WithSystemNamespace says otherwise (KubeVela's is vela-system).
const DefaultSystemNamespace = "oamflow-system"

// CredentialType is the value of the cluster-credential-type label
// (v1beta1.LabelClusterCredType) of a cluster Secret.
type CredentialType string

// Credential types. X509Certificate and ServiceAccountToken are the values
// KubeVela writes; Internal is what the hub reports (it is never stored).
const (
	CredentialX509     CredentialType = "X509Certificate"
	CredentialToken    CredentialType = "ServiceAccountToken"
	CredentialInternal CredentialType = "Internal"
)

// Data keys of a cluster Secret (the KubeVela-compatible form).
const (
	KeyEndpoint = "endpoint"
	KeyCA       = "ca.crt"
	KeyCert     = corev1.TLSCertKey       // tls.crt
	KeyKey      = corev1.TLSPrivateKeyKey // tls.key
	KeyToken    = "token"
)

// Annotations of a cluster Secret overriding the registry's default client
// settings for that cluster. Values: qps a positive number (requests per
// second), burst a positive integer, timeout a positive Go duration ("20s").
const (
	AnnoQPS     = "cluster.oamflow.dev/qps"
	AnnoBurst   = "cluster.oamflow.dev/burst"
	AnnoTimeout = "cluster.oamflow.dev/timeout"
)

// ClientSettings are the rate limit and request timeout of a cluster's
// client (rest.Config QPS, Burst and Timeout).
type ClientSettings struct {
	// QPS is the sustained request rate, in requests per second.
	QPS float32 `json:"qps,omitempty"`
	// Burst is how many requests may exceed QPS at once.
	Burst int `json:"burst,omitempty"`
	// Timeout bounds each request (connecting included), so one unreachable
	// cluster fails fast instead of stalling its callers.
	Timeout time.Duration `json:"timeout,omitempty"`
}

// DefaultClientSettings are used for clusters without annotations.
func DefaultClientSettings() ClientSettings {
	return ClientSettings{QPS: 50, Burst: 100, Timeout: 15 * time.Second}
}

// Cluster is one registered cluster as stored, without credentials.
type Cluster struct {
	// Name is the cluster name: the Secret's name, or "local" for the hub.
	Name string `json:"name"`
	// Endpoint is the API server URL (data "endpoint"; the hub's host).
	Endpoint string `json:"endpoint"`
	// CredentialType is the Secret's credential-type label value.
	CredentialType CredentialType `json:"credentialType"`
	// Labels are the Secret's labels without the credential-type label.
	Labels map[string]string `json:"labels,omitempty"`
	// Settings are the client settings in effect.
	Settings ClientSettings `json:"settings"`
	// Err is why the registration cannot be used (a *MisconfiguredError),
	// nil when it can.
	Err error `json:"-"`
}

// Credentials are what a cluster registration stores to reach a cluster:
// the endpoint, the CA bundle (optional: empty means the system roots),
// and either a client certificate and key or a bearer token.
type Credentials struct {
	Endpoint          string
	CAData            []byte
	CertData, KeyData []byte
	Token             string
}

// Type returns the credential type: X509Certificate when a client
// certificate is set, ServiceAccountToken when a token is.
func (c Credentials) Type() CredentialType {
	if len(c.CertData) > 0 || len(c.KeyData) > 0 {
		return CredentialX509
	}
	return CredentialToken
}

// String never shows secret material.
func (c Credentials) String() string {
	return fmt.Sprintf("{endpoint: %s, type: %s}", c.Endpoint, c.Type())
}

// GoString never shows secret material.
func (c Credentials) GoString() string { return c.String() }

// parsed is a cluster Secret turned into what a client needs.
type parsed struct {
	cluster Cluster
	config  *rest.Config
	// fingerprint changes exactly when config would (data and settings),
	// so that a label-only change keeps the cached client.
	fingerprint string
}

// parseSecret turns a cluster Secret into a REST config. A malformed Secret
// yields p.cluster.Err (a *MisconfiguredError naming the field) and a nil
// config; it never fails otherwise. defaults fill settings the annotations
// do not set.
func parseSecret(s *corev1.Secret, defaults ClientSettings) parsed {
	p := parsed{cluster: Cluster{
		Name:           s.Name,
		Endpoint:       strings.TrimSpace(string(s.Data[KeyEndpoint])),
		CredentialType: CredentialType(s.Labels[v1beta1.LabelClusterCredType]),
		Labels:         clusterLabels(s.Labels),
	}}
	fail := func(format string, args ...any) parsed {
		p.cluster.Err = &MisconfiguredError{Cluster: s.Name, Namespace: s.Namespace, Reason: fmt.Sprintf(format, args...)}
		return p
	}
	settings, err := settingsFrom(s.Annotations, defaults)
	p.cluster.Settings = settings
	if err != nil {
		return fail("%v", err)
	}
	if p.cluster.Endpoint == "" {
		return fail("data %q is missing (expected the API server URL, https://host:port)", KeyEndpoint)
	}
	if err := checkEndpoint(p.cluster.Endpoint); err != nil {
		return fail("data %q: %v", KeyEndpoint, err)
	}
	cfg := &rest.Config{
		Host:    p.cluster.Endpoint,
		QPS:     settings.QPS,
		Burst:   settings.Burst,
		Timeout: settings.Timeout,
	}
	if ca := s.Data[KeyCA]; len(ca) > 0 {
		if err := checkCA(ca); err != nil {
			return fail("data %q: %v", KeyCA, err)
		}
		cfg.CAData = ca
	}
	switch p.cluster.CredentialType {
	case CredentialX509:
		cert, key := s.Data[KeyCert], s.Data[KeyKey]
		if len(cert) == 0 {
			return fail("data %q is missing (expected a PEM client certificate for credential type %s)", KeyCert, CredentialX509)
		}
		if len(key) == 0 {
			return fail("data %q is missing (expected a PEM private key for credential type %s)", KeyKey, CredentialX509)
		}
		if _, err := tls.X509KeyPair(cert, key); err != nil {
			// crypto/tls errors describe the problem, never the bytes.
			return fail("data %q and %q do not form a client certificate and its key: %v", KeyCert, KeyKey, err)
		}
		cfg.CertData, cfg.KeyData = cert, key
	case CredentialToken:
		token := strings.TrimSpace(string(s.Data[KeyToken]))
		if token == "" {
			return fail("data %q is missing (expected a bearer token for credential type %s)", KeyToken, CredentialToken)
		}
		if strings.ContainsAny(token, " \t\r\n") {
			return fail("data %q is not a single bearer token (it contains white space)", KeyToken)
		}
		cfg.BearerToken = token
	default:
		return fail("label %s is %q (expected %s or %s)", v1beta1.LabelClusterCredType, p.cluster.CredentialType, CredentialX509, CredentialToken)
	}
	p.config = cfg
	p.fingerprint = fingerprint(s, settings)
	return p
}

// checkEndpoint accepts an https URL with a host and no user info, path
// query or fragment.
func checkEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return fmt.Errorf("not a URL (expected https://host:port)")
	}
	switch {
	case u.Scheme != "https":
		return fmt.Errorf("scheme %q is not https (credentials are only sent over TLS)", u.Scheme)
	case u.Host == "":
		return fmt.Errorf("no host (expected https://host:port)")
	case u.User != nil:
		return fmt.Errorf("user info in the URL is not allowed (put credentials in %q/%q or %q)", KeyCert, KeyKey, KeyToken)
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("query or fragment is not allowed (expected https://host:port[/path])")
	}
	return nil
}

// checkCA accepts a PEM bundle with at least one certificate.
func checkCA(ca []byte) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return fmt.Errorf("no PEM certificate found (expected the cluster's CA bundle)")
	}
	return nil
}

// settingsFrom reads the client-setting annotations over defaults.
func settingsFrom(annotations map[string]string, defaults ClientSettings) (ClientSettings, error) {
	s := defaults
	if v, ok := annotations[AnnoQPS]; ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 32)
		if err != nil || f <= 0 {
			return s, fmt.Errorf("annotation %s is %q (expected a positive number of requests per second)", AnnoQPS, v)
		}
		s.QPS = float32(f)
	}
	if v, ok := annotations[AnnoBurst]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n <= 0 {
			return s, fmt.Errorf("annotation %s is %q (expected a positive integer)", AnnoBurst, v)
		}
		s.Burst = n
	}
	if v, ok := annotations[AnnoTimeout]; ok {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return s, fmt.Errorf("annotation %s is %q (expected a positive duration such as 20s)", AnnoTimeout, v)
		}
		s.Timeout = d
	}
	return s, nil
}

// settingsAnnotations is the inverse of settingsFrom for non-zero fields.
func settingsAnnotations(s ClientSettings) map[string]string {
	out := map[string]string{}
	if s.QPS > 0 {
		out[AnnoQPS] = strconv.FormatFloat(float64(s.QPS), 'g', -1, 32)
	}
	if s.Burst > 0 {
		out[AnnoBurst] = strconv.Itoa(s.Burst)
	}
	if s.Timeout > 0 {
		out[AnnoTimeout] = s.Timeout.String()
	}
	return out
}

// fingerprint hashes what the REST config is built from.
func fingerprint(s *corev1.Secret, settings ClientSettings) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%g\x00%d\x00%d\x00", s.Labels[v1beta1.LabelClusterCredType], settings.QPS, settings.Burst, settings.Timeout)
	for _, k := range []string{KeyEndpoint, KeyCA, KeyCert, KeyKey, KeyToken} {
		fmt.Fprintf(h, "%s\x00%d\x00", k, len(s.Data[k]))
		h.Write(s.Data[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// clusterLabels returns labels without the credential-type label.
func clusterLabels(labels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		if k != v1beta1.LabelClusterCredType {
			out[k] = v
		}
	}
	return out
}

// ValidateName checks a cluster name: a DNS-1123 subdomain (it names a
// Secret) other than the hub's reserved "local".
func ValidateName(name string) error {
	if name == v1beta1.ClusterLocal {
		return invalidf("cluster name %q is reserved for the hub", name)
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return invalidf("cluster name %q is invalid: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// ValidateLabels checks cluster labels: valid Kubernetes label keys and
// values, and not the credential-type label (the registry sets it).
func ValidateLabels(labels map[string]string) error {
	for _, k := range sortedKeys(labels) {
		if k == v1beta1.LabelClusterCredType {
			return invalidf("label %s is set by oamflow from the credentials and cannot be given", k)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return invalidf("label key %q is invalid: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(labels[k]); len(errs) > 0 {
			return invalidf("label %s value %q is invalid: %s", k, labels[k], strings.Join(errs, "; "))
		}
	}
	return nil
}

// NewClusterSecret builds the Secret registering cluster name in namespace
// with cred, labels (validated by ValidateLabels) and, for its non-zero
// fields, settings as annotations. The Secret is checked with the same
// parser the registry uses, so a Secret it returns is usable; errors name
// the field and never contain credential data.
func NewClusterSecret(namespace, name string, cred Credentials, labels map[string]string, settings ClientSettings) (*corev1.Secret, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if err := ValidateLabels(labels); err != nil {
		return nil, err
	}
	hasCert := len(cred.CertData) > 0 || len(cred.KeyData) > 0
	if hasCert && cred.Token != "" {
		return nil, invalidf("credentials hold both a client certificate and a token; give one")
	}
	if !hasCert && cred.Token == "" {
		return nil, invalidf("credentials hold neither a client certificate and key nor a token (other kubeconfig authentication, such as exec plugins, cannot be stored)")
	}
	l := map[string]string{}
	for k, v := range labels {
		l[k] = v
	}
	l[v1beta1.LabelClusterCredType] = string(cred.Type())
	data := map[string][]byte{KeyEndpoint: []byte(cred.Endpoint)}
	if len(cred.CAData) > 0 {
		data[KeyCA] = bytes.Clone(cred.CAData)
	}
	if hasCert {
		data[KeyCert], data[KeyKey] = bytes.Clone(cred.CertData), bytes.Clone(cred.KeyData)
	} else {
		data[KeyToken] = []byte(cred.Token)
	}
	s := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: namespace,
			Labels:    l,
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
	if a := settingsAnnotations(settings); len(a) > 0 {
		s.Annotations = a
	}
	if p := parseSecret(s, DefaultClientSettings()); p.cluster.Err != nil {
		var me *MisconfiguredError
		if errors.As(p.cluster.Err, &me) {
			return nil, invalidf("credentials for cluster %q: %s", name, me.Reason)
		}
		return nil, p.cluster.Err
	}
	return s, nil
}
