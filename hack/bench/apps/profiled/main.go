// Command profiled runs the oamflow controller (manager.Run, the code the
// oamflow-controller binary runs) with a net/http/pprof endpoint, for
// profiling it under the apps benchmark (`go run ./hack/bench/apps
// -profile`): CPU with /debug/pprof/profile, memory with
// /debug/pprof/heap. Only the flags the benchmark passes exist.
package main

import (
	"flag"
	"fmt"
	"net/http"
	_ "net/http/pprof" //nolint:gosec // a benchmark-only binary listening on loopback
	"os"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/oamflow/oamflow/pkg/manager"
)

func main() {
	o := manager.DefaultOptions()
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file")
	fs.IntVar(&o.Concurrency, "concurrent-reconciles", o.Concurrency, "Applications reconciled in parallel")
	fs.DurationVar(&o.ResyncPeriod, "resync-period", o.ResyncPeriod, "resync period")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "metrics address")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, "probe address")
	fs.BoolVar(&o.Webhook.Enabled, "webhook", o.Webhook.Enabled, "serve the admission webhooks (registered on a URL, as the binary does outside a cluster)")
	fs.IntVar(&o.RevisionLimit, "application-revision-limit", o.RevisionLimit, "ApplicationRevisions kept per Application")
	pprofAddr := fs.String("pprof-bind-address", "127.0.0.1:6060", "address of /debug/pprof")
	_ = fs.Parse(os.Args[1:])
	logger := zap.New()
	ctrl.SetLogger(logger)
	klog.SetLogger(logger.WithName("workflow"))
	go func() {
		if err := http.ListenAndServe(*pprofAddr, nil); err != nil { //nolint:gosec // loopback, benchmark only
			fmt.Fprintln(os.Stderr, "pprof:", err)
		}
	}()
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
	if err := manager.Run(ctrl.SetupSignalHandler(), cfg, o); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(2)
	}
}
