// Package metrics holds oamflow's Prometheus metrics, served at /metrics
// by controller-runtime's metrics server. A Recorder is made once per
// manager (manager.Run) and handed to the packages that observe through
// small interfaces or decorators:
//
//	oamflow_reconcile_duration_seconds{phase}              histogram, one Reconcile, by the Application phase it left (running, workflowFailed, ...)
//	oamflow_reconcile_phase_duration_seconds{phase,result} histogram, one phase of a Reconcile (parse, revision, policy, identity, render, workflow, adopt, gc, statekeep, health; result success|error)
//	oamflow_workflow_step_duration_seconds{type,outcome}   histogram, first to last execution of a step that finished (outcome = step phase: succeeded, failed, skipped)
//	oamflow_applications{phase}                            gauge, Applications by status phase, counted from the cache at scrape time
//	oamflow_helm_action_duration_seconds{action,outcome}   histogram, one Helm call (ensure, uninstall; outcome = install|upgrade|none|... or error)
//	oamflow_helm_action_failures_total{action}             counter, failed Helm calls
//	oamflow_cue_render_duration_seconds{definition}        histogram, rendering one component (its definition's CUE and its traits')
//	oamflow_gc_deleted_objects_total{kind}                 counter, objects the resource keeper deleted (outdated revisions, deleted Applications)
//
// Durations are in seconds. controller-runtime's registry is process-wide:
// a second Recorder in the same process (tests) shares the first one's
// collectors instead of failing.
package metrics

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// Namespace prefixes every metric name.
const Namespace = "oamflow"

// Recorder observes oamflow's work. The zero value is not usable; a nil
// *Recorder observes nothing.
type Recorder struct {
	reconcile      *prometheus.HistogramVec
	reconcilePhase *prometheus.HistogramVec
	step           *prometheus.HistogramVec
	helm           *prometheus.HistogramVec
	helmFailures   *prometheus.CounterVec
	render         *prometheus.HistogramVec
	gc             *prometheus.CounterVec
	apps           *appsCollector
}

// New registers the collectors with reg (ctrlmetrics.Registry in the
// controller) and returns the Recorder; apps lists Applications for the
// phase gauge (the manager's cached client).
func New(reg prometheus.Registerer, apps client.Reader) (*Recorder, error) {
	buckets := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	r := &Recorder{
		reconcile: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "reconcile_duration_seconds",
			Help:    "Duration of one Application reconcile, by the phase the Application is in afterwards.",
			Buckets: buckets,
		}, []string{"phase"}),
		reconcilePhase: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "reconcile_phase_duration_seconds",
			Help:    "Duration of one phase of a reconcile (parse, revision, policy, render, workflow, health), by result (success or error).",
			Buckets: buckets,
		}, []string{"phase", "result"}),
		step: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "workflow_step_duration_seconds",
			Help:    "Duration of a finished workflow step from its first to its last execution, by step type and outcome (succeeded, failed, skipped).",
			Buckets: buckets,
		}, []string{"type", "outcome"}),
		helm: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "helm_action_duration_seconds",
			Help:    "Duration of one Helm call (ensure, uninstall), by outcome (what Helm did, or error).",
			Buckets: buckets,
		}, []string{"action", "outcome"}),
		helmFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "helm_action_failures_total",
			Help: "Helm calls (ensure, uninstall) that returned an error.",
		}, []string{"action"}),
		render: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "cue_render_duration_seconds",
			Help:    "Duration of rendering one component with CUE (its definition and traits), by component definition.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"definition"}),
		gc: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "gc_deleted_objects_total",
			Help: "Objects deleted by the resource keeper (garbage collection of outdated revisions and of deleted Applications), by kind.",
		}, []string{"kind"}),
		apps: &appsCollector{desc: prometheus.NewDesc(Namespace+"_applications",
			"Applications by status phase (empty phase: not reconciled yet).", []string{"phase"}, nil)},
	}
	r.apps.setReader(apps)
	var err error
	r.reconcile = register(reg, r.reconcile, &err)
	r.reconcilePhase = register(reg, r.reconcilePhase, &err)
	r.step = register(reg, r.step, &err)
	r.helm = register(reg, r.helm, &err)
	r.helmFailures = register(reg, r.helmFailures, &err)
	r.render = register(reg, r.render, &err)
	r.gc = register(reg, r.gc, &err)
	if existing := register(reg, r.apps, &err); existing != r.apps {
		existing.setReader(apps)
		r.apps = existing
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// register registers c, or returns the collector already registered
// under the same descriptors; the first other error goes to *errp.
func register[C prometheus.Collector](reg prometheus.Registerer, c C, errp *error) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	if *errp == nil {
		*errp = err
	}
	return c
}

// ObservePhase records one phase of a reconcile.
func (r *Recorder) ObservePhase(phase string, d time.Duration, err error) {
	if r == nil {
		return
	}
	result := "success"
	if err != nil {
		result = "error"
	}
	r.reconcilePhase.WithLabelValues(phase, result).Observe(d.Seconds())
}

// ObserveReconcile records a whole reconcile of after (before is the
// Application as the reconcile found it) and the workflow steps that
// finished during it.
func (r *Recorder) ObserveReconcile(before, after *v1beta1.Application, d time.Duration, _ error) {
	if r == nil || after == nil {
		return
	}
	r.reconcile.WithLabelValues(string(after.Status.Phase)).Observe(d.Seconds())
	for _, s := range FinishedSteps(before, after) {
		r.step.WithLabelValues(s.Type, s.Outcome).Observe(s.Duration.Seconds())
	}
}

// ObserveHelm records one Helm call; outcome is what Helm did (ignored
// when err is set).
func (r *Recorder) ObserveHelm(action, outcome string, d time.Duration, err error) {
	if r == nil {
		return
	}
	if err != nil {
		outcome = "error"
		r.helmFailures.WithLabelValues(action).Inc()
	}
	if outcome == "" {
		outcome = "unknown"
	}
	r.helm.WithLabelValues(action, outcome).Observe(d.Seconds())
}

// ObserveRender records rendering one component of definition.
func (r *Recorder) ObserveRender(definition string, d time.Duration) {
	if r == nil {
		return
	}
	r.render.WithLabelValues(definition).Observe(d.Seconds())
}

// CountDeletion counts one object of kind deleted by the resource keeper.
func (r *Recorder) CountDeletion(kind string) {
	if r == nil {
		return
	}
	r.gc.WithLabelValues(kind).Inc()
}

// appsCollector counts Applications by phase when scraped.
type appsCollector struct {
	desc *prometheus.Desc
	mu   sync.RWMutex
	r    client.Reader
}

func (c *appsCollector) setReader(r client.Reader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r = r
}

// Describe implements prometheus.Collector.
func (c *appsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector: one List from the cache.
func (c *appsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	reader := c.r
	c.mu.RUnlock()
	if reader == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &v1beta1.ApplicationList{}
	// Only phases are read: the cache's objects themselves, not a deep
	// copy of every Application at every scrape.
	if err := reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	counts := map[string]float64{}
	for i := range list.Items {
		counts[string(list.Items[i].Status.Phase)]++
	}
	for phase, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, n, phase)
	}
}
