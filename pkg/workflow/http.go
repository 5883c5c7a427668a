package workflow

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	cuexruntime "github.com/kubevela/pkg/cue/cuex/runtime"
	"github.com/kubevela/workflow/pkg/cue/model"
	wfhttp "github.com/kubevela/workflow/pkg/providers/http"
	"github.com/kubevela/workflow/pkg/providers/legacy/http/ratelimiter"
	providertypes "github.com/kubevela/workflow/pkg/providers/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/pkg/egress"
	"github.com/oamflow/oamflow/pkg/errclass"
)

// httpDoer makes the requests of vela/http's #Do and the legacy op.#HTTPDo
// (KubeVela's request, webhook and notification steps), with the same
// parameters and results as kubevela/workflow's http provider, which it
// replaces: that one uses the process's default transport, reads whole
// bodies and reads tls_config Secrets of any namespace. This one
//   - connects only where the outbound policy allows (package egress:
//     not to loopback, link-local or the controller's own listeners unless
//     allow-listed), checked on every connection, redirects included;
//   - takes request.timeout (default 3 s, as the library), at most the
//     policy's MaxTimeout, and reads at most MaxResponseBytes of the body;
//   - reads the tls_config Secret only in the Application's namespace,
//     through the Application's client; a Secret that is missing or does
//     not hold a valid CA or key pair fails the step (the library silently
//     used the default transport).
//
// A refused target, a body over the limit and a tls_config Secret that
// cannot be used fail the step for good, naming the request; other errors
// (a target that does not answer) are returned and the step retried. The
// URL appears in errors without its path, query and user information,
// which often carry tokens (Slack and DingTalk webhook URLs).
type httpDoer struct {
	policy  *egress.Policy
	limiter *ratelimiter.RateLimiter
}

// defaultHTTPTimeout is request.timeout's default, as kubevela/workflow's.
const defaultHTTPTimeout = 3 * time.Second

func newHTTPDoer(p *egress.Policy) *httpDoer {
	if p == nil {
		p = egress.Default()
	}
	return &httpDoer{policy: p, limiter: ratelimiter.NewRateLimiter(128)}
}

// provider is vela/http's "do".
func (h *httpDoer) provider() cuexruntime.ProviderFn {
	return providertypes.GenericProviderFn[wfhttp.RequestVars, wfhttp.DoReturns](
		func(ctx context.Context, p *wfhttp.DoParams) (*wfhttp.DoReturns, error) {
			r, err := h.do(ctx, p.Params, p.RuntimeParams)
			if err != nil {
				return nil, err
			}
			return &wfhttp.DoReturns{Returns: *r}, nil
		})
}

// legacyProvider is op.#HTTPDo's: the response under `response`, as
// KubeVela's classic package documents (`resp.response.body`). (The
// library's legacy provider puts it at the top of the action, where no
// classic step reads it. The action's placeholder `response` is left out
// of what the provider decodes; see withoutPlaceholders.)
func (h *httpDoer) legacyProvider() cuexruntime.ProviderFn {
	return providertypes.LegacyGenericProviderFn[wfhttp.RequestVars, legacyHTTPReturns](
		func(ctx context.Context, p *providertypes.LegacyParams[wfhttp.RequestVars]) (*legacyHTTPReturns, error) {
			r, err := h.do(ctx, p.Params, p.RuntimeParams)
			if err != nil {
				return nil, err
			}
			return &legacyHTTPReturns{Response: *r}, nil
		})
}

// legacyHTTPReturns is what op.#HTTPDo (and #HTTPGet, #HTTPPost, …) fill
// in.
type legacyHTTPReturns struct {
	Response wfhttp.ResponseVars `json:"response"`
}

func (h *httpDoer) do(ctx context.Context, v wfhttp.RequestVars, rt providertypes.RuntimeParams) (*wfhttp.ResponseVars, error) {
	what := strings.TrimSpace(v.Method + " " + redactedURL(v.URL))
	out, err := h.request(ctx, v, rt, what)
	if err != nil && errclass.IsTerminal(err) && rt.Action != nil {
		return nil, fail(ctx, rt, err.Error())
	}
	return out, err
}

func (h *httpDoer) request(ctx context.Context, v wfhttp.RequestVars, rt providertypes.RuntimeParams, what string) (*wfhttp.ResponseVars, error) {
	var (
		timeout         time.Duration
		body            string
		header, trailer http.Header
	)
	if r := v.Request; r != nil {
		if r.Timeout != "" {
			d, err := time.ParseDuration(r.Timeout)
			if err != nil {
				return nil, errclass.Terminal(fmt.Errorf("%s: request.timeout %q: %w", what, r.Timeout, err))
			}
			timeout = d
		}
		if rl := r.RateLimiter; rl != nil {
			period, err := time.ParseDuration(rl.Period)
			if err != nil {
				return nil, errclass.Terminal(fmt.Errorf("%s: request.ratelimiter.period %q: %w", what, rl.Period, err))
			}
			if !h.limiter.Allow(v.Method+"-"+strings.Split(v.URL, "?")[0], rl.Limit, period) {
				return nil, fmt.Errorf("%s: request exceeds the rate limiter", what)
			}
		}
		body = r.Body
		header, trailer = headers(r.Header), headers(r.Trailer)
	}
	if len(header) == 0 {
		header = http.Header{"Content-Type": []string{"application/json"}}
	}
	if key := idempotencyKey(rt, v.Method, v.URL, body); key != "" && header.Get(IdempotencyKeyHeader) == "" {
		header.Set(IdempotencyKeyHeader, key)
	}
	var tc *tls.Config
	if v.TLSConfig != nil {
		var err error
		if tc, err = tlsConfigFromSecret(ctx, rt, v.TLSConfig); err != nil {
			return nil, errclass.Terminal(fmt.Errorf("%s: %w", what, err))
		}
	}
	hc := h.policy.Client(tc, timeout, defaultHTTPTimeout)
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, v.Method, v.URL, strings.NewReader(body))
	if err != nil {
		return nil, errclass.Terminal(fmt.Errorf("%s: %w", what, unwrapURLError(err)))
	}
	req.Header, req.Trailer = header, trailer
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, unwrapURLError(err))
	}
	defer resp.Body.Close()
	b, err := h.policy.ReadBody(resp.Body, what)
	if err != nil {
		return nil, err
	}
	return &wfhttp.ResponseVars{Body: string(b), Header: resp.Header, Trailer: resp.Trailer, StatusCode: resp.StatusCode}, nil
}

// IdempotencyKeyHeader is the header (IETF draft "The Idempotency-Key
// HTTP Header Field") oamflow adds to the requests of workflow steps that
// are not GET, HEAD or OPTIONS, unless the step sets it itself.
const IdempotencyKeyHeader = "Idempotency-Key"

// idempotencyKey identifies one execution of a request by a workflow step,
// the same on every repeat of that execution: the request's method, URL
// and body, the step's name, the revision it runs for and the
// Application's UID (a new Application of the same name makes other
// keys). A request is made again when its result could not be recorded
// (the controller was killed, or the write of the workflow state failed,
// after the request and before the record): the receiver can tell the
// repeat by the key. "" when the request is not a workflow step's or
// only reads.
func idempotencyKey(rt providertypes.RuntimeParams, method, url, body string) string {
	switch strings.ToUpper(method) {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions:
		return ""
	}
	if rt.ProcessContext == nil || rt.WorkflowContext == nil || rt.WorkflowContext.GetStore() == nil {
		return ""
	}
	var uid string
	for _, o := range rt.WorkflowContext.GetStore().OwnerReferences {
		if o.Kind == "Application" {
			uid = string(o.UID)
		}
	}
	rev, step := rt.ProcessContext.GetData("appRevision"), rt.ProcessContext.GetData(model.ContextStepName)
	if uid == "" || rev == nil || step == nil {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{uid, fmt.Sprint(rev), fmt.Sprint(step), strings.ToUpper(method), url, body}, "\x00")))
	return hex.EncodeToString(sum[:16])
}

func headers(m map[string]string) http.Header {
	h := http.Header{}
	for k, v := range m {
		h.Add(k, v)
	}
	return h
}

// redactedURL is u without user information, path and query (which may
// carry tokens): scheme://host/….
func redactedURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return "<invalid URL>"
	}
	s := p.Scheme + "://" + p.Host
	if p.Path != "" && p.Path != "/" || p.RawQuery != "" {
		s += "/…"
	}
	return s
}

// unwrapURLError drops net/http's `Get "<full URL>":` prefix (the URL is
// named, redacted, by the caller).
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// tlsConfigFromSecret reads the TLS settings of tls_config from a Secret of
// the Application's namespace: ca.crt, client.crt and client.key, PEM or
// (as kubevela/workflow reads them) base64-encoded PEM.
func tlsConfigFromSecret(ctx context.Context, rt providertypes.RuntimeParams, c *wfhttp.TLSConfig) (*tls.Config, error) {
	appNS := ""
	if rt.ProcessContext != nil {
		if ns := rt.ProcessContext.GetData(model.ContextNamespace); ns != nil {
			appNS = fmt.Sprint(ns)
		}
	}
	ns, name := c.Namespace, c.Secret
	if i := strings.Index(name, "/"); i >= 0 {
		if ns != "" && ns != name[:i] {
			return nil, fmt.Errorf("tls_config: secret %q and namespace %q disagree", c.Secret, c.Namespace)
		}
		ns, name = name[:i], name[i+1:]
	}
	if ns == "" {
		ns = appNS
	}
	switch {
	case name == "":
		return nil, errors.New("tls_config.secret: a Secret name is required")
	case appNS == "":
		return nil, errors.New("tls_config: the Application's namespace is unknown")
	case ns != appNS:
		return nil, fmt.Errorf("tls_config: Secret %s/%s refused: only Secrets of the Application's namespace %q may be used", ns, name, appNS)
	case rt.KubeClient == nil:
		return nil, errors.New("tls_config: no client to read the Secret with")
	}
	var s corev1.Secret
	if err := rt.KubeClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("tls_config: Secret %s/%s not found", ns, name)
		}
		return nil, fmt.Errorf("tls_config: reading Secret %s/%s: %w", ns, name, err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	if ca := pemData(s.Data["ca.crt"]); len(ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("tls_config: Secret %s/%s: ca.crt holds no PEM certificate", ns, name)
		}
		cfg.RootCAs = pool
	}
	crt, key := pemData(s.Data["client.crt"]), pemData(s.Data["client.key"])
	if len(crt) > 0 || len(key) > 0 {
		pair, err := tls.X509KeyPair(crt, key)
		if err != nil {
			return nil, fmt.Errorf("tls_config: Secret %s/%s: client.crt and client.key are not a valid key pair", ns, name)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// pemData is b, base64-decoded when it is base64 (kubevela/workflow's
// format) rather than PEM.
func pemData(b []byte) []byte {
	if len(b) == 0 || strings.HasPrefix(strings.TrimSpace(string(b)), "-----") {
		return b
	}
	if d, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b))); err == nil {
		return d
	}
	return b
}
