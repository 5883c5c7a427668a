package health

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// checkJob: healthy once the Job completed (condition Complete=True);
// failed when condition Failed=True; otherwise progressing. A running Job
// is not healthy yet: the component it belongs to has not done its work.
func checkJob(obj *unstructured.Unstructured, ks *status.Result) Result {
	completions := nestedCount(obj, "spec", "completions")
	succeeded := nestedInt(obj, "status", "succeeded")
	active := nestedInt(obj, "status", "active")
	failed := nestedInt(obj, "status", "failed")
	if st, reason, msg, ok := condition(obj, "Failed"); ok && st == "True" {
		return Result{Reason: ReasonFailed, Message: fmt.Sprintf("Job failed (%s): %s", reason, msg)}
	}
	if st, _, _, ok := condition(obj, "Complete"); ok && st == "True" {
		return Result{Healthy: true, Reason: ReasonHealthy, Message: fmt.Sprintf("Completed: succeeded %d/%d", succeeded, completions)}
	}
	if ks.Status == status.FailedStatus {
		return fromKstatus(ks, ks.Message)
	}
	return Result{Reason: ReasonProgressing, Message: fmt.Sprintf("Running: succeeded %d/%d, active %d, failed %d", succeeded, completions, active, failed)}
}

// checkCronJob: a CronJob is healthy once it exists; its Jobs are judged
// on their own.
func checkCronJob(obj *unstructured.Unstructured, _ *status.Result) Result {
	if nb, _, _ := unstructured.NestedBool(obj.Object, "spec", "suspend"); nb {
		return Result{Healthy: true, Reason: ReasonHealthy, Message: "suspended"}
	}
	last := nestedString(obj, "status", "lastScheduleTime")
	if last == "" {
		return Result{Healthy: true, Reason: ReasonHealthy, Message: "not scheduled yet"}
	}
	return Result{Healthy: true, Reason: ReasonHealthy, Message: "last scheduled at " + last}
}
