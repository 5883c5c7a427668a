package health

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// checkPod: healthy when Running with condition Ready=True, or Succeeded;
// failed when Failed or a container is crash-looping.
func checkPod(obj *unstructured.Unstructured, ks *status.Result) Result {
	phase := nestedString(obj, "status", "phase")
	switch phase {
	case "Succeeded":
		return Result{Healthy: true, Reason: ReasonHealthy, Message: "Succeeded"}
	case "Failed":
		msg := "Failed"
		if m := nestedString(obj, "status", "message"); m != "" {
			msg += ": " + m
		}
		return Result{Reason: ReasonFailed, Message: msg}
	}
	if ks.Status == status.FailedStatus {
		return Result{Reason: ReasonFailed, Message: ks.Message}
	}
	if st, _, _, ok := condition(obj, "Ready"); ok && st == "True" {
		return Result{Healthy: true, Reason: ReasonHealthy, Message: phase}
	}
	msg := phase
	if msg == "" {
		msg = "Pending"
	}
	if waiting := waitingContainers(obj); len(waiting) > 0 {
		msg += ", waiting: " + strings.Join(waiting, ", ")
	}
	return Result{Reason: ReasonProgressing, Message: msg}
}

func waitingContainers(obj *unstructured.Unstructured) []string {
	var out []string
	statuses, _, _ := unstructured.NestedSlice(obj.Object, "status", "containerStatuses")
	for _, s := range statuses {
		m, ok := s.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		if reason, found, _ := unstructured.NestedString(m, "state", "waiting", "reason"); found {
			out = append(out, fmt.Sprintf("%s (%s)", name, reason))
		}
	}
	return out
}
