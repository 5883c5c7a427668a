package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/pkg/localcluster"
)

// runCLI runs the oamflow command line with args and returns stdout, stderr,
// the error and the exit code Execute would use.
func runCLI(t *testing.T, args ...string) (string, string, error, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := NewRootCommand(&out, &errOut)
	root.SetArgs(args)
	err := root.Execute()
	code := ExitOK
	if err != nil {
		code = ExitRuntimeErr
		var ue *UserError
		if errors.As(err, &ue) {
			code = ExitUserError
		}
	}
	return out.String(), errOut.String(), err, code
}

func TestLocalWithoutBinaries(t *testing.T) {
	emptyBin := t.TempDir()
	cases := map[string]struct {
		reason   string
		args     []string
		wantCode int
		wantOut  string
		wantErr  []string
	}{
		"DownNothing": {
			reason:   "down with nothing running says so and succeeds",
			args:     []string{"local", "down"},
			wantCode: ExitOK,
			wantOut:  "nothing to stop",
		},
		"StatusNothing": {
			reason:   "status with nothing running says how to start",
			args:     []string{"local", "status"},
			wantCode: ExitOK,
			wantOut:  "oamflow local up",
		},
		"MissingBinaries": {
			reason:   "up names the missing binaries and the command that builds them",
			args:     []string{"local", "up", "--k8s-bin", emptyBin},
			wantCode: ExitRuntimeErr,
			wantErr:  []string{"make k8s-binaries", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kwokctl", emptyBin},
		},
		"ZeroClusters": {
			reason:   "a bad flag value is a user error",
			args:     []string{"local", "up", "--clusters", "0", "--k8s-bin", emptyBin},
			wantCode: ExitUserError,
			wantErr:  []string{"clusters"},
		},
		"BadPrefix": {
			reason:   "prefixes are validated",
			args:     []string{"local", "up", "--name-prefix", "Bad_", "--k8s-bin", emptyBin},
			wantCode: ExitUserError,
			wantErr:  []string{"name prefix"},
		},
		"BadNodes": {
			reason:   "a cluster needs a node",
			args:     []string{"local", "up", "--nodes", "0", "--k8s-bin", emptyBin},
			wantCode: ExitUserError,
			wantErr:  []string{"nodes"},
		},
		"KubeconfigBadName": {
			reason:   "cluster names are validated",
			args:     []string{"local", "kubeconfig", "../etc"},
			wantCode: ExitUserError,
			wantErr:  []string{"invalid cluster name"},
		},
		"KubeconfigUnknown": {
			reason:   "an unknown cluster is a user error that says how to start one",
			args:     []string{"local", "kubeconfig", "member-1"},
			wantCode: ExitUserError,
			wantErr:  []string{"oamflow local up"},
		},
		"KubeconfigNoArg": {
			reason:   "the name is required",
			args:     []string{"local", "kubeconfig"},
			wantCode: ExitUserError,
			wantErr:  []string{"one cluster name"},
		},
		"UpWithArgs": {
			reason:   "up takes flags only",
			args:     []string{"local", "up", "member-1"},
			wantCode: ExitUserError,
			wantErr:  []string{"takes no arguments"},
		},
		"BadFlag": {
			reason:   "an unknown flag is a user error",
			args:     []string{"local", "up", "--clusterz", "2"},
			wantCode: ExitUserError,
			wantErr:  []string{"clusterz"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "home")
			out, _, err, code := runCLI(t, append(tc.args, "--home", home)...)
			assert.Equal(t, tc.wantCode, code, "%s: %v", tc.reason, err)
			if tc.wantOut != "" {
				assert.Contains(t, out, tc.wantOut, tc.reason)
			}
			for _, s := range tc.wantErr {
				require.Error(t, err, tc.reason)
				assert.Contains(t, err.Error(), s, tc.reason)
			}
		})
	}
}

func TestLocalHomeFromEnv(t *testing.T) {
	home := filepath.Join(t.TempDir(), "from-env")
	t.Setenv("OAMFLOW_HOME", home)
	out, _, err, _ := runCLI(t, "local", "status")
	require.NoError(t, err)
	assert.Contains(t, out, home, "$OAMFLOW_HOME is the default state directory")
}

func TestLocalBinDirFromEnv(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "k8s-from-env")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	t.Setenv("OAMFLOW_K8S_BIN", bin)
	_, _, err, _ := runCLI(t, "local", "up", "--home", t.TempDir())
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), bin), "$OAMFLOW_K8S_BIN is where binaries are looked up: %v", err)
}

func TestClusterState(t *testing.T) {
	comps := func(running ...bool) []localcluster.ComponentStatus {
		names := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller"}
		out := make([]localcluster.ComponentStatus, len(names))
		for i, n := range names {
			out[i] = localcluster.ComponentStatus{Name: n, Running: running[i]}
		}
		return out
	}
	cases := map[string]struct {
		reason string
		status localcluster.ClusterStatus
		want   string
	}{
		"Running":  {reason: "all up and the API answers", status: localcluster.ClusterStatus{Components: comps(true, true, true, true, true), APIReady: true}, want: "running"},
		"APIDown":  {reason: "processes up, API not ready", status: localcluster.ClusterStatus{Components: comps(true, true, true, true, true)}, want: "running, kube-apiserver not ready"},
		"Degraded": {reason: "names what is missing", status: localcluster.ClusterStatus{Components: comps(true, true, true, false, true)}, want: "degraded (not running: kube-scheduler)"},
		"Stopped":  {reason: "nothing runs", status: localcluster.ClusterStatus{Components: comps(false, false, false, false, false)}, want: "stopped"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, clusterState(tc.status), tc.reason)
		})
	}
}
