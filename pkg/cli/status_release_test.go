package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

// TestReleaseState: a Helm release in `status --tree` takes the controller's
// verdict for its component and cluster instead of being read as an object
// (it used to show as MISSING: "cluster does not serve HelmRelease").
func TestReleaseState(t *testing.T) {
	services := []common.ApplicationComponentStatus{
		{Name: "engine", Cluster: "member-1", Healthy: true, Message: "release engine revision 1: 3/3 resources ready"},
		{Name: "engine", Cluster: "member-2", Healthy: false, Message: "release engine revision 1: 1/3 resources ready"},
		{Name: "hubchart", Cluster: "", Healthy: true, Message: "ready"},
	}
	cases := []struct {
		reason      string
		res         liveResource
		wantState   string
		wantMessage string
	}{
		{"healthy on member-1", liveResource{Component: "engine", Cluster: "member-1"}, "Healthy", services[0].Message},
		{"unhealthy on member-2", liveResource{Component: "engine", Cluster: "member-2"}, "Unhealthy", services[1].Message},
		{"hub named local matches an empty cluster", liveResource{Component: "hubchart", Cluster: "local"}, "Healthy", "ready"},
		{"no verdict yet", liveResource{Component: "engine", Cluster: "member-3"}, "Unknown", "no health reported for this release yet"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			state, msg := releaseState(&tc.res, services)
			assert.Equal(t, tc.wantState, state)
			assert.Equal(t, tc.wantMessage, msg)
		})
	}
}

// TestReleaseResourcesNamespace: the rows of a Helm release's manifest
// take their scope from the cluster's RESTMapper. Cluster-scoped objects
// show no namespace even when the chart stamped one on them (they used to
// show in the release namespace); namespaced ones without a namespace are
// in the release namespace; a kind the cluster does not know keeps what
// the manifest says.
func TestReleaseResourcesNamespace(t *testing.T) {
	env := envtest.New(t)
	ctx := context.Background()
	const releaseNS = "apps"
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNS}}))
	cases := []struct {
		reason                     string
		apiVersion, kind, name, ns string
		want                       string
	}{
		{reason: "a ClusterRole the chart put in the release namespace",
			apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", name: "reader", ns: releaseNS, want: ""},
		{reason: "a ClusterRoleBinding without a namespace",
			apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", name: "reader", want: ""},
		{reason: "a ValidatingWebhookConfiguration with a namespace",
			apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingWebhookConfiguration", name: "hooks", ns: "elsewhere", want: ""},
		{reason: "a Deployment without a namespace is in the release namespace",
			apiVersion: "apps/v1", kind: "Deployment", name: "web", want: releaseNS},
		{reason: "a Deployment with its own namespace stays there",
			apiVersion: "apps/v1", kind: "Deployment", name: "worker", ns: "jobs", want: "jobs"},
		{reason: "an unknown kind with a namespace keeps it",
			apiVersion: "example.com/v1", kind: "Widget", name: "w1", ns: "widgets", want: "widgets"},
		{reason: "an unknown kind without a namespace keeps none",
			apiVersion: "example.com/v1", kind: "Widget", name: "w2", want: ""},
	}
	var manifest strings.Builder
	for _, tc := range cases {
		fmt.Fprintf(&manifest, "---\n# Source: web/templates/%s.yaml\napiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n",
			strings.ToLower(tc.kind), tc.apiVersion, tc.kind, tc.name)
		if tc.ns != "" {
			fmt.Fprintf(&manifest, "  namespace: %s\n", tc.ns)
		}
	}
	// The record is written by Helm's own Secret storage driver, so this
	// also checks helmspec's reading of it against Helm's writing.
	cs, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	store := driver.NewSecrets(cs.CoreV1().Secrets(releaseNS))
	require.NoError(t, store.Create("sh.helm.release.v1.web.v1", &release.Release{Name: "web", Namespace: releaseNS,
		Version: 1, Info: &release.Info{Status: release.StatusDeployed}, Manifest: manifest.String()}))

	rows, err := releaseResources(ctx, env.Client, liveResource{Cluster: "local", Component: "chart", Namespace: releaseNS, Name: "web"})
	require.NoError(t, err)
	got := map[string]string{}
	for _, r := range rows {
		got[r.Kind+"/"+r.Name] = r.Namespace
	}
	require.Len(t, got, len(cases))
	for _, tc := range cases {
		assert.Equal(t, tc.want, got[tc.kind+"/"+tc.name], tc.reason)
	}
}
