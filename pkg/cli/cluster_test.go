package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

// kubeconfigContext is one context of a test kubeconfig.
type kubeconfigContext struct {
	name string
	cfg  *rest.Config
	// exec makes the user authenticate with an exec plugin.
	exec bool
}

// writeClusterKubeconfig writes a kubeconfig with contexts (the first is current).
func writeClusterKubeconfig(t *testing.T, path string, contexts ...kubeconfigContext) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	for _, c := range contexts {
		host := c.cfg.Host
		if !strings.HasPrefix(host, "https://") {
			host = "https://" + host
		}
		kc.Clusters[c.name] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: c.cfg.CAData}
		user := &clientcmdapi.AuthInfo{ClientCertificateData: c.cfg.CertData, ClientKeyData: c.cfg.KeyData}
		if c.exec {
			user = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "get-token", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
		}
		kc.AuthInfos[c.name] = user
		kc.Contexts[c.name] = &clientcmdapi.Context{Cluster: c.name, AuthInfo: c.name}
		if kc.CurrentContext == "" {
			kc.CurrentContext = c.name
		}
	}
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
	return path
}

// TestClusterCommands drives `oamflow cluster` against two real API
// servers: a hub with the oamflow CRDs and a member.
func TestClusterCommands(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1beta1.AddToScheme(s))
	hub := envtest.New(t, envtest.WithCRDs("charts/oamflow/crds"), envtest.WithScheme(s))
	member := envtest.New(t)

	dir := t.TempDir()
	hubKC := writeClusterKubeconfig(t, filepath.Join(dir, "hub.yaml"), kubeconfigContext{name: "hub", cfg: hub.Config})
	memberKC := writeClusterKubeconfig(t, filepath.Join(dir, "member.yaml"), kubeconfigContext{name: "member", cfg: member.Config})
	unreachable := rest.CopyConfig(member.Config)
	unreachable.Host = "https://127.0.0.1:1"
	// The current context is broken; --context picks the good one.
	twoContexts := writeClusterKubeconfig(t, filepath.Join(dir, "two.yaml"),
		kubeconfigContext{name: "broken", cfg: unreachable}, kubeconfigContext{name: "good", cfg: member.Config})
	execKC := writeClusterKubeconfig(t, filepath.Join(dir, "exec.yaml"), kubeconfigContext{name: "sso", cfg: member.Config, exec: true})

	secrets := []string{string(member.Config.KeyData[40:90]), string(member.Config.CertData[40:90])}
	run := func(t *testing.T, args ...string) (string, string, error, int) {
		t.Helper()
		out, errOut, err, code := runCLI(t, append(args, "--kubeconfig", hubKC)...)
		for _, sec := range secrets {
			require.NotContains(t, out+errOut, sec, "credentials are never printed")
			if err != nil {
				require.NotContains(t, err.Error(), sec, "credentials are never in errors")
			}
		}
		return out, errOut, err, code
	}

	t.Run("join", func(t *testing.T) {
		cases := []struct {
			reason   string
			args     []string
			wantCode int
			wantOut  string
			wantErr  string
		}{
			{reason: "a member with labels", args: []string{"cluster", "join", memberKC, "--name", "east", "--labels", "region=east,tier=1"}, wantOut: `Cluster "east" joined: endpoint https://`},
			{reason: "the Kubernetes version and labels are shown", args: []string{"cluster", "join", memberKC, "--name", "east2", "--labels", "region=east", "--labels", "tier=2"}, wantOut: "Kubernetes v1.34.2, labels region=east,tier=2."},
			{reason: "--context selects the member's context", args: []string{"cluster", "join", twoContexts, "--context", "good", "--name", "west", "--labels", "region=west", "--qps", "20"}, wantOut: `Cluster "west" joined`},
			{reason: "a taken name is refused", args: []string{"cluster", "join", memberKC, "--name", "east"}, wantCode: ExitUserError, wantErr: `cluster "east" is already joined`},
			{reason: "--force replaces it", args: []string{"cluster", "join", memberKC, "--name", "east", "--labels", "region=east", "--force"}, wantOut: `Cluster "east" joined`},
			{reason: "the hub's name is refused", args: []string{"cluster", "join", memberKC, "--name", "local", "--force"}, wantCode: ExitUserError, wantErr: `"local" is reserved for the hub`},
			{reason: "--name is required", args: []string{"cluster", "join", memberKC}, wantCode: ExitUserError, wantErr: "--name is required"},
			{reason: "one kubeconfig argument", args: []string{"cluster", "join", "--name", "x"}, wantCode: ExitUserError, wantErr: "join takes one argument"},
			{reason: "invalid labels", args: []string{"cluster", "join", memberKC, "--name", "x", "--labels", "region"}, wantCode: ExitUserError, wantErr: `--labels: "region" is not key=value`},
			{reason: "missing kubeconfig file", args: []string{"cluster", "join", filepath.Join(dir, "nope.yaml"), "--name", "x"}, wantCode: ExitUserError, wantErr: "nope.yaml"},
			{reason: "exec plugins cannot be stored", args: []string{"cluster", "join", execKC, "--name", "x"}, wantCode: ExitUserError, wantErr: "exec plugin (get-token), which cannot be stored"},
			{reason: "an unknown context", args: []string{"cluster", "join", memberKC, "--context", "nope", "--name", "x"}, wantCode: ExitUserError, wantErr: `context "nope"`},
			{reason: "an unreachable member is not stored", args: []string{"cluster", "join", twoContexts, "--name", "broken", "--check-timeout", "2s"}, wantCode: ExitRuntimeErr, wantErr: "does not answer with the credentials of " + twoContexts + " (nothing was stored)"},
		}
		for _, tc := range cases {
			t.Run(tc.reason, func(t *testing.T) {
				out, _, err, code := run(t, tc.args...)
				assert.Equal(t, tc.wantCode, code, "error: %v", err)
				if tc.wantOut != "" {
					assert.Contains(t, out, tc.wantOut)
				}
				if tc.wantErr != "" {
					require.Error(t, err)
					assert.Contains(t, err.Error(), tc.wantErr)
				}
			})
		}
		err := hub.Client.Get(ctx, client.ObjectKey{Namespace: multicluster.DefaultSystemNamespace, Name: "broken"}, &corev1.Secret{})
		assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "nothing stored for the unreachable member")
		sec := &corev1.Secret{}
		require.NoError(t, hub.Client.Get(ctx, client.ObjectKey{Namespace: multicluster.DefaultSystemNamespace, Name: "west"}, sec))
		assert.Equal(t, "20", sec.Annotations[multicluster.AnnoQPS])
	})

	// A malformed registration shows in the list without breaking it.
	bad := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: multicluster.DefaultSystemNamespace,
			Labels: map[string]string{v1beta1.LabelClusterCredType: "ServiceAccountToken", "region": "east"}},
		Data: map[string][]byte{multicluster.KeyEndpoint: []byte("https://127.0.0.1:1"), multicluster.KeyToken: []byte("tok en")},
	}
	require.NoError(t, hub.Client.Create(ctx, bad))

	t.Run("list", func(t *testing.T) {
		out, _, err, code := run(t, "cluster", "list", "-o", "json")
		require.NoError(t, err)
		require.Equal(t, ExitOK, code)
		var rows []clusterRow
		require.NoError(t, json.Unmarshal([]byte(out), &rows))
		byName := map[string]clusterRow{}
		var names []string
		for _, r := range rows {
			byName[r.Name] = r
			names = append(names, r.Name)
		}
		assert.Equal(t, []string{"local", "bad", "east", "east2", "west"}, names)
		assert.Equal(t, clusterRow{Name: "local", Endpoint: hub.Config.Host, CredentialType: "Internal", Labels: map[string]string{}, Reachable: true, Version: "v1.34.2"}, byName["local"])
		east := byName["east"]
		assert.True(t, east.Reachable, east.Message)
		assert.Equal(t, "v1.34.2", east.Version)
		assert.Equal(t, "X509Certificate", east.CredentialType)
		assert.Equal(t, map[string]string{"region": "east"}, east.Labels)
		assert.True(t, byName["west"].Reachable)
		assert.False(t, byName["bad"].Reachable)
		assert.Contains(t, byName["bad"].Message, `cluster "bad" (Secret oamflow-system/bad) is misconfigured: data "token" is not a single bearer token`)

		out, _, err, _ = run(t, "cluster", "list")
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 6)
		assert.Equal(t, []string{"NAME", "ENDPOINT", "CREDENTIAL-TYPE", "LABELS", "REACHABLE", "VERSION", "MESSAGE"}, strings.Fields(lines[0]))
		assert.Equal(t, []string{"local", hub.Config.Host, "Internal", "<none>", "true", "v1.34.2"}, strings.Fields(lines[1]))
		assert.Equal(t, []string{"east", east.Endpoint, "X509Certificate", "region=east", "true", "v1.34.2"}, strings.Fields(lines[3]))
		assert.Equal(t, []string{"bad", "https://127.0.0.1:1", "ServiceAccountToken", "region=east", "false", "cluster", `"bad"`}, strings.Fields(lines[2])[:7], "no version, then the message")

		out, _, err, _ = run(t, "cluster", "list", "-o", "yaml")
		require.NoError(t, err)
		var yrows []clusterRow
		require.NoError(t, yaml.Unmarshal([]byte(out), &yrows))
		assert.Equal(t, rows, yrows)

		_, _, err, code = run(t, "cluster", "list", "-o", "xml")
		assert.Equal(t, ExitUserError, code)
		assert.Contains(t, err.Error(), `--output "xml": expected table, yaml or json`)
	})

	t.Run("labels", func(t *testing.T) {
		cases := []struct {
			reason   string
			args     []string
			wantCode int
			wantOut  string
			wantErr  string
		}{
			{reason: "add", args: []string{"cluster", "labels", "add", "east", "env=prod", "tier=3"}, wantOut: `Cluster "east" labels: env=prod,region=east,tier=3`},
			{reason: "del with a value that does not match changes nothing", args: []string{"cluster", "labels", "del", "east", "region=west"}, wantCode: ExitUserError, wantErr: "has label region=east, not region=west"},
			{reason: "del by key and by key=value", args: []string{"cluster", "labels", "del", "east", "region", "tier=3"}, wantOut: `Cluster "east" labels: env=prod`},
			{reason: "unknown cluster", args: []string{"cluster", "labels", "add", "mars", "a=b"}, wantCode: ExitUserError, wantErr: `cluster "mars" not registered`},
			{reason: "the hub", args: []string{"cluster", "labels", "add", "local", "a=b"}, wantCode: ExitUserError, wantErr: "has no labels to change"},
			{reason: "the credential type", args: []string{"cluster", "labels", "del", "east", v1beta1.LabelClusterCredType}, wantCode: ExitUserError, wantErr: "cannot be removed"},
			{reason: "invalid value", args: []string{"cluster", "labels", "add", "east", "a=b c"}, wantCode: ExitUserError, wantErr: `label a value "b c" is invalid`},
			{reason: "no labels", args: []string{"cluster", "labels", "add", "east"}, wantCode: ExitUserError, wantErr: "at least one k=v"},
		}
		for _, tc := range cases {
			t.Run(tc.reason, func(t *testing.T) {
				out, _, err, code := run(t, tc.args...)
				assert.Equal(t, tc.wantCode, code, "error: %v", err)
				if tc.wantOut != "" {
					assert.Contains(t, out, tc.wantOut)
				}
				if tc.wantErr != "" {
					require.Error(t, err)
					assert.Contains(t, err.Error(), tc.wantErr)
				}
			})
		}
	})

	t.Run("detach", func(t *testing.T) {
		require.NoError(t, hub.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}))
		app := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps"}}
		app.Spec.Components = []common.ApplicationComponent{{Name: "web", Type: "webservice"}}
		require.NoError(t, hub.Client.Create(ctx, app))
		app.Status.Services = []common.ApplicationComponentStatus{{Name: "web", Cluster: "east", Healthy: true}}
		require.NoError(t, hub.Client.Status().Update(ctx, app))

		_, _, err, code := run(t, "cluster", "detach", "east")
		assert.Equal(t, ExitUserError, code)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `cluster "east" is in use by Application apps/web`)

		out, errOut, err, code := run(t, "cluster", "detach", "east", "--force")
		require.NoError(t, err)
		assert.Equal(t, ExitOK, code)
		assert.Contains(t, out, `Cluster "east" detached.`)
		assert.Contains(t, errOut, `Warning: cluster "east" is still used by Application apps/web`)

		_, _, err, code = run(t, "cluster", "detach", "east")
		assert.Equal(t, ExitUserError, code)
		assert.Contains(t, err.Error(), `cluster "east" not registered`)

		out, _, err, _ = run(t, "cluster", "detach", "west")
		require.NoError(t, err, "an unused cluster detaches")
		assert.Contains(t, out, `Cluster "west" detached.`)

		_, _, err, code = run(t, "cluster", "detach", "local", "--force")
		assert.Equal(t, ExitUserError, code)
		assert.Contains(t, err.Error(), "cannot be detached")
	})
}
