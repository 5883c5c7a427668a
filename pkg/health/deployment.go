package health

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// checkDeployment: healthy when the controller observed the latest spec
// and every desired replica is updated, ready and available (kstatus);
// failed when the Progressing condition reports ProgressDeadlineExceeded.
func checkDeployment(obj *unstructured.Unstructured, ks *status.Result) Result {
	if m, waiting := observing(obj); waiting {
		return Result{Reason: ReasonProgressing, Message: m}
	}
	want := nestedCount(obj, "spec", "replicas")
	ready := nestedInt(obj, "status", "readyReplicas")
	updated := nestedInt(obj, "status", "updatedReplicas")
	available := nestedInt(obj, "status", "availableReplicas")
	msg := fmt.Sprintf("Ready:%d/%d", ready, want)
	if ks.Status != status.CurrentStatus {
		msg = fmt.Sprintf("Ready:%d/%d, updated:%d/%d, available:%d/%d", ready, want, updated, want, available, want)
		if _, reason, cmsg, ok := condition(obj, "Progressing"); ok && reason == "ProgressDeadlineExceeded" {
			msg += ": rollout exceeded its progress deadline: " + cmsg
		} else if ready >= want && updated >= want && available >= want {
			msg += ": " + ks.Message
		}
	}
	return fromKstatus(ks, msg)
}
