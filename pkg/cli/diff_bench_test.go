package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

// BenchmarkDiff20Components3Clusters runs `oamflow diff` in-process on an
// Application of 20 webservice components deployed to the hub and two
// members (60 objects, three real API servers): "create" with nothing
// live (every object a server-side dry run), "in-sync" once applied
// (objects read and found in sync, no dry run), "update" with a new image
// everywhere (60 dry runs and diffs). objects/s is whole-command
// throughput.
func BenchmarkDiff20Components3Clusters(b *testing.B) {
	ctx := context.Background()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		b.Fatal(err)
	}
	if err := v1beta1.AddToScheme(s); err != nil {
		b.Fatal(err)
	}
	hub := envtest.New(b, envtest.WithCRDs("charts/oamflow/crds"), envtest.WithScheme(s))
	members := map[string]*envtest.Environment{"member-1": envtest.New(b, envtest.WithScheme(s)), "member-2": envtest.New(b, envtest.WithScheme(s))}
	if err := hub.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: multicluster.DefaultSystemNamespace}}); err != nil {
		b.Fatal(err)
	}
	for name, m := range members {
		sec, err := multicluster.NewClusterSecret(multicluster.DefaultSystemNamespace, name, multicluster.Credentials{
			Endpoint: m.Config.Host, CAData: m.Config.CAData, CertData: m.Config.CertData, KeyData: m.Config.KeyData}, nil, multicluster.ClientSettings{QPS: 500, Burst: 1000})
		if err != nil {
			b.Fatal(err)
		}
		if err := hub.Client.Create(ctx, sec); err != nil {
			b.Fatal(err)
		}
	}
	kubeconfig := writeKubeconfig(b, hub.Config)
	const n = 20
	app := func(image string) string {
		var doc strings.Builder
		doc.WriteString("apiVersion: core.oam.dev/v1beta1\nkind: Application\nmetadata: {name: big, namespace: default}\nspec:\n  components:\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&doc, "    - {name: web-%d, type: webservice, properties: {image: '%s'}}\n", i, image)
		}
		doc.WriteString("  policies:\n    - {name: all, type: topology, properties: {clusters: [local, member-1, member-2]}}\n")
		return doc.String()
	}
	dir := b.TempDir()
	run := func(b *testing.B, file string, want int) {
		b.Helper()
		for i := 0; i < b.N; i++ {
			var out, errOut bytes.Buffer
			root := NewRootCommand(&out, &errOut)
			root.SetArgs([]string{"diff", "-f", file, "--kubeconfig", kubeconfig})
			err := root.ExecuteContext(ctx)
			code := ExitOK
			var ee *ExitError
			if errors.As(err, &ee) {
				code = ee.Code
			} else if err != nil {
				b.Fatal(err, errOut.String())
			}
			if code != want {
				b.Fatalf("exit %d, want %d: %s%s", code, want, out.String(), errOut.String())
			}
		}
		b.ReportMetric(float64(3*n*b.N)/b.Elapsed().Seconds(), "objects/s")
	}
	v1 := writeFile(b, dir, "v1.yaml", app("nginx:1.27"))
	b.Run("create", func(b *testing.B) { run(b, v1, ExitDiffChanges) })

	// Apply v1 as the controller would.
	o := &diffOptions{global: &GlobalOptions{Kubeconfig: kubeconfig}, files: []string{v1}, budgets: appfile.DefaultBudgets()}
	env, di, err := o.load(ctx, nil, &strings.Builder{})
	if err != nil {
		b.Fatal(err)
	}
	k, err := resourcekeeper.New(di.app, di.revision, resourcekeeper.Options{Clients: env.reg, Trackers: env.hub})
	if err != nil {
		b.Fatal(err)
	}
	for _, cl := range di.clusters {
		var objs []*unstructured.Unstructured
		for _, it := range di.items[cl] {
			objs = append(objs, it.obj)
		}
		if err := k.Apply(ctx, cl, objs); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("in-sync", func(b *testing.B) { run(b, v1, ExitDiffNone) })
	v2 := writeFile(b, dir, "v2.yaml", app("nginx:1.28"))
	b.Run("update", func(b *testing.B) { run(b, v2, ExitDiffChanges) })
}
