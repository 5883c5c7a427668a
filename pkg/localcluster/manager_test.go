package localcluster

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeBinDir returns a directory holding every cluster binary as a script
// that exits 0 (kwokctl included), so Manager paths that do not start real
// components can run without bin/k8s.
func fakeBinDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, b := range ClusterBinaries() {
		writeFile(t, filepath.Join(dir, b), "#!/bin/sh\nexit 0\n", 0o755)
	}
	return dir
}

func newTestManager(t *testing.T, binDir string) (*Manager, *bytes.Buffer) {
	t.Helper()
	var out bytes.Buffer
	m, err := New(Config{Home: filepath.Join(t.TempDir(), "home"), BinDir: binDir, Progress: &out})
	require.NoError(t, err)
	return m, &out
}

// fakeCluster records cluster name in m's state and, for each component in
// running, starts a sleeper as that component with a pid file. Components not
// in running get a pid file naming a process that is gone (a stale pid file).
func fakeCluster(t *testing.T, m *Manager, name string, running ...string) clusterRecord {
	t.Helper()
	st, err := loadState(m.layout.statePath())
	require.NoError(t, err)
	st.NamePrefix = DefaultNamePrefix
	rec := clusterRecord{Name: name, KwokName: DefaultNamePrefix + name, Ports: Ports{APIServer: 1}, Nodes: 2}
	st.put(rec)
	require.NoError(t, st.save(m.layout.statePath()))

	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	for _, comp := range components() {
		pid := gone.Process.Pid
		if contains(running, comp) {
			pid = startSleeper(t, m.layout.argv0(rec.KwokName, comp)).Process.Pid
		}
		writeFile(t, m.layout.pidPath(rec.KwokName, comp), strconv.Itoa(pid), 0o644)
	}
	return rec
}

func TestNewRequiresHome(t *testing.T) {
	_, err := New(Config{BinDir: "/x"})
	assert.Error(t, err, "a state directory is required")
	m, err := New(Config{Home: "rel/home"})
	require.NoError(t, err, "the binary directory is optional")
	assert.True(t, filepath.IsAbs(m.Home()), "paths are made absolute")
}

func TestUpRejectsBeforeStarting(t *testing.T) {
	cases := map[string]struct {
		reason string
		binDir func(t *testing.T) string
		opts   func(o *UpOptions)
		setup  func(t *testing.T, m *Manager)
		check  func(t *testing.T, err error)
	}{
		"InvalidOptions": {
			reason: "options are validated first",
			binDir: fakeBinDir,
			opts:   func(o *UpOptions) { o.Clusters = 0 },
			check:  func(t *testing.T, err error) { assert.Contains(t, err.Error(), "clusters") },
		},
		"MissingBinaries": {
			reason: "missing binaries are named with the command that builds them",
			binDir: func(t *testing.T) string {
				dir := fakeBinDir(t)
				require.NoError(t, os.Remove(filepath.Join(dir, BinKubeScheduler)))
				return dir
			},
			check: func(t *testing.T, err error) {
				var me *MissingBinariesError
				require.True(t, errors.As(err, &me))
				assert.Equal(t, []string{BinKubeScheduler}, me.Missing)
				assert.Contains(t, err.Error(), "`make k8s-binaries`")
			},
		},
		"NoBinDir": {
			reason: "Up needs a binary directory",
			binDir: func(*testing.T) string { return "" },
			check:  func(t *testing.T, err error) { assert.Contains(t, err.Error(), "make k8s-binaries") },
		},
		"PrefixConflict": {
			reason: "a state directory holds one set with one prefix",
			binDir: fakeBinDir,
			opts:   func(o *UpOptions) { o.NamePrefix = "other-" },
			setup:  func(t *testing.T, m *Manager) { fakeCluster(t, m, HubName, components()...) },
			check: func(t *testing.T, err error) {
				assert.ErrorIs(t, err, ErrPrefixConflict)
				assert.Contains(t, err.Error(), "oamflow local down")
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m, _ := newTestManager(t, tc.binDir(t))
			if tc.setup != nil {
				tc.setup(t, m)
			}
			o := DefaultUpOptions()
			if tc.opts != nil {
				tc.opts(&o)
			}
			_, err := m.Up(context.Background(), o)
			require.Error(t, err, tc.reason)
			tc.check(t, err)
			assert.NoDirExists(t, filepath.Join(m.layout.kwokWorkdir(), "logs"), "kwokctl never ran")
		})
	}
}

func TestStatusDetectsStalePids(t *testing.T) {
	m, _ := newTestManager(t, "")
	list, err := m.Status(context.Background())
	require.NoError(t, err)
	assert.Empty(t, list, "nothing started yet")

	fakeCluster(t, m, HubName, components()...)
	fakeCluster(t, m, "member-1", CompEtcd, CompKubeAPIServer)
	fakeCluster(t, m, "member-2")

	list, err = m.Status(context.Background())
	require.NoError(t, err)
	require.Len(t, list, 3)
	byName := map[string]ClusterStatus{}
	for _, s := range list {
		byName[s.Name] = s
	}
	assert.True(t, byName[HubName].Running, "every component alive")
	assert.Len(t, byName[HubName].PIDs(), 5)
	assert.Equal(t, "oamflow-local", byName[HubName].Context)
	assert.Equal(t, m.layout.kubeconfigPath(HubName), byName[HubName].Kubeconfig)
	assert.False(t, byName[HubName].APIReady, "a sleeper is no kube-apiserver")
	assert.False(t, byName["member-1"].Running, "a stale pid file makes the cluster not running")
	assert.Equal(t, []string{CompKubeControllerManager, CompKubeScheduler, CompKwokController}, deadComponents(byName["member-1"]))
	assert.Empty(t, byName["member-2"].PIDs(), "all pid files stale")
	for _, c := range byName[HubName].Components {
		assert.Equal(t, m.layout.logPath("oamflow-local", c.Name), c.Log, "status says where each log is")
	}
}

func TestDownStopsEveryProcess(t *testing.T) {
	m, out := newTestManager(t, fakeBinDir(t))

	res, err := m.Down(context.Background())
	require.NoError(t, err, "down with nothing running is fine")
	assert.Empty(t, res.Stopped)
	assert.NoDirExists(t, m.Home(), "down does not create a state dir that never existed")

	hub := fakeCluster(t, m, HubName, components()...)
	fakeCluster(t, m, "member-1", CompEtcd)
	// A process of an orphaned kwokctl workdir (no state record).
	orphan := startSleeper(t, m.layout.argv0("oamflow-member-7", CompEtcd))
	// A process of the hub without a pid file.
	extra := startSleeper(t, filepath.Join(m.layout.kwokDir(hub.KwokName), "bin", "extra"))

	res, err = m.Down(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{HubName, "member-1", "oamflow-member-7"}, res.Stopped)
	assert.Len(t, res.PIDs, 8, "5 hub components + its extra process + 1 member + 1 orphan")
	for _, pid := range res.PIDs {
		assert.False(t, processAlive(pid, ""), "pid %d is gone", pid)
	}
	assert.False(t, processAlive(orphan.Process.Pid, ""))
	assert.False(t, processAlive(extra.Process.Pid, ""))
	assert.NoFileExists(t, m.layout.statePath(), "state removed")
	assert.NoDirExists(t, m.layout.kwokWorkdir(), "kwokctl files removed")
	assert.Contains(t, out.String(), "local: stopping 6 processes")

	_, err = m.Kubeconfig(HubName)
	assert.ErrorIs(t, err, ErrUnknownCluster, "nothing left")
}

func TestKubeconfig(t *testing.T) {
	m, _ := newTestManager(t, "")
	_, err := m.Kubeconfig("nope")
	require.Error(t, err, "invalid names are rejected")

	_, err = m.Kubeconfig(HubName)
	require.ErrorIs(t, err, ErrUnknownCluster)
	assert.Contains(t, err.Error(), "oamflow local up")

	fakeCluster(t, m, HubName)
	_, err = m.Kubeconfig("member-1")
	require.ErrorIs(t, err, ErrUnknownCluster)
	assert.Contains(t, err.Error(), "local", "the message lists the known clusters")

	_, err = m.Kubeconfig(HubName)
	require.Error(t, err, "no file until the cluster was ready once")
	assert.NotErrorIs(t, err, ErrUnknownCluster)

	writeFile(t, m.layout.kubeconfigPath(HubName), "apiVersion: v1\n", 0o600)
	p, err := m.Kubeconfig(HubName)
	require.NoError(t, err)
	assert.Equal(t, m.layout.kubeconfigPath(HubName), p)
}

func TestLockHome(t *testing.T) {
	l := layout{home: filepath.Join(t.TempDir(), "h")}
	unlock, err := lockHome(l)
	require.NoError(t, err)
	// flock locks belong to open files, so a second open in this process conflicts too.
	_, err = lockHome(l)
	require.Error(t, err, "a second command on the same state dir fails fast")
	assert.Contains(t, err.Error(), strconv.Itoa(os.Getpid()), "the message names the holder")
	unlock()
	unlock2, err := lockHome(l)
	require.NoError(t, err, "free again")
	unlock2()
}

func TestProgressLines(t *testing.T) {
	var b bytes.Buffer
	p := &progress{w: &b}
	p.reset()
	p.printf("local", "kube-apiserver ready")
	p.printf("", "binaries: %s", "/x")
	assert.Regexp(t, `^\[ *0\.\ds\] local: kube-apiserver ready\n\[ *0\.\ds\] binaries: /x\n$`, b.String())
}

func TestComponentErrorMessage(t *testing.T) {
	cases := map[string]struct {
		reason string
		err    *ComponentError
		want   string
	}{
		"WithLog": {
			reason: "names cluster, component, log file and shows its tail",
			err:    &ComponentError{Cluster: "member-1", Component: CompKubeScheduler, Reason: "is not running", LogPath: "/l/kube-scheduler.log", LogTail: "E boom"},
			want:   "cluster member-1: kube-scheduler is not running; last lines of /l/kube-scheduler.log:\nE boom",
		},
		"NotStarted": {
			reason: "no log when nothing ran",
			err:    &ComponentError{Cluster: "local", Component: CompKubeAPIServer, Reason: "cannot listen on its port"},
			want:   "cluster local: kube-apiserver cannot listen on its port",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.err.Error(), tc.reason)
		})
	}
}

func TestUpFixedPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	m, _ := newTestManager(t, fakeBinDir(t))
	o := DefaultUpOptions()
	o.APIServerPort = l.Addr().(*net.TCPAddr).Port
	_, err = m.Up(context.Background(), o)
	var ce *ComponentError
	require.ErrorAs(t, err, &ce, "a taken --api-port is reported before anything starts")
	assert.Equal(t, CompKubeAPIServer, ce.Component)
	assert.Contains(t, err.Error(), strconv.Itoa(o.APIServerPort))
	assert.NoDirExists(t, filepath.Join(m.layout.kwokWorkdir(), "logs"), "kwokctl never ran")
}
