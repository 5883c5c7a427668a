package framework

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/oamflow/oamflow/pkg/cli"
	"github.com/oamflow/oamflow/pkg/manager"
)

// Oamflow runs the `oamflow` CLI in-process against kubeconfig (appended as
// --kubeconfig) and returns what it wrote to stdout and its error; stderr
// and the command line go to the test log.
func Oamflow(t testing.TB, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := cli.NewRootCommand(&out, LogWriter(t))
	root.SetArgs(append(args, "--kubeconfig", kubeconfig))
	err := root.Execute()
	t.Logf("$ oamflow %s\n%s", strings.Join(args, " "), out.String())
	return out.String(), err
}

// ControllerOption changes the manager.Options StartController uses.
type ControllerOption func(*manager.Options)

// WithChartRoot sets the folder of bundled Helm charts (--chart-root).
func WithChartRoot(dir string) ControllerOption {
	return func(o *manager.Options) { o.ChartRoot = dir }
}

// StartController installs the CRDs and built-in definitions into c with
// `oamflow install`, then runs the controller (manager.Run, the code the
// oamflow-controller binary runs) in this process against c until t ends.
// Metrics and probe endpoints are off; outbound requests may reach
// loopback (--outbound-allow=127.0.0.0/8: the tests' HTTP servers, Helm
// repositories and OCI registry listen on 127.0.0.1); unhealthy Applications are
// re-checked every 2 s and failed steps retried at most 3 times so that
// tests see outcomes quickly. Only one controller may run per process at a
// time (the workflow library is process-wide).
func StartController(t testing.TB, c *Cluster, opts ...ControllerOption) {
	t.Helper()
	if _, err := Oamflow(t, c.Kubeconfig, "install"); err != nil {
		t.Fatalf("oamflow install on %s: %v", c, err)
	}
	o := manager.DefaultOptions()
	o.MetricsAddr, o.ProbeAddr = "0", "0"
	o.UnhealthyRequeuePeriod = 2 * time.Second
	o.MaxStepRetries = 3
	o.Outbound.Allow = []string{"127.0.0.0/8"}
	for _, opt := range opts {
		opt(&o)
	}
	// The controller's logs go to a file (kept after the test, named in the
	// test log) rather than interleaving with the test output.
	logFile, err := os.CreateTemp("", "oamflow-e2e-controller-*.log")
	if err != nil {
		t.Fatalf("controller log file: %v", err)
	}
	t.Logf("controller log: %s", logFile.Name())
	logger := zap.New(zap.WriteTo(logFile), zap.UseDevMode(true))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger.WithName("klog"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- manager.Run(ctx, c.Config, o) }()
	t.Cleanup(func() {
		defer logFile.Close()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("controller on %s stopped with: %v", c, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("controller on %s did not stop within 30 s", c)
		}
	})
}
