package localcluster

import "path/filepath"

// Component names as kwokctl's binary runtime names them. For component c of
// a cluster, kwokctl writes pids/<c>.pid and logs/<c>.log in the cluster's
// kwokctl workdir and starts the process as <workdir>/bin/<c> (a symlink to
// our binary), which is its argv[0].
const (
	CompEtcd                  = "etcd"
	CompKubeAPIServer         = "kube-apiserver"
	CompKubeControllerManager = "kube-controller-manager"
	CompKubeScheduler         = "kube-scheduler"
	CompKwokController        = "kwok-controller"
)

// components lists a cluster's components in start order.
func components() []string {
	return []string{CompEtcd, CompKubeAPIServer, CompKubeControllerManager, CompKubeScheduler, CompKwokController}
}

// layout knows where everything lives under a state directory (see the
// package documentation).
type layout struct{ home string }

func (l layout) statePath() string   { return filepath.Join(l.home, "state.json") }
func (l layout) lockPath() string    { return filepath.Join(l.home, "lock") }
func (l layout) kwokWorkdir() string { return filepath.Join(l.home, "kwok") }

// kwokctlLog collects the output of the kwokctl commands run for a cluster.
func (l layout) kwokctlLog(kwokName string) string {
	return filepath.Join(l.kwokWorkdir(), "logs", "kwokctl-"+kwokName+".log")
}

// kwokClustersDir holds one kwokctl workdir per cluster.
func (l layout) kwokClustersDir() string { return filepath.Join(l.kwokWorkdir(), "clusters") }

// stubDir holds the kubectl stand-in put first on kwokctl's PATH.
func (l layout) stubDir() string { return filepath.Join(l.kwokWorkdir(), "stub-bin") }

// noDownloadPath is given to kwokctl for tools it never needs, so that using
// one fails instead of downloading it.
func (l layout) noDownloadPath(tool string) string {
	return filepath.Join(l.kwokWorkdir(), "not-provided", tool)
}

// scratchKubeconfig receives the context kwokctl insists on adding for
// cluster kwokName, so kwokctl never touches ~/.kube/config. One file per
// cluster lets clusters be created in parallel.
func (l layout) scratchKubeconfig(kwokName string) string {
	return filepath.Join(l.kwokWorkdir(), "contexts", kwokName+".yaml")
}

func (l layout) clusterDir(name string) string { return filepath.Join(l.home, "clusters", name) }
func (l layout) kubeconfigPath(name string) string {
	return filepath.Join(l.clusterDir(name), "kubeconfig.yaml")
}
func (l layout) auditPolicyPath(name string) string {
	return filepath.Join(l.clusterDir(name), "audit-policy.yaml")
}
func (l layout) auditLogPath(name string) string {
	return filepath.Join(l.clusterDir(name), "audit.log")
}
func (l layout) kwokctlConfigPath(name string) string {
	return filepath.Join(l.clusterDir(name), "kwokctl.yaml")
}

func (l layout) kwokDir(kwokName string) string { return filepath.Join(l.kwokClustersDir(), kwokName) }
func (l layout) pidPath(kwokName, comp string) string {
	return filepath.Join(l.kwokDir(kwokName), "pids", comp+".pid")
}
func (l layout) logPath(kwokName, comp string) string {
	return filepath.Join(l.kwokDir(kwokName), "logs", comp+".log")
}
func (l layout) argv0(kwokName, comp string) string {
	return filepath.Join(l.kwokDir(kwokName), "bin", comp)
}

// kwokInHostKubeconfig is the admin kubeconfig kwokctl writes for the host.
func (l layout) kwokInHostKubeconfig(kwokName string) string {
	return filepath.Join(l.kwokDir(kwokName), "kubeconfig.yaml")
}
