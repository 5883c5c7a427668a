package health

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// checkService: healthy once it can take traffic: any type but
// LoadBalancer at once, LoadBalancer once it has an ingress address.
func checkService(obj *unstructured.Unstructured, _ *status.Result) Result {
	typ := nestedString(obj, "spec", "type")
	if typ == "" {
		typ = "ClusterIP"
	}
	if typ != "LoadBalancer" {
		msg := typ
		if ip := nestedString(obj, "spec", "clusterIP"); ip != "" {
			msg += " " + ip
		}
		if typ == "ExternalName" {
			msg += " " + nestedString(obj, "spec", "externalName")
		}
		return Result{Healthy: true, Reason: ReasonHealthy, Message: strings.TrimSpace(msg)}
	}
	ingress, _, _ := unstructured.NestedSlice(obj.Object, "status", "loadBalancer", "ingress")
	var addrs []string
	for _, in := range ingress {
		m, ok := in.(map[string]any)
		if !ok {
			continue
		}
		if ip, _ := m["ip"].(string); ip != "" {
			addrs = append(addrs, ip)
		} else if host, _ := m["hostname"].(string); host != "" {
			addrs = append(addrs, host)
		}
	}
	if len(addrs) == 0 {
		return Result{Reason: ReasonProgressing, Message: "LoadBalancer: waiting for an external address"}
	}
	return Result{Healthy: true, Reason: ReasonHealthy, Message: fmt.Sprintf("LoadBalancer %s", strings.Join(addrs, ","))}
}
