package cli

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// clientConfig resolves --kubeconfig/--context/--namespace the way kubectl
// does: an explicit --kubeconfig wins, else $KUBECONFIG, else ~/.kube/config.
func (o *GlobalOptions) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context}
	if o.Namespace != "" {
		overrides.Context.Namespace = o.Namespace
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
}

// RESTConfig returns the REST config of the selected cluster. The error says
// which kubeconfig was tried and how to point at another one.
func (o *GlobalOptions) RESTConfig() (*rest.Config, error) {
	cfg, err := o.clientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig (set --kubeconfig/--context or $KUBECONFIG; `oamflow local up` starts a local cluster): %w", err)
	}
	return cfg, nil
}

// ResolvedNamespace returns --namespace, else the context's namespace, else "default".
func (o *GlobalOptions) ResolvedNamespace() string {
	if o.Namespace != "" {
		return o.Namespace
	}
	ns, _, err := o.clientConfig().Namespace()
	if err != nil || ns == "" {
		return "default"
	}
	return ns
}
