// Command apps benchmarks the Application controller at scale (issue 5,
// Performance): on one local cluster (pkg/localcluster, as `oamflow local
// up` starts it) with oamflow installed (`oamflow install`, run
// in-process), it runs the real oamflow-controller binary, creates N
// Applications at once (a webservice with scaler, labels and expose, and
// a worker that dependsOn it: appSpec) and reports, for each N:
//
//   - the time from the first create until every Application is `running`,
//     and the per-Application latency (create → running) p50/p90/max;
//   - the controller's CPU time (utime+stime from /proc/<pid>/stat) and
//     peak resident memory (VmHWM from /proc/<pid>/status), and, sampled
//     each half second, the peak of its anonymous memory (RssAnon: heap,
//     stacks) with the file-backed memory (RssFile) beside it — on this
//     machine's kernel a Go binary's text and read-only data are nearly
//     all resident from the start, so RssFile is about the binary's size
//     (~85 MiB for oamflow-controller) whatever the load;
//   - API requests per Application until all are running: the controller's
//     own (rest_client_requests_total from its metrics endpoint, exact) and
//     the apiserver's apiserver_request_total deltas (every client: the
//     controller, kube-controller-manager, the scheduler, kwok, this
//     program's creates and watch), split into reads (GET, LIST, WATCH) and
//     writes (everything else);
//   - the no-op resync cost: after all are running the program waits for
//     the controller's periodic resync (--resync-period, short here) to
//     reconcile every Application once more, and counts the requests in
//     that window — the controller's writes must be 0 — and the CPU time
//     from the window's first reconcile until the queue is quiet.
//
// Each N runs on a fresh cluster in a temporary state directory. The
// controller runs as issue 18's measurements were defined (and KubeVela's
// made): out of the cluster, webhook off (--webhook=false; -webhook serves
// it, as the binary does by default, and its admission calls then run in
// the controller's process and count in its CPU), revision limit 2
// (-revision-limit).
//
//	go run ./hack/bench/apps                       # -apps 200,1000
//	go run ./hack/bench/apps -apps 200 -v          # controller log tail on failure, progress lines
//	go run ./hack/bench/apps -controller bin/oamflow-controller -controller-args=--concurrent-reconciles=8
//	go run ./hack/bench/apps -apps 200 -profile /tmp/prof  # pprof CPU and heap profiles of the controller
//	go run ./hack/bench/apps -apps 2000 -shards 2  # a master and shards shard-0, shard-1 (issue 23)
//	go run ./hack/bench/apps -apps 50 -audit       # the controller's requests by verb and resource
//	go run ./hack/bench/apps -apps 200 -kubevela ~/src/kubevela  # KubeVela's controller, same cluster and workload
//
// With -shards N the benchmark runs N+1 controller processes as the
// chart's sharding does (--enable-sharding --leader-elect): the master
// (webhook off, so its scheduler loop labels each new Application with a
// shard, round-robin over shard-0 … shard-N-1) and one process per shard.
// CPU and request counts are summed over the processes; peak RSS,
// CPU and the Applications reconciled are also reported per process, and
// the balance of the assignment (Applications labelled per shard).
//
// With -kubevela DIR the benchmark measures KubeVela's controller instead,
// built from the KubeVela source tree DIR, with that tree's CRDs and
// built-in definitions (kubevela.go): issue 18's targets are relative to
// KubeVela, and only a run on the same machine compares.
//
// With -audit the apiserver keeps an audit log (request metadata, no
// bodies), from which the controller's requests in the create and the
// update wave are broken down by verb and resource, dry runs and reads
// answered 404 apart: which request each Application costs, where the
// metrics count only methods.
//
// Then, unless -update=false, the update wave: every Application's scaler
// from 1 to 2 replicas (a merge patch each, `-creators` at a time), done
// when each one is running at its new generation and its web Deployment
// has 2 available replicas; reported with its own time, latencies, CPU,
// requests and peak RSS (VmHWM reset before the wave through
// /proc/<pid>/clear_refs, so the figure is the wave's own).
//
// Targets (issue 18): all running ≤ 30 s at 200 and ≤ 155 s at 1,000;
// controller peak RSS ≤ 80 / ≤ 120 MiB in both waves; ≤ 60 ms CPU and
// ≤ 10 writes per created Application; a no-op resync of 0 writes, 0 API
// reads and ≤ 5 ms CPU per Application. `make bench-apps` runs both counts.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/hack/buildflags"
	"github.com/oamflow/oamflow/pkg/cli"
	"github.com/oamflow/oamflow/pkg/localcluster"
	"github.com/oamflow/oamflow/pkg/manager"
	"github.com/oamflow/oamflow/pkg/sharding"
)

// benchNamespace holds the Applications.
const benchNamespace = "bench"

// appSpec is the spec of every benchmark Application (the workload of
// issue 18, the same one KubeVela was measured with): a webservice with
// scaler, labels and expose, and a worker that dependsOn it. %[1]s is the
// Application's name (components are named after it: the Deployments and
// the Service carry their component's name, unique per namespace); %[2]d
// is the scaler's replicas (1 at create, 2 in the update wave).
const appSpec = `
components:
- name: web-%[1]s
  type: webservice
  properties: {image: "registry.invalid/web:1", port: 80}
  traits:
  - type: scaler
    properties: {replicas: %[2]d}
  - type: labels
    properties: {team: bench}
  - type: expose
    properties: {port: [80]}
- name: worker-%[1]s
  type: worker
  dependsOn: [web-%[1]s]
  properties: {image: "registry.invalid/worker:1"}
`

// workload describes appSpec in the report.
const workload = "webservice + scaler + labels + expose, and a worker that dependsOn it"

// specOf is the spec of Application name with the scaler at replicas.
func specOf(name string, replicas int) (v1beta1.ApplicationSpec, error) {
	var spec v1beta1.ApplicationSpec
	if err := yaml.UnmarshalStrict([]byte(fmt.Sprintf(appSpec, name, replicas)), &spec); err != nil {
		return spec, fmt.Errorf("benchmark Application spec: %w", err)
	}
	return spec, nil
}

type config struct {
	counts         []int
	nodes          int
	binDir         string
	controller     string
	controllerArgs []string
	resync         time.Duration
	timeout        time.Duration
	creators       int
	verbose        bool
	keep           bool
	// profileDir, when set, runs hack/bench/apps/profiled (the controller
	// with /debug/pprof) and saves cpu.pprof (the first cpuSeconds of the
	// load) and heap.pprof (when all are running) there.
	profileDir string
	cpuSeconds int
	// shards > 0 runs a master and that many shard processes.
	shards int
	// update runs the update wave after the no-op resync.
	update bool
	// audit makes the apiserver write an audit log, from which the
	// controller's writes are broken down by verb and resource.
	audit bool
	// webhook serves the admission webhooks from the controller (the
	// binary's default); off, as issue 18 measures, unless asked.
	webhook bool
	// revisionLimit is the controller's --application-revision-limit (2
	// in issue 18's setup).
	revisionLimit int
	// kubevela, when set, is a KubeVela source tree: its controller is
	// measured instead of oamflow's (kubevela.go).
	kubevela string
}

func main() {
	counts := flag.String("apps", "200,1000", "comma-separated Application counts, one run (and one fresh cluster) each")
	nodes := flag.Int("nodes", localcluster.DefaultNodes, "fake nodes of the cluster (110 pods each)")
	bin := flag.String("bin", "", "Kubernetes binary directory (default $OAMFLOW_K8S_BIN, then bin/k8s of the repository)")
	ctrlBin := flag.String("controller", "", "oamflow-controller binary to run (default: go build ./cmd/oamflow-controller into a temporary directory)")
	ctrlArgs := flag.String("controller-args", "", "extra controller flags, space-separated (e.g. --concurrent-reconciles=8)")
	resync := flag.Duration("resync", 90*time.Second, "the controller's --resync-period; the no-op resync is measured at the first resync after all are running")
	timeout := flag.Duration("timeout", 15*time.Minute, "give up on a run when not all Applications are running after this long")
	creators := flag.Int("creators", 16, "parallel creates")
	verbose := flag.Bool("v", false, "progress lines every 10 s")
	keep := flag.Bool("keep", false, "leave the last cluster and controller running (prints the state directory) for inspection")
	profile := flag.String("profile", "", "folder for pprof profiles: runs ./hack/bench/apps/profiled (the controller with /debug/pprof) instead of the binary and saves <apps>-cpu.pprof, <apps>-heap.pprof (all running), <apps>-resync-cpu.pprof (the resync window) and <apps>-update-heap.pprof (not with -controller or -shards)")
	cpuSeconds := flag.Int("profile-cpu-seconds", 60, "length of the CPU profile, from the first create")
	shards := flag.Int("shards", 0, "run the controller sharded: a master (it schedules) and this many shards shard-0 … (0: one controller, no sharding)")
	update := flag.Bool("update", true, "after the no-op resync, run the update wave: every scaler 1 → 2, done when each Application is running at its new generation and its web Deployment has 2 available replicas")
	webhook := flag.Bool("webhook", false, "serve the admission webhooks from the controller (--webhook, the binary's default); off by default, as issue 18's measurements (and KubeVela's) are made")
	revisionLimit := flag.Int("revision-limit", 2, "the controller's --application-revision-limit (issue 18's setup: 2)")
	audit := flag.Bool("audit", false, "run kube-apiserver with an audit log and break the controller's requests down by verb and resource (create wave, update wave); adds the log's cost to the apiserver's")
	kubevela := flag.String("kubevela", "", "a KubeVela source tree (github.com/kubevela/kubevela): measure its controller (cmd/core, built from it) instead of oamflow's, with its CRDs and built-in definitions, the same workload and settings (not with -controller, -profile, -shards, -audit or -webhook)")
	flag.Parse()

	c := config{audit: *audit, update: *update, nodes: *nodes, controller: *ctrlBin, resync: *resync, timeout: *timeout, creators: *creators, verbose: *verbose, keep: *keep,
		profileDir: *profile, cpuSeconds: *cpuSeconds, shards: *shards, webhook: *webhook, revisionLimit: *revisionLimit, kubevela: *kubevela}
	if c.kubevela != "" && (c.controller != "" || c.profileDir != "" || c.shards > 0 || c.audit || c.webhook) {
		fmt.Fprintln(os.Stderr, "error: -kubevela runs KubeVela's controller as issue 18 measures it; it cannot be combined with -controller, -profile, -shards, -audit or -webhook")
		os.Exit(1)
	}
	if c.shards > 0 && c.profileDir != "" {
		fmt.Fprintln(os.Stderr, "error: -profile profiles one controller; it cannot be combined with -shards")
		os.Exit(1)
	}
	if c.controller != "" && c.profileDir != "" {
		// The profiled build serves /debug/pprof; a given binary would be
		// started with a flag it does not know.
		fmt.Fprintln(os.Stderr, "error: -profile builds ./hack/bench/apps/profiled from this tree; it cannot be combined with -controller")
		os.Exit(1)
	}
	for _, s := range strings.Split(*counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "error: -apps: %q is not a positive number\n", s)
			os.Exit(1)
		}
		c.counts = append(c.counts, n)
	}
	if c.profileDir != "" {
		// Found out before the first wave, not when its first profile is saved.
		if err := os.MkdirAll(c.profileDir, 0o755); err != nil {
			fmt.Fprintf(os.Stderr, "error: -profile: %v\n", err)
			os.Exit(1)
		}
	}
	c.controllerArgs = strings.Fields(*ctrlArgs)
	ctrllog.SetLogger(logr.Discard())
	// Interrupted: stop the controller and the cluster before exiting.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c, *bin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config, binFlag string, out, errOut io.Writer) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root, err := localcluster.FindModuleRoot(wd)
	if err != nil {
		return err
	}
	c.binDir, err = localcluster.ResolveBinDir(binFlag, os.Getenv(localcluster.BinDirEnv), wd)
	if err != nil {
		return err
	}
	if err := localcluster.CheckBinaries(c.binDir, localcluster.ClusterBinaries()...); err != nil {
		return err
	}
	// The controller to run: given (-controller), else built into a
	// temporary folder, KubeVela's (-kubevela) or this tree's.
	var dir string
	if c.controller == "" {
		if dir, err = os.MkdirTemp("", "oamflow-bench-bin-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	if c.kubevela != "" {
		c.controller = filepath.Join(dir, "vela-core")
		if err := buildKubeVela(c.kubevela, c.controller, errOut); err != nil {
			return err
		}
	}
	if c.controller == "" {
		pkg := "./cmd/oamflow-controller"
		if c.profileDir != "" {
			pkg = "./hack/bench/apps/profiled"
		}
		c.controller = filepath.Join(dir, "oamflow-controller")
		fmt.Fprintf(errOut, "building %s …\n", pkg)
		build := exec.Command("go", "build", "-tags", buildflags.ControllerTags, "-o", c.controller, pkg)
		build.Dir, build.Stdout, build.Stderr = root, errOut, errOut
		if err := build.Run(); err != nil {
			return fmt.Errorf("building the controller: %w", err)
		}
	}
	for i, n := range c.counts {
		fmt.Fprintf(errOut, "measuring %d Applications on a cluster of %d nodes …\n", n, c.nodes)
		r, err := measure(ctx, c, n, c.keep && i == len(c.counts)-1, errOut)
		if err != nil {
			if r != nil && r.controllerLog != "" {
				fmt.Fprintf(errOut, "controller log (last lines of %s):\n%s\n", r.controllerLog, tail(r.controllerLog, 40))
			}
			return fmt.Errorf("%d Applications: %w", n, err)
		}
		report(out, c, r)
	}
	return nil
}

// result is one run.
type result struct {
	apps       int
	created    time.Duration // first create → last create returned
	allRunning time.Duration // first create → every Application running
	latencies  []time.Duration
	// cpuStart, cpuRunning and cpuTotal are the controller's CPU time at
	// the first create (its start: caches, definitions), when all were
	// running and at the end (after the resync window); rssPeakKiB is its
	// VmHWM at the end.
	cpuStart, cpuRunning, cpuTotal time.Duration
	rssPeakKiB                     int64
	// anonPeakKiB is the highest anonymous resident memory (RssAnon: the
	// Go heap, stacks, runtime) seen by sampling every process each
	// half second, fileKiB its file-backed resident memory then (RssFile:
	// mostly the binary's own pages, mapped at start).
	anonPeakKiB, fileKiB int64
	// resyncCPU is the controller CPU time from the first reconcile of the
	// resync window until it was quiet.
	resyncCPU time.Duration
	// procs are the figures of each controller process (one without
	// sharding); shardApps counts the Applications labelled per shard.
	procs     []procFigures
	shardApps map[string]int
	// ctrlRun/apiRun: requests until all running; ctrlResync/apiResync: in
	// the resync window. Keys are the HTTP method (controller) or
	// "VERB resource" (apiserver).
	ctrlRun, ctrlResync map[string]float64
	apiRun, apiResync   map[string]float64
	resyncReconciles    float64
	runReconciles       float64
	resyncWindow        time.Duration
	loadAvg             string
	controllerLog       string
	// update is the update wave (nil with -update=false).
	update *waveResult
	// runSpan is the create wave (first create → all running);
	// auditRun and auditUpdate are the controller's requests by "verb
	// resource" in the create and update waves (-audit).
	runSpan               window
	auditRun, auditUpdate map[string]float64
}

// measure runs one count on a fresh cluster.
func measure(ctx context.Context, c config, n int, keep bool, errOut io.Writer) (r *result, retErr error) {
	r = &result{apps: n}
	home, err := os.MkdirTemp("", "oamflow-bench-apps-")
	if err != nil {
		return r, err
	}
	m, err := localcluster.New(localcluster.Config{Home: home, BinDir: c.binDir, Progress: io.Discard})
	if err != nil {
		return r, err
	}
	defer func() {
		if keep && retErr == nil {
			fmt.Fprintf(errOut, "kept: state directory %s (stop with OAMFLOW_HOME=%s oamflow local down)\n", home, home)
			return
		}
		_, _ = m.Down(context.Background())
		if retErr == nil {
			_ = os.RemoveAll(home)
		} else {
			fmt.Fprintf(errOut, "cluster logs kept in %s\n", home)
		}
	}()
	o := localcluster.DefaultUpOptions()
	o.Nodes = c.nodes
	o.AuditLog = c.audit
	up, err := m.Up(ctx, o)
	if err != nil {
		return r, err
	}
	kubeconfig := up.Clusters[0].Kubeconfig
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return r, err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	if c.kubevela != "" {
		err = installKubeVela(ctx, cfg, c.kubevela)
	} else {
		err = install(kubeconfig, errOut)
	}
	if err != nil {
		return r, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return r, err
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return r, fmt.Errorf("creating namespace %s: %w", benchNamespace, err)
	}

	proc, err := startControllers(c, home, kubeconfig)
	r.controllerLog = proc.logs()
	if err != nil {
		return r, err
	}
	if !keep {
		defer proc.stop()
	}

	scheme, err := manager.Scheme()
	if err != nil {
		return r, err
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return r, err
	}
	w, err := watchPhases(ctx, cfg, n)
	if err != nil {
		return r, err
	}
	defer w.stop()

	api0, err := apiserverRequests(ctx, kube)
	if err != nil {
		return r, err
	}
	ctrl0, err := proc.metrics()
	if err != nil {
		return r, err
	}

	sampling, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	rss := sampleRSS(sampling, proc)
	if c.profileDir != "" {
		go proc.procs[0].save(fmt.Sprintf("/debug/pprof/profile?seconds=%d", c.cpuSeconds), filepath.Join(c.profileDir, fmt.Sprintf("%d-cpu.pprof", n)), errOut)
	}
	if r.cpuStart, err = proc.cpu(); err != nil {
		return r, err
	}
	start := time.Now()
	w.start(start)
	if err := createApps(ctx, cl, n, c.creators, w); err != nil {
		return r, err
	}
	r.created = time.Since(start)

	deadline := time.NewTimer(c.timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
wait:
	for {
		select {
		case <-w.allRunning:
			break wait
		case <-ctx.Done():
			return r, ctx.Err()
		case <-proc.exited:
			return r, fmt.Errorf("a controller exited: %w", proc.err())
		case <-deadline.C:
			return r, fmt.Errorf("not all running after %s: %s", c.timeout, w.summary())
		case <-tick.C:
			if c.verbose {
				fmt.Fprintf(errOut, "  %5.0fs %s\n", time.Since(start).Seconds(), w.summary())
			}
		}
	}
	r.allRunning = w.lastRunning.Sub(start)
	if c.profileDir != "" {
		proc.procs[0].save("/debug/pprof/heap", filepath.Join(c.profileDir, fmt.Sprintf("%d-heap.pprof", n)), errOut)
	}
	r.latencies = w.latencies()
	if r.cpuRunning, err = proc.cpu(); err != nil {
		return r, err
	}
	api1, err := apiserverRequests(ctx, kube)
	if err != nil {
		return r, err
	}
	ctrl1, err := proc.metrics()
	if err != nil {
		return r, err
	}
	r.apiRun = delta(api1, api0)
	r.ctrlRun = delta(ctrl1.requests, ctrl0.requests)
	r.runSpan = window{from: start, to: time.Now()}
	r.runReconciles = ctrl1.reconciles - ctrl0.reconciles

	// The no-op resync: wait for the periodic resync to reconcile every
	// Application once (reconcile count up by n, then a quiet queue).
	fmt.Fprintf(errOut, "all %d running after %.1fs; waiting for the next resync (period %s) …\n", n, r.allRunning.Seconds(), c.resync)
	// Said now too: a run that fails later (a resync that never ends) keeps
	// the create wave's figures.
	cr, cw := readsWrites(r.ctrlRun)
	if hwm, err := peakRSS(proc.procs[0].pid()); err == nil {
		fmt.Fprintf(errOut, "  controller until all running: %.0f ms CPU per app (start included), peak RSS (VmHWM, first process) %d MiB, %.1f reads and %.1f writes per app\n",
			r.cpuRunning.Seconds()*1000/float64(n), hwm/1024, cr/float64(n), cw/float64(n))
	}
	time.Sleep(5 * time.Second) // let the last status writes and requeues settle
	ctrlA, err := proc.metrics()
	if err != nil {
		return r, err
	}
	apiA, err := apiserverRequests(ctx, kube)
	if err != nil {
		return r, err
	}
	t0 := time.Now()
	resyncProfiled := make(chan struct{})
	if c.profileDir != "" {
		// The window holds the resync pass and the steady state around it.
		secs := int(c.resync.Seconds()) + 15
		go func() {
			defer close(resyncProfiled)
			proc.procs[0].save(fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), filepath.Join(c.profileDir, fmt.Sprintf("%d-resync-cpu.pprof", n)), errOut)
		}()
	} else {
		close(resyncProfiled)
	}
	limit := time.Now().Add(2*c.resync + time.Minute)
	var ctrlB metricsSnapshot
	quietSince := time.Time{}
	last := ctrlA.reconciles
	cpuBefore, err := proc.cpu()
	if err != nil {
		return r, err
	}
	var resyncFrom time.Duration
	for {
		if time.Now().After(limit) {
			return r, fmt.Errorf("no resync of all %d Applications within %s (reconciles in the window: %.0f)", n, 2*c.resync+time.Minute, ctrlB.reconciles-ctrlA.reconciles)
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(time.Second):
		}
		if ctrlB, err = proc.metrics(); err != nil {
			return r, err
		}
		cpuNow, err := proc.cpu()
		if err != nil {
			return r, err
		}
		if ctrlB.reconciles != last || ctrlB.queueDepth > 0 {
			if quietSince.IsZero() {
				resyncFrom = cpuBefore // the resync began after the last poll
			}
			last, quietSince = ctrlB.reconciles, time.Now()
			cpuBefore = cpuNow
			continue
		}
		cpuBefore = cpuNow
		if ctrlB.reconciles-ctrlA.reconciles >= float64(n) && time.Since(quietSince) > 3*time.Second {
			break
		}
	}
	apiB, err := apiserverRequests(ctx, kube)
	if err != nil {
		return r, err
	}
	r.resyncWindow = time.Since(t0)
	r.resyncReconciles = ctrlB.reconciles - ctrlA.reconciles
	r.resyncCPU = cpuBefore - resyncFrom
	r.ctrlResync = delta(ctrlB.requests, ctrlA.requests)
	r.apiResync = delta(apiB, apiA)
	if r.cpuTotal, err = proc.cpu(); err != nil {
		return r, err
	}
	if r.procs, err = proc.figures(); err != nil {
		return r, err
	}
	for _, f := range r.procs {
		r.rssPeakKiB = max(r.rssPeakKiB, f.rssPeakKiB)
	}
	stopSampling()
	r.anonPeakKiB, r.fileKiB = rss()
	if c.shards > 0 {
		if r.shardApps, err = countShards(ctx, cl); err != nil {
			return r, err
		}
	}
	<-resyncProfiled
	if c.update {
		fmt.Fprintf(errOut, "update wave: the scaler of all %d from 1 to %d replicas …\n", n, updatedReplicas)
		if r.update, err = updateWave(ctx, c, cfg, cl, n, proc, errOut); err != nil {
			return r, err
		}
		if c.profileDir != "" {
			proc.procs[0].save("/debug/pprof/heap", filepath.Join(c.profileDir, fmt.Sprintf("%d-update-heap.pprof", n)), errOut)
		}
	}
	if c.audit {
		spans := []window{r.runSpan}
		if r.update != nil {
			spans = append(spans, r.update.span)
		}
		counts, err := auditRequests(m.AuditLogPath(up.Clusters[0].Name), c.controller, spans)
		if err != nil {
			return r, err
		}
		r.auditRun = counts[0]
		if r.update != nil {
			r.auditUpdate = counts[1]
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		r.loadAvg = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return r, nil
}

// install runs `oamflow install` in-process.
func install(kubeconfig string, errOut io.Writer) error {
	var buf bytes.Buffer
	root := cli.NewRootCommand(&buf, errOut)
	root.SetArgs([]string{"install", "--kubeconfig", kubeconfig})
	if err := root.Execute(); err != nil {
		return fmt.Errorf("oamflow install: %w\n%s", err, buf.String())
	}
	return nil
}

// controllerProc is the running controller binary.
type controllerProc struct {
	name        string
	cmd         *exec.Cmd
	log         string
	metricsAddr string
	pprofAddr   string
	exited      chan struct{}
	err         error
}

func (p *controllerProc) pid() int { return p.cmd.Process.Pid }

// startController starts one controller process called name (its log is
// oamflow-<name>.log in home) with extra arguments.
func startController(c config, home, kubeconfig, name string, extra []string) (*controllerProc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p := &controllerProc{name: name, log: filepath.Join(home, "oamflow-"+name+".log"), metricsAddr: fmt.Sprintf("127.0.0.1:%d", port), exited: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig", kubeconfig,
		"--metrics-bind-address", p.metricsAddr,
		"--health-probe-bind-address", "0",
		"--resync-period", c.resync.String(),
		"--webhook=" + strconv.FormatBool(c.webhook),
		"--application-revision-limit=" + strconv.Itoa(c.revisionLimit),
	}
	if c.kubevela != "" {
		args = kubevelaArgs(c, p.metricsAddr)
	}
	if c.profileDir != "" { // never with -kubevela
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		p.pprofAddr = fmt.Sprintf("127.0.0.1:%d", port)
		args = append(args, "--pprof-bind-address", p.pprofAddr)
	}
	args = append(append(args, extra...), c.controllerArgs...)
	p.cmd = exec.Command(c.controller, args...)
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", c.controller, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := p.metrics(); err == nil {
			return p, nil
		} else if time.Now().After(deadline) {
			p.stop()
			return p, fmt.Errorf("controller metrics endpoint %s not up within 30s: %w", p.metricsAddr, err)
		}
		select {
		case <-p.exited:
			return p, fmt.Errorf("the controller exited at start: %w", p.err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// controllerSet is the controller processes of one run: one, or a
// master and its shards.
type controllerSet struct {
	procs  []*controllerProc
	exited chan struct{} // closed when any process exits
	failed *controllerProc
}

// controllerRun is one process to start: its name and extra flags.
type controllerRun struct {
	name string
	args []string
}

// startControllers starts one controller, or with c.shards a master and
// c.shards shards, as the chart's sharding runs them.
func startControllers(c config, home, kubeconfig string) (*controllerSet, error) {
	set := &controllerSet{exited: make(chan struct{})}
	runs := []controllerRun{{name: "controller"}}
	if c.shards > 0 {
		var ids []string
		for i := 0; i < c.shards; i++ {
			ids = append(ids, fmt.Sprintf("shard-%d", i))
		}
		runs = []controllerRun{{name: "master", args: []string{"--enable-sharding", "--leader-elect", "--schedulable-shards=" + strings.Join(ids, ",")}}}
		for _, id := range ids {
			runs = append(runs, controllerRun{name: id, args: []string{"--enable-sharding", "--leader-elect", "--shard-id=" + id}})
		}
	}
	for _, run := range runs {
		p, err := startController(c, home, kubeconfig, run.name, run.args)
		if p != nil {
			set.procs = append(set.procs, p)
		}
		if err != nil {
			set.stop()
			return set, err
		}
	}
	var once sync.Once
	for _, p := range set.procs {
		go func() {
			<-p.exited
			once.Do(func() { set.failed = p; close(set.exited) })
		}()
	}
	return set, nil
}

func (s *controllerSet) stop() {
	for _, p := range s.procs {
		p.stop()
	}
}

// logs names the processes' log files.
func (s *controllerSet) logs() string {
	var files []string
	for _, p := range s.procs {
		files = append(files, p.log)
	}
	return strings.Join(files, " ")
}

// err is the exit of the first process that exited.
func (s *controllerSet) err() error {
	if s.failed == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", s.failed.name, s.failed.err)
}

// metrics sums the processes' metrics.
func (s *controllerSet) metrics() (metricsSnapshot, error) {
	sum := metricsSnapshot{requests: map[string]float64{}}
	for _, p := range s.procs {
		m, err := p.metrics()
		if err != nil {
			return sum, fmt.Errorf("%s: %w", p.name, err)
		}
		for k, v := range m.requests {
			sum.requests[k] += v
		}
		sum.reconciles += m.reconciles
		sum.queueDepth += m.queueDepth
	}
	return sum, nil
}

// cpu sums the processes' CPU time.
func (s *controllerSet) cpu() (time.Duration, error) {
	var sum time.Duration
	for _, p := range s.procs {
		d, err := localcluster.CPUTime(p.pid())
		if err != nil {
			return sum, err
		}
		sum += d
	}
	return sum, nil
}

// procFigures are one process's figures at the end of a run.
type procFigures struct {
	name       string
	cpu        time.Duration
	rssPeakKiB int64
	reconciles float64
}

func (s *controllerSet) figures() ([]procFigures, error) {
	var out []procFigures
	for _, p := range s.procs {
		f := procFigures{name: p.name}
		var err error
		if f.cpu, err = localcluster.CPUTime(p.pid()); err != nil {
			return nil, err
		}
		if f.rssPeakKiB, err = peakRSS(p.pid()); err != nil {
			return nil, err
		}
		m, err := p.metrics()
		if err != nil {
			return nil, err
		}
		f.reconciles = m.reconciles
		out = append(out, f)
	}
	return out, nil
}

// countShards counts the benchmark Applications per shard label.
func countShards(ctx context.Context, cl client.Client) (map[string]int, error) {
	apps := &v1beta1.ApplicationList{}
	if err := cl.List(ctx, apps, client.InNamespace(benchNamespace)); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, a := range apps.Items {
		shard, ok := a.Labels[sharding.LabelScheduledShardID]
		if !ok {
			shard = "(none)"
		}
		out[shard]++
	}
	return out, nil
}

// save writes the pprof endpoint path of the controller to file.
func (p *controllerProc) save(path, file string, errOut io.Writer) {
	resp, err := http.Get("http://" + p.pprofAddr + path)
	if err == nil {
		defer resp.Body.Close()
		var f *os.File
		if f, err = os.Create(file); err == nil {
			_, err = io.Copy(f, resp.Body)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	}
	if err != nil {
		fmt.Fprintf(errOut, "profile %s: %v\n", path, err)
		return
	}
	fmt.Fprintf(errOut, "wrote %s\n", file)
}

// stop ends the controller with SIGTERM, then SIGKILL after 10 s.
func (p *controllerProc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// metricsSnapshot is what the benchmark reads from the controller's
// metrics endpoint.
type metricsSnapshot struct {
	requests   map[string]float64 // rest_client_requests_total by method
	reconciles float64            // controller_runtime_reconcile_total, all results
	queueDepth float64            // workqueue_depth
}

func (p *controllerProc) metrics() (metricsSnapshot, error) {
	s := metricsSnapshot{requests: map[string]float64{}}
	resp, err := http.Get("http://" + p.metricsAddr + "/metrics")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("controller metrics: HTTP %d", resp.StatusCode)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return s, err
	}
	// Only the families read here: KubeVela's endpoint repeats others
	// (go_gc_duration_seconds), which the text parser refuses.
	fams, err := parseMetrics(bytes.NewReader(onlyFamilies(raw, "rest_client_requests_total", "controller_runtime_reconcile_total", "workqueue_depth")))
	if err != nil {
		return s, err
	}
	for _, m := range fams["rest_client_requests_total"].GetMetric() {
		s.requests[label(m, "method")] += m.GetCounter().GetValue()
	}
	for _, m := range fams["controller_runtime_reconcile_total"].GetMetric() {
		s.reconciles += m.GetCounter().GetValue()
	}
	for _, m := range fams["workqueue_depth"].GetMetric() {
		s.queueDepth += m.GetGauge().GetValue()
	}
	return s, nil
}

// apiserverRequests reads apiserver_request_total from the apiserver's
// /metrics, summed by "VERB resource[/subresource]".
func apiserverRequests(ctx context.Context, kube kubernetes.Interface) (map[string]float64, error) {
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the apiserver's /metrics: %w", err)
	}
	fams, err := parseMetrics(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, m := range fams["apiserver_request_total"].GetMetric() {
		res := label(m, "resource")
		if sub := label(m, "subresource"); sub != "" {
			res += "/" + sub
		}
		if res == "" {
			res = "(non-resource)"
		}
		out[label(m, "verb")+" "+res] += m.GetCounter().GetValue()
	}
	return out, nil
}

// onlyFamilies keeps, of a text exposition, the lines of the named metric
// families (their HELP, TYPE and samples).
func onlyFamilies(raw []byte, names ...string) []byte {
	var out bytes.Buffer
	for line := range bytes.Lines(raw) {
		name := string(line)
		if rest, ok := strings.CutPrefix(name, "# HELP "); ok {
			name = rest
		} else if rest, ok := strings.CutPrefix(name, "# TYPE "); ok {
			name = rest
		}
		if i := strings.IndexAny(name, " {\n"); i >= 0 {
			name = name[:i]
		}
		if slices.Contains(names, name) {
			out.Write(line)
		}
	}
	return out.Bytes()
}

func parseMetrics(r io.Reader) (map[string]*dto.MetricFamily, error) {
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return fams, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func delta(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// isRead reports whether an HTTP method or apiserver verb only reads.
func isRead(verbOrMethod string) bool {
	v, _, _ := strings.Cut(verbOrMethod, " ")
	switch v {
	case "GET", "LIST", "WATCH", "WATCHLIST", "HEAD":
		return true
	}
	return false
}

func readsWrites(m map[string]float64) (reads, writes float64) {
	for k, v := range m {
		if isRead(k) {
			reads += v
		} else {
			writes += v
		}
	}
	return reads, writes
}

// phaseWatch follows the phases of the benchmark Applications through an
// informer and records when each one was created and first seen running.
type phaseWatch struct {
	n          int
	mu         sync.Mutex
	t0         time.Time
	createdAt  map[string]time.Time
	runningAt  map[string]time.Time
	phases     map[string]common.ApplicationPhase
	allRunning chan struct{}
	closed     bool
	// lastRunning is when the last Application became running.
	lastRunning time.Time
	cancel      context.CancelFunc
}

// benchCache is an informer cache of the benchmark namespace.
func benchCache(cfg *rest.Config) (cache.Cache, error) {
	s, err := manager.Scheme()
	if err != nil {
		return nil, err
	}
	return cache.New(cfg, cache.Options{Scheme: s, DefaultNamespaces: map[string]cache.Config{benchNamespace: {}}})
}

// startCache starts c until the returned cancel is called, once its
// informers synced; what names them in the error.
func startCache(ctx context.Context, c cache.Cache, what string) (context.CancelFunc, error) {
	cctx, cancel := context.WithCancel(ctx)
	go func() { _ = c.Start(cctx) }()
	if !c.WaitForCacheSync(cctx) {
		cancel()
		return nil, fmt.Errorf("%s did not sync", what)
	}
	return cancel, nil
}

func watchPhases(ctx context.Context, cfg *rest.Config, n int) (*phaseWatch, error) {
	c, err := benchCache(cfg)
	if err != nil {
		return nil, err
	}
	inf, err := c.GetInformer(ctx, &v1beta1.Application{})
	if err != nil {
		return nil, err
	}
	w := &phaseWatch{n: n, createdAt: map[string]time.Time{}, runningAt: map[string]time.Time{}, phases: map[string]common.ApplicationPhase{}, allRunning: make(chan struct{})}
	see := func(obj any) {
		app, ok := obj.(*v1beta1.Application)
		if !ok {
			return
		}
		w.observe(app.Name, app.Status.Phase)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    see,
		UpdateFunc: func(_, n any) { see(n) },
	}); err != nil {
		return nil, err
	}
	if w.cancel, err = startCache(ctx, c, "the Application watch"); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *phaseWatch) stop() { w.cancel() }

func (w *phaseWatch) start(t time.Time) {
	w.mu.Lock()
	w.t0 = t
	w.mu.Unlock()
}

func (w *phaseWatch) created(name string) {
	w.mu.Lock()
	w.createdAt[name] = time.Now()
	w.mu.Unlock()
}

func (w *phaseWatch) observe(name string, phase common.ApplicationPhase) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.phases[name] = phase
	if phase != common.ApplicationRunning {
		return
	}
	if _, ok := w.runningAt[name]; ok {
		return
	}
	now := time.Now()
	w.runningAt[name] = now
	if len(w.runningAt) == w.n && !w.closed {
		w.lastRunning = now
		w.closed = true
		close(w.allRunning)
	}
}

// summary counts the Applications by phase.
func (w *phaseWatch) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	counts := map[string]int{}
	for _, p := range w.phases {
		if p == "" {
			p = "(none)"
		}
		counts[string(p)]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{fmt.Sprintf("%d created", len(w.createdAt)), fmt.Sprintf("%d ever running", len(w.runningAt))}
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, counts[k]))
	}
	return strings.Join(parts, " ")
}

// latencies returns create → first running per Application, sorted.
func (w *phaseWatch) latencies() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Duration
	for name, t := range w.runningAt {
		if c, ok := w.createdAt[name]; ok {
			out = append(out, t.Sub(c))
		}
	}
	slices.Sort(out)
	return out
}

// createApps creates n Applications with `creators` parallel clients.
func createApps(ctx context.Context, c client.Client, n, creators int, w *phaseWatch) error {
	return forEachApp(ctx, n, creators, func(name string) error {
		spec, err := specOf(name, 1)
		if err != nil {
			return err
		}
		app := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchNamespace}, Spec: spec}
		w.created(name)
		if err := c.Create(ctx, app); err != nil {
			return fmt.Errorf("creating Application %s: %w", name, err)
		}
		return nil
	})
}

func report(w io.Writer, c config, r *result) {
	fmt.Fprintf(w, "\n== %d Applications (%s) on 1 local cluster, %d fake nodes; %d CPUs, load average at the end %s\n",
		r.apps, workload, c.nodes, runtime.NumCPU(), r.loadAvg)
	// In the order the flags are given (a flag given twice: the last wins).
	if c.kubevela != "" {
		fmt.Fprintf(w, "controller: KubeVela's, built from %s: %s %s\n", c.kubevela, filepath.Base(c.controller),
			strings.Join(append(kubevelaArgs(c, "<port>"), c.controllerArgs...), " "))
	} else {
		fmt.Fprintf(w, "controller: %s --resync-period %s --webhook=%t --application-revision-limit=%d %s\n",
			filepath.Base(c.controller), c.resync, c.webhook, c.revisionLimit, strings.Join(c.controllerArgs, " "))
	}
	if c.shards > 0 {
		fmt.Fprintf(w, "sharded: a master and %d shards, one process each (--enable-sharding --leader-elect)\n", c.shards)
	}
	fmt.Fprintln(w, "targets (issue 18): all running ≤ 30 s (200) / ≤ 155 s (1,000); peak RSS ≤ 80 / ≤ 120 MiB, create and update; CPU ≤ 60 ms and ≤ 10 writes per app; no-op resync 0 writes, 0 reads, ≤ 5 ms CPU per app")
	n := float64(r.apps)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "all created after\t%.1fs\n", r.created.Seconds())
	fmt.Fprintf(tw, "all running after\t%.1fs\n", r.allRunning.Seconds())
	if len(r.latencies) > 0 {
		fmt.Fprintf(tw, "create → running per app\t%s\n", quantiles(r.latencies))
	}
	fmt.Fprintf(tw, "controller CPU until all running\t%.1f CPU-s (%.0f ms per app)\n", r.cpuRunning.Seconds(), r.cpuRunning.Seconds()*1000/n)
	fmt.Fprintf(tw, "  of which before the first create (start)\t%.1f CPU-s; the wave alone %.0f ms per app\n", r.cpuStart.Seconds(), (r.cpuRunning-r.cpuStart).Seconds()*1000/n)
	fmt.Fprintf(tw, "controller CPU at the end\t%.1f CPU-s\n", r.cpuTotal.Seconds())
	fmt.Fprintf(tw, "controller peak RSS (VmHWM)\t%d MiB\n", r.rssPeakKiB/1024)
	which := "  of which, sampled at its peak"
	if len(r.procs) > 1 {
		which = "  all processes together, at their anonymous peak"
	}
	fmt.Fprintf(tw, "%s\t%d MiB anonymous (heap, stacks), %d MiB file-backed (the binary's pages)\n", which, r.anonPeakKiB/1024, r.fileKiB/1024)
	if len(r.procs) > 1 {
		for _, f := range r.procs {
			fmt.Fprintf(tw, "  process %s\t%d MiB peak RSS, %.1f CPU-s, %.0f reconciles\n", f.name, f.rssPeakKiB/1024, f.cpu.Seconds(), f.reconciles)
		}
		fmt.Fprintf(tw, "Applications per shard\t%s\n", shardBalance(r.shardApps))
	}
	cr, cw := readsWrites(r.ctrlRun)
	ar, aw := readsWrites(r.apiRun)
	fmt.Fprintf(tw, "reconciles per app until running\t%.2f\n", r.runReconciles/n)
	fmt.Fprintf(tw, "controller requests per app until running\t%.1f (%.1f reads, %.1f writes)\t%s\n", (cr+cw)/n, cr/n, cw/n, breakdown(r.ctrlRun, n))
	fmt.Fprintf(tw, "apiserver requests per app until running (all clients)\t%.1f (%.1f reads, %.1f writes)\n", (ar+aw)/n, ar/n, aw/n)
	fmt.Fprintf(tw, "no-op resync window\t%.1fs, %.0f reconciles\n", r.resyncWindow.Seconds(), r.resyncReconciles)
	rr, rw := readsWrites(r.ctrlResync)
	fmt.Fprintf(tw, "controller requests per app on resync\t%.2f reads, %.2f writes (total writes %.0f)\t%s\n", rr/n, rw/n, rw, breakdown(r.ctrlResync, n))
	if r.resyncReconciles > 0 {
		fmt.Fprintf(tw, "controller requests per resync reconcile\t%.2f reads, %.2f writes\n", rr/r.resyncReconciles, rw/r.resyncReconciles)
		fmt.Fprintf(tw, "controller CPU per resync reconcile\t%.1f ms (%.1f CPU-s from its first reconcile until quiet)\n", r.resyncCPU.Seconds()*1000/r.resyncReconciles, r.resyncCPU.Seconds())
	}
	sr, sw := readsWrites(r.apiResync)
	fmt.Fprintf(tw, "apiserver requests in the resync window (all clients)\t%.0f reads, %.0f writes\n", sr, sw)
	if u := r.update; u != nil {
		fmt.Fprintf(tw, "update wave (scaler 1 → %d): all done after\t%.1fs\n", updatedReplicas, u.took.Seconds())
		fmt.Fprintf(tw, "  update → done per app\t%s\n", quantiles(u.latencies))
		fmt.Fprintf(tw, "  controller CPU\t%.1f CPU-s (%.0f ms per app)\n", u.cpu.Seconds(), u.cpu.Seconds()*1000/n)
		fmt.Fprintf(tw, "  controller peak RSS (VmHWM, the wave alone)\t%d MiB (%d MiB anonymous, %d MiB file-backed at the anonymous peak)\n", u.rssPeakKiB/1024, u.anonPeakKiB/1024, u.fileKiB/1024)
		ur, uw := readsWrites(u.ctrl)
		fmt.Fprintf(tw, "  controller requests per app\t%.1f (%.1f reads, %.1f writes), %.2f reconciles per app\t%s\n", (ur+uw)/n, ur/n, uw/n, u.reconciles/n, breakdown(u.ctrl, n))
	}
	_ = tw.Flush()
	if r.auditRun != nil {
		fmt.Fprintf(w, "controller requests per app until running, by verb and resource (audit log):\n%s\n", table(r.auditRun, n, 30))
	}
	if r.auditUpdate != nil {
		fmt.Fprintf(w, "controller requests per app in the update wave, by verb and resource (audit log):\n%s\n", table(r.auditUpdate, n, 30))
	}
	fmt.Fprintf(w, "apiserver requests per app until running, by verb and resource (top 20):\n%s\n", table(r.apiRun, n, 20))
	fmt.Fprintf(w, "apiserver writes in the resync window (all clients; kube-controller-manager, scheduler and kwok included):\n%s\n", table(writesOnly(r.apiResync), 1, 20))
}

// quantiles is "p50 …  p99 …  max …" of sorted durations.
func quantiles(d []time.Duration) string {
	if len(d) == 0 {
		return "(none)"
	}
	q := func(p float64) time.Duration { return d[int(p*float64(len(d)-1))] }
	return fmt.Sprintf("p50 %.1fs  p99 %.1fs  max %.1fs", q(0.5).Seconds(), q(0.99).Seconds(), q(1).Seconds())
}

// shardBalance is "shard-0=1000 shard-1=1000".
func shardBalance(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func writesOnly(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if !isRead(k) {
			out[k] = v
		}
	}
	return out
}

// breakdown is "METHOD=x.y …" per app.
func breakdown(m map[string]float64, n float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%.2f", k, m[k]/n))
	}
	return strings.Join(parts, " ")
}

// table lists the largest entries of m divided by n.
func table(m map[string]float64, n float64, top int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	if len(keys) > top {
		keys = keys[:top]
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, k := range keys {
		fmt.Fprintf(tw, "  %s\t%.2f\n", k, m[k]/n)
	}
	_ = tw.Flush()
	if len(keys) == 0 {
		return "  (none)\n"
	}
	return b.String()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// sampleRSS reads the resident memory of every process of s each half
// second until ctx is done; the function it returns gives the highest sum
// of their anonymous memory (RssAnon, KiB) seen and the sum of their
// file-backed memory (RssFile) at that moment. On some kernels (this
// machine's) nearly all of a binary's text and read-only data is resident
// from the start, so RssFile is about the binary's size whatever the
// load; RssAnon is what the work costs.
func sampleRSS(ctx context.Context, s *controllerSet) func() (anonKiB, fileKiB int64) {
	var mu sync.Mutex
	var anonPeak, fileAtPeak int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			var anon, file int64
			for _, p := range s.procs {
				a, f, err := residentKiB(p.pid())
				if err != nil {
					continue
				}
				anon, file = anon+a, file+f
			}
			mu.Lock()
			if anon > anonPeak {
				anonPeak, fileAtPeak = anon, file
			}
			mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() (int64, int64) {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return anonPeak, fileAtPeak
	}
}

// residentKiB returns RssAnon and RssFile (KiB) of pid.
func residentKiB(pid int) (anon, file int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		for key, dst := range map[string]*int64{"RssAnon:": &anon, "RssFile:": &file} {
			if rest, ok := strings.CutPrefix(line, key); ok {
				if *dst, err = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64); err != nil {
					return 0, 0, err
				}
			}
		}
	}
	return anon, file, nil
}

// peakRSS returns VmHWM (peak resident set size, KiB) of pid.
func peakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// tail returns the last n lines of file.
func tail(file string, n int) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
