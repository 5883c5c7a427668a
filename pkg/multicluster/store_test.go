package multicluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

func TestJoin(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t)
	pki := newPKI(t)
	cred := Credentials{Endpoint: "https://10.1.2.3:6443", CAData: pki.CA, CertData: pki.Cert, KeyData: pki.Key}
	putSecret(t, r, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"}, Data: map[string][]byte{"password": []byte("x")}})

	got, err := r.Join(ctx, "east", cred, JoinOptions{Labels: map[string]string{"region": "east"}, Settings: ClientSettings{Burst: 7}})
	require.NoError(t, err)
	assert.Equal(t, Cluster{Name: "east", Endpoint: cred.Endpoint, CredentialType: CredentialX509, Labels: map[string]string{"region": "east"},
		Settings: ClientSettings{QPS: 50, Burst: 7, Timeout: DefaultClientSettings().Timeout}}, got)

	s := &corev1.Secret{}
	require.NoError(t, hub.Client.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: "east"}, s))
	assert.Equal(t, "X509Certificate", s.Labels[v1beta1.LabelClusterCredType])
	assert.Equal(t, "east", s.Labels["region"])
	assert.Equal(t, pki.Key, s.Data[KeyKey])

	cases := []struct {
		reason  string
		name    string
		opts    JoinOptions
		wantErr string
		is      error
	}{
		{reason: "a taken name is refused", name: "east", wantErr: `cluster "east" is already joined (endpoint https://10.1.2.3:6443): cluster already registered; give --force to replace it`, is: ErrClusterExists},
		{reason: "the hub's name is refused even with force", name: "local", opts: JoinOptions{Force: true}, wantErr: `"local" is reserved for the hub`},
		{reason: "a Secret that is not a registration is never replaced", name: "someone-elses", opts: JoinOptions{Force: true}, wantErr: "exists and is not a cluster registration"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			_, err := r.Join(ctx, tc.name, cred, tc.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
		})
	}

	t.Run("force replaces the registration", func(t *testing.T) {
		token := Credentials{Endpoint: "https://10.9.9.9:6443", Token: testToken}
		got, err := r.Join(ctx, "east", token, JoinOptions{Force: true, Labels: map[string]string{"region": "west"}})
		require.NoError(t, err)
		assert.Equal(t, CredentialToken, got.CredentialType)
		s := &corev1.Secret{}
		require.NoError(t, hub.Client.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: "east"}, s))
		assert.Equal(t, map[string]string{v1beta1.LabelClusterCredType: "ServiceAccountToken", "region": "west"}, s.Labels)
		assert.NotContains(t, s.Data, KeyKey, "the old key is gone")
		assert.Nil(t, s.Annotations, "and so are the old settings")
	})
}

func TestUpdateLabels(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t)
	join(t, r, "east", map[string]string{"region": "east", "tier": "1"})

	got, err := r.UpdateLabels(ctx, "east", map[string]string{"env": "prod", "tier": "2"}, []string{"region"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"env": "prod", "tier": "2"}, got)
	names, err := r.SelectClusters(ctx, map[string]string{"env": "prod"})
	require.NoError(t, err)
	assert.Equal(t, []string{"east"}, names)

	cases := []struct {
		reason  string
		name    string
		set     map[string]string
		remove  []string
		wantErr string
		is      error
	}{
		{reason: "unknown cluster", name: "west", set: map[string]string{"a": "b"}, wantErr: `cluster "west" not registered`, is: ErrClusterNotFound},
		{reason: "the hub", name: "local", set: map[string]string{"a": "b"}, wantErr: "has no labels to change"},
		{reason: "the credential type cannot be set", name: "east", set: map[string]string{v1beta1.LabelClusterCredType: "x"}, wantErr: "set by oamflow"},
		{reason: "the credential type cannot be removed", name: "east", remove: []string{v1beta1.LabelClusterCredType}, wantErr: "cannot be removed"},
		{reason: "invalid value", name: "east", set: map[string]string{"a": "b c"}, wantErr: `label a value "b c" is invalid`},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			_, err := r.UpdateLabels(ctx, tc.name, tc.set, tc.remove)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
		})
	}
}

// TestDetach: refused while an Application's status or a ResourceTracker
// mentions the cluster, unless forced.
func TestDetach(t *testing.T) {
	newRegistry(t) // skips without an API server
	ctx := context.Background()
	appNS := fmt.Sprintf("apps-%d", nsCounter.Add(1))
	require.NoError(t, hub.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appNS}}))

	app := func(name string, status common.AppStatus) *v1beta1.Application {
		a := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: appNS}}
		a.Spec.Components = []common.ApplicationComponent{{Name: "c", Type: "webservice"}}
		require.NoError(t, hub.Client.Create(ctx, a))
		a.Status = status
		require.NoError(t, hub.Client.Status().Update(ctx, a))
		t.Cleanup(func() { _ = hub.Client.Delete(ctx, a) })
		return a
	}
	rt := func(name, cluster string, deleted bool) *v1beta1.ResourceTracker {
		data, _ := json.Marshal(map[string]any{"kind": "ConfigMap"})
		o := &v1beta1.ResourceTracker{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1beta1.ResourceTrackerSpec{
			Type: v1beta1.ResourceTrackerTypeVersioned, ApplicationGeneration: 1,
			ManagedResources: []v1beta1.ManagedResource{{
				ClusterObjectReference: common.ClusterObjectReference{Cluster: cluster, APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "x"},
				Deleted:                deleted,
				Data:                   &runtime.RawExtension{Raw: data},
			}},
		}}
		require.NoError(t, hub.Client.Create(ctx, o))
		t.Cleanup(func() { _ = hub.Client.Delete(ctx, o) })
		return o
	}

	suffix := appNS
	servicesIn := app("web", common.AppStatus{Services: []common.ApplicationComponentStatus{{Name: "c", Cluster: "svc-" + suffix, Healthy: true}}})
	app("api", common.AppStatus{AppliedResources: []common.ClusterObjectReference{{Cluster: "applied-" + suffix, Kind: "ConfigMap", Name: "x"}}})
	app("elsewhere", common.AppStatus{Services: []common.ApplicationComponentStatus{{Name: "c", Cluster: "other", Healthy: true}}})
	rt("web-v1-"+suffix, "tracked-"+suffix, false)
	rt("web-v2-"+suffix, "gced-"+suffix, true)

	cases := []struct {
		reason    string
		cluster   string
		wantUsers []string
	}{
		{reason: "status.services names it", cluster: "svc-" + suffix, wantUsers: []string{"Application " + appNS + "/web"}},
		{reason: "status.appliedResources names it", cluster: "applied-" + suffix, wantUsers: []string{"Application " + appNS + "/api"}},
		{reason: "a ResourceTracker tracks an object there", cluster: "tracked-" + suffix, wantUsers: []string{"ResourceTracker web-v1-" + suffix}},
		{reason: "objects already deleted there do not count", cluster: "gced-" + suffix},
		{reason: "unused", cluster: "free-" + suffix},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			r := newRegistry(t)
			join(t, r, tc.cluster, nil)
			users, err := r.Usage(ctx, tc.cluster)
			require.NoError(t, err)
			assert.Equal(t, tc.wantUsers, nilIfEmpty(users))

			err = r.Detach(ctx, tc.cluster, false)
			if len(tc.wantUsers) > 0 {
				var inUse *InUseError
				require.ErrorAs(t, err, &inUse)
				assert.Contains(t, err.Error(), fmt.Sprintf("cluster %q is in use by %s", tc.cluster, tc.wantUsers[0]))
				assert.Contains(t, err.Error(), "--force")
				_, err = r.Client(ctx, tc.cluster)
				require.NoError(t, err, "a refused detach leaves the cluster registered")
				require.NoError(t, r.Detach(ctx, tc.cluster, true), "force detaches anyway")
			} else {
				require.NoError(t, err)
			}
			_, err = r.Client(ctx, tc.cluster)
			assert.ErrorIs(t, err, ErrClusterNotFound)
			err = r.Detach(ctx, tc.cluster, false)
			assert.ErrorIs(t, err, ErrClusterNotFound, "detaching twice says it is unknown")
		})
	}

	t.Run("the service clears and detach succeeds", func(t *testing.T) {
		r := newRegistry(t)
		cluster := "svc-" + suffix
		join(t, r, cluster, nil)
		require.Error(t, r.Detach(ctx, cluster, false))
		cur := &v1beta1.Application{}
		require.NoError(t, hub.Client.Get(ctx, client.ObjectKeyFromObject(servicesIn), cur))
		cur.Status.Services = nil
		require.NoError(t, hub.Client.Status().Update(ctx, cur))
		require.NoError(t, r.Detach(ctx, cluster, false))
	})

	t.Run("the hub cannot be detached", func(t *testing.T) {
		r := newRegistry(t)
		err := r.Detach(ctx, "local", true)
		require.Error(t, err)
		assert.False(t, errors.Is(err, ErrClusterNotFound))
		assert.Contains(t, err.Error(), "cannot be detached")
	})
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
