package corpus

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// LoadKubeVelaState creates the objects of kubevela-state's files
// (KubeVelaStateDir) through c as they are: managedFields (field manager
// kubevela), finalizers and compressed records included, and the status
// of Applications, ApplicationRevisions and Deployments written through
// the status subresource. uid, resourceVersion, creationTimestamp and
// ownerReferences are the API server's to assign and are dropped, and so
// are a Service's cluster IPs (from KubeVela's cluster's range); the
// namespace shop is created when missing.
//
// KubeVela's conditions carry no message, which oamflow's schema
// (metav1.Condition) requires: a record KubeVela left in etcd is served as
// it is, and oamflow's first status write replaces every condition
// (validation ratcheting lets what it leaves alone stand), but a create is
// validated whole, so conditions get an empty message.
func LoadKubeVelaState(t testing.TB, c client.Client, files ...string) {
	t.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace shop: %v", err)
	}
	dir := KubeVelaStateDir(t)
	for _, file := range files {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Items []map[string]any `json:"items"`
		}
		if err := yaml.Unmarshal(b, &list); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, item := range list.Items {
			u := &unstructured.Unstructured{Object: item}
			u.SetUID("")
			u.SetResourceVersion("")
			u.SetCreationTimestamp(metav1.Time{})
			u.SetOwnerReferences(nil)
			if u.GetKind() == "Service" {
				// The cluster's own service range assigns these.
				unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
				unstructured.RemoveNestedField(u.Object, "spec", "clusterIPs")
			}
			status, hasStatus := u.Object["status"]
			delete(u.Object, "status")
			if err := c.Create(ctx, u, client.FieldOwner("kubevela")); err != nil {
				t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
			}
			switch u.GetKind() {
			case "Application", "ApplicationRevision", "Deployment":
			default:
				continue
			}
			if !hasStatus {
				continue
			}
			if st, ok := status.(map[string]any); ok {
				conds, _ := st["conditions"].([]any)
				for _, cd := range conds {
					if m, ok := cd.(map[string]any); ok {
						if _, ok := m["message"]; !ok {
							m["message"] = ""
						}
					}
				}
			}
			u.Object["status"] = status
			err := c.Status().Update(ctx, u, client.FieldOwner("kubevela"))
			if apierrors.IsConflict(err) && u.GetKind() == "Deployment" {
				// A running kube-controller-manager writes it (local
				// clusters); KubeVela's copy only stands in for one.
				continue
			}
			if err != nil {
				t.Fatalf("writing the status of %s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
	}
}
