package envtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/pkg/localcluster"
)

var env *Environment

func TestMain(m *testing.M) {
	os.Exit(Main(m, &env, WithCRDs("pkg/testing/envtest/testdata/crds")))
}

func TestSmokeCoreObjects(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "envtest-smoke"}}
	require.NoError(t, env.Client.Create(ctx, ns))
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns.Name},
		Data:       map[string]string{"k": "v"},
	}
	require.NoError(t, env.Client.Create(ctx, cm))

	var got corev1.ConfigMap
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got))
	assert.Equal(t, "v", got.Data["k"])
	assert.NotEmpty(t, got.UID, "stored by a real kube-apiserver")
}

func TestSmokeCRDsInstalled(t *testing.T) {
	ctx := context.Background()
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(schema.GroupVersionKind{Group: "test.oamflow.dev", Version: "v1", Kind: "Widget"})
	w.SetNamespace("default")
	w.SetName("w")
	w.Object["spec"] = map[string]any{"size": int64(3)}
	require.NoError(t, env.Client.Create(ctx, w), "the CRD from WithCRDs is served")

	bad := w.DeepCopy()
	bad.SetName("bad")
	bad.SetResourceVersion("")
	bad.Object["spec"] = map[string]any{"size": int64(0)}
	err := env.Client.Create(ctx, bad)
	assert.True(t, apierrors.IsInvalid(err), "the CRD's schema is enforced: %v", err)
}

func TestStartErrors(t *testing.T) {
	cases := map[string]struct {
		reason string
		opts   []Option
		want   string
	}{
		"MissingBinaries": {
			reason: "says which binaries and how to build them",
			opts:   []Option{WithBinDir(t.TempDir())},
			want:   "`" + localcluster.BuildCommand + "`",
		},
		"MissingCRDDir": {
			reason: "a CRD directory that does not exist",
			opts:   []Option{WithCRDs(filepath.Join(t.TempDir(), "nope"))},
			want:   "CRD directory",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, err := Start(tc.opts...)
			require.Error(t, err, tc.reason)
			assert.Nil(t, e)
			assert.Contains(t, err.Error(), tc.want, tc.reason)
		})
	}
}
