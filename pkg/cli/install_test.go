package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	chart "github.com/oamflow/oamflow/charts/oamflow"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/definition"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

// writeRecorder records the writes made through a client.
type writeRecorder struct {
	mu     sync.Mutex
	writes []string
}

func (w *writeRecorder) note(verb string, obj client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, fmt.Sprintf("%s %T %s", verb, obj, client.ObjectKeyFromObject(obj)))
}

func (w *writeRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.writes
	w.writes = nil
	return out
}

// client wraps c so that every create, update, patch and delete is noted.
func (w *writeRecorder) client(c client.WithWatch) client.Client {
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			w.note("create", obj)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			w.note("update", obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			w.note("patch", obj)
			return c.Patch(ctx, obj, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			w.note("delete", obj)
			return c.Delete(ctx, obj, opts...)
		},
	})
}

// installEnv starts an API server with no CRDs (install brings them) and
// returns it, a client for it, and a recorder to wrap that client in.
func installEnv(t *testing.T) (*envtest.Environment, client.WithWatch, *writeRecorder) {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, apiextensionsv1.AddToScheme(s))
	require.NoError(t, v1beta1.AddToScheme(s))
	env := envtest.New(t, envtest.WithScheme(s))
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: s})
	require.NoError(t, err)
	return env, wc, &writeRecorder{}
}

// TestInstallTwice: `oamflow install` on a cluster where it already ran
// reports everything unchanged and writes nothing (it used to report
// definitions as updated and rewrote every CRD); a definition or CRD
// changed on the server is put back and reported as updated.
func TestInstallTwice(t *testing.T) {
	env, wc, rec := installEnv(t)
	c := rec.client(wc)
	ctx := context.Background()

	defs, err := builtinDefinitions()
	require.NoError(t, err)
	require.NotEmpty(t, defs)
	crdFiles, err := fs.ReadDir(chart.CRDs, "crds")
	require.NoError(t, err)
	crdCount := len(crdFiles)
	var out bytes.Buffer
	require.NoError(t, install(ctx, c, &out, false, time.Minute))
	assert.Equal(t, fmt.Sprintf("CRDs: %d created, 0 updated, 0 unchanged\nnamespace %s ready\nbuilt-in definitions in %s: %d created, 0 updated, 0 unchanged\n",
		crdCount, appfile.SystemNamespace, appfile.SystemNamespace, len(defs)), out.String())
	assert.Len(t, rec.take(), crdCount+1+len(defs), "every CRD, the namespace and every definition are created")

	cases := []struct {
		reason  string
		change  func(t *testing.T)
		want    string
		nWrites int
		// rewritten are the definitions whose resourceVersion install changes.
		rewritten []string
	}{
		{
			reason: "nothing changed: all unchanged, no write",
			want: fmt.Sprintf("CRDs: 0 created, 0 updated, %d unchanged\nnamespace %s ready\nbuilt-in definitions in %s: 0 created, 0 updated, %d unchanged\n",
				crdCount, appfile.SystemNamespace, appfile.SystemNamespace, len(defs)),
		},
		{
			reason: "a definition edited on the server is updated back, the rest unchanged",
			change: func(t *testing.T) {
				d := &v1beta1.ComponentDefinition{}
				require.NoError(t, wc.Get(ctx, client.ObjectKey{Namespace: appfile.SystemNamespace, Name: "webservice"}, d))
				d.Spec.Schematic.CUE.Template += "\n// edited\n"
				require.NoError(t, wc.Update(ctx, d))
			},
			want: fmt.Sprintf("CRDs: 0 created, 0 updated, %d unchanged\nnamespace %s ready\nbuilt-in definitions in %s: 0 created, 1 updated, %d unchanged\n",
				crdCount, appfile.SystemNamespace, appfile.SystemNamespace, len(defs)-1),
			nWrites:   1,
			rewritten: []string{"ComponentDefinition/webservice"},
		},
		{
			reason: "a CRD edited on the server is updated back",
			change: func(t *testing.T) {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				require.NoError(t, wc.Get(ctx, client.ObjectKey{Name: "applications.core.oam.dev"}, crd))
				crd.Spec.Names.ShortNames = append(crd.Spec.Names.ShortNames, "edited")
				require.NoError(t, wc.Update(ctx, crd))
			},
			want: fmt.Sprintf("CRDs: 0 created, 1 updated, %d unchanged\nnamespace %s ready\nbuilt-in definitions in %s: 0 created, 0 updated, %d unchanged\n",
				crdCount-1, appfile.SystemNamespace, appfile.SystemNamespace, len(defs)),
			nWrites: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			if tc.change != nil {
				tc.change(t)
			}
			before := definitionVersions(t, wc)
			var out bytes.Buffer
			require.NoError(t, install(ctx, c, &out, false, time.Minute))
			assert.Equal(t, tc.want, out.String())
			assert.Len(t, rec.take(), tc.nWrites)
			var rewritten []string
			for name, rv := range definitionVersions(t, wc) {
				if rv != before[name] {
					rewritten = append(rewritten, name)
				}
			}
			sort.Strings(rewritten)
			assert.Equal(t, tc.rewritten, rewritten, "definitions whose resourceVersion changed")
		})
	}

	t.Run("the command says the same", func(t *testing.T) {
		e := &cliEnv{env: env, c: env.Client, kubeconfig: writeKubeconfig(t, env.Config)}
		r := e.run("", "install")
		require.Equal(t, ExitOK, r.code, r.err)
		assert.Contains(t, r.out, fmt.Sprintf("built-in definitions in %s: 0 created, 0 updated, %d unchanged", appfile.SystemNamespace, len(defs)))
	})
}

// definitionVersions returns the resourceVersion of every definition in
// the system namespace, by "Kind/name".
func definitionVersions(t *testing.T, c client.Client) map[string]string {
	t.Helper()
	objs, err := listDefinitions(context.Background(), c, definition.Kinds, []string{appfile.SystemNamespace})
	require.NoError(t, err)
	out := map[string]string{}
	for _, o := range objs {
		out[definition.KindOf(o).CRDKind()+"/"+o.GetName()] = o.GetResourceVersion()
	}
	return out
}

// TestInstallOverOthersMetadata: the built-ins carry labels and
// annotations that other tools set — Helm's ownership metadata when the
// chart installed them (charts/oamflow/definitions, created as Helm does,
// field manager "helm"), a `kubectl label` — and `oamflow install`, run
// twice, reports every built-in unchanged each time, writes nothing, and
// leaves their resourceVersions and that metadata alone. (It used to
// compare the whole label and annotation maps: every built-in was
// reported updated and Helm's ownership metadata was stripped, so the
// next `helm upgrade` refused the objects.)
func TestInstallOverOthersMetadata(t *testing.T) {
	_, wc, rec := installEnv(t)
	c := rec.client(wc)
	ctx := context.Background()

	// helm install oamflow charts/oamflow -n oamflow-system: the CRDs and
	// namespace, then the chart's definitions with Helm's labels and
	// annotations.
	require.NoError(t, install(ctx, wc, io.Discard, true, time.Minute))
	files, err := filepath.Glob("../../charts/oamflow/definitions/*.yaml")
	require.NoError(t, err)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		objs, err := definition.DecodeYAML(f, data)
		require.NoError(t, err)
		for _, o := range objs {
			o.SetNamespace(appfile.SystemNamespace)
			o.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "Helm"})
			annos := o.GetAnnotations()
			if annos == nil {
				annos = map[string]string{}
			}
			annos["meta.helm.sh/release-name"] = "oamflow"
			annos["meta.helm.sh/release-namespace"] = appfile.SystemNamespace
			o.SetAnnotations(annos)
			require.NoError(t, wc.Create(ctx, o, client.FieldOwner("helm")))
		}
	}
	defs, err := builtinDefinitions()
	require.NoError(t, err)
	require.Len(t, definitionVersions(t, wc), len(defs), "the chart ships every built-in (go run ./hack/chartgen)")

	// kubectl label traitdefinition scaler -n oamflow-system team=platform
	scaler := &v1beta1.TraitDefinition{}
	require.NoError(t, wc.Get(ctx, client.ObjectKey{Namespace: appfile.SystemNamespace, Name: "scaler"}, scaler))
	scaler.Labels["team"] = "platform"
	require.NoError(t, wc.Update(ctx, scaler, client.FieldOwner("kubectl-label")))

	before := definitionVersions(t, wc)
	for run := 1; run <= 2; run++ {
		var out bytes.Buffer
		require.NoError(t, install(ctx, c, &out, false, time.Minute))
		assert.Contains(t, out.String(), fmt.Sprintf("built-in definitions in %s: 0 created, 0 updated, %d unchanged\n", appfile.SystemNamespace, len(defs)), "run %d", run)
		assert.Empty(t, rec.take(), "run %d writes nothing", run)
		assert.Equal(t, before, definitionVersions(t, wc), "run %d leaves every resourceVersion", run)
	}
	require.NoError(t, wc.Get(ctx, client.ObjectKey{Namespace: appfile.SystemNamespace, Name: "scaler"}, scaler))
	assert.Equal(t, map[string]string{"app.kubernetes.io/managed-by": "Helm", "team": "platform"}, scaler.Labels)
	assert.Equal(t, "oamflow", scaler.Annotations["meta.helm.sh/release-name"])

	// A built-in changed on the server is put back; the others' metadata stays.
	scaler.Spec.Schematic.CUE.Template += "\n// edited\n"
	require.NoError(t, wc.Update(ctx, scaler))
	var out bytes.Buffer
	require.NoError(t, install(ctx, c, &out, false, time.Minute))
	assert.Contains(t, out.String(), fmt.Sprintf("built-in definitions in %s: 0 created, 1 updated, %d unchanged\n", appfile.SystemNamespace, len(defs)-1))
	assert.Equal(t, []string{"update *v1beta1.TraitDefinition oamflow-system/scaler"}, rec.take())
	require.NoError(t, wc.Get(ctx, client.ObjectKey{Namespace: appfile.SystemNamespace, Name: "scaler"}, scaler))
	assert.NotContains(t, scaler.Spec.Schematic.CUE.Template, "// edited")
	assert.Equal(t, map[string]string{"app.kubernetes.io/managed-by": "Helm", "team": "platform"}, scaler.Labels)
	assert.Equal(t, appfile.SystemNamespace, scaler.Annotations["meta.helm.sh/release-namespace"])
}
