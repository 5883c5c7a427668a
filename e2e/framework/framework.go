// Package framework runs end-to-end tests against 1–3 full local clusters
// (pkg/localcluster) started in a temporary state directory, and gives each
// test clients, waits and workload fixtures.
//
//	env := framework.Start(t, 2)            // hub "local" + "member-1", stopped when t ends
//	hub := env.Cluster("local")
//	_, err := hub.Kube.AppsV1().Deployments("default").Create(ctx, framework.Deployment("web", 3), metav1.CreateOptions{})
//
// The binaries come from $OAMFLOW_K8S_BIN or bin/k8s (`make k8s-binaries`);
// when they are missing the test fails saying so.
package framework

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/pkg/localcluster"
)

// Env is a set of local clusters in one state directory.
type Env struct {
	// Home is the state directory (a temporary directory for Start).
	Home string
	// BinDir holds the control-plane binaries.
	BinDir string
	// Manager manages the set.
	Manager *localcluster.Manager
	// Clusters are the running clusters in set order (hub first).
	Clusters []*Cluster
}

// Cluster is one running cluster with clients.
type Cluster struct {
	// Name is "local" or "member-<k>".
	Name string
	// Kubeconfig is the cluster's kubeconfig file.
	Kubeconfig string
	// Config is the REST config from Kubeconfig.
	Config *rest.Config
	// Kube is a client-go clientset.
	Kube kubernetes.Interface
	// Client is a controller-runtime client with the client-go scheme.
	Client client.Client
	// PIDs are the cluster's component processes when it was connected.
	PIDs []int
}

// Option configures Start.
type Option func(*localcluster.UpOptions)

// WithNodes sets the fake nodes per cluster (default 2).
func WithNodes(n int) Option { return func(o *localcluster.UpOptions) { o.Nodes = n } }

// WithTimeout bounds the start (default 3 minutes).
func WithTimeout(d time.Duration) Option { return func(o *localcluster.UpOptions) { o.Timeout = d } }

// WithAuditLog makes every kube-apiserver write an audit log of all
// requests (see localcluster.UpOptions.AuditLog and Manager.AuditLogPath).
func WithAuditLog() Option { return func(o *localcluster.UpOptions) { o.AuditLog = true } }

// BinDir returns the binary directory, failing t (with the command that
// builds them) when the binaries are missing.
func BinDir(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatalf("working directory: %v", err)
	}
	dir, err := localcluster.ResolveBinDir("", os.Getenv(localcluster.BinDirEnv), wd)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if err := localcluster.CheckBinaries(dir, localcluster.ClusterBinaries()...); err != nil {
		t.Fatalf("%v", err)
	}
	return dir
}

// Start starts n clusters (1 to 3 is what a test machine holds comfortably)
// in a temporary state directory, with 2 fake nodes each unless WithNodes
// says otherwise, and stops them when t ends, failing t if any process is
// left behind.
func Start(t testing.TB, n int, opts ...Option) *Env {
	t.Helper()
	binDir := BinDir(t)
	home := t.TempDir()
	m, err := localcluster.New(localcluster.Config{Home: home, BinDir: binDir, Progress: LogWriter(t)})
	if err != nil {
		t.Fatalf("%v", err)
	}
	o := localcluster.DefaultUpOptions()
	o.Clusters, o.NamePrefix, o.Nodes = n, "e2e-", 2
	for _, opt := range opts {
		opt(&o)
	}
	env := &Env{Home: home, BinDir: binDir, Manager: m}
	t.Cleanup(func() { env.Down(t) })
	if _, err := m.Up(context.Background(), o); err != nil {
		t.Fatalf("starting %d local clusters: %v", n, err)
	}
	env.connect(t)
	return env
}

// Connect returns the Env of clusters already started in home (for example
// by the CLI), with clients for every running cluster. It does not stop them.
func Connect(t testing.TB, home, binDir string) *Env {
	t.Helper()
	m, err := localcluster.New(localcluster.Config{Home: home, BinDir: binDir, Progress: LogWriter(t)})
	if err != nil {
		t.Fatalf("%v", err)
	}
	env := &Env{Home: home, BinDir: binDir, Manager: m}
	env.connect(t)
	return env
}

// connect fills Clusters from the manager's status.
func (e *Env) connect(t testing.TB) {
	t.Helper()
	list, err := e.Manager.Status(context.Background())
	if err != nil {
		t.Fatalf("local cluster status: %v", err)
	}
	e.Clusters = nil
	for _, s := range list {
		if !s.Running {
			t.Fatalf("cluster %s is not running: %+v", s.Name, s.Components)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
		if err != nil {
			t.Fatalf("cluster %s: loading %s: %v", s.Name, s.Kubeconfig, err)
		}
		cfg.QPS, cfg.Burst = 50, 100
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatalf("cluster %s: %v", s.Name, err)
		}
		c, err := client.New(cfg, client.Options{})
		if err != nil {
			t.Fatalf("cluster %s: %v", s.Name, err)
		}
		e.Clusters = append(e.Clusters, &Cluster{Name: s.Name, Kubeconfig: s.Kubeconfig, Config: cfg, Kube: kube, Client: c, PIDs: s.PIDs()})
	}
}

// Cluster returns the cluster called name, failing t when there is none.
func (e *Env) Cluster(t testing.TB, name string) *Cluster {
	t.Helper()
	for _, c := range e.Clusters {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no cluster %q in %s", name, e.Home)
	return nil
}

// Down stops every cluster and fails t if a process of the set is still
// alive 15 s afterwards, checked by pid (a loaded machine can take a few
// seconds to reap an exiting apiserver).
func (e *Env) Down(t testing.TB) {
	t.Helper()
	before := e.Manager.Processes()
	if _, err := e.Manager.Down(context.Background()); err != nil {
		t.Errorf("local down: %v", err)
	}
	alive := func() []int {
		var pids []int
		for _, pid := range before {
			if localcluster.ProcessAlive(pid) {
				pids = append(pids, pid)
			}
		}
		return append(pids, e.Manager.Processes()...)
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(alive()) > 0 && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
	}
	if left := alive(); len(left) > 0 {
		t.Errorf("processes %v of %s still alive 15 s after down", left, e.Home)
	}
}

// WaitFor polls cond every 250 ms until it returns true, and fails t after
// timeout with desc and cond's last error.
func WaitFor(t testing.TB, timeout time.Duration, desc string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return
		}
		last = err
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not true within %s (last error: %v)", desc, timeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// LogWriter returns an io.Writer that logs each complete line through t.Log.
// It is meant for progress output written while the test runs.
func LogWriter(t testing.TB) io.Writer { return &lineWriter{t: t} }

// lineWriter logs every complete line written to it.
type lineWriter struct {
	t   testing.TB
	buf []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			return len(p), nil
		}
		w.t.Log(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

// String names the cluster in messages.
func (c *Cluster) String() string { return fmt.Sprintf("cluster %s", c.Name) }
