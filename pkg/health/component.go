package health

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// EvalResult is what a definition's status CUE yields: isHealth (from
// healthPolicy; true when there is none), message (from customStatus) and
// the fields of details.
type EvalResult struct {
	Healthy bool
	Message string
	Details map[string]string
}

// StatusEvaluator evaluates a definition's status CUE (healthPolicy,
// customStatus, details) against live objects. Its method has the shape of
// the rendering engine's EvalStatus: parameter is the component's or
// trait's properties, liveOutput the live main workload (context.output),
// liveOutputs the live auxiliary objects by output name (context.outputs),
// cctx the rest of the CUE context.
type StatusEvaluator interface {
	EvalStatus(ctx context.Context, st *common.Status, parameter map[string]any, liveOutput map[string]any,
		liveOutputs map[string]map[string]any, cctx map[string]any) (EvalResult, error)
}

// StatusEvaluatorFn adapts a function to StatusEvaluator.
type StatusEvaluatorFn func(ctx context.Context, st *common.Status, parameter map[string]any, liveOutput map[string]any,
	liveOutputs map[string]map[string]any, cctx map[string]any) (EvalResult, error)

// EvalStatus calls fn.
func (fn StatusEvaluatorFn) EvalStatus(ctx context.Context, st *common.Status, parameter map[string]any, liveOutput map[string]any,
	liveOutputs map[string]map[string]any, cctx map[string]any) (EvalResult, error) {
	return fn(ctx, st, parameter, liveOutput, liveOutputs, cctx)
}

// Object is one rendered object and its live counterpart.
type Object struct {
	// Kind, Namespace and Name identify the object in messages.
	Kind, Namespace, Name string
	// Live is the object read from the cluster; nil means it is missing.
	Live *unstructured.Unstructured
}

// String is "Kind namespace/name".
func (o Object) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// Fetch reads the live counterpart of a rendered object; a missing object
// is returned with Live nil and no error. It is Fetcher{}.Fetch: a virtual
// HelmRelease comes back unhealthy with reason HelmNotConfigured.
func Fetch(ctx context.Context, r client.Reader, rendered *unstructured.Unstructured) (Object, error) {
	return Fetcher{}.Fetch(ctx, r, rendered)
}

func fetchObject(ctx context.Context, r client.Reader, rendered *unstructured.Unstructured) (Object, error) {
	o := Object{Kind: rendered.GetKind(), Namespace: rendered.GetNamespace(), Name: rendered.GetName()}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(rendered.GroupVersionKind())
	if err := r.Get(ctx, client.ObjectKeyFromObject(rendered), live); err != nil {
		if apierrors.IsNotFound(err) {
			return o, nil
		}
		return o, fmt.Errorf("reading %s: %w", o, err)
	}
	o.Live = live
	return o, nil
}

// Subject is a component or a trait whose health is asked.
type Subject struct {
	// Status is the definition's status CUE; nil or an empty healthPolicy
	// means the live objects are judged by Check (kstatus).
	Status *common.Status
	// Parameter is the properties given to the definition.
	Parameter map[string]any
	// Context is the CUE context (name, namespace, appName, …).
	Context map[string]any
	// Output is the main workload (for a trait: the workload it patches);
	// nil when there is none (a trait with outputs only).
	Output *Object
	// Outputs are the auxiliary objects by output name.
	Outputs map[string]Object
	// Workload is, for a trait, its component's main workload: the
	// trait's status CUE reads it as context.output (KubeVela's context),
	// but it is not judged as one of the trait's objects. Output, when
	// set, wins.
	Workload *Object
}

// Outcome is the health of a component or trait.
type Outcome struct {
	Result
	// Details are the fields of the definition's status.details.
	Details map[string]string
}

// Evaluate decides the health of a component or trait:
//   - a missing object makes it unhealthy, reason Missing, with the message
//     "<Kind> <namespace>/<name> is missing";
//   - with a healthPolicy, the policy decides (reason HealthPolicy when it
//     says unhealthy), and customStatus gives the message;
//   - without one, every live object must pass Check; the first that does
//     not gives reason and message ("<Kind> <ns>/<name>: <why>"); when all
//     pass, customStatus (if any) gives the message.
//   - a HelmRelease (as read by a Fetcher) is judged by its release, with or
//     without a healthPolicy, so that a release whose chart cannot be
//     fetched is never healthy; its message ("release R revision N, chart
//     C-V: N/M resources ready") and details (resources not ready and
//     MISSING, by kind) are the outcome's unless customStatus or details
//     say otherwise.
//
// An evaluation error yields an unhealthy outcome with reason StatusError
// and the error.
func Evaluate(ctx context.Context, ev StatusEvaluator, s Subject) (Outcome, error) {
	objs := s.objects()
	for _, o := range objs {
		if o.Live == nil {
			return Outcome{Result: Result{Reason: ReasonMissing, Message: o.String() + " is missing"}}, nil
		}
	}
	hasPolicy := s.Status != nil && s.Status.HealthPolicy != ""
	hasCUE := s.Status != nil && (s.Status.HealthPolicy != "" || s.Status.CustomStatus != "" || s.Status.Details != "")

	var messages []string
	var details map[string]string
	for _, o := range objs {
		release := helmspec.IsHelmRelease(o.Live)
		if hasPolicy && !release {
			continue
		}
		r := Check(ctx, o.Live)
		if release {
			if !r.Healthy {
				return Outcome{Result: r, Details: releaseDetails(o.Live)}, nil
			}
			messages = append(messages, r.Message)
			details = mergeDetails(details, releaseDetails(o.Live))
			continue
		}
		if !r.Healthy {
			r.Message = o.String() + ": " + r.Message
			return Outcome{Result: r}, nil
		}
	}
	out := Outcome{Result: Result{Healthy: true, Reason: ReasonHealthy, Message: strings.Join(messages, "; ")}, Details: details}
	if !hasCUE {
		return out, nil
	}
	if ev == nil {
		err := fmt.Errorf("the definition has status CUE but no evaluator was given")
		return Outcome{Result: Result{Reason: ReasonStatusError, Message: err.Error()}}, err
	}
	var liveOutput map[string]any
	switch {
	case s.Output != nil:
		liveOutput = s.Output.Live.Object
	case s.Workload != nil && s.Workload.Live != nil:
		liveOutput = s.Workload.Live.Object
	}
	liveOutputs := make(map[string]map[string]any, len(s.Outputs))
	for name, o := range s.Outputs {
		liveOutputs[name] = o.Live.Object
	}
	res, err := ev.EvalStatus(ctx, s.Status, s.Parameter, liveOutput, liveOutputs, s.Context)
	if err != nil {
		err = fmt.Errorf("evaluating the definition's status: %w", err)
		return Outcome{Result: Result{Reason: ReasonStatusError, Message: err.Error()}}, err
	}
	if res.Message != "" || len(messages) == 0 {
		out.Message = res.Message
	}
	if len(res.Details) > 0 || details == nil {
		out.Details = res.Details
	}
	if hasPolicy && !res.Healthy {
		out.Healthy = false
		out.Reason = ReasonHealthPolicy
		if out.Message == "" {
			out.Message = "the definition's healthPolicy reports unhealthy"
		}
	}
	return out, nil
}

// objects lists the subject's objects: the output first, then outputs by name.
func (s Subject) objects() []Object {
	var out []Object
	if s.Output != nil {
		out = append(out, *s.Output)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Outputs)) {
		out = append(out, s.Outputs[name])
	}
	return out
}
