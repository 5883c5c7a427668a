package multicluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/placement"
)

// TestClientsReachTheRightCluster: the hub's names give the hub client, a
// joined member's client writes into the member and nowhere else.
func TestClientsReachTheRightCluster(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t)
	join(t, r, "member-a", map[string]string{"region": "east"})

	for _, name := range []string{"", "local"} {
		c, cfg, err := r.Clients(ctx, name)
		require.NoError(t, err)
		assert.Same(t, hub.Client, c, "%q is the hub", name)
		assert.Equal(t, hub.Config.Host, cfg.Host)
	}

	c, cfg, err := r.Clients(ctx, "member-a")
	require.NoError(t, err)
	assert.Equal(t, strings.TrimPrefix(member.Config.Host, "https://"), strings.TrimPrefix(cfg.Host, "https://"))
	assert.Equal(t, DefaultClientSettings().QPS, cfg.QPS)
	assert.Equal(t, DefaultClientSettings().Timeout, cfg.Timeout)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "placed-" + r.namespace, Namespace: "default"}, Data: map[string]string{"k": "v"}}
	require.NoError(t, c.Create(ctx, cm))
	t.Cleanup(func() { _ = member.Client.Delete(ctx, cm) })

	require.NoError(t, member.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}), "the ConfigMap is in the member")
	err = hub.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
	assert.True(t, apierrors.IsNotFound(err), "and not in the hub: %v", err)

	cfg.QPS = 1
	_, cfg2, err := r.Clients(ctx, "member-a")
	require.NoError(t, err)
	assert.Equal(t, DefaultClientSettings().QPS, cfg2.QPS, "callers get a copy of the config")
}

func TestClientsUnknownCluster(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t)
	pki := newPKI(t)
	// A Secret without the credential-type label is not a cluster.
	putSecret(t, r, clusterSecret("plain", pki, withLabel(v1beta1.LabelClusterCredType, "")))

	cases := []struct{ reason, name string }{
		{"never registered", "nowhere"},
		{"a Secret that is not a cluster registration", "plain"},
		{"not even a valid name", "Bad_Name"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			_, _, err := r.Clients(ctx, tc.name)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrClusterNotFound))
			assert.Contains(t, err.Error(), fmt.Sprintf("cluster %q not registered", tc.name))
			var nf *ClusterNotFoundError
			require.ErrorAs(t, err, &nf)
			assert.Equal(t, r.Namespace(), nf.Namespace)
		})
	}
}

// TestClientCacheInvalidation: the client is reused while the Secret's
// resourceVersion stays, kept when only labels change, rebuilt when the
// credentials or settings change and dropped when the Secret goes.
func TestClientCacheInvalidation(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t)
	join(t, r, "member-a", nil)

	c1, err := r.Client(ctx, "member-a")
	require.NoError(t, err)
	c2, err := r.Client(ctx, "member-a")
	require.NoError(t, err)
	assert.Same(t, c1, c2, "an unchanged Secret reuses the client")
	_, err = r.ClusterVersion(ctx, "member-a")
	require.NoError(t, err)

	_, err = r.UpdateLabels(ctx, "member-a", map[string]string{"region": "west"}, nil)
	require.NoError(t, err)
	c3, err := r.Client(ctx, "member-a")
	require.NoError(t, err)
	assert.Same(t, c1, c3, "a label change keeps the client")
	r.mu.RLock()
	e := r.entries["member-a"]
	r.mu.RUnlock()
	assert.Equal(t, map[string]string{"region": "west"}, e.cluster.Labels, "but the entry sees the new labels")
	assert.NotNil(t, e.version.v, "and keeps the version read before")

	s := &corev1.Secret{}
	require.NoError(t, hub.Client.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: "member-a"}, s))
	s.Annotations = map[string]string{AnnoQPS: "3", AnnoTimeout: "2s"}
	require.NoError(t, hub.Client.Update(ctx, s))
	c4, cfg, err := r.Clients(ctx, "member-a")
	require.NoError(t, err)
	assert.NotSame(t, c1, c4, "new settings rebuild the client")
	assert.Equal(t, float32(3), cfg.QPS)
	assert.Equal(t, 2*time.Second, cfg.Timeout)
	require.NoError(t, c4.List(ctx, &corev1.NamespaceList{}), "the rebuilt client works")

	// Breaking the Secret makes the cluster fail; fixing it recovers.
	s = &corev1.Secret{}
	require.NoError(t, hub.Client.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: "member-a"}, s))
	goodKey := s.Data[KeyKey]
	delete(s.Data, KeyKey)
	require.NoError(t, hub.Client.Update(ctx, s))
	_, err = r.Client(ctx, "member-a")
	require.ErrorIs(t, err, ErrClusterMisconfigured)
	s.Data[KeyKey] = goodKey
	require.NoError(t, hub.Client.Update(ctx, s))
	c5, err := r.Client(ctx, "member-a")
	require.NoError(t, err)
	require.NoError(t, c5.List(ctx, &corev1.NamespaceList{}))

	require.NoError(t, hub.Client.Delete(ctx, s))
	_, err = r.Client(ctx, "member-a")
	require.ErrorIs(t, err, ErrClusterNotFound, "a deleted Secret unregisters the cluster")
	r.mu.RLock()
	assert.NotContains(t, r.entries, "member-a", "and its client is dropped")
	r.mu.RUnlock()
}

// TestClientsConcurrent: many callers on a changing Secret always get a
// working client (run with -race).
func TestClientsConcurrent(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t)
	join(t, r, "member-a", nil)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				if _, _, err := r.Clients(ctx, "member-a"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; i < 5; i++ {
		_, err := r.UpdateLabels(ctx, "member-a", map[string]string{"round": fmt.Sprint(i)}, nil)
		require.NoError(t, err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestMalformedSecret: a broken registration makes that cluster unhealthy
// with the reason; the others keep working; no credential is shown.
func TestMalformedSecret(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t)
	join(t, r, "good", map[string]string{"env": "prod"})
	pki := newPKI(t)
	bad := clusterSecret("bad", pki, tokenSecret(testToken), withData(KeyEndpoint, []byte("ftp://example.com")), withLabel("env", "prod"))
	putSecret(t, r, bad)

	_, _, err := r.Clients(ctx, "bad")
	require.ErrorIs(t, err, ErrClusterMisconfigured)
	assert.Contains(t, err.Error(), `cluster "bad" (Secret `+r.namespace+`/bad) is misconfigured: data "endpoint": scheme "ftp" is not https`)
	assert.NotContains(t, err.Error(), testToken)

	c, err := r.Client(ctx, "good")
	require.NoError(t, err)
	require.NoError(t, c.List(ctx, &corev1.NamespaceList{}), "the other cluster is unaffected")

	list, err := r.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 3)
	assert.Equal(t, []string{"local", "bad", "good"}, []string{list[0].Name, list[1].Name, list[2].Name})
	assert.Equal(t, CredentialInternal, list[0].CredentialType)
	assert.Error(t, list[1].Err)
	assert.NoError(t, list[2].Err)
	assert.Equal(t, map[string]string{"env": "prod"}, list[2].Labels)

	h := r.Health(ctx, "bad")
	assert.False(t, h.Reachable)
	assert.Contains(t, h.Message, "is misconfigured")
	assert.NotContains(t, h.Message, testToken)
	assert.True(t, r.Health(ctx, "good").Reachable)

	names, err := r.SelectClusters(ctx, map[string]string{"env": "prod"})
	require.NoError(t, err)
	assert.Equal(t, []string{"bad", "good"}, names, "a malformed cluster is still selected, so that its failure is reported")
}

// TestTokenCredentials joins the member with a ServiceAccount token.
func TestTokenCredentials(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t)
	kube, err := kubernetes.NewForConfig(member.Config)
	require.NoError(t, err)
	name := "joiner-" + fmt.Sprint(nsCounter.Add(1))
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	require.NoError(t, member.Client.Create(ctx, sa))
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "default"}},
	}
	require.NoError(t, member.Client.Create(ctx, crb))
	tr, err := kube.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)

	cred := memberCredentials(t)
	cred.CertData, cred.KeyData, cred.Token = nil, nil, tr.Status.Token
	if !strings.HasPrefix(cred.Endpoint, "https://") {
		cred.Endpoint = "https://" + cred.Endpoint
	}
	got, err := r.Join(ctx, "by-token", cred, JoinOptions{})
	require.NoError(t, err)
	assert.Equal(t, CredentialToken, got.CredentialType)

	c, err := r.Client(ctx, "by-token")
	require.NoError(t, err)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	require.NoError(t, c.Create(ctx, cm))
	require.NoError(t, member.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}))

	// A wrong token: the cluster answers 401, reported without the token.
	wrong := "eyJhbGciOiJSUzI1NiJ9.d3JvbmctdG9rZW4tdmFsdWU.wrongsig"
	cred.Token = wrong
	_, err = r.Join(ctx, "by-token", cred, JoinOptions{Force: true})
	require.NoError(t, err)
	h := r.Health(ctx, "by-token")
	assert.False(t, h.Reachable)
	assert.Contains(t, h.Message, "the server has asked for the client to provide credentials")
	assert.NotContains(t, h.Message, wrong)
	assert.NotContains(t, h.Message, tr.Status.Token)
}

func TestHealthAndVersion(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t, WithClientSettings(ClientSettings{Timeout: 2 * time.Second}))
	join(t, r, "member-a", nil)
	pki := newPKI(t)
	// Nothing listens on port 1: connection refused, quickly.
	putSecret(t, r, clusterSecret("gone", pki, withData(KeyEndpoint, []byte("https://127.0.0.1:1"))))

	for _, name := range []string{"local", "member-a"} {
		h := r.Health(ctx, name)
		assert.True(t, h.Reachable, "%s: %s", name, h.Message)
		assert.Equal(t, "v1.34.2", h.Version, name)
		v, err := r.ClusterVersion(ctx, name)
		require.NoError(t, err)
		assert.Equal(t, 1, v.Major)
		assert.Equal(t, 34, v.Minor)
		assert.Equal(t, "v1.34.2", v.GitVersion)
	}

	start := time.Now()
	h := r.Health(ctx, "gone")
	assert.False(t, h.Reachable)
	assert.Contains(t, h.Message, `cluster "gone"`)
	assert.Contains(t, h.Message, "127.0.0.1:1")
	assert.Less(t, time.Since(start), 5*time.Second, "an unreachable cluster fails within its timeout")
	_, err := r.ClusterVersion(ctx, "gone")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `reading the version of cluster "gone"`)

	h = r.Health(ctx, "nowhere")
	assert.False(t, h.Reachable)
	assert.Contains(t, h.Message, "not registered")
}

func TestResolvePlacements(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t)
	join(t, r, "east-1", map[string]string{"region": "east", "env": "prod"})
	join(t, r, "east-2", map[string]string{"region": "east", "env": "dev"})
	join(t, r, "west-1", map[string]string{"region": "west", "env": "prod"})

	cases := []struct {
		reason  string
		props   map[string]any
		want    []placement.Placement
		wantErr string
	}{
		{
			reason: "clusters by name, in order",
			props:  map[string]any{"clusters": []any{"west-1", "east-1"}},
			want:   []placement.Placement{{Cluster: "west-1"}, {Cluster: "east-1"}},
		},
		{
			reason: "the hub by name",
			props:  map[string]any{"clusters": []any{"local"}, "namespace": "prod"},
			want:   []placement.Placement{{Cluster: "local", Namespace: "prod"}},
		},
		{
			reason: "by labels, sorted by name",
			props:  map[string]any{"clusterLabelSelector": map[string]any{"region": "east"}},
			want:   []placement.Placement{{Cluster: "east-1"}, {Cluster: "east-2"}},
		},
		{
			reason: "every label must match",
			props:  map[string]any{"clusterLabelSelector": map[string]any{"region": "east", "env": "prod"}, "namespace": "apps"},
			want:   []placement.Placement{{Cluster: "east-1", Namespace: "apps"}},
		},
		{
			reason: "an empty selector selects every cluster, the hub first (as in KubeVela)",
			props:  map[string]any{"clusterLabelSelector": map[string]any{}, "namespace": "apps"},
			want:   []placement.Placement{{Cluster: "local", Namespace: "apps"}, {Cluster: "east-1", Namespace: "apps"}, {Cluster: "east-2", Namespace: "apps"}, {Cluster: "west-1", Namespace: "apps"}},
		},
		{
			reason: "so does the deprecated clusterSelector",
			props:  map[string]any{"clusterSelector": map[string]any{}},
			want:   []placement.Placement{{Cluster: "local"}, {Cluster: "east-1"}, {Cluster: "east-2"}, {Cluster: "west-1"}},
		},
		{
			reason: "the deprecated clusterSelector",
			props:  map[string]any{"clusterSelector": map[string]any{"region": "west"}},
			want:   []placement.Placement{{Cluster: "west-1"}},
		},
		{
			reason: "names and labels together, without duplicates",
			props:  map[string]any{"clusters": []any{"east-2"}, "clusterLabelSelector": map[string]any{"env": "dev"}},
			want:   []placement.Placement{{Cluster: "east-2"}},
		},
		{
			reason: "a namespace-only topology is the hub in that namespace",
			props:  map[string]any{"namespace": "team-a"},
			want:   []placement.Placement{{Cluster: "local", Namespace: "team-a"}},
		},
		{
			reason:  "an empty selection is an error naming the policy",
			props:   map[string]any{"clusterLabelSelector": map[string]any{"region": "north"}},
			wantErr: `policy "topo": no clusters match {region=north} (set allowEmpty: true to allow that)`,
		},
		{
			reason: "unless allowEmpty",
			props:  map[string]any{"clusterLabelSelector": map[string]any{"region": "north"}, "allowEmpty": true},
			want:   []placement.Placement{},
		},
		{
			reason:  "an unknown cluster is named",
			props:   map[string]any{"clusters": []any{"east-1", "mars", "venus"}},
			wantErr: `topology policy "topo" properties.clusters: clusters "mars", "venus" not registered`,
		},
		{
			reason:  "clusters must be a list",
			props:   map[string]any{"clusters": "east-1"},
			wantErr: `topology policy "topo": properties.clusters: expected a list of cluster names, got a string`,
		},
		{
			reason:  "cluster names must be strings",
			props:   map[string]any{"clusters": []any{"east-1", float64(3)}},
			wantErr: `properties.clusters[1]: expected a cluster name (non-empty string), got a number`,
		},
		{
			reason:  "the selector must be a map",
			props:   map[string]any{"clusterLabelSelector": []any{"region=east"}},
			wantErr: `properties.clusterLabelSelector: expected a map of label keys to values, got a list`,
		},
		{
			reason:  "selector values must be scalars",
			props:   map[string]any{"clusterLabelSelector": map[string]any{"region": map[string]any{}}},
			wantErr: `properties.clusterLabelSelector.region: expected a label value (string), got an object`,
		},
		{
			reason:  "an invalid label value in the selector",
			props:   map[string]any{"clusterLabelSelector": map[string]any{"region": "east west"}},
			wantErr: `policy "topo": selecting clusters {region=east west}`,
		},
		{
			reason:  "namespace must be a string",
			props:   map[string]any{"namespace": true},
			wantErr: `properties.namespace: expected a string, got a boolean`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			got, err := r.ResolvePlacements(ctx, "topo", tc.props)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}

	err := r.ValidateClusters(ctx, []string{"", "local", "east-1", "pluto"})
	require.ErrorIs(t, err, ErrClusterNotFound)
	assert.Contains(t, err.Error(), `cluster "pluto" not registered`)
}

// TestTransportWrapper: WithTransportWrapper wraps every member client's
// transport (the fault suite's seam), and the hub's is left as given.
func TestTransportWrapper(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	r := newRegistry(t, WithTransportWrapper(func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			calls.Add(1)
			return next.RoundTrip(req)
		})
	}))
	join(t, r, "wrapped", nil)
	c, _, err := r.Clients(ctx, "wrapped")
	require.NoError(t, err)
	require.NoError(t, c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("default")))
	assert.Positive(t, calls.Load(), "the member's requests went through the wrapper")

	before := calls.Load()
	hubClient, _, err := r.Clients(ctx, "local")
	require.NoError(t, err)
	require.NoError(t, hubClient.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("default")))
	assert.Equal(t, before, calls.Load(), "the hub's client is the one given")
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
