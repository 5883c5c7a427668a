package manager_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestSecureMetrics runs the controller as the chart's ServiceAccount with
// the chart's RBAC and --metrics-secure: /metrics answers over HTTPS only,
// 401 without a token, 403 to a ServiceAccount not bound to the chart's
// metrics-reader ClusterRole, and the metrics to one that is.
func TestSecureMetrics(t *testing.T) {
	c := env.Client
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "oamflow-system"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	for _, obj := range chartObjects(t, "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding") {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err, "%s %s", obj.GetKind(), obj.GetName())
		}
	}
	for _, name := range []string{"scraper", "nobody"} {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
		if err := c.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "scraper-metrics"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "oamflow-metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "scraper", Namespace: "default"}}}
	if err := c.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	token := func(sa string) string {
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		require.NoError(t, err)
		return tr.Status.Token
	}

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:oamflow-system:oamflow-controller"}
	o := testOptions()
	o.MetricsAddr = addr(freePort(t))
	o.MetricsSecure = true
	startManagerAs(t, cfg, o)

	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the endpoint's certificate is self-signed
	}}
	get := func(bearer string) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+o.MetricsAddr+"/metrics", nil)
		require.NoError(t, err)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	require.Eventually(t, func() bool { _, err := get(""); return err == nil }, 30*time.Second, 200*time.Millisecond, "the endpoint serves HTTPS")
	for _, tc := range []struct {
		reason string
		token  string
		want   int
	}{
		{"no token", "", http.StatusUnauthorized},
		// (A token the API server does not know is answered 500
		// "Authentication failed" by controller-runtime's filter.)
		{"a ServiceAccount not allowed to get /metrics", token("nobody"), http.StatusForbidden},
		{"a ServiceAccount bound to the chart's metrics-reader", token("scraper"), http.StatusOK},
	} {
		code, err := get(tc.token)
		require.NoError(t, err, tc.reason)
		assert.Equal(t, tc.want, code, tc.reason)
	}
	resp, err := http.Get("http://" + o.MetricsAddr + "/metrics") //nolint:noctx // a test against a local server
	if err == nil {
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "plain HTTP is not served")
	}
}
