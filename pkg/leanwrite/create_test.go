package leanwrite

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

var env *envtest.Environment

func TestMain(m *testing.M) {
	os.Exit(envtest.Main(m, &env, envtest.WithCRDs("charts/oamflow/crds")))
}

// exchange is one request sent and the body of its answer.
type exchange struct {
	req    *http.Request
	answer []byte
}

// recorder keeps the writes a client sent and their answers.
type recorder struct {
	mu   sync.Mutex
	sent []exchange
	next http.RoundTripper
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil || req.Method == http.MethodGet {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	r.mu.Lock()
	r.sent = append(r.sent, exchange{req: req, answer: body})
	r.mu.Unlock()
	return resp, nil
}

func (r *recorder) take() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.sent
	r.sent = nil
	return out
}

func TestCreating(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec })
	hc, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	plain, err := client.New(cfg, client.Options{Scheme: env.Scheme, HTTPClient: hc})
	require.NoError(t, err)
	group := v1beta1.GroupVersion.Group
	c := Creating(plain, cfg, hc, schema.GroupKind{Group: group, Kind: "ApplicationRevision"}, schema.GroupKind{Group: group, Kind: "ResourceTracker"})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "leanwrite-"}}
	require.NoError(t, env.Client.Create(ctx, ns))

	revision := func(name string) *v1beta1.ApplicationRevision {
		return &v1beta1.ApplicationRevision{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name, Labels: map[string]string{v1beta1.LabelAppName: "app"}},
			Spec: v1beta1.ApplicationRevisionSpec{Application: v1beta1.Application{
				ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns.Name},
				Spec:       v1beta1.ApplicationSpec{Components: []common.ApplicationComponent{{Name: "web", Type: "webservice"}}},
			}},
		}
	}
	cases := []struct {
		reason string
		obj    func() client.Object
		opts   []client.CreateOption
		// lean: the answer is asked for and comes as metadata only.
		lean bool
		// stored: a Get finds it afterwards; wantErr: the create fails so.
		stored  bool
		wantErr func(error) bool
	}{
		{
			reason: "a revision is created and its answer is its metadata only",
			obj:    func() client.Object { return revision("app-v1") },
			lean:   true,
			stored: true,
		},
		{
			reason: "a cluster-scoped tracker with a generated name gets the name the API server chose",
			obj: func() client.Object {
				return &v1beta1.ResourceTracker{ObjectMeta: metav1.ObjectMeta{GenerateName: "app-v1-"},
					Spec: v1beta1.ResourceTrackerSpec{Type: v1beta1.ResourceTrackerTypeVersioned, ApplicationGeneration: 1}}
			},
			lean:   true,
			stored: true,
		},
		{
			reason:  "a name taken is refused as AlreadyExists, as the plain client's create is",
			obj:     func() client.Object { return revision("app-v1") },
			lean:    true,
			stored:  true,
			wantErr: apierrors.IsAlreadyExists,
		},
		{
			reason: "a dry run stores nothing",
			obj:    func() client.Object { return revision("app-v2") },
			opts:   []client.CreateOption{client.DryRunAll},
			lean:   true,
		},
		{
			reason: "a kind not named goes through the plain client, answer and all",
			obj: func() client.Object {
				return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns.Name}, Data: map[string]string{"k": "v"}}
			},
			stored: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			obj := tc.obj()
			rec.take()
			err := c.Create(ctx, obj, tc.opts...)
			sent := rec.take()
			require.Len(t, sent, 1, tc.reason)
			require.Equal(t, http.MethodPost, sent[0].req.Method, tc.reason)
			asked := sent[0].req.Header.Get("Accept")
			if tc.lean {
				require.Contains(t, asked, "as=PartialObjectMetadata", tc.reason)
			} else {
				require.NotContains(t, asked, "as=PartialObjectMetadata", tc.reason)
			}
			if tc.wantErr != nil {
				require.True(t, tc.wantErr(err), "%s: %v", tc.reason, err)
				return
			}
			require.NoError(t, err, tc.reason)
			require.Equal(t, tc.lean, bytes.Contains(sent[0].answer, []byte(`"kind":"PartialObjectMetadata"`)), "%s: %s", tc.reason, sent[0].answer)
			if tc.lean {
				require.NotContains(t, string(sent[0].answer), `"spec"`, "%s: the answer carries no spec", tc.reason)
			}
			require.NotEmpty(t, obj.GetName(), tc.reason)
			got := tc.obj()
			err = env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got)
			if !tc.stored {
				require.True(t, apierrors.IsNotFound(err), "%s: %v", tc.reason, err)
				return
			}
			require.NoError(t, err, tc.reason)
			// The object written holds what a read of it returns: its
			// metadata from the answer, the rest as sent (kept).
			got.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
			require.Equal(t, got, obj, tc.reason)
		})
	}
}

// The API server warns creating a revision (its embedded metadata carry
// creationTimestamp: null, which the schema drops). Creating hands
// warnings to the config's handler; without one, it logs them as the
// controller-runtime client does (each once), never through client-go's
// process-wide default, which logs every one.
func TestCreatingWarnings(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "leanwrite-warn-"}}
	require.NoError(t, env.Client.Create(ctx, ns))
	kind := schema.GroupKind{Group: v1beta1.GroupVersion.Group, Kind: "ApplicationRevision"}
	creating := func(t *testing.T, cfg *rest.Config) client.Client {
		hc, err := rest.HTTPClientFor(cfg)
		require.NoError(t, err)
		plain, err := client.New(cfg, client.Options{Scheme: env.Scheme, HTTPClient: hc})
		require.NoError(t, err)
		return Creating(plain, cfg, hc, kind)
	}
	revision := func(name string) *v1beta1.ApplicationRevision {
		return &v1beta1.ApplicationRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name},
			Spec: v1beta1.ApplicationRevisionSpec{Application: v1beta1.Application{
				ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns.Name},
				Spec:       v1beta1.ApplicationSpec{Components: []common.ApplicationComponent{{Name: "web", Type: "webservice"}}},
			}}}
	}
	defaults := &envtest.Warnings{}
	rest.SetDefaultWarningHandler(defaults)
	defer rest.SetDefaultWarningHandler(rest.WarningLogger{})

	given := &envtest.Warnings{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = given
	require.NoError(t, creating(t, cfg).Create(ctx, revision("given-v1")))
	require.NotEmpty(t, given.Seen(), "the config's handler gets the warnings")

	cfg = rest.CopyConfig(env.Config)
	cfg.WarningHandler = nil
	c := creating(t, cfg)
	require.NoError(t, c.Create(ctx, revision("logged-v1")))
	require.NoError(t, c.Create(ctx, revision("logged-v2")))
	require.Empty(t, defaults.Seen(), "client-go's default handler got warnings")
}
