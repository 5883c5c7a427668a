package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// updatedReplicas is the scaler's replicas after the update wave.
const updatedReplicas = 2

// waveResult is the update wave: every Application's scaler 1 → 2.
type waveResult struct {
	// took is the first update → the last Application done (running at
	// its new generation, its web Deployment at 2 available replicas).
	took      time.Duration
	latencies []time.Duration
	cpu       time.Duration
	// rssPeakKiB is the controller's VmHWM over the wave alone (reset
	// before it through /proc/<pid>/clear_refs); anonPeakKiB and fileKiB
	// are the sampled anonymous peak and the file-backed memory then.
	rssPeakKiB, anonPeakKiB, fileKiB int64
	ctrl                             map[string]float64
	reconciles                       float64
	// span is the first update → the end of the wave (-audit).
	span window
}

// updateWave patches every Application's scaler to updatedReplicas with
// `creators` parallel clients and waits until each one is done.
func updateWave(ctx context.Context, c config, cfg *rest.Config, cl client.Client, n int, proc *controllerSet, errOut io.Writer) (*waveResult, error) {
	w, err := watchWave(ctx, cfg, n)
	if err != nil {
		return nil, err
	}
	defer w.cancel()
	for _, p := range proc.procs {
		// "5" resets the peak resident set size to the current one, so
		// VmHWM at the end is the wave's own peak.
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.pid()), []byte("5"), 0); err != nil {
			return nil, fmt.Errorf("resetting the peak RSS of %s: %w", p.name, err)
		}
	}
	cpu0, err := proc.cpu()
	if err != nil {
		return nil, err
	}
	m0, err := proc.metrics()
	if err != nil {
		return nil, err
	}
	sampling, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	rss := sampleRSS(sampling, proc)

	start := time.Now()
	if err := forEachApp(ctx, n, c.creators, func(name string) error {
		spec, err := specOf(name, updatedReplicas)
		if err != nil {
			return err
		}
		app := &v1beta1.Application{}
		app.Namespace, app.Name = benchNamespace, name
		if err := cl.Get(ctx, client.ObjectKeyFromObject(app), app); err != nil {
			return err
		}
		before := app.DeepCopy()
		app.Spec = spec
		w.updating(name)
		// A merge patch without a resourceVersion: the controller's status
		// writes do not make it conflict.
		if err := cl.Patch(ctx, app, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("updating Application %s: %w", name, err)
		}
		w.updated(name, app.Generation)
		return nil
	}); err != nil {
		return nil, err
	}

	deadline := time.NewTimer(c.timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-w.all:
			done = true
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-proc.exited:
			return nil, fmt.Errorf("a controller exited: %w", proc.err())
		case <-deadline.C:
			return nil, fmt.Errorf("update wave: not all done after %s: %s", c.timeout, w.summary())
		case <-tick.C:
			if c.verbose {
				fmt.Fprintf(errOut, "  %5.0fs update: %s\n", time.Since(start).Seconds(), w.summary())
			}
		}
	}
	r := &waveResult{took: w.last.Sub(start), latencies: w.latencies()}
	cpu1, err := proc.cpu()
	if err != nil {
		return nil, err
	}
	r.cpu = cpu1 - cpu0
	m1, err := proc.metrics()
	if err != nil {
		return nil, err
	}
	r.ctrl, r.reconciles = delta(m1.requests, m0.requests), m1.reconciles-m0.reconciles
	r.span = window{from: start, to: time.Now()}
	for _, p := range proc.procs {
		kib, err := peakRSS(p.pid())
		if err != nil {
			return nil, err
		}
		r.rssPeakKiB = max(r.rssPeakKiB, kib)
	}
	stopSampling()
	r.anonPeakKiB, r.fileKiB = rss()
	return r, nil
}

// forEachApp calls f for app-0000 … with `workers` goroutines and
// returns the first error.
func forEachApp(ctx context.Context, n, workers int, f func(name string) error) error {
	names := make(chan string)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				if err := f(name); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := 0; i < n; i++ {
		select {
		case names <- appName(i):
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(names)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// appName is the name of the i-th benchmark Application.
func appName(i int) string { return fmt.Sprintf("app-%04d", i) }

// waveWatch follows Applications and their web Deployments through
// informers and records when each updated Application is done.
type waveWatch struct {
	n      int
	mu     sync.Mutex
	sentAt map[string]time.Time
	target map[string]int64 // the generation the update made
	apps   map[string]appSeen
	ready  map[string]bool // web Deployment of the app at updatedReplicas available
	doneAt map[string]time.Time
	all    chan struct{}
	last   time.Time
	cancel context.CancelFunc
}

type appSeen struct {
	observed int64
	phase    common.ApplicationPhase
}

func watchWave(ctx context.Context, cfg *rest.Config, n int) (*waveWatch, error) {
	c, err := benchCache(cfg)
	if err != nil {
		return nil, err
	}
	w := &waveWatch{n: n, sentAt: map[string]time.Time{}, target: map[string]int64{}, apps: map[string]appSeen{},
		ready: map[string]bool{}, doneAt: map[string]time.Time{}, all: make(chan struct{})}
	apps, err := c.GetInformer(ctx, &v1beta1.Application{})
	if err != nil {
		return nil, err
	}
	seeApp := func(obj any) {
		if app, ok := obj.(*v1beta1.Application); ok {
			w.seeApp(app.Name, appSeen{observed: app.Status.ObservedGeneration, phase: app.Status.Phase})
		}
	}
	deploys, err := c.GetInformer(ctx, &appsv1.Deployment{})
	if err != nil {
		return nil, err
	}
	seeDeploy := func(obj any) {
		if d, ok := obj.(*appsv1.Deployment); ok {
			w.seeDeployment(d)
		}
	}
	for inf, see := range map[cache.Informer]func(any){apps: seeApp, deploys: seeDeploy} {
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, n any) { see(n) }}); err != nil {
			return nil, err
		}
	}
	if w.cancel, err = startCache(ctx, c, "the update wave's watches"); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *waveWatch) updating(name string) {
	w.mu.Lock()
	w.sentAt[name] = time.Now()
	w.mu.Unlock()
}

func (w *waveWatch) updated(name string, gen int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.target[name] = gen
	w.check(name)
}

func (w *waveWatch) seeApp(name string, s appSeen) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.apps[name] = s
	w.check(name)
}

// seeDeployment records whether web-<app> has the updated replicas
// available at its current generation.
func (w *waveWatch) seeDeployment(d *appsv1.Deployment) {
	name, ok := strings.CutPrefix(d.Name, "web-")
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ready[name] = d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas >= updatedReplicas &&
		d.Spec.Replicas != nil && *d.Spec.Replicas == updatedReplicas
	w.check(name)
}

// check marks name done when it is running at its updated generation
// with its web Deployment ready; w.mu is held.
func (w *waveWatch) check(name string) {
	gen, ok := w.target[name]
	if !ok || !w.ready[name] {
		return
	}
	if _, done := w.doneAt[name]; done {
		return
	}
	s := w.apps[name]
	if s.observed < gen || s.phase != common.ApplicationRunning {
		return
	}
	now := time.Now()
	w.doneAt[name] = now
	if len(w.doneAt) == w.n {
		w.last = now
		close(w.all)
	}
}

func (w *waveWatch) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	ready := 0
	for _, ok := range w.ready {
		if ok {
			ready++
		}
	}
	return fmt.Sprintf("%d updated, %d web Deployments at %d available, %d done", len(w.target), ready, updatedReplicas, len(w.doneAt))
}

// latencies returns update sent → done per Application, sorted.
func (w *waveWatch) latencies() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Duration
	for name, t := range w.doneAt {
		if s, ok := w.sentAt[name]; ok {
			out = append(out, t.Sub(s))
		}
	}
	slices.Sort(out)
	return out
}
