package localcluster

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestRenderKwokctlConfig(t *testing.T) {
	l := layout{home: "/h"}
	ports := Ports{APIServer: 1, Etcd: 2, EtcdPeer: 3, ControllerManager: 4, Scheduler: 5, Kwok: 6}
	cases := map[string]struct {
		reason      string
		opts        UpOptions
		wantPatches []componentPatch
		wantNoQPS   bool
	}{
		"Defaults": {
			reason:      "the defaults widen the Service range and lift QPS limits",
			opts:        DefaultUpOptions(),
			wantPatches: []componentPatch{{Name: "kube-apiserver", ExtraArgs: []extraArgs{{Key: "service-cluster-ip-range", Value: DefaultServiceCIDR}}}},
			wantNoQPS:   true,
		},
		"AuditLog": {
			reason: "an audit log asks kube-apiserver for every request's metadata in the cluster's folder",
			opts:   UpOptions{Clusters: 1, Nodes: 2, AuditLog: true},
			wantPatches: []componentPatch{{Name: "kube-apiserver", ExtraArgs: []extraArgs{
				{Key: "audit-policy-file", Value: "/h/clusters/local/audit-policy.yaml"},
				{Key: "audit-log-path", Value: "/h/clusters/local/audit.log"},
				{Key: "audit-log-format", Value: "json"}}}},
		},
		"Plain": {
			reason: "no Service range and QPS limits kept",
			opts:   UpOptions{Clusters: 1, Nodes: 2},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := renderKwokctlConfig(l, "local", "/bin/k8s", ports, tc.opts)
			require.NoError(t, err)
			var got kwokctlConfig
			require.NoError(t, yaml.UnmarshalStrict(b, &got))
			assert.Equal(t, "config.kwok.x-k8s.io/v1alpha1", got.APIVersion)
			assert.Equal(t, "KwokctlConfiguration", got.Kind)
			o := got.Options
			assert.Equal(t, "binary", o.Runtime, "kwokctl's binary runtime, never containers")
			assert.Equal(t, "127.0.0.1", o.BindAddress, "loopback only")
			assert.Equal(t, "/bin/k8s/etcd", o.EtcdBinary)
			assert.Equal(t, "/bin/k8s/kube-apiserver", o.KubeApiserverBinary)
			assert.Equal(t, "/bin/k8s/kube-controller-manager", o.KubeControllerManagerBinary)
			assert.Equal(t, "/bin/k8s/kube-scheduler", o.KubeSchedulerBinary)
			assert.Equal(t, "/bin/k8s/kwok", o.KwokControllerBinary)
			for _, p := range []string{o.KubectlBinary, o.EtcdctlBinary, o.EtcdutlBinary} {
				assert.True(t, strings.HasPrefix(p, "/h/kwok/not-provided/"), "tools kwokctl could download point at a local path: %s", p)
			}
			assert.Equal(t, ports, Ports{APIServer: o.KubeApiserverPort, Etcd: o.EtcdPort, EtcdPeer: o.EtcdPeerPort,
				ControllerManager: o.KubeControllerManagerPort, Scheduler: o.KubeSchedulerPort, Kwok: o.KwokControllerPort}, "every port is fixed")
			assert.Equal(t, tc.wantNoQPS, o.DisableQPSLimits, tc.reason)
			assert.Equal(t, tc.wantPatches, got.ComponentsPatches, tc.reason)
			assert.NotContains(t, string(b), "http", "no download URL in the configuration")
		})
	}
}

func TestKwokctlEnv(t *testing.T) {
	k := kwokctl{binary: "/b/kwokctl", layout: layout{home: "/h"}}
	got := k.env([]string{"HOME=/root", "KWOK_KUBE_VERSION=v9", "KWOK_WORKDIR=/elsewhere", "PATH=/usr/bin:/bin", "LANG=C"})
	assert.ElementsMatch(t, []string{
		"HOME=/root", "LANG=C",
		"KWOK_WORKDIR=/h/kwok",
		"PATH=/h/kwok/stub-bin:/usr/bin:/bin",
	}, got, "user KWOK_* settings are dropped, the workdir is ours and the kubectl stand-in comes first")

	got = k.env([]string{"HOME=/root"})
	assert.Contains(t, got, "PATH=/h/kwok/stub-bin", "a PATH is set even without one")
}

func TestKwokctlArgs(t *testing.T) {
	k := kwokctl{binary: "/b/kwokctl", layout: layout{home: "/h"}}
	assert.Equal(t, []string{"--name", "oamflow-local", "--config", "/h/clusters/local/kwokctl.yaml", "create", "cluster", "--kubeconfig", "/h/kwok/contexts/oamflow-local.yaml"},
		k.createArgs("oamflow-local", "/h/clusters/local/kwokctl.yaml"), "kwokctl never edits ~/.kube/config")
	assert.Equal(t, []string{"--name", "x", "scale", "node", "--replicas", "30"}, scaleNodeArgs("x", 30))
}
