package localcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// kwokctl runs our kwokctl binary against the state directory: KWOK_WORKDIR
// points into it, user KWOK_* variables are dropped (they could name download
// URLs), a kubectl stand-in comes first on PATH, and all output is appended to
// kwok/logs/kwokctl-<cluster>.log.
type kwokctl struct {
	binary string
	layout layout
}

// stubKubectl answers kwokctl's only kubectl call in our flows, `kubectl get
// --raw /version` right after it forks the components, with success:
// readiness is checked by this package with client-go, and without the stub
// kwokctl would look for kubectl on PATH and else try to download one.
const stubKubectl = `#!/bin/sh
# Written by oamflow (pkg/localcluster). kwokctl runs "kubectl get --raw /version"
# after starting a cluster; oamflow checks readiness itself, so answer success.
case "$*" in
*"get --raw"*) exit 0 ;;
esac
echo "kubectl is not provided to kwokctl by oamflow (args: $*)" >&2
exit 1
`

// prepare writes the kubectl stand-in and creates the kwokctl workdir.
func (k kwokctl) prepare() error {
	if err := os.MkdirAll(filepath.Join(k.layout.kwokWorkdir(), "logs"), 0o755); err != nil {
		return fmt.Errorf("creating kwokctl workdir: %w", err)
	}
	if err := os.MkdirAll(k.layout.stubDir(), 0o755); err != nil {
		return fmt.Errorf("creating kwokctl workdir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(k.layout.stubDir(), "kubectl"), []byte(stubKubectl), 0o755); err != nil {
		return fmt.Errorf("writing kubectl stand-in: %w", err)
	}
	return nil
}

// run executes kwokctl with args for cluster kwokName, appending its output
// to that cluster's kwokctl log. The error carries the tail of the log.
func (k kwokctl) run(ctx context.Context, kwokName string, args ...string) error {
	if err := k.prepare(); err != nil {
		return err
	}
	logPath := k.layout.kwokctlLog(kwokName)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening kwokctl log: %w", err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "\n### %s kwokctl %s\n", time.Now().Format(time.RFC3339), strings.Join(args, " "))

	cmd := exec.CommandContext(ctx, k.binary, args...)
	cmd.Env = k.env(os.Environ())
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// The components kwokctl forks write to their own log files; this only
	// guards against one of them keeping an inherited descriptor open.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kwokctl %s: %w; last lines of %s:\n%s", strings.Join(args, " "), err, logPath, tailFile(logPath, 15))
	}
	return nil
}

// env returns the environment of a kwokctl process built from base.
func (k kwokctl) env(base []string) []string {
	out := make([]string, 0, len(base)+2)
	path := ""
	for _, kv := range base {
		switch {
		case strings.HasPrefix(kv, "KWOK_"):
		case strings.HasPrefix(kv, "PATH="):
			path = strings.TrimPrefix(kv, "PATH=")
		default:
			out = append(out, kv)
		}
	}
	stub := k.layout.stubDir()
	if path != "" {
		stub += string(os.PathListSeparator) + path
	}
	return append(out, "KWOK_WORKDIR="+k.layout.kwokWorkdir(), "PATH="+stub)
}

// createArgs are the arguments that create cluster kwokName from configPath.
func (k kwokctl) createArgs(kwokName, configPath string) []string {
	return []string{"--name", kwokName, "--config", configPath, "create", "cluster",
		"--kubeconfig", k.layout.scratchKubeconfig(kwokName)}
}

// kwokctlConfig is the subset of kwokctl's KwokctlConfiguration
// (config.kwok.x-k8s.io/v1alpha1) that oamflow sets.
type kwokctlConfig struct {
	APIVersion        string           `json:"apiVersion"`
	Kind              string           `json:"kind"`
	Options           kwokctlOptions   `json:"options"`
	ComponentsPatches []componentPatch `json:"componentsPatches,omitempty"`
}

type kwokctlOptions struct {
	Runtime                     string `json:"runtime"`
	BindAddress                 string `json:"bindAddress"`
	QuietPull                   bool   `json:"quietPull"`
	CacheDir                    string `json:"cacheDir"`
	EtcdBinary                  string `json:"etcdBinary"`
	KubeApiserverBinary         string `json:"kubeApiserverBinary"`
	KubeControllerManagerBinary string `json:"kubeControllerManagerBinary"`
	KubeSchedulerBinary         string `json:"kubeSchedulerBinary"`
	KwokControllerBinary        string `json:"kwokControllerBinary"`
	KubectlBinary               string `json:"kubectlBinary"`
	EtcdctlBinary               string `json:"etcdctlBinary"`
	EtcdutlBinary               string `json:"etcdutlBinary"`
	KubeApiserverPort           int    `json:"kubeApiserverPort"`
	EtcdPort                    int    `json:"etcdPort"`
	EtcdPeerPort                int    `json:"etcdPeerPort"`
	KubeControllerManagerPort   int    `json:"kubeControllerManagerPort"`
	KubeSchedulerPort           int    `json:"kubeSchedulerPort"`
	KwokControllerPort          int    `json:"kwokControllerPort"`
	DisableQPSLimits            bool   `json:"disableQPSLimits"`
}

type componentPatch struct {
	Name      string      `json:"name"`
	ExtraArgs []extraArgs `json:"extraArgs"`
}

type extraArgs struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// renderKwokctlConfig returns the kwokctl configuration (YAML) of one cluster:
// binary runtime, our binaries by absolute path, tools we never provide
// pointed at a missing local file (so kwokctl cannot download them), loopback
// only, the given ports, and the scale options. With o.AuditLog,
// kube-apiserver of cluster name logs every request (auditPolicy).
func renderKwokctlConfig(l layout, name, binDir string, ports Ports, o UpOptions) ([]byte, error) {
	bin := func(name string) string { return filepath.Join(binDir, name) }
	cfg := kwokctlConfig{
		APIVersion: "config.kwok.x-k8s.io/v1alpha1",
		Kind:       "KwokctlConfiguration",
		Options: kwokctlOptions{
			Runtime:                     "binary",
			BindAddress:                 loopback,
			QuietPull:                   true,
			CacheDir:                    filepath.Join(l.kwokWorkdir(), "cache"),
			EtcdBinary:                  bin(BinEtcd),
			KubeApiserverBinary:         bin(BinKubeAPIServer),
			KubeControllerManagerBinary: bin(BinKubeControllerManager),
			KubeSchedulerBinary:         bin(BinKubeScheduler),
			KwokControllerBinary:        bin(BinKwok),
			KubectlBinary:               l.noDownloadPath("kubectl"),
			EtcdctlBinary:               l.noDownloadPath("etcdctl"),
			EtcdutlBinary:               l.noDownloadPath("etcdutl"),
			KubeApiserverPort:           ports.APIServer,
			EtcdPort:                    ports.Etcd,
			EtcdPeerPort:                ports.EtcdPeer,
			KubeControllerManagerPort:   ports.ControllerManager,
			KubeSchedulerPort:           ports.Scheduler,
			KwokControllerPort:          ports.Kwok,
			DisableQPSLimits:            o.DisableQPSLimits,
		},
	}
	var apiArgs []extraArgs
	if o.ServiceCIDR != "" {
		apiArgs = append(apiArgs, extraArgs{Key: "service-cluster-ip-range", Value: o.ServiceCIDR})
	}
	if o.AuditLog {
		apiArgs = append(apiArgs,
			extraArgs{Key: "audit-policy-file", Value: l.auditPolicyPath(name)},
			extraArgs{Key: "audit-log-path", Value: l.auditLogPath(name)},
			extraArgs{Key: "audit-log-format", Value: "json"})
	}
	if len(apiArgs) > 0 {
		cfg.ComponentsPatches = append(cfg.ComponentsPatches, componentPatch{Name: CompKubeAPIServer, ExtraArgs: apiArgs})
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding kwokctl configuration: %w", err)
	}
	return b, nil
}

// auditPolicy logs every request once, when its response is complete,
// with its metadata (verb, URI with query, user, user agent, code) and no
// bodies.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
  - level: Metadata
`

// scaleNodeArgs are the arguments that make kwokName have n fake nodes.
func scaleNodeArgs(kwokName string, n int) []string {
	return []string{"--name", kwokName, "scale", "node", "--replicas", strconv.Itoa(n)}
}
