// Command helm-bench compares the install + wait-ready time of one chart
// through oamflow's pkg/helm with the helm CLI of the same SDK version
// (v3.16.4, built from hack/tools/helm), on the same local cluster.
//
// It needs a cluster whose Deployments become ready: a local cluster with
// kwok fake nodes (pkg/localcluster), not envtest. Without --kubeconfig it
// starts one itself from bin/k8s in a temporary state directory and stops it
// at the end:
//
//	(cd hack/tools/helm && go build -o ../../../bin/helm helm.sh/helm/v3/cmd/helm)
//	go run ./hack/bench/helm                       # own local cluster
//	go run ./hack/bench/helm --kubeconfig ~/.oamflow/clusters/local/kubeconfig.yaml
//
// Each of --runs rounds installs the chart once with each tool (alternating
// which goes first) into a fresh namespace, waiting until every resource is
// ready, then uninstalls it (not timed). It prints every duration, the
// medians and means, and the ratio oamflow/CLI; the target is <= 1.1.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/oamflow/oamflow/pkg/helm"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/localcluster"
)

func main() { os.Exit(realMain()) }

func realMain() int {
	ctrllog.SetLogger(logr.Discard()) // pkg/helm logs through the context logger; keep the output to results
	// An own flag set: controller-runtime registers --kubeconfig on the default one.
	fs := flag.NewFlagSet("helm-bench", flag.ExitOnError)
	var (
		kubeconfig = fs.String("kubeconfig", "", "kubeconfig of a local cluster with kwok nodes; empty starts one from --k8s-bin")
		k8sBin     = fs.String("k8s-bin", "bin/k8s", "control-plane binaries for the cluster started without --kubeconfig")
		helmBin    = fs.String("helm", "bin/helm", "helm CLI built from hack/tools/helm")
		chartDir   = fs.String("chart", "charts/testdata/simple", "chart folder to install")
		runs       = fs.Int("runs", 5, "rounds; each installs once with each tool")
		replicas   = fs.Int("replicas", 3, "replicaCount value for the chart")
		timeout    = fs.Duration("timeout", 5*time.Minute, "install + wait timeout")
	)
	_ = fs.Parse(os.Args[1:])
	if *kubeconfig == "" {
		kc, stop, err := startCluster(*k8sBin)
		if err != nil {
			fmt.Fprintln(os.Stderr, "helm-bench: local cluster:", err)
			return 1
		}
		defer stop()
		*kubeconfig = kc
	}
	if err := run(*kubeconfig, *helmBin, *chartDir, *runs, *replicas, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "helm-bench:", err)
		return 1
	}
	return 0
}

// startCluster starts one local cluster with 3 kwok nodes in a temporary
// state directory and returns its kubeconfig and a function stopping it.
func startCluster(binDir string) (string, func(), error) {
	home, err := os.MkdirTemp("", "helm-bench-home-")
	if err != nil {
		return "", nil, err
	}
	abs, err := filepath.Abs(binDir)
	if err != nil {
		return "", nil, err
	}
	m, err := localcluster.New(localcluster.Config{Home: home, BinDir: abs, Progress: os.Stderr})
	if err != nil {
		return "", nil, err
	}
	o := localcluster.DefaultUpOptions()
	o.NamePrefix, o.Nodes = "helmbench-", 3
	stop := func() {
		if _, err := m.Down(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "helm-bench: stopping the local cluster:", err)
		}
		_ = os.RemoveAll(home)
	}
	if _, err := m.Up(context.Background(), o); err != nil {
		stop()
		return "", nil, err
	}
	kc, err := m.Kubeconfig(localcluster.HubName)
	if err != nil {
		stop()
		return "", nil, err
	}
	return kc, stop, nil
}

func run(kubeconfig, helmBin, chartDir string, runs, replicas int, timeout time.Duration) error {
	if kubeconfig == "" {
		return fmt.Errorf("--kubeconfig is required (a local cluster with kwok nodes)")
	}
	if _, err := os.Stat(helmBin); err != nil {
		return fmt.Errorf("helm CLI %s: %w (build it: cd hack/tools/helm && go build -o ../../../bin/helm helm.sh/helm/v3/cmd/helm)", helmBin, err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}

	// Both tools install the same packaged archive.
	work, err := os.MkdirTemp("", "helm-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	ch, err := loader.LoadDir(chartDir)
	if err != nil {
		return fmt.Errorf("load chart %s: %w", chartDir, err)
	}
	tgz, err := chartutil.Save(ch, work)
	if err != nil {
		return err
	}

	client := helm.NewClient(helm.NewFactory(helm.SingleCluster(rc)), helm.NewFetcher(nil, helm.WithChartRoot(work)), nil)
	ctx := context.Background()
	var sdk, cli []time.Duration
	for i := 0; i < runs; i++ {
		nsSDK, nsCLI := fmt.Sprintf("bench-sdk-%d", i), fmt.Sprintf("bench-cli-%d", i)
		timeSDK := func() error {
			spec, err := helmspec.ParseSpecMap(map[string]any{
				"chart":   map[string]any{"source": filepath.Base(tgz)},
				"values":  map[string]any{"replicaCount": replicas},
				"options": map[string]any{"wait": true, "timeout": timeout.String(), "createNamespace": true},
			}, helmspec.Defaults{Name: "bench", Namespace: nsSDK})
			if err != nil {
				return err
			}
			start := time.Now()
			if _, err := client.Ensure(ctx, helmspec.Request{Namespace: nsSDK, Spec: spec}); err != nil {
				return fmt.Errorf("oamflow install: %w", err)
			}
			sdk = append(sdk, time.Since(start))
			_, err = client.Uninstall(ctx, "", nsSDK, "bench", helmspec.Options{})
			return err
		}
		timeCLI := func() error {
			args := []string{"install", "bench", tgz, "--kubeconfig", kubeconfig, "-n", nsCLI, "--create-namespace",
				"--wait", "--timeout", timeout.String(), "--set", "replicaCount=" + strconv.Itoa(replicas)}
			start := time.Now()
			if out, err := exec.Command(helmBin, args...).CombinedOutput(); err != nil {
				return fmt.Errorf("helm install: %w: %s", err, out)
			}
			cli = append(cli, time.Since(start))
			if out, err := exec.Command(helmBin, "uninstall", "bench", "--kubeconfig", kubeconfig, "-n", nsCLI).CombinedOutput(); err != nil {
				return fmt.Errorf("helm uninstall: %w: %s", err, out)
			}
			return nil
		}
		first, second := timeSDK, timeCLI
		if i%2 == 1 {
			first, second = timeCLI, timeSDK
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
		for _, ns := range []string{nsSDK, nsCLI} {
			_ = kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		}
		fmt.Printf("run %d: oamflow %v, helm CLI %v\n", i+1, sdk[i].Round(time.Millisecond), cli[i].Round(time.Millisecond))
	}
	ms, mc := median(sdk), median(cli)
	fmt.Printf("median: oamflow %v, helm CLI %v, ratio %.3f\n", ms.Round(time.Millisecond), mc.Round(time.Millisecond), float64(ms)/float64(mc))
	as, ac := mean(sdk), mean(cli)
	fmt.Printf("mean:   oamflow %v, helm CLI %v, ratio %.3f (target <= 1.1)\n", as.Round(time.Millisecond), ac.Round(time.Millisecond), float64(as)/float64(ac))
	return nil
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func mean(d []time.Duration) time.Duration {
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(len(d))
}
