// Package health decides whether live Kubernetes objects, and the OAM
// components and traits made of them, are healthy.
//
// Objects are judged by small named checks, one per kind (Deployment,
// StatefulSet, DaemonSet, ReplicaSet, Job, Pod, PersistentVolumeClaim,
// Service, and the virtual HelmRelease), each built on kstatus (sigs.k8s.io/cli-utils/pkg/kstatus) with
// messages of our own; any other kind falls back to kstatus' generic rules
// (observedGeneration and Ready/Reconciling/Stalled conditions). Components
// and traits whose definition has a CUE healthPolicy are judged by it (see
// Evaluate). Virtual HelmRelease objects (package helm) are judged by the
// Helm release they stand for, through a ReleaseChecker (see Fetcher).
package health

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// Reasons of a Result (CamelCase, stable).
const (
	ReasonHealthy      = "Healthy"
	ReasonProgressing  = "Progressing"
	ReasonFailed       = "Failed"
	ReasonTerminating  = "Terminating"
	ReasonMissing      = "Missing"
	ReasonUnknown      = "Unknown"
	ReasonStatusError  = "StatusError"
	ReasonHealthPolicy = "HealthPolicy"
)

// Result is the health of one object, component or trait.
type Result struct {
	Healthy bool
	// Reason is a CamelCase word (see the Reason constants).
	Reason string
	// Message says what was seen, e.g. "2/3 replicas ready".
	Message string
}

// checkFn judges one kind. It receives kstatus' verdict and refines the
// message (and, where kstatus is lenient or strict for our purposes, the
// verdict).
type checkFn func(obj *unstructured.Unstructured, ks *status.Result) Result

// checkFor returns the check of obj's kind, or nil for the generic one.
func checkFor(obj *unstructured.Unstructured) checkFn {
	gk := obj.GroupVersionKind().GroupKind()
	switch gk.Group {
	case helmspec.Group:
		if gk.Kind == helmspec.Kind {
			return checkHelmRelease
		}
	case "apps":
		switch gk.Kind {
		case "Deployment":
			return checkDeployment
		case "StatefulSet":
			return checkStatefulSet
		case "DaemonSet":
			return checkDaemonSet
		case "ReplicaSet":
			return checkReplicaSet
		}
	case "batch":
		switch gk.Kind {
		case "Job":
			return checkJob
		case "CronJob":
			return checkCronJob
		}
	case "":
		switch gk.Kind {
		case "Pod":
			return checkPod
		case "PersistentVolumeClaim":
			return checkPVC
		case "Service":
			return checkService
		}
	}
	return nil
}

// Check returns the health of a live object. A nil object is unhealthy
// with reason Missing.
func Check(_ context.Context, obj *unstructured.Unstructured) Result {
	if obj == nil {
		return Result{Reason: ReasonMissing, Message: "object is missing"}
	}
	ks, err := status.Compute(obj)
	if err != nil {
		return Result{Reason: ReasonStatusError, Message: fmt.Sprintf("cannot read the status of %s %s: %v", obj.GetKind(), obj.GetName(), err)}
	}
	if ks.Status == status.TerminatingStatus {
		return Result{Reason: ReasonTerminating, Message: "being deleted"}
	}
	if fn := checkFor(obj); fn != nil {
		return fn(obj, ks)
	}
	return checkGeneric(obj, ks)
}

// fromKstatus maps kstatus' verdict to a Result with message msg.
func fromKstatus(ks *status.Result, msg string) Result {
	switch ks.Status {
	case status.CurrentStatus:
		return Result{Healthy: true, Reason: ReasonHealthy, Message: msg}
	case status.FailedStatus:
		return Result{Reason: ReasonFailed, Message: msg}
	case status.InProgressStatus:
		return Result{Reason: ReasonProgressing, Message: msg}
	case status.TerminatingStatus:
		return Result{Reason: ReasonTerminating, Message: msg}
	case status.NotFoundStatus:
		return Result{Reason: ReasonMissing, Message: msg}
	default:
		return Result{Reason: ReasonUnknown, Message: msg}
	}
}

// observing reports whether the controller has not yet seen the latest
// spec; the message says so.
func observing(obj *unstructured.Unstructured) (string, bool) {
	gen := obj.GetGeneration()
	observed, found, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	if found && gen > 0 && observed < gen {
		return fmt.Sprintf("waiting for the controller to observe generation %d (observed %d)", gen, observed), true
	}
	return "", false
}

func nestedInt(obj *unstructured.Unstructured, fields ...string) int64 {
	v, _, _ := unstructured.NestedInt64(obj.Object, fields...)
	return v
}

// nestedCount reads a count that Kubernetes defaults to 1 when it is absent
// (spec.replicas, spec.completions).
func nestedCount(obj *unstructured.Unstructured, fields ...string) int64 {
	v, found, err := unstructured.NestedInt64(obj.Object, fields...)
	if !found || err != nil {
		return 1
	}
	return v
}

func nestedString(obj *unstructured.Unstructured, fields ...string) string {
	v, _, _ := unstructured.NestedString(obj.Object, fields...)
	return v
}

// condition returns the status, reason and message of condition typ.
func condition(obj *unstructured.Unstructured, typ string) (st, reason, msg string, found bool) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		st, _ = m["status"].(string)
		reason, _ = m["reason"].(string)
		msg, _ = m["message"].(string)
		return st, reason, msg, true
	}
	return "", "", "", false
}
