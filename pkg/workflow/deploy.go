package workflow

import (
	"context"
	"errors"
	"fmt"
	"github.com/oamflow/oamflow/pkg/errclass"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cuexruntime "github.com/kubevela/pkg/cue/cuex/runtime"
	"github.com/kubevela/workflow/api/v1alpha1"
	wfContext "github.com/kubevela/workflow/pkg/context"
	providertypes "github.com/kubevela/workflow/pkg/providers/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
)

// DefaultDeployParallelism bounds how many components a deploy step
// applies at once when its parallelism is not set (the deploy step
// definition's default).
const DefaultDeployParallelism = 5

// deployParams are the $params of oam.#Deploy and multicluster.#Deploy,
// and the fields of op.#Deploy.
type deployParams struct {
	Policies    []string `json:"policies,omitempty"`
	Parallelism int      `json:"parallelism,omitempty"`
	// InlinePolicies (KubeVela: policies given in the step instead of by
	// name) are not supported.
	InlinePolicies []map[string]any `json:"inlinePolicies,omitempty"`
}

type deployReturns struct {
	Healthy bool `json:"healthy"`
}

// legacyDeployProvider serves op.#Deploy (fields instead of $params).
func legacyDeployProvider() cuexruntime.ProviderFn {
	return providertypes.LegacyGenericProviderFn[deployParams, deployReturns](
		func(ctx context.Context, p *providertypes.LegacyParams[deployParams]) (*deployReturns, error) {
			return deploy(ctx, p.Params, p.RuntimeParams)
		})
}

func deployProvider() cuexruntime.ProviderFn {
	return providertypes.GenericProviderFn[deployParams, providertypes.Returns[deployReturns]](
		func(ctx context.Context, p *providertypes.Params[deployParams]) (*providertypes.Returns[deployReturns], error) {
			r, err := deploy(ctx, p.Params, p.RuntimeParams)
			if err != nil {
				return nil, err
			}
			return &providertypes.Returns[deployReturns]{Returns: *r}, nil
		})
}

// deploy applies every component of every target of the step's policies
// and waits until all are healthy. Targets (clusters) are deployed
// concurrently, at most p.Parallelism components at a time in all; within
// a target a component is applied once the components it depends on are
// healthy there.
//
// One target never holds up or undoes another: a cluster that cannot be
// reached is reported in status.services (one unhealthy entry per
// component, with the cluster and the reason) and the step waits, retried
// with the engine's backoff until the cluster answers or the step times
// out, while the other targets go on. A terminal error (a render failure,
// an object owned by someone else) fails the step once every target has
// been tried; other errors are returned (the step is retried, at most the
// engine's retry limit).
func deploy(ctx context.Context, p deployParams, rt providertypes.RuntimeParams) (*deployReturns, error) {
	run, ok := runFrom(ctx)
	if !ok {
		return nil, fmt.Errorf("vela/oam: no Application deployer in this workflow run")
	}
	planner, ok := run.deployer.(DeployPlanner)
	if !ok {
		return nil, fail(ctx, rt, "this controller cannot run deploy steps")
	}
	if len(p.InlinePolicies) > 0 {
		return nil, fail(ctx, rt, "deploy: inlinePolicies are not supported by oamflow; declare the policies in spec.policies and name them in policies")
	}
	targets, err := planner.PlanDeploy(ctx, p.Policies)
	if err != nil {
		if errclass.IsTerminal(err) {
			return nil, fail(ctx, rt, fmt.Sprintf("deploy: %v", err))
		}
		return nil, fmt.Errorf("deploy: %w", err)
	}
	parallelism := p.Parallelism
	if parallelism <= 0 {
		parallelism = DefaultDeployParallelism
	}
	d := &deployRun{
		run:  run,
		rt:   rt,
		sem:  make(chan struct{}, parallelism),
		wfCx: &lockedContext{Context: rt.WorkflowContext},
	}
	results := make([]targetResult, len(targets))
	var wg sync.WaitGroup
	for i := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = d.target(ctx, targets[i])
		}()
	}
	wg.Wait()

	var waiting, failures []string
	var errs []error
	for _, r := range results {
		waiting = append(waiting, r.waiting...)
		failures = append(failures, r.failures...)
		errs = append(errs, r.errs...)
	}
	switch {
	case len(failures) > 0:
		return nil, fail(ctx, rt, strings.Join(failures, "; "))
	case len(errs) > 0:
		return nil, errors.Join(errs...)
	case len(waiting) > 0:
		return nil, wait(rt, "waiting for "+strings.Join(waiting, "; "))
	}
	return &deployReturns{Healthy: true}, nil
}

// deployRun is one execution of a deploy step.
type deployRun struct {
	run  *runValues
	rt   providertypes.RuntimeParams
	sem  chan struct{}
	wfCx *lockedContext
}

// targetResult is what deploying one target came to; a target with
// nothing in it is done.
type targetResult struct {
	waiting  []string
	failures []string
	errs     []error
}

// componentResult is the outcome of one component at one target.
type componentResult struct {
	healthy bool
	waiting string
	failure string
	err     error
}

// target deploys the components of t in waves: each wave applies, at
// once, the components whose dependencies are healthy.
func (d *deployRun) target(ctx context.Context, t DeployTarget) targetResult {
	var res targetResult
	comps := map[string]Component{}
	var pending []string
	for _, name := range t.Components {
		if c, ok := t.Deployer.Component(name); ok {
			comps[name] = c
			pending = append(pending, name)
		}
	}
	healthy := map[string]bool{}
	blockedBy := func(name string) []string {
		var out []string
		for _, dep := range comps[name].DependsOn {
			if _, in := comps[dep]; in && !healthy[dep] {
				out = append(out, dep)
			}
		}
		return out
	}
	for len(pending) > 0 {
		var wave, rest []string
		for _, name := range pending {
			if len(blockedBy(name)) == 0 {
				wave = append(wave, name)
			} else {
				rest = append(rest, name)
			}
		}
		if len(wave) == 0 {
			break
		}
		out := make([]componentResult, len(wave))
		var wg sync.WaitGroup
		for i, name := range wave {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d.sem <- struct{}{}
				defer func() { <-d.sem }()
				out[i] = d.component(ctx, t, comps[name])
			}()
		}
		wg.Wait()
		progress := false
		for i, name := range wave {
			r := out[i]
			where := placeName(name, t.Cluster)
			switch {
			case r.failure != "":
				res.failures = append(res.failures, r.failure)
			case r.err != nil:
				res.errs = append(res.errs, r.err)
			case r.waiting != "":
				res.waiting = append(res.waiting, where+": "+r.waiting)
			case r.healthy:
				healthy[name] = true
				progress = true
			}
		}
		pending = rest
		if !progress {
			break
		}
	}
	for _, name := range pending {
		res.waiting = append(res.waiting, fmt.Sprintf("%s (after %s)", placeName(name, t.Cluster), strings.Join(blockedBy(name), ", ")))
	}
	return res
}

// component applies one component at t with applyOne. The step's action
// and workflow context are shared by concurrent components, so applyOne
// gets an action that only records a failure and a locked context.
func (d *deployRun) component(ctx context.Context, t DeployTarget, comp Component) componentResult {
	rec := &recordingAction{}
	rt := d.rt
	rt.Action = rec
	if rt.WorkflowContext != nil {
		rt.WorkflowContext = d.wfCx
	}
	p := componentParams{Component: comp.Name, Cluster: t.Cluster, Namespace: t.Namespace}
	here := func(name string) bool { return slices.Contains(t.Components, name) }
	res, err := applyOne(ctx, &runValues{deployer: t.Deployer, services: d.run.services}, comp, p, rt, here)
	switch {
	case rec.failed:
		msg := rec.message
		if t.Cluster != "" && t.Cluster != "local" {
			msg = fmt.Sprintf("cluster %s: %s", t.Cluster, msg)
		}
		return componentResult{failure: msg}
	case err != nil && errclass.IsWaiting(err):
		msg := fmt.Sprintf("cluster %s: %v", clusterName(t.Cluster), err)
		d.run.services.add(common.ApplicationComponentStatus{
			Name: comp.Name, Namespace: d.namespaceOf(ctx, t, comp.Name), Cluster: t.Cluster, Healthy: false, Message: msg,
		})
		return componentResult{waiting: msg}
	case err != nil && Unreachable(err):
		msg := fmt.Sprintf("cluster %s cannot be reached: %v", clusterName(t.Cluster), err)
		d.run.services.add(common.ApplicationComponentStatus{
			Name: comp.Name, Namespace: d.namespaceOf(ctx, t, comp.Name), Cluster: t.Cluster, Healthy: false, Message: msg,
		})
		return componentResult{waiting: msg}
	case err != nil:
		return componentResult{err: fmt.Errorf("cluster %s: %w", clusterName(t.Cluster), err)}
	case res.waiting != "":
		return componentResult{waiting: res.waiting}
	}
	return componentResult{healthy: true}
}

// namespaceOf is the namespace status.services uses for component name at
// t: the target's, else that of the component's rendered main workload
// (the Application's namespace unless the template says otherwise).
func (d *deployRun) namespaceOf(ctx context.Context, t DeployTarget, name string) string {
	if t.Namespace != "" {
		return t.Namespace
	}
	res, err := t.Deployer.Render(ctx, ComponentRequest{Name: name, Cluster: t.Cluster})
	if err != nil {
		return ""
	}
	for _, r := range res {
		if r.IsWorkload() {
			return r.Namespace
		}
	}
	if len(res) > 0 {
		return res[0].Namespace
	}
	return ""
}

func placeName(comp, cluster string) string {
	if cluster == "" || cluster == "local" {
		return comp
	}
	return comp + "@" + cluster
}

func clusterName(c string) string {
	if c == "" {
		return "local"
	}
	return c
}

// Unreachable reports whether err says a cluster could not be talked to
// (connection refused or reset, no route, DNS failure, a timeout, or the
// API server answering 503 while it starts): retrying later may succeed,
// and no other cluster is concerned. The text is checked too, because
// discovery and REST-mapper errors do not always wrap their cause.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var netErr net.Error
	var opErr *net.OpError
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.As(err, &opErr), errors.As(err, &dnsErr):
		return true
	case errors.As(err, &netErr) && netErr.Timeout():
		return true
	case apierrors.IsServiceUnavailable(err), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err):
		return true
	}
	msg := err.Error()
	for _, s := range []string{"connection refused", "connection reset by peer", "no route to host", "network is unreachable",
		"i/o timeout", "TLS handshake timeout", "Client.Timeout exceeded", "context deadline exceeded", "no such host",
		"the server is currently unable to handle the request"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// recordingAction is the step action one concurrent component sees: it
// records a failure for the deploy step to report and ignores the rest.
type recordingAction struct {
	failed  bool
	message string
}

func (a *recordingAction) Suspend(string)   {}
func (a *recordingAction) Resume(string)    {}
func (a *recordingAction) Terminate(string) {}
func (a *recordingAction) Wait(string)      {}
func (a *recordingAction) Message(string)   {}
func (a *recordingAction) Fail(msg string) {
	a.failed = true
	a.message = msg
}
func (a *recordingAction) GetStatus() v1alpha1.StepStatus { return v1alpha1.StepStatus{} }

// lockedContext serialises the variable reads and writes of concurrent
// components on the step's workflow context; values read are copied into
// a CUE context of their own, so callers never share one.
type lockedContext struct {
	wfContext.Context
	mu sync.Mutex
}

func (c *lockedContext) GetVar(paths ...string) (cue.Value, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, err := c.Context.GetVar(paths...)
	if err != nil {
		return v, err
	}
	b, err := v.MarshalJSON()
	if err != nil {
		return cue.Value{}, err
	}
	return cuecontext.New().CompileBytes(b), nil
}

func (c *lockedContext) SetVar(v cue.Value, paths ...string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Context.SetVar(v, paths...)
}
