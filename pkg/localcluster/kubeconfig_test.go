package localcluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestRenameKubeconfig(t *testing.T) {
	src := func() *clientcmdapi.Config {
		c := clientcmdapi.NewConfig()
		c.Clusters["kwok-oamflow-local"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1234", CertificateAuthority: "/p/ca.crt"}
		c.AuthInfos["kwok-oamflow-local"] = &clientcmdapi.AuthInfo{ClientCertificate: "/p/admin.crt", ClientKey: "/p/admin.key"}
		c.Contexts["kwok-oamflow-local"] = &clientcmdapi.Context{Cluster: "kwok-oamflow-local", AuthInfo: "kwok-oamflow-local"}
		c.Clusters["other"] = &clientcmdapi.Cluster{Server: "https://example.com"}
		c.CurrentContext = "kwok-oamflow-local"
		return c
	}
	cases := map[string]struct {
		reason  string
		mutate  func(*clientcmdapi.Config)
		wantErr string
	}{
		"Ok":         {reason: "the current context is renamed"},
		"NoContext":  {reason: "a missing current context", mutate: func(c *clientcmdapi.Config) { c.CurrentContext = "gone" }, wantErr: "current context"},
		"NoCluster":  {reason: "a dangling cluster reference", mutate: func(c *clientcmdapi.Config) { delete(c.Clusters, "kwok-oamflow-local") }, wantErr: "cluster"},
		"NoAuthInfo": {reason: "a dangling user reference", mutate: func(c *clientcmdapi.Config) { delete(c.AuthInfos, "kwok-oamflow-local") }, wantErr: "user"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := src()
			if tc.mutate != nil {
				tc.mutate(in)
			}
			out, err := renameKubeconfig(in, "oamflow-local")
			if tc.wantErr != "" {
				require.Error(t, err, tc.reason)
				assert.Contains(t, err.Error(), tc.wantErr, tc.reason)
				return
			}
			require.NoError(t, err, tc.reason)
			assert.Equal(t, "oamflow-local", out.CurrentContext)
			assert.Len(t, out.Clusters, 1, "only the cluster of the context is kept")
			assert.Equal(t, "https://127.0.0.1:1234", out.Clusters["oamflow-local"].Server)
			assert.Equal(t, "/p/admin.crt", out.AuthInfos["oamflow-local"].ClientCertificate)
			assert.Equal(t, "oamflow-local", out.Contexts["oamflow-local"].Cluster)
			assert.Equal(t, "oamflow-local", out.Contexts["oamflow-local"].AuthInfo)
			assert.Equal(t, "kwok-oamflow-local", in.Contexts["kwok-oamflow-local"].Cluster, "the source is not modified")
		})
	}
}
