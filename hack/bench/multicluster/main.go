// Command multicluster benchmarks multi-cluster delivery: one Application
// of 3 components (two webservices, one exposed with a Service, and a
// worker) deployed by a topology policy to 1, 2, 4 and 8 member clusters.
// It starts a hub and as many members as the largest count as `oamflow
// local up` does (2 kwok fake nodes each, to keep 9 clusters within one
// machine's means; kwok
// nodes), installs oamflow and runs the controller in this process (the
// code the oamflow-controller binary runs), joins the members through the
// CLI, then for each member count creates the Application and measures:
//
//   - the time from create to status.status running;
//   - the API requests each cluster's kube-apiserver served meanwhile
//     (apiserver_request_total from its /metrics, summed over all labels):
//     raw, and net of the idle rate measured just before (kube-controller-
//     manager, scheduler and kwok also talk to every apiserver);
//
// and prints the ratio of the largest count's time to the 1-cluster time
// (the deploy step deploys its clusters concurrently: issue 19 asks that
// 8 members take less than twice as long as one, CPU allowing). The Application is deleted (and every cluster cleaned) between
// runs. The numbers of a loaded machine vary: -runs repeats each count and
// the median is reported.
//
//	go run ./hack/bench/multicluster               # -members 1,2,4,8 -runs 3
//	go run ./hack/bench/multicluster -runs 1 -v
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/cli"
	"github.com/oamflow/oamflow/pkg/localcluster"
	"github.com/oamflow/oamflow/pkg/manager"
)

func main() {
	members := flag.String("members", "1,2,4,8", fmt.Sprintf("comma-separated member-cluster counts to deploy to (at most %d)", maxMembers))
	runs := flag.Int("runs", 3, "runs per member count (the median is reported)")
	bin := flag.String("bin", "", "binary directory (default $OAMFLOW_K8S_BIN, then bin/k8s of the repository)")
	timeout := flag.Duration("timeout", 5*time.Minute, "how long one deploy may take to reach running")
	verbose := flag.Bool("v", false, "print progress lines (local up, CLI output, each run)")
	flag.Parse()

	counts, err := parseCounts(*members)
	if err == nil {
		err = run(counts, *runs, *bin, *timeout, *verbose, os.Stdout, os.Stderr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// maxMembers bounds -members: each member is a whole local control plane.
const maxMembers = 8

func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > maxMembers {
			return nil, fmt.Errorf("-members: %q is not a count from 1 to %d", f, maxMembers)
		}
		out = append(out, n)
	}
	return out, nil
}

// cluster is one started cluster with its clients.
type cluster struct {
	name       string
	kubeconfig string
	config     *rest.Config
	kube       kubernetes.Interface
}

// sample is one deploy of the app to n members.
type sample struct {
	members int
	toRun   time.Duration
	// raw and net are requests per cluster (hub first) during the deploy.
	raw, net map[string]float64
}

func run(counts []int, runs int, binFlag string, timeout time.Duration, verbose bool, out, progress io.Writer) error {
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	ctrl.SetLogger(logr.Discard())
	if !verbose {
		progress = io.Discard
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	binDir, err := localcluster.ResolveBinDir(binFlag, os.Getenv(localcluster.BinDirEnv), wd)
	if err != nil {
		return err
	}
	if err := localcluster.CheckBinaries(binDir, localcluster.ClusterBinaries()...); err != nil {
		return err
	}
	home, err := os.MkdirTemp("", "oamflow-bench-mc-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	m, err := localcluster.New(localcluster.Config{Home: home, BinDir: binDir, Progress: progress})
	if err != nil {
		return err
	}
	defer func() { _, _ = m.Down(context.Background()) }()
	o := localcluster.DefaultUpOptions()
	o.Nodes, o.NamePrefix = 2, "bench-"
	total := 1 + slices.Max(counts)
	ctx := context.Background()
	fmt.Fprintf(out, "starting a hub and %d member clusters…\n", total-1)
	// Three clusters at a time at most: nine control planes starting at
	// once on a small machine starve each other, and kube-controller-manager
	// gives up on an API server not healthy within its 10 s (up reuses the
	// clusters already running).
	var res *localcluster.UpResult
	for n := min(3, total); ; n = min(n+3, total) {
		o.Clusters = n
		if res, err = m.Up(ctx, o); err != nil {
			return err
		}
		if n == total {
			break
		}
	}
	var clusters []*cluster
	for _, s := range res.Clusters {
		cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
		if err != nil {
			return err
		}
		cfg.QPS, cfg.Burst = 100, 200
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		clusters = append(clusters, &cluster{name: s.Name, kubeconfig: s.Kubeconfig, config: cfg, kube: kube})
	}
	hub := clusters[0]

	if err := oamflow(progress, hub.kubeconfig, "install"); err != nil {
		return fmt.Errorf("oamflow install: %w", err)
	}
	for _, c := range clusters[1:] {
		if err := oamflow(progress, hub.kubeconfig, "cluster", "join", c.kubeconfig, "--name", c.name); err != nil {
			return fmt.Errorf("joining %s: %w", c.name, err)
		}
	}
	mo := manager.DefaultOptions()
	mo.MetricsAddr, mo.ProbeAddr = "0", "0"
	mo.UnhealthyRequeuePeriod = 2 * time.Second
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- manager.Run(cctx, hub.config, mo) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				fmt.Fprintln(os.Stderr, "controller:", err)
			}
		case <-time.After(30 * time.Second):
		}
	}()

	s := runtime.NewScheme()
	if err := v1beta1.AddToScheme(s); err != nil {
		return err
	}
	hubClient, err := client.New(hub.config, client.Options{Scheme: s})
	if err != nil {
		return err
	}

	var samples []sample
	for _, n := range counts {
		for i := 0; i < runs; i++ {
			smp, err := deployOnce(ctx, hubClient, clusters, n, i, timeout, progress)
			if err != nil {
				return fmt.Errorf("%d member(s), run %d: %w", n, i+1, err)
			}
			fmt.Fprintf(progress, "%d member(s), run %d: running after %s\n", n, i+1, smp.toRun.Round(time.Millisecond))
			samples = append(samples, smp)
		}
	}
	report(out, counts, clusters, samples)
	return nil
}

// oamflow runs the CLI in-process.
func oamflow(progress io.Writer, kubeconfig string, args ...string) error {
	var buf bytes.Buffer
	root := cli.NewRootCommand(&buf, progress)
	root.SetArgs(append(args, "--kubeconfig", kubeconfig))
	err := root.Execute()
	fmt.Fprintf(progress, "$ oamflow %s\n%s", strings.Join(args, " "), buf.String())
	return err
}

// app is the benchmark Application for members member-1..member-n.
func app(n, run int) (*v1beta1.Application, error) {
	var names []string
	for i := 1; i <= n; i++ {
		names = append(names, fmt.Sprintf("member-%d", i))
	}
	doc := fmt.Sprintf(`
apiVersion: core.oam.dev/v1beta1
kind: Application
metadata:
  name: bench-%d-%d
  namespace: default
spec:
  components:
    - name: frontend-%[1]d-%[2]d
      type: webservice
      properties:
        image: registry.invalid/frontend:1
        ports: [{port: 80, expose: true}]
      traits:
        - type: scaler
          properties: {replicas: 2}
    - name: api-%[1]d-%[2]d
      type: webservice
      properties:
        image: registry.invalid/api:1
        env: [{name: MODE, value: bench}]
    - name: worker-%[1]d-%[2]d
      type: worker
      properties:
        image: registry.invalid/worker:1
  policies:
    - name: members
      type: topology
      properties:
        clusters: [%[3]s]
`, n, run, strings.Join(names, ", "))
	a := &v1beta1.Application{}
	return a, yaml.Unmarshal([]byte(doc), a)
}

// deployOnce measures one deploy to n members, then deletes the app and
// waits until it is gone.
func deployOnce(ctx context.Context, hubClient client.Client, clusters []*cluster, n, run int, timeout time.Duration, progress io.Writer) (sample, error) {
	smp := sample{members: n, raw: map[string]float64{}, net: map[string]float64{}}
	a, err := app(n, run)
	if err != nil {
		return smp, err
	}
	// Idle rate of every apiserver, to subtract the clusters' own traffic.
	const idle = 5 * time.Second
	before, err := scrapeAll(ctx, clusters)
	if err != nil {
		return smp, err
	}
	time.Sleep(idle)
	start0, err := scrapeAll(ctx, clusters)
	if err != nil {
		return smp, err
	}
	start := time.Now()
	if err := hubClient.Create(ctx, a); err != nil {
		return smp, err
	}
	key := client.ObjectKeyFromObject(a)
	deadline := start.Add(timeout)
	for {
		got := &v1beta1.Application{}
		if err := hubClient.Get(ctx, key, got); err != nil {
			return smp, err
		}
		if got.Status.Phase == common.ApplicationRunning {
			break
		}
		if time.Now().After(deadline) {
			return smp, fmt.Errorf("not running within %s: phase %q", timeout, got.Status.Phase)
		}
		time.Sleep(50 * time.Millisecond)
	}
	smp.toRun = time.Since(start)
	end, err := scrapeAll(ctx, clusters)
	if err != nil {
		return smp, err
	}
	for _, c := range clusters {
		rate := (start0[c.name] - before[c.name]) / idle.Seconds()
		smp.raw[c.name] = end[c.name] - start0[c.name]
		smp.net[c.name] = smp.raw[c.name] - rate*smp.toRun.Seconds()
	}

	if err := hubClient.Delete(ctx, a); err != nil {
		return smp, err
	}
	for {
		err := hubClient.Get(ctx, key, &v1beta1.Application{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline.Add(timeout)) {
			return smp, fmt.Errorf("the Application was not deleted in time: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Fprintf(progress, "deleted %s\n", key)
	return smp, nil
}

// scrapeAll reads apiserver_request_total of every cluster.
func scrapeAll(ctx context.Context, clusters []*cluster) (map[string]float64, error) {
	out := map[string]float64{}
	for _, c := range clusters {
		raw, err := c.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading /metrics of %s: %w", c.name, err)
		}
		out[c.name] = sumMetric(raw, "apiserver_request_total")
	}
	return out, nil
}

// sumMetric sums every sample of a counter in Prometheus text format.
func sumMetric(text []byte, name string) float64 {
	var sum float64
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			sum += v
		}
	}
	return sum
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func report(out io.Writer, counts []int, clusters []*cluster, samples []sample) {
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Time to running and API requests per cluster during the deploy (median of the runs; net = raw minus the idle rate of that apiserver over the same time)")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	header := "members\truns\ttime to running\tnet requests per member"
	for _, c := range clusters {
		header += "\t" + c.name + " raw/net"
	}
	fmt.Fprintln(tw, header)
	times := map[int]float64{}
	for _, n := range counts {
		var ts []float64
		raw := map[string][]float64{}
		net := map[string][]float64{}
		for _, s := range samples {
			if s.members != n {
				continue
			}
			ts = append(ts, s.toRun.Seconds())
			for _, c := range clusters {
				raw[c.name] = append(raw[c.name], s.raw[c.name])
				net[c.name] = append(net[c.name], s.net[c.name])
			}
		}
		times[n] = median(ts)
		var all []string
		for _, t := range ts {
			all = append(all, fmt.Sprintf("%.2f", t))
		}
		perMember := 0.0
		for _, c := range clusters[1 : 1+n] {
			perMember += median(net[c.name]) / float64(n)
		}
		row := fmt.Sprintf("%d\t%d\t%.2f s (%s)\t%.0f", n, len(ts), times[n], strings.Join(all, ", "), perMember)
		for _, c := range clusters {
			row += fmt.Sprintf("\t%.0f/%.0f", median(raw[c.name]), median(net[c.name]))
		}
		fmt.Fprintln(tw, row)
	}
	_ = tw.Flush()
	if t1, ok := times[1]; ok && t1 > 0 {
		most := slices.Max(counts)
		if tn, ok := times[most]; ok && most > 1 {
			fmt.Fprintf(out, "ratio %d-cluster / 1-cluster time to running: %.2f\n", most, tn/t1)
		}
	}
}
