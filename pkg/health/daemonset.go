package health

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// checkDaemonSet: healthy when a pod is scheduled, updated, ready and
// available on every node that should run one.
func checkDaemonSet(obj *unstructured.Unstructured, ks *status.Result) Result {
	if m, waiting := observing(obj); waiting {
		return Result{Reason: ReasonProgressing, Message: m}
	}
	want := nestedInt(obj, "status", "desiredNumberScheduled")
	ready := nestedInt(obj, "status", "numberReady")
	updated := nestedInt(obj, "status", "updatedNumberScheduled")
	available := nestedInt(obj, "status", "numberAvailable")
	msg := fmt.Sprintf("Ready:%d/%d", ready, want)
	if ks.Status != status.CurrentStatus {
		msg = fmt.Sprintf("Ready:%d/%d, updated:%d/%d, available:%d/%d", ready, want, updated, want, available, want)
	}
	return fromKstatus(ks, msg)
}
