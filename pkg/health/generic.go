package health

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// checkGeneric judges any other kind by kstatus' generic rules: current
// when the controller observed the latest generation and no
// Ready=False/Reconciling/Stalled condition says otherwise. Kinds without
// status are healthy.
func checkGeneric(obj *unstructured.Unstructured, ks *status.Result) Result {
	msg := ks.Message
	if m, waiting := observing(obj); waiting {
		msg = m
	}
	if ks.Status == status.CurrentStatus && (msg == "" || msg == "Resource is current" || msg == "Resource is always ready") {
		msg = ""
	}
	return fromKstatus(ks, msg)
}
