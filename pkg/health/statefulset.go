package health

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// checkStatefulSet: healthy when every desired replica is ready and
// updated to the update revision. For a partitioned rolling update
// (spec.updateStrategy.rollingUpdate.partition = P), only the replicas at
// ordinals >= P must be updated; the others stay at the old revision on
// purpose. OnDelete updates are healthy once replicas are ready.
func checkStatefulSet(obj *unstructured.Unstructured, ks *status.Result) Result {
	if m, waiting := observing(obj); waiting {
		return Result{Reason: ReasonProgressing, Message: m}
	}
	want := nestedCount(obj, "spec", "replicas")
	ready := nestedInt(obj, "status", "readyReplicas")
	updated := nestedInt(obj, "status", "updatedReplicas")
	partition, hasPartition, _ := unstructured.NestedInt64(obj.Object, "spec", "updateStrategy", "rollingUpdate", "partition")
	msg := fmt.Sprintf("Ready:%d/%d", ready, want)
	switch {
	case hasPartition && partition > 0:
		toUpdate := max(want-partition, 0)
		msg = fmt.Sprintf("Ready:%d/%d, partitioned rollout: updated:%d/%d (ordinals >= %d)", ready, want, min(updated, toUpdate), toUpdate, partition)
	case ks.Status != status.CurrentStatus:
		msg = fmt.Sprintf("Ready:%d/%d, updated:%d/%d", ready, want, updated, want)
	}
	return fromKstatus(ks, msg)
}
