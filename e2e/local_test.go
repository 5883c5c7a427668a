//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oamflow/oamflow/e2e/framework"
	"github.com/oamflow/oamflow/pkg/cli"
	"github.com/oamflow/oamflow/pkg/localcluster"
)

// oamflow runs the CLI in-process against state directory home and binary
// directory bin, and returns its stdout and error. Progress (stderr) goes to
// the test log.
func oamflow(t *testing.T, home, bin string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := cli.NewRootCommand(&out, framework.LogWriter(t))
	root.SetArgs(append(args, "--home", home, "--k8s-bin", bin))
	err := root.Execute()
	t.Logf("$ oamflow %s\n%s", strings.Join(args, " "), out.String())
	if err != nil {
		t.Logf("Error: %v", err)
	}
	return out.String(), err
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestLocalUpTwoClusters is the acceptance test of `oamflow local`: two
// clusters through the CLI, a Deployment, a StatefulSet and a Job in each
// progressing like on a real cluster, and nothing left after `down`.
func TestLocalUpTwoClusters(t *testing.T) {
	bin := framework.BinDir(t)
	home := t.TempDir()
	t.Cleanup(func() { // whatever happens, leave no process behind
		_, _ = oamflow(t, home, bin, "local", "down")
	})

	out, err := oamflow(t, home, bin, "local", "up", "--clusters", "2", "--nodes", "2")
	require.NoError(t, err)
	hubKubeconfig := filepath.Join(home, "clusters", "local", "kubeconfig.yaml")
	memberKubeconfig := filepath.Join(home, "clusters", "member-1", "kubeconfig.yaml")
	assert.Equal(t, "export KUBECONFIG="+hubKubeconfig+":"+memberKubeconfig, lastLine(out), "the last line gives the kubeconfig paths")

	env := framework.Connect(t, home, bin)
	require.Len(t, env.Clusters, 2)
	var pids []int
	for _, c := range env.Clusters {
		require.Len(t, c.PIDs, 5, "%s runs etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok", c)
		pids = append(pids, c.PIDs...)
	}

	t.Run("UpIsIdempotent", func(t *testing.T) {
		out, err := oamflow(t, home, bin, "local", "up", "--clusters", "2", "--nodes", "2")
		require.NoError(t, err)
		assert.Equal(t, 2, strings.Count(out, "already running"), "both clusters are reused")
		assert.ElementsMatch(t, pids, env.Manager.Processes(), "no process was restarted or added")
	})

	t.Run("Status", func(t *testing.T) {
		out, err := oamflow(t, home, bin, "local", "status")
		require.NoError(t, err)
		assert.Contains(t, out, "local: running\n")
		assert.Contains(t, out, "member-1: running\n")
		assert.Contains(t, out, memberKubeconfig)
		assert.Contains(t, out, filepath.Join(home, "kwok", "clusters", "oamflow-member-1", "logs", "kube-apiserver.log"), "status says where the logs are")
	})

	t.Run("Kubeconfig", func(t *testing.T) {
		out, err := oamflow(t, home, bin, "local", "kubeconfig", "member-1")
		require.NoError(t, err)
		assert.Equal(t, memberKubeconfig, lastLine(out))
	})

	t.Run("Workloads", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, c := range env.Clusters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				checkWorkloads(t, c)
			}()
		}
		wg.Wait()
	})

	t.Run("StaleClusterRecreated", func(t *testing.T) {
		member := env.Cluster(t, "member-1")
		list, err := env.Manager.Status(context.Background())
		require.NoError(t, err)
		var scheduler int
		for _, c := range list[1].Components {
			if c.Name == localcluster.CompKubeScheduler {
				scheduler = c.PID
			}
		}
		require.NotZero(t, scheduler)
		require.NoError(t, syscall.Kill(scheduler, syscall.SIGKILL))
		require.Eventually(t, func() bool { return !localcluster.ProcessAlive(scheduler) }, 10*time.Second, 50*time.Millisecond)

		out, err := oamflow(t, home, bin, "local", "up", "--clusters", "2", "--nodes", "2")
		require.NoError(t, err)
		assert.Regexp(t, `(?m)^local .*already running`, out, "the healthy hub is kept")
		assert.Regexp(t, `(?m)^member-1 .*started in`, out, "the member with a dead kube-scheduler is recreated")
		for _, pid := range member.PIDs {
			assert.False(t, localcluster.ProcessAlive(pid), "old member pid %d was stopped", pid)
		}
		pids = env.Manager.Processes()
		assert.Len(t, pids, 10)
	})

	out, err = oamflow(t, home, bin, "local", "down")
	require.NoError(t, err)
	assert.Contains(t, out, "Stopped local, member-1 (10 processes")
	for _, pid := range pids {
		assert.False(t, localcluster.ProcessAlive(pid), "pid %d is gone after down", pid)
	}
	assert.Empty(t, env.Manager.Processes(), "no process of the state dir is left")

	out, err = oamflow(t, home, bin, "local", "down")
	require.NoError(t, err, "down with nothing running succeeds")
	assert.Contains(t, out, "nothing to stop")
}

// checkWorkloads creates a 3-replica Deployment, a 3-replica StatefulSet and
// a Job in c and waits for Available, readyReplicas=3 and Complete.
func checkWorkloads(t *testing.T, c *framework.Cluster) {
	ctx := context.Background()
	apps := c.Kube.AppsV1()
	_, err := apps.Deployments("default").Create(ctx, framework.Deployment("web", 3), metav1.CreateOptions{})
	require.NoError(t, err, c)
	_, err = apps.StatefulSets("default").Create(ctx, framework.StatefulSet("db", 3), metav1.CreateOptions{})
	require.NoError(t, err, c)
	_, err = c.Kube.BatchV1().Jobs("default").Create(ctx, framework.Job("migrate", 1), metav1.CreateOptions{})
	require.NoError(t, err, c)

	framework.WaitFor(t, 60*time.Second, fmt.Sprintf("%s: Deployment web Available", c), func(ctx context.Context) (bool, error) {
		d, err := apps.Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && framework.DeploymentAvailable(d) && d.Status.AvailableReplicas == 3, err
	})
	framework.WaitFor(t, 60*time.Second, fmt.Sprintf("%s: StatefulSet db readyReplicas=3", c), func(ctx context.Context) (bool, error) {
		s, err := apps.StatefulSets("default").Get(ctx, "db", metav1.GetOptions{})
		return err == nil && s.Status.ReadyReplicas == 3, err
	})
	framework.WaitFor(t, 60*time.Second, fmt.Sprintf("%s: Job migrate Complete", c), func(ctx context.Context) (bool, error) {
		j, err := c.Kube.BatchV1().Jobs("default").Get(ctx, "migrate", metav1.GetOptions{})
		return err == nil && framework.JobComplete(j), err
	})
}

// TestLocalUpFaults covers the failures `up` must report clearly: the error
// names the component (with the end of its log when it ran) and nothing
// started by the attempt keeps running.
func TestLocalUpFaults(t *testing.T) {
	bin := framework.BinDir(t)

	t.Run("PortInUse", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		port := l.Addr().(*net.TCPAddr).Port
		home := t.TempDir()
		_, err = oamflow(t, home, bin, "local", "up", "--nodes", "2", "--api-port", fmt.Sprint(port))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "kube-apiserver")
		assert.Contains(t, err.Error(), fmt.Sprint(port))
		assertNoProcesses(t, home, bin)
	})

	t.Run("CrashOnStart", func(t *testing.T) {
		crashBin := binDirWith(t, bin, localcluster.BinKubeScheduler,
			"echo 'E0000 simulated crash: kube-scheduler cannot start' >&2\nexit 1\n")
		home := t.TempDir()
		_, err := oamflow(t, home, crashBin, "local", "up", "--nodes", "2")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "kube-scheduler is not running")
		assert.Contains(t, err.Error(), "simulated crash", "the error carries the end of the component's log")
		assertNoProcesses(t, home, crashBin)

		out, err := oamflow(t, home, crashBin, "local", "status")
		require.NoError(t, err)
		assert.Contains(t, out, "local: stopped", "the failed cluster stays visible with its logs")
		_, err = oamflow(t, home, crashBin, "local", "down")
		require.NoError(t, err)
	})

	t.Run("NotReadyInTime", func(t *testing.T) {
		// A kube-scheduler that runs but never serves /healthz. exec -a keeps
		// the argv[0] kwokctl gave it, so it counts as running.
		hangBin := binDirWith(t, bin, localcluster.BinKubeScheduler,
			"echo 'I0000 simulated hang: kube-scheduler never gets ready' >&2\nexec -a \"$0\" sleep 600\n")
		home := t.TempDir()
		_, err := oamflow(t, home, hangBin, "local", "up", "--nodes", "2", "--timeout", "20s")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "was not ready within the timeout of 20s")
		assert.Contains(t, err.Error(), "last lines of", "the error carries the end of the component's log")
		assertNoProcesses(t, home, hangBin)
		_, err = oamflow(t, home, hangBin, "local", "down")
		require.NoError(t, err)
	})

	t.Run("TimeoutWhileCreating", func(t *testing.T) {
		home := t.TempDir()
		_, err := oamflow(t, home, bin, "local", "up", "--nodes", "2", "--timeout", "1s")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "within the timeout of 1s")
		assert.Contains(t, err.Error(), "last lines of", "the error carries the end of the component's log")
		assertNoProcesses(t, home, bin)
		_, err = oamflow(t, home, bin, "local", "down")
		require.NoError(t, err)
	})
}

// binDirWith returns a binary directory linking to bin's binaries except
// name, which is a bash script answering --version like v1.34.2 and
// otherwise running body.
func binDirWith(t *testing.T, bin, name, body string) string {
	t.Helper()
	dir := t.TempDir()
	for _, b := range localcluster.ClusterBinaries() {
		if b != name {
			require.NoError(t, os.Symlink(filepath.Join(bin, b), filepath.Join(dir, b)))
		}
	}
	script := "#!/bin/bash\nif [ \"$1\" = --version ]; then echo 'Kubernetes v1.34.2'; exit 0; fi\n" + body
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755))
	return dir
}

// assertNoProcesses checks that no process of state dir home is alive.
func assertNoProcesses(t *testing.T, home, bin string) {
	t.Helper()
	m, err := localcluster.New(localcluster.Config{Home: home, BinDir: bin})
	require.NoError(t, err)
	assert.Empty(t, m.Processes(), "everything started by the failed attempt is stopped")
}
