package health

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// checkReplicaSet: healthy when every desired replica is ready and available.
func checkReplicaSet(obj *unstructured.Unstructured, ks *status.Result) Result {
	if m, waiting := observing(obj); waiting {
		return Result{Reason: ReasonProgressing, Message: m}
	}
	want := nestedCount(obj, "spec", "replicas")
	ready := nestedInt(obj, "status", "readyReplicas")
	available := nestedInt(obj, "status", "availableReplicas")
	msg := fmt.Sprintf("Ready:%d/%d", ready, want)
	if ks.Status != status.CurrentStatus {
		msg = fmt.Sprintf("Ready:%d/%d, available:%d/%d", ready, want, available, want)
	}
	return fromKstatus(ks, msg)
}
