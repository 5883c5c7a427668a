package cli

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
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

// TestInstallTwice: `oamflow install` on a cluster where it already ran
// reports everything unchanged and writes nothing (it used to report
// definitions as updated and rewrote every CRD); a definition or CRD
// changed on the server is put back and reported as updated.
func TestInstallTwice(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, apiextensionsv1.AddToScheme(s))
	require.NoError(t, v1beta1.AddToScheme(s))
	// No CRDs: install brings them.
	env := envtest.New(t, envtest.WithScheme(s))
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: s})
	require.NoError(t, err)
	rec := &writeRecorder{}
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
			nWrites: 1,
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
			var out bytes.Buffer
			require.NoError(t, install(ctx, c, &out, false, time.Minute))
			assert.Equal(t, tc.want, out.String())
			assert.Len(t, rec.take(), tc.nWrites)
		})
	}

	t.Run("the command says the same", func(t *testing.T) {
		e := &cliEnv{env: env, c: env.Client, kubeconfig: writeKubeconfig(t, env.Config)}
		r := e.run("", "install")
		require.Equal(t, ExitOK, r.code, r.err)
		assert.Contains(t, r.out, fmt.Sprintf("built-in definitions in %s: 0 created, 0 updated, %d unchanged", appfile.SystemNamespace, len(defs)))
	})
}
