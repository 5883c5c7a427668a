package render_test

import (
	"context"
	"fmt"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
	"github.com/oamflow/oamflow/pkg/render"
)

// Definitions in the KubeVela .cue format, served from an fs.FS.
var exampleDefs = fstest.MapFS{
	"components/worker.cue": {Data: []byte(`worker: {
	type: "component"
	attributes: workload: definition: {apiVersion: "apps/v1", kind: "Deployment"}
}
template: {
	output: {
		apiVersion: "apps/v1"
		kind:       "Deployment"
		spec: template: spec: containers: [{name: context.name, image: parameter.image}]
	}
	parameter: image: string
}
`)},
	"traits/scaler.cue": {Data: []byte(`scaler: {
	type: "trait"
	attributes: appliesToWorkloads: ["deployments.apps"]
}
template: {
	parameter: replicas: *1 | int
	patch: spec: replicas: parameter.replicas
}
`)},
}

func ExampleRenderApplication() {
	src, err := appfile.NewFSSource(exampleDefs, ".")
	if err != nil {
		panic(err)
	}
	app := &v1beta1.Application{}
	if err := yaml.Unmarshal([]byte(`
metadata: {name: shop, namespace: prod}
spec:
  components:
    - name: queue
      type: worker
      properties: {image: "redis:7"}
      traits: [{type: scaler, properties: {replicas: 3}}]
`), app); err != nil {
		panic(err)
	}
	// One Engine per process (or worker) keeps compiled templates cached.
	ctx := appfile.WithEngine(context.Background(), cuex.NewEngine())
	af, err := appfile.Parse(ctx, app, src)
	if err != nil {
		panic(err)
	}
	res, err := render.RenderApplication(ctx, af, render.Options{AppRevision: "shop-v2"})
	if err != nil {
		panic(err)
	}
	for _, r := range res {
		replicas, _, _ := unstructured.NestedFieldNoCopy(r.Object.Object, "spec", "replicas")
		fmt.Println(r.Object.GetKind(), r.Namespace+"/"+r.Object.GetName(), "replicas:", replicas,
			"revision:", r.Object.GetLabels()[v1beta1.LabelAppRevision])
	}
	// Output: Deployment prod/queue replicas: 3 revision: shop-v2
}
