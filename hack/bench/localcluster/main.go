// Command localcluster benchmarks local control planes as `oamflow local up`
// starts them (the same pkg/localcluster code path): for each cluster count
// it measures, from the start of Up, the time until every kube-apiserver is
// ready, until every cluster is ready (nodes Ready), and until a 3-replica
// Deployment created in every cluster right after Up is Available; then the
// resident memory of each cluster (sum of VmRSS of its processes) and the
// time `down` takes. Each run uses a fresh temporary state directory.
//
//	go run ./hack/bench/localcluster                  # --clusters 1,3
//	go run ./hack/bench/localcluster -clusters 1,2,3 -nodes 2
//
// Targets (issue 3): API ready < 10 s, Deployment Available < 30 s,
// < 1 GiB RSS per cluster.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/oamflow/oamflow/pkg/localcluster"
)

func main() {
	counts := flag.String("clusters", "1,3", "comma-separated cluster counts to measure, one run each")
	nodes := flag.Int("nodes", localcluster.DefaultNodes, "fake nodes per cluster")
	bin := flag.String("bin", "", "binary directory (default $OAMFLOW_K8S_BIN, then bin/k8s of the repository)")
	verbose := flag.Bool("v", false, "print Up's progress lines")
	flag.Parse()

	if err := run(*counts, *nodes, *bin, *verbose, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// result is one run of the benchmark.
type result struct {
	clusters                                  int
	apiReady, clusterReady, upDone, available time.Duration
	rssKiB                                    map[string]int64
	// cpuToReady is the CPU time (user+system) the clusters' processes used
	// until Up returned: a measure of the work that does not depend on how
	// busy the machine is.
	cpuToReady time.Duration
	names      []string
	down       time.Duration
}

func run(countsFlag string, nodes int, binFlag string, verbose bool, out, errOut io.Writer) error {
	wd, _ := os.Getwd()
	binDir, err := localcluster.ResolveBinDir(binFlag, os.Getenv(localcluster.BinDirEnv), wd)
	if err != nil {
		return err
	}
	if err := localcluster.CheckBinaries(binDir, localcluster.ClusterBinaries()...); err != nil {
		return err
	}
	var results []result
	for _, s := range strings.Split(countsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("-clusters: %q is not a number", s)
		}
		fmt.Fprintf(errOut, "measuring up --clusters %d --nodes %d …\n", n, nodes)
		progress := io.Discard
		if verbose {
			progress = errOut
		}
		r, err := measure(n, nodes, binDir, progress)
		if err != nil {
			return fmt.Errorf("--clusters %d: %w", n, err)
		}
		results = append(results, r)
	}
	report(out, results, nodes, binDir)
	return nil
}

// measure runs Up with n clusters in a fresh state directory, then the
// Deployment check, the RSS reading and Down.
func measure(n, nodes int, binDir string, progress io.Writer) (result, error) {
	r := result{clusters: n, rssKiB: map[string]int64{}}
	home, err := os.MkdirTemp("", "oamflow-bench-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(home)
	m, err := localcluster.New(localcluster.Config{Home: home, BinDir: binDir, Progress: progress})
	if err != nil {
		return r, err
	}
	defer func() { _, _ = m.Down(context.Background()) }()

	o := localcluster.DefaultUpOptions()
	o.Clusters, o.Nodes = n, nodes
	ctx := context.Background()
	start := time.Now()
	res, err := m.Up(ctx, o)
	if err != nil {
		return r, err
	}
	r.upDone = time.Since(start)
	for _, c := range res.Clusters {
		r.apiReady = max(r.apiReady, c.APIReadyAfter)
		r.clusterReady = max(r.clusterReady, c.ReadyAfter)
		r.names = append(r.names, c.Name)
		for _, pid := range c.PIDs() {
			cpu, err := localcluster.CPUTime(pid)
			if err != nil {
				return r, fmt.Errorf("cluster %s: %w", c.Name, err)
			}
			r.cpuToReady += cpu
		}
	}

	var wg sync.WaitGroup
	errs := make([]error, len(res.Clusters))
	for i, c := range res.Clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = deploymentAvailable(ctx, c.Kubeconfig)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return r, err
		}
	}
	r.available = time.Since(start)

	list, err := m.Status(ctx)
	if err != nil {
		return r, err
	}
	for _, c := range list {
		for _, pid := range c.PIDs() {
			kib, err := localcluster.ResidentKiB(pid)
			if err != nil {
				return r, fmt.Errorf("cluster %s: %w", c.Name, err)
			}
			r.rssKiB[c.Name] += kib
		}
	}

	t := time.Now()
	if _, err := m.Down(ctx); err != nil {
		return r, err
	}
	r.down = time.Since(t)
	if left := m.Processes(); len(left) > 0 {
		return r, fmt.Errorf("processes %v left after down", left)
	}
	return r, nil
}

// deploymentAvailable creates a 3-replica Deployment in the cluster of
// kubeconfig and waits (up to 60 s) until it is Available with 3 replicas.
func deploymentAvailable(ctx context.Context, kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	replicas := int32(3)
	labels := map[string]string{"app": "bench"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/bench:1"}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Deployment: %w", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		got, err := cs.AppsV1().Deployments("default").Get(ctx, "bench", metav1.GetOptions{})
		if err == nil && got.Status.AvailableReplicas == 3 {
			for _, c := range got.Status.Conditions {
				if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
					return nil
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("Deployment not Available within 60s in %s", filepath.Dir(kubeconfig))
}

func report(w io.Writer, results []result, nodes int, binDir string) {
	fmt.Fprintf(w, "oamflow local up benchmark: %d CPUs, %d fake nodes per cluster, binaries %s (%s)\n",
		runtime.NumCPU(), nodes, binDir, localcluster.ReadStamp(binDir))
	fmt.Fprintln(w, "times are from the start of up; targets: API ready < 10s, Deployment Available < 30s, RSS < 1 GiB per cluster")
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Fprintf(w, "load average at the end (1, 5, 15 min): %s\n", strings.Join(strings.Fields(string(b))[:3], " "))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "clusters\tAPI ready\tclusters ready\tup returned\t3-replica Deployment Available\tRSS per cluster (MiB)\tdown\tCPU used until ready")
	for _, r := range results {
		var rss []string
		for _, n := range r.names {
			rss = append(rss, fmt.Sprintf("%s=%d", n, r.rssKiB[n]/1024))
		}
		fmt.Fprintf(tw, "%d\t%.1fs\t%.1fs\t%.1fs\t%.1fs\t%s\t%.1fs\t%.1f CPU-s\n", r.clusters,
			r.apiReady.Seconds(), r.clusterReady.Seconds(), r.upDone.Seconds(), r.available.Seconds(), strings.Join(rss, " "), r.down.Seconds(), r.cpuToReady.Seconds())
	}
	_ = tw.Flush()
}
