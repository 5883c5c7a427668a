package cli

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/oamflow/oamflow/pkg/multicluster"
)

// TestRESTConfigRate: the CLI's requests are not held to client-go's
// default 5 per second (def apply of 91 definitions waited ~20 s on it)
// but to the rate oamflow gives registered clusters.
func TestRESTConfigRate(t *testing.T) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443"}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, kc))

	rc, err := (&GlobalOptions{Kubeconfig: kc}).RESTConfig()
	require.NoError(t, err)
	d := multicluster.DefaultClientSettings()
	assert.Equal(t, d.QPS, rc.QPS)
	assert.Equal(t, d.Burst, rc.Burst)
}
