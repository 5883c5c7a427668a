package observed

import (
	"context"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

var env *envtest.Environment

func TestMain(m *testing.M) {
	os.Exit(envtest.Main(m, &env, envtest.WithCRDs("charts/oamflow/crds")))
}

type countingTransport struct {
	next  http.RoundTripper
	count *atomic.Int64
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.count.Add(1)
	return t.next.RoundTrip(r)
}

// TestUnstructuredReadsFromTypedInformers: an unstructured read served by
// the cache (from the kind's typed informer) is the object the API server
// returns, managedFields' fieldsV1 aside, and makes no request.
func TestUnstructuredReadsFromTypedInformers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := New(env.Config, env.Scheme, env.Client.RESTMapper(), Options{})
	require.NoError(t, err)
	go func() { _ = c.Start(ctx) }()

	var requests atomic.Int64
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, count: &requests} })
	direct, err := client.New(cfg, client.Options{Scheme: env.Scheme, Mapper: env.Client.RESTMapper()})
	require.NoError(t, err)
	cached := c.Client(direct)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "observed-"}}
	require.NoError(t, env.Client.Create(ctx, ns))
	owned := map[string]string{v1beta1.LabelAppName: "app", "app.oam.dev/component": "web"}
	objs := []client.Object{
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns.Name, Labels: owned, Annotations: map[string]string{"a": "b"}},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: owned},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: owned},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name: "web", Image: "nginx:1.27",
						Ports: []corev1.ContainerPort{{ContainerPort: 80}},
						Env:   []corev1.EnvVar{{Name: "EMPTY"}},
					}}},
				},
			},
		},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns.Name, Labels: owned},
			Spec:       corev1.ServiceSpec{Selector: owned, Ports: []corev1.ServicePort{{Port: 80}}},
		},
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns.Name, Labels: owned},
			Data:       map[string]string{"k": "v", "empty": ""},
		},
	}
	for _, o := range objs {
		require.NoError(t, env.Client.Create(ctx, o))
	}

	cases := []struct {
		reason string
		gvk    schema.GroupVersionKind
	}{
		{reason: "a Deployment, defaulted by the API server, with an empty env value", gvk: appsv1.SchemeGroupVersion.WithKind("Deployment")},
		{reason: "a Service, with its cluster IP allocated", gvk: corev1.SchemeGroupVersion.WithKind("Service")},
		{reason: "a ConfigMap with an empty value", gvk: corev1.SchemeGroupVersion.WithKind("ConfigMap")},
	}
	for _, tc := range cases {
		t.Run(tc.gvk.Kind, func(t *testing.T) {
			want := &unstructured.Unstructured{}
			want.SetGroupVersionKind(tc.gvk)
			require.NoError(t, direct.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "web"}, want), tc.reason)
			_, err := Slim(want)
			require.NoError(t, err)

			got := &unstructured.Unstructured{}
			require.Eventually(t, func() bool {
				got = &unstructured.Unstructured{}
				got.SetGroupVersionKind(tc.gvk)
				before := requests.Load()
				err := cached.Get(WithCachedReads(ctx), client.ObjectKey{Namespace: ns.Name, Name: "web"}, got)
				return err == nil && requests.Load() == before
			}, 30*time.Second, 100*time.Millisecond, "%s: the cache never answered", tc.reason)
			require.Equal(t, want.Object, got.Object, tc.reason)

			wantList := &unstructured.UnstructuredList{}
			wantList.SetGroupVersionKind(tc.gvk.GroupVersion().WithKind(tc.gvk.Kind + "List"))
			sel := client.MatchingLabels{v1beta1.LabelAppName: "app"}
			require.NoError(t, direct.List(ctx, wantList, client.InNamespace(ns.Name), sel), tc.reason)
			gotList := &unstructured.UnstructuredList{}
			gotList.SetGroupVersionKind(wantList.GroupVersionKind())
			before := requests.Load()
			require.NoError(t, cached.List(WithCachedReads(ctx), gotList, client.InNamespace(ns.Name), sel), tc.reason)
			require.Equal(t, before, requests.Load(), "%s: the list was not served by the cache", tc.reason)
			require.Len(t, gotList.Items, len(wantList.Items), tc.reason)
			for i := range wantList.Items {
				_, err := Slim(&wantList.Items[i])
				require.NoError(t, err)
				require.Equal(t, wantList.Items[i].Object, gotList.Items[i].Object, tc.reason)
			}
			require.Equal(t, wantList.GroupVersionKind(), gotList.GroupVersionKind(), tc.reason)
		})
	}
}
