package helm_test

import (
	"context"
	"fmt"

	"github.com/oamflow/oamflow/pkg/helm"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// Render a bundled chart without a cluster, as `oamflow dry-run` does for
// local chart sources.
func ExampleClient_Template() {
	spec, err := helmspec.ParseSpec([]byte(`{
		"chart": {"source": "simple"},
		"values": {"message": "hi", "replicaCount": 2}
	}`), helmspec.Defaults{Name: "web", Namespace: "shop"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fetcher := helm.NewFetcher(nil, helm.WithChartRoot("../../charts/testdata"))
	client := helm.NewClient(nil, fetcher, nil)
	objs, err := client.Template(context.Background(), helmspec.Request{Namespace: "shop", Spec: spec})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range objs {
		fmt.Println(o.GetKind(), o.GetName())
	}
	// Output:
	// ConfigMap web-config
	// Service web-web
	// Deployment web-web
}

// Field-path errors for user input.
func ExampleParseSpec() {
	_, err := helmspec.ParseSpec([]byte(`{"chart": {"source": "app", "repoURL": "https://charts.example.com"}, "options": {"timeout": "soon"}}`),
		helmspec.Defaults{Name: "web", Namespace: "shop"})
	fmt.Println(err)
	// Output:
	// spec.options.timeout: Invalid value: "soon": expected a positive Go duration such as 5m or 90s
}
