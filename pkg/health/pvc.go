package health

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// checkPVC: healthy once Bound; Lost is a failure; Pending is progressing.
func checkPVC(obj *unstructured.Unstructured, _ *status.Result) Result {
	switch phase := nestedString(obj, "status", "phase"); phase {
	case "Bound":
		return Result{Healthy: true, Reason: ReasonHealthy, Message: "Bound to " + nestedString(obj, "spec", "volumeName")}
	case "Lost":
		return Result{Reason: ReasonFailed, Message: "Lost: its PersistentVolume " + nestedString(obj, "spec", "volumeName") + " is gone"}
	case "":
		return Result{Reason: ReasonProgressing, Message: "Pending: waiting for a volume"}
	default:
		return Result{Reason: ReasonProgressing, Message: phase + ": waiting for a volume"}
	}
}
