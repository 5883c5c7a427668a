package localcluster

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// adminRESTConfig returns a REST config for cluster rec from the admin
// kubeconfig kwokctl wrote into its workdir.
func (m *Manager) adminRESTConfig(rec clusterRecord) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", m.layout.kwokInHostKubeconfig(rec.KwokName))
	if err != nil {
		return nil, fmt.Errorf("loading kwokctl's kubeconfig of %s: %w", rec.KwokName, err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	return cfg, nil
}

// writeKubeconfig writes the cluster's own kubeconfig: kwokctl's admin
// kubeconfig with the certificates inlined (the file stands alone) and the
// cluster, user and context all named <prefix><name>, current context set.
func (m *Manager) writeKubeconfig(rec clusterRecord, prefix string) error {
	src, err := clientcmd.LoadFromFile(m.layout.kwokInHostKubeconfig(rec.KwokName))
	if err != nil {
		return fmt.Errorf("loading kwokctl's kubeconfig: %w", err)
	}
	out, err := renameKubeconfig(src, prefix+rec.Name)
	if err != nil {
		return fmt.Errorf("kwokctl's kubeconfig of %s: %w", rec.KwokName, err)
	}
	if err := clientcmdapi.FlattenConfig(out); err != nil {
		return fmt.Errorf("inlining certificates: %w", err)
	}
	if err := os.MkdirAll(m.layout.clusterDir(rec.Name), 0o755); err != nil {
		return fmt.Errorf("creating cluster dir: %w", err)
	}
	if err := clientcmd.WriteToFile(*out, m.layout.kubeconfigPath(rec.Name)); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}

// renameKubeconfig returns a kubeconfig holding only src's current context,
// with its cluster, user and context renamed to name and made current.
func renameKubeconfig(src *clientcmdapi.Config, name string) (*clientcmdapi.Config, error) {
	ctx, ok := src.Contexts[src.CurrentContext]
	if !ok {
		return nil, fmt.Errorf("current context %q not found", src.CurrentContext)
	}
	cluster, ok := src.Clusters[ctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("cluster %q of context %q not found", ctx.Cluster, src.CurrentContext)
	}
	user, ok := src.AuthInfos[ctx.AuthInfo]
	if !ok {
		return nil, fmt.Errorf("user %q of context %q not found", ctx.AuthInfo, src.CurrentContext)
	}
	out := clientcmdapi.NewConfig()
	out.Clusters[name] = cluster.DeepCopy()
	out.AuthInfos[name] = user.DeepCopy()
	c := ctx.DeepCopy()
	c.Cluster, c.AuthInfo = name, name
	out.Contexts[name] = c
	out.CurrentContext = name
	return out, nil
}
