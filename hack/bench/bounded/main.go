// Command bounded measures what hostile or huge input costs the process
// that evaluates it (issue 21): the evaluation the controller, the webhook
// and dry-run do (appfile.Validate on one shared cuex.Engine with the
// default limits and budgets, oamflow's built-in definitions), in this
// process, for one case per run so that peak RSS is the case's own:
//
//   - ports: a webservice with 20,000 ports (the 551 KB Application of the
//     issue);
//   - runaway: a component whose definition's comprehension runs away
//     (a list of 50 million strings);
//   - components: 2,000 webservice components (refused by --max-components).
//
// It prints the time until Validate returns, its error (first line), the
// resident memory before, at its peak (VmHWM) and after, and then samples
// RSS and CPU time for -after seconds: CUE cannot be interrupted, so a
// timed-out evaluation keeps running in its abandoned goroutine; the
// samples show whether it does and what it costs.
//
//	go run ./hack/bench/bounded -case ports
//	go run ./hack/bench/bounded -case runaway -after 30
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing/fstest"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
)

const runawayDef = `runaway: {
	type: "component"
	attributes: workload: definition: {apiVersion: "v1", kind: "ConfigMap"}
}
template: {
	parameter: n: *50000000 | int
	_all: [for i, _ in [for j in list.Range(0, parameter.n, 1) {j}] {"key-\(i)"}]
	output: {apiVersion: "v1", kind: "ConfigMap", data: {count: "\(len(_all))"}}
}
`

func main() {
	which := flag.String("case", "ports", "ports, runaway or components")
	after := flag.Int("after", 20, "seconds to sample RSS and CPU after Validate returns")
	repeat := flag.Int("repeat", 1, "times Validate is called one after another (the controller's retries)")
	flag.Parse()

	var doc string
	src := appfile.DefinitionSource(nil)
	builtins, err := appfile.NewFSSource(definitions.FS, ".")
	must(err)
	src = builtins
	switch *which {
	case "ports":
		ports := make([]string, 20000)
		for i := range ports {
			ports[i] = fmt.Sprintf("{port: %d}", i+1)
		}
		doc = "components: [{name: web, type: webservice, properties: {image: nginx, ports: [" + strings.Join(ports, ",") + "]}}]"
	case "runaway":
		defs, err := appfile.NewFSSource(fstest.MapFS{"d/runaway.cue": {Data: []byte("import \"list\"\n" + runawayDef)}}, "d")
		must(err)
		src = appfile.Chain(defs, builtins)
		doc = "components: [{name: loop, type: runaway}]"
	case "components":
		var b strings.Builder
		b.WriteString("components:\n")
		for i := 0; i < 2000; i++ {
			fmt.Fprintf(&b, "- {name: c%d, type: webservice, properties: {image: nginx, ports: [{port: 80}]}}\n", i)
		}
		doc = b.String()
	default:
		fmt.Fprintln(os.Stderr, "unknown -case", *which)
		os.Exit(2)
	}
	app := &v1beta1.Application{}
	app.Name, app.Namespace = "bench", "default"
	must(yaml.Unmarshal([]byte(doc), &app.Spec))
	raw, _ := yaml.Marshal(app.Spec)

	ctx := appfile.WithEngine(context.Background(), cuex.NewEngine())
	runtime.GC()
	before := rss()
	cpu0 := cpuTime()
	start := time.Now()
	var took time.Duration
	for i := 0; i < *repeat; i++ {
		s := time.Now()
		_, _, err = appfile.Validate(ctx, app, src, nil)
		if i > 0 {
			fmt.Printf("  retry %d returned after %s\n", i, time.Since(s).Round(time.Millisecond))
		}
	}
	took = time.Since(start)
	msg := "<nil>"
	if err != nil {
		msg = strings.SplitN(err.Error(), "\n", 2)[0]
		if len(msg) > 240 {
			msg = msg[:240] + "…"
		}
	}
	fmt.Printf("case %s: spec %d bytes\n", *which, len(raw))
	fmt.Printf("validate returned after %s (CPU %s): %s\n", took.Round(time.Millisecond), (cpuTime() - cpu0).Round(time.Millisecond), msg)
	fmt.Printf("RSS before %s, peak (VmHWM) %s, at return %s\n", mib(before), mib(status("VmHWM")), mib(rss()))
	for i := 1; i <= *after; i++ {
		time.Sleep(time.Second)
		if i%5 == 0 || i == 1 {
			fmt.Printf("  +%2ds: RSS %s, peak %s, CPU since start %s, goroutines %d\n", i, mib(rss()), mib(status("VmHWM")), (cpuTime() - cpu0).Round(time.Millisecond), runtime.NumGoroutine())
		}
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func rss() int64 { return status("VmRSS") }

// status reads a kB field of /proc/self/status, in bytes.
func status(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n << 10
		}
	}
	return -1
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
