package multicluster

import (
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// CredentialsFromKubeconfig reads the credentials of context kubeContext
// ("" = the current context) of the kubeconfig file at path, with file
// references (client-certificate, client-key, certificate-authority,
// tokenFile) read in. It also returns the REST config, to probe the
// cluster with exactly those credentials. Errors name the file and
// context and say what is unsupported: exec and auth-provider plugins,
// basic auth, insecure-skip-tls-verify, a plain-http server; they never
// contain credential data.
func CredentialsFromKubeconfig(path, kubeContext string) (Credentials, *rest.Config, error) {
	where := path
	if kubeContext != "" {
		where = fmt.Sprintf("%s (context %q)", path, kubeContext)
	}
	if _, err := os.Stat(path); err != nil {
		return Credentials{}, nil, fmt.Errorf("reading kubeconfig %s: %w", path, err)
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path},
		&clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := loader.ClientConfig()
	if err != nil {
		return Credentials{}, nil, fmt.Errorf("kubeconfig %s: %w", where, err)
	}
	if err := rest.LoadTLSFiles(cfg); err != nil {
		return Credentials{}, nil, fmt.Errorf("kubeconfig %s: reading certificate files: %w", where, err)
	}
	switch {
	case cfg.ExecProvider != nil:
		return Credentials{}, nil, fmt.Errorf("kubeconfig %s: the user authenticates with an exec plugin (%s), which cannot be stored; use a kubeconfig with a client certificate or a token", where, cfg.ExecProvider.Command)
	case cfg.AuthProvider != nil:
		return Credentials{}, nil, fmt.Errorf("kubeconfig %s: the user authenticates with auth provider %q, which cannot be stored; use a kubeconfig with a client certificate or a token", where, cfg.AuthProvider.Name)
	case cfg.Username != "" || cfg.Password != "":
		return Credentials{}, nil, fmt.Errorf("kubeconfig %s: basic authentication is not supported; use a client certificate or a token", where)
	case cfg.Insecure:
		return Credentials{}, nil, fmt.Errorf("kubeconfig %s: insecure-skip-tls-verify is set; give the cluster's CA (certificate-authority-data) instead", where)
	}
	token := cfg.BearerToken
	if token == "" && cfg.BearerTokenFile != "" {
		b, err := os.ReadFile(cfg.BearerTokenFile)
		if err != nil {
			return Credentials{}, nil, fmt.Errorf("kubeconfig %s: reading tokenFile: %w", where, err)
		}
		token = strings.TrimSpace(string(b))
	}
	cred := Credentials{Endpoint: cfg.Host, CAData: cfg.CAData}
	hasCert := len(cfg.CertData) > 0 && len(cfg.KeyData) > 0
	switch {
	case hasCert:
		cred.CertData, cred.KeyData = cfg.CertData, cfg.KeyData
	case token != "":
		cred.Token = token
	default:
		return Credentials{}, nil, fmt.Errorf("kubeconfig %s: the user has neither a client certificate and key nor a token", where)
	}
	if err := checkEndpoint(cred.Endpoint); err != nil {
		return Credentials{}, nil, fmt.Errorf("kubeconfig %s: server %s: %w", where, cred.Endpoint, err)
	}
	return cred, cfg, nil
}
