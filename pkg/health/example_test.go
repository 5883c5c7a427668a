package health_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/oamflow/oamflow/pkg/health"
)

func ExampleCheck() {
	pvc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "PersistentVolumeClaim",
		"metadata":   map[string]any{"name": "data", "namespace": "default"},
		"status":     map[string]any{"phase": "Pending"},
	}}
	r := health.Check(context.Background(), pvc)
	fmt.Println(r.Healthy, r.Reason, r.Message)
	// Output: false Progressing Pending: waiting for a volume
}
