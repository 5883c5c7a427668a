package revision

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
)

type appMod func(*v1beta1.Application)

func newApp(mods ...appMod) *v1beta1.Application {
	app := &v1beta1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default"},
		Spec: v1beta1.ApplicationSpec{Components: []common.ApplicationComponent{{
			Name: "web", Type: "webservice",
			Properties: &runtime.RawExtension{Raw: []byte(`{"image":"nginx","port":80}`)},
		}}},
	}
	for _, m := range mods {
		m(app)
	}
	return app
}

func withProps(raw string) appMod {
	return func(a *v1beta1.Application) {
		a.Spec.Components[0].Properties = &runtime.RawExtension{Raw: []byte(raw)}
	}
}

func withAnno(k, v string) appMod {
	return func(a *v1beta1.Application) {
		if a.Annotations == nil {
			a.Annotations = map[string]string{}
		}
		a.Annotations[k] = v
	}
}

func revOf(t *testing.T, app *v1beta1.Application, n int64) *v1beta1.ApplicationRevision {
	t.Helper()
	h, err := Hash(app, Definitions{}, nil)
	require.NoError(t, err)
	return Snapshot(app, Definitions{}, n, h)
}

func TestAppHash(t *testing.T) {
	base, err := AppHash(newApp())
	require.NoError(t, err)
	require.Len(t, base, 16)
	cases := []struct {
		reason string
		app    *v1beta1.Application
		same   bool
	}{
		{"property formatting and key order do not matter", newApp(withProps(`{ "port": 80,  "image": "nginx" }`)), true},
		{"the restart annotation is operational", newApp(withAnno(v1beta1.AnnoRestartWorkflow, "true")), true},
		{"kubectl's last-applied annotation is ignored", newApp(withAnno("kubectl.kubernetes.io/last-applied-configuration", "{}")), true},
		{"a property value change is a change", newApp(withProps(`{"image":"nginx:2","port":80}`)), false},
		{"a big integer keeps its exact value", newApp(withProps(`{"image":"nginx","port":80,"n":12345678901234567891}`)), false},
		{"another annotation is a change", newApp(withAnno("team", "a")), false},
		{"a label is a change", newApp(func(a *v1beta1.Application) { a.Labels = map[string]string{"x": "y"} }), false},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			h, err := AppHash(tc.app)
			require.NoError(t, err)
			assert.Equal(t, tc.same, h == base)
		})
	}
}

func TestHashCoversDefinitions(t *testing.T) {
	app := newApp()
	var d1, d2 Definitions
	require.NoError(t, d1.Add("webservice", &v1beta1.ComponentDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "webservice", ResourceVersion: "1"},
		Spec:       v1beta1.ComponentDefinitionSpec{Schematic: &common.Schematic{CUE: &common.CUE{Template: "output: {}"}}},
	}))
	require.NoError(t, d2.Add("webservice", &v1beta1.ComponentDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "webservice", ResourceVersion: "2"},
		Spec:       v1beta1.ComponentDefinitionSpec{Schematic: &common.Schematic{CUE: &common.CUE{Template: "output: {}"}}},
	}))
	h1, err := Hash(app, d1, nil)
	require.NoError(t, err)
	h2, err := Hash(app, d2, nil)
	require.NoError(t, err)
	assert.Equal(t, h1, h2, "server-set metadata must not change the hash")
	assert.Empty(t, d1.Components["webservice"].ResourceVersion, "snapshots keep no server-set metadata")

	d2.Components["webservice"].Spec.Schematic.CUE.Template = "output: {kind: \"Deployment\"}"
	h3, err := Hash(app, d2, nil)
	require.NoError(t, err)
	assert.NotEqual(t, h1, h3, "a definition edit changes the hash")
}

func TestNeedsLive(t *testing.T) {
	pinned := newApp(withAnno(v1beta1.AnnoPublishVersion, "alpha"))
	cases := []struct {
		reason  string
		app     *v1beta1.Application
		latest  *v1beta1.ApplicationRevision
		restart bool
		live    bool
		why     string
	}{
		{"no revision yet", newApp(), nil, false, true, ReasonFirstRevision},
		{"unchanged app renders from its snapshot", newApp(), revOf(t, newApp(), 1), false, false, ReasonUnchanged},
		{"a spec edit needs the live definitions", newApp(withProps(`{"image":"nginx:2"}`)), revOf(t, newApp(), 1), false, true, ReasonApplicationChanged},
		{"autoUpdate follows definition changes", newApp(withAnno(v1beta1.AnnoAutoUpdate, "true")), revOf(t, newApp(withAnno(v1beta1.AnnoAutoUpdate, "true")), 1), false, true, ReasonAutoUpdate},
		{"restart re-reads definitions", newApp(), revOf(t, newApp(), 1), true, true, ReasonRestart},
		{"the publishVersion pin wins over spec edits", func() *v1beta1.Application {
			a := pinned.DeepCopy()
			a.Spec.Components[0].Properties = &runtime.RawExtension{Raw: []byte(`{"image":"x"}`)}
			return a
		}(), revOf(t, pinned, 1), false, false, ReasonPublishVersionPinned},
		{"the publishVersion pin wins over autoUpdate", func() *v1beta1.Application {
			a := pinned.DeepCopy()
			a.Annotations[v1beta1.AnnoAutoUpdate] = "true"
			return a
		}(), revOf(t, pinned, 1), false, false, ReasonPublishVersionPinned},
		{"a new publishVersion deploys", newApp(withAnno(v1beta1.AnnoPublishVersion, "beta")), revOf(t, pinned, 1), false, true, ReasonPublishVersionChanged},
		{"restart overrides the pin", pinned, revOf(t, pinned, 1), true, true, ReasonRestart},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			live, why, err := NeedsLive(tc.app, tc.latest, tc.restart)
			require.NoError(t, err)
			assert.Equal(t, tc.live, live)
			assert.Equal(t, tc.why, why)
		})
	}
}

func TestNumber(t *testing.T) {
	cases := []struct {
		reason, name string
		want         int64
		err          bool
	}{
		{"plain", "shop-v3", 3, false},
		{"app names may contain -v", "shop-v3-v12", 0, true},
		{"zero is not a revision", "shop-v0", 0, true},
		{"another app", "cart-v1", 0, true},
		{"not a number", "shop-vx", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			n, err := Number("shop", tc.name)
			if tc.err {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "shop-v<N>")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, n)
		})
	}
	n, err := Number("shop-v3", "shop-v3-v12")
	require.NoError(t, err)
	assert.Equal(t, int64(12), n)
}

func revs(names ...string) []v1beta1.ApplicationRevision {
	out := make([]v1beta1.ApplicationRevision, len(names))
	for i, n := range names {
		out[i].Name = n
	}
	return out
}

func TestSortedAndPrune(t *testing.T) {
	sorted := Sorted("shop", revs("shop-v10", "shop-v2", "other", "shop-v1"))
	var names []string
	for _, r := range sorted {
		names = append(names, r.Name)
	}
	assert.Equal(t, []string{"shop-v1", "shop-v2", "shop-v10"}, names)

	cases := []struct {
		reason string
		revs   []string
		limit  int
		keep   []string
		want   []string
	}{
		{"within the limit", []string{"a-v1", "a-v2"}, 3, nil, nil},
		{"oldest go first", []string{"a-v1", "a-v2", "a-v3", "a-v4"}, 2, nil, []string{"a-v1", "a-v2"}},
		{"kept revisions survive", []string{"a-v1", "a-v2", "a-v3", "a-v4"}, 2, []string{"a-v1"}, []string{"a-v2", "a-v3"}},
		{"a limit below one keeps one", []string{"a-v1", "a-v2"}, 0, nil, []string{"a-v1"}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, PruneCandidates(revs(tc.revs...), tc.limit, tc.keep...))
		})
	}
}

func TestLastSucceeded(t *testing.T) {
	rs := revs("a-v1", "a-v2", "a-v3", "a-v4")
	rs[0].Status.Succeeded = true
	rs[1].Status.Succeeded = true
	rs[3].Status.Succeeded = true
	cases := []struct {
		reason, current, want string
	}{
		{"skips failed revisions", "a-v4", "a-v2"},
		{"the previous one", "a-v2", "a-v1"},
		{"nothing before the first", "a-v1", ""},
		{"unknown current means the newest", "a-v9", "a-v4"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			got := LastSucceeded(rs, tc.current)
			if tc.want == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tc.want, got.Name)
		})
	}
}

type mapSource map[string]*appfile.Definition

func (m mapSource) Get(_ context.Context, kind appfile.DefinitionKind, name string) (*appfile.Definition, error) {
	if d, ok := m[string(kind)+"/"+name]; ok {
		return d, nil
	}
	return nil, appfile.ErrDefinitionNotFound
}

func TestRecorderAndSource(t *testing.T) {
	comp := &v1beta1.ComponentDefinition{ObjectMeta: metav1.ObjectMeta{Name: "webservice", Namespace: "oamflow-system", UID: "u1"},
		Spec: v1beta1.ComponentDefinitionSpec{Schematic: &common.Schematic{CUE: &common.CUE{Template: "output: {}"}}}}
	step := &v1beta1.WorkflowStepDefinition{ObjectMeta: metav1.ObjectMeta{Name: "apply-component"},
		Spec: v1beta1.WorkflowStepDefinitionSpec{Schematic: &common.Schematic{CUE: &common.CUE{Template: "parameter: {}"}}}}
	src := mapSource{
		"component/webservice@v2":       {Kind: appfile.KindComponent, Name: "webservice", Object: comp},
		"workflow-step/apply-component": {Kind: appfile.KindWorkflowStep, Name: "apply-component", Object: step},
	}
	rec := NewRecorder(src)
	ctx := context.Background()
	_, err := rec.Get(ctx, appfile.KindComponent, "webservice@v2")
	require.NoError(t, err)
	_, err = rec.Get(ctx, appfile.KindWorkflowStep, "apply-component")
	require.NoError(t, err)
	_, err = rec.Get(ctx, appfile.KindTrait, "scaler")
	require.ErrorIs(t, err, appfile.ErrDefinitionNotFound)

	defs, err := rec.Definitions()
	require.NoError(t, err)
	require.Contains(t, defs.Components, "webservice@v2")
	assert.Empty(t, defs.Components["webservice@v2"].UID)
	require.Contains(t, defs.WorkflowSteps, "apply-component")

	app := newApp()
	h, err := Hash(app, defs, nil)
	require.NoError(t, err)
	rev := Snapshot(app, defs, 3, h)
	assert.Equal(t, "shop-v3", rev.Name)
	assert.Equal(t, h, rev.Labels[v1beta1.LabelAppRevisionHash])

	snap := Source(rev, nil)
	d, err := snap.Get(ctx, appfile.KindComponent, "webservice@v2")
	require.NoError(t, err)
	assert.Equal(t, int64(2), d.Revision)
	assert.Equal(t, "output: {}", d.Template())
	_, err = snap.Get(ctx, appfile.KindTrait, "scaler")
	require.ErrorIs(t, err, appfile.ErrDefinitionNotFound)
	assert.Contains(t, err.Error(), "revision default/shop-v3")

	// KubeVela's revisions leave out its built-in steps and policies:
	// served by the fallback, never components or traits.
	kv := Snapshot(app, Definitions{Components: defs.Components}, 1, h)
	kvSrc := Source(kv, src)
	d, err = kvSrc.Get(ctx, appfile.KindWorkflowStep, "apply-component")
	require.NoError(t, err, "a step the revision lacks comes from the fallback")
	assert.Equal(t, "parameter: {}", d.Template())
	_, err = Source(kv, nil).Get(ctx, appfile.KindWorkflowStep, "apply-component")
	require.ErrorIs(t, err, appfile.ErrDefinitionNotFound, "without a fallback")
	_, err = kvSrc.Get(ctx, appfile.KindTrait, "scaler")
	require.ErrorIs(t, err, appfile.ErrDefinitionNotFound, "components and traits come only from the revision")
}
