package resourcekeeper

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/helm"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/multicluster"
)

// chartRoot is charts/testdata: the bundled-chart root of these tests.
func chartRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", "charts", "testdata"))
	require.NoError(t, err)
	return root
}

// helmClient returns a Helm client whose every request to the API server
// is counted by the fixture's counter; releases are stored in Secrets.
func (f *fixture) helmClient() *helm.Client {
	cfg := countingConfig(f.counter)
	return helm.NewClient(helm.NewFactory(helm.SingleCluster(cfg)), helm.NewFetcher(f.c, helm.WithChartRoot(chartRoot(f.t))), f.c)
}

// release reads the newest revision of release name in the fixture's
// namespace with an uncounted client.
func (f *fixture) release(name string) helmspec.Health {
	f.t.Helper()
	c := helm.NewClient(helm.NewFactory(helm.SingleCluster(env.Config)), helm.NewFetcher(env.Client), env.Client)
	h, err := c.StatusRelease(f.t.Context(), "", f.ns, name, nil)
	require.NoError(f.t, err)
	return h
}

// helmKeeper builds a Keeper for app at revision rev whose HelmRelease
// objects go to releases.
func (f *fixture) helmKeeper(app *v1beta1.Application, rev int64, releases ReleaseHandler, policies ...Policies) *Keeper {
	f.t.Helper()
	var p Policies
	if len(policies) > 0 {
		p = policies[0]
	}
	k, err := New(app, rev, Options{Clients: multicluster.HubOnly{Hub: f.c}, Policies: p, Releases: releases})
	require.NoError(f.t, err)
	return k
}

// helmRelease is a HelmRelease as the helm component definition renders it
// for charts/testdata/simple, release named after the component.
func helmRelease(app *v1beta1.Application, rev int64, component string, values map[string]any, mods ...objMod) *unstructured.Unstructured {
	spec := map[string]any{
		"chart":   map[string]any{"source": "simple", "version": "latest"},
		"release": map[string]any{"name": component, "namespace": app.Namespace},
	}
	if values != nil {
		spec["values"] = runtime.DeepCopyJSONValue(values)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": helmspec.APIVersion,
		"kind":       helmspec.Kind,
		"metadata":   map[string]any{"name": component, "namespace": app.Namespace},
		"spec":       spec,
	}}
	return stamp(u, app, rev, component, append([]objMod{withLabel(v1beta1.LabelWorkloadType, "helm")}, mods...))
}

func TestHelmReleaseLifecycle(t *testing.T) {
	f := newFixture(t)
	app := f.app("store")
	releases := NewHelmReleases(f.helmClient())

	// The release is tracked before it is installed.
	var trackedFirst bool
	first := ReleaseHandlerFns{
		EnsureFn: func(ctx context.Context, cluster, appNamespace string, obj *unstructured.Unstructured) (ReleaseResult, error) {
			rt := f.tracker(VersionedTrackerName("store", f.ns, 1))
			trackedFirst = rt != nil && len(rt.Spec.ManagedResources) == 1 && isReleaseEntry(rt.Spec.ManagedResources[0])
			return releases.Ensure(ctx, cluster, appNamespace, obj)
		},
	}
	k1 := f.helmKeeper(app, 1, first)
	rel := helmRelease(app, 1, "web", map[string]any{"message": "hi"})
	require.NoError(t, k1.Apply(f.t.Context(), "", objs(rel)))
	assert.True(t, trackedFirst, "the tracker entry is written before the install")

	h := f.release("web")
	assert.Equal(t, 1, h.Release.Revision)
	assert.Equal(t, "deployed", h.Release.Status)
	cm := f.get("v1", "ConfigMap", "web-config")
	require.NotNil(t, cm, "the chart's objects are installed by Helm")
	assert.Equal(t, "hi", cm.Object["data"].(map[string]any)["message"])

	rt := f.tracker(VersionedTrackerName("store", f.ns, 1))
	require.NotNil(t, rt)
	require.Len(t, rt.Spec.ManagedResources, 1)
	e := rt.Spec.ManagedResources[0]
	assert.Equal(t, common.ClusterObjectReference{APIVersion: helmspec.APIVersion, Kind: helmspec.Kind, Namespace: f.ns, Name: "web"}, e.ClusterObjectReference)
	assert.Equal(t, "web", e.Component)
	require.NotNil(t, e.Data)

	t.Run("applying the same values again makes no Helm revision and no write", func(t *testing.T) {
		k := f.helmKeeper(app, 1, releases)
		f.counter.reset()
		require.NoError(t, k.Apply(f.t.Context(), "", objs(helmRelease(app, 1, "web", map[string]any{"message": "hi"}))))
		assert.Zero(t, f.counter.writes.Load(), "writes to the API server")
		assert.Equal(t, 1, f.release("web").Release.Revision)
		assert.Len(t, f.helmSecrets("web"), 1, "one release record in Helm's Secret storage")
	})

	t.Run("state keep of an unchanged release makes no write", func(t *testing.T) {
		k := f.helmKeeper(app, 1, releases)
		f.counter.reset()
		require.NoError(t, k.StateKeep(f.t.Context()))
		assert.Zero(t, f.counter.writes.Load(), "writes to the API server")
		assert.NotZero(t, f.counter.reads.Load(), "the release was read")
		assert.Equal(t, 1, f.release("web").Release.Revision)
	})

	t.Run("state keep reinstalls a release uninstalled behind our back", func(t *testing.T) {
		_, err := f.helmClient().Uninstall(f.t.Context(), "", f.ns, "web", helmspec.Options{})
		require.NoError(t, err)
		require.Equal(t, helmspec.ReasonReleaseNotFound, f.release("web").Reason)
		require.NoError(t, f.helmKeeper(app, 1, releases).StateKeep(f.t.Context()))
		assert.Equal(t, "deployed", f.release("web").Release.Status)
		assert.NotNil(t, f.get("v1", "ConfigMap", "web-config"))
	})

	// Revision numbers below are relative: the reinstall above started the
	// release's history again.
	base := f.release("web").Release.Revision

	t.Run("changed values upgrade the release", func(t *testing.T) {
		k2 := f.helmKeeper(app, 2, releases)
		require.NoError(t, k2.Apply(f.t.Context(), "", objs(helmRelease(app, 2, "web", map[string]any{"message": "bye"}))))
		assert.Equal(t, base+1, f.release("web").Release.Revision)
		assert.Equal(t, "bye", f.get("v1", "ConfigMap", "web-config").Object["data"].(map[string]any)["message"])
		done, err := k2.GarbageCollect(f.t.Context())
		require.NoError(t, err)
		assert.True(t, done)
		assert.Equal(t, "deployed", f.release("web").Release.Status, "a release the new revision still tracks is kept")
		assert.Nil(t, f.tracker(VersionedTrackerName("store", f.ns, 1)))
	})

	t.Run("garbage collection after the component is dropped uninstalls the release", func(t *testing.T) {
		k3 := f.helmKeeper(app, 3, releases)
		require.NoError(t, k3.Apply(f.t.Context(), "", objs(configMap(app, 3, "other", "other"))))
		done, err := k3.GarbageCollect(f.t.Context())
		require.NoError(t, err)
		assert.True(t, done)
		assert.Equal(t, helmspec.ReasonReleaseNotFound, f.release("web").Reason)
		assert.Nil(t, f.get("v1", "ConfigMap", "web-config"), "Helm removed the release's objects")
		assert.Nil(t, f.get("apps/v1", "Deployment", "web-web"))
		assert.NotNil(t, f.get("v1", "ConfigMap", "other"))
		assert.Nil(t, f.tracker(VersionedTrackerName("store", f.ns, 2)))
	})
}

func TestHelmReleaseCollection(t *testing.T) {
	orphan := Policies{GarbageCollect: &GarbageCollectPolicy{Rules: []GarbageCollectRule{
		{Selector: ResourceSelector{ResourceTypes: []string{helmspec.Kind}}, Propagation: GCPropagationOrphan},
	}}}
	onAppDelete := Policies{GarbageCollect: &GarbageCollectPolicy{Rules: []GarbageCollectRule{
		{Selector: ResourceSelector{ComponentTypes: []string{"helm"}}, Strategy: GCOnAppDelete},
	}}}
	never := Policies{GarbageCollect: &GarbageCollectPolicy{Rules: []GarbageCollectRule{
		{Selector: ResourceSelector{ComponentNames: []string{"web"}}, Strategy: GCNever},
	}}}
	cases := []struct {
		reason   string
		policies Policies
		// appDelete deletes the Application instead of dropping the component.
		appDelete bool
		installed bool
	}{
		{reason: "deleting the Application uninstalls the release", appDelete: true},
		{reason: "propagation orphan keeps the release when the component is dropped", policies: orphan, installed: true},
		{reason: "propagation orphan keeps the release when the Application is deleted", policies: orphan, appDelete: true, installed: true},
		{reason: "strategy onAppDelete keeps the release when the component is dropped", policies: onAppDelete, installed: true},
		{reason: "strategy onAppDelete uninstalls the release when the Application is deleted", policies: onAppDelete, appDelete: true},
		{reason: "strategy never keeps the release when the Application is deleted", policies: never, appDelete: true, installed: true},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			f := newFixture(t)
			app := f.app("store")
			releases := NewHelmReleases(f.helmClient())
			require.NoError(t, f.helmKeeper(app, 1, releases, tc.policies).Apply(f.t.Context(), "", objs(helmRelease(app, 1, "web", nil))))
			require.Equal(t, "deployed", f.release("web").Release.Status)

			if tc.appDelete {
				done, err := f.helmKeeper(app, 1, releases, tc.policies).Delete(f.t.Context())
				require.NoError(t, err)
				assert.True(t, done)
				assert.Nil(t, f.tracker(VersionedTrackerName("store", f.ns, 1)))
			} else {
				k2 := f.helmKeeper(app, 2, releases, tc.policies)
				require.NoError(t, k2.Apply(f.t.Context(), "", objs(configMap(app, 2, "other", "other"))))
				done, err := k2.GarbageCollect(f.t.Context())
				require.NoError(t, err)
				assert.True(t, done)
			}
			h := f.release("web")
			if tc.installed {
				assert.Equal(t, "deployed", h.Release.Status)
				assert.NotNil(t, f.get("v1", "ConfigMap", "web-config"))
			} else {
				assert.Equal(t, helmspec.ReasonReleaseNotFound, h.Reason)
				assert.Nil(t, f.get("v1", "ConfigMap", "web-config"))
			}
		})
	}
}

func TestHelmReleaseErrors(t *testing.T) {
	cases := []struct {
		reason   string
		releases func(f *fixture) ReleaseHandler
		mod      objMod
		// check inspects the error of Apply.
		check   func(t *testing.T, err error)
		tracked bool
	}{
		{
			reason:   "without Helm support the object fails clearly and nothing is tracked",
			releases: func(*fixture) ReleaseHandler { return nil },
			check: func(t *testing.T, err error) {
				require.ErrorIs(t, err, ErrNoReleaseHandler)
				assert.Contains(t, err.Error(), "helm components need the controller's Helm support")
			},
		},
		{
			reason:   "a spec error names the field and is terminal (Invalid); nothing is tracked",
			releases: func(f *fixture) ReleaseHandler { return NewHelmReleases(f.helmClient()) },
			mod:      withField(map[string]any{"version": "1.0"}, "spec", "chart"),
			check: func(t *testing.T, err error) {
				assert.True(t, apierrors.IsInvalid(err), "Invalid: %v", err)
				assert.Contains(t, err.Error(), "spec.chart.source")
			},
		},
		{
			reason:   "a chart the source does not have is terminal (Invalid) and says not found",
			releases: func(f *fixture) ReleaseHandler { return NewHelmReleases(f.helmClient()) },
			mod:      withField("simpel", "spec", "chart", "source"),
			check: func(t *testing.T, err error) {
				assert.True(t, apierrors.IsInvalid(err), "Invalid: %v", err)
				assert.ErrorIs(t, err, helmspec.ErrChartNotFound)
				assert.Contains(t, err.Error(), `spec.chart.source: Invalid value: "simpel"`)
				assert.Contains(t, err.Error(), "chart not found")
			},
			tracked: true,
		},
		{
			reason:   "a bundled chart path escaping the chart root is refused (Invalid, unsafe)",
			releases: func(f *fixture) ReleaseHandler { return NewHelmReleases(f.helmClient()) },
			mod:      withField("../oamflow", "spec", "chart", "source"),
			check: func(t *testing.T, err error) {
				assert.True(t, apierrors.IsInvalid(err), "Invalid: %v", err)
				assert.ErrorIs(t, err, helmspec.ErrUnsafeChart)
			},
			tracked: true,
		},
		{
			reason: "an Ensure error is returned with the release named",
			releases: func(*fixture) ReleaseHandler {
				return ReleaseHandlerFns{EnsureFn: func(context.Context, string, string, *unstructured.Unstructured) (ReleaseResult, error) {
					return ReleaseResult{}, errors.New("boom")
				}}
			},
			check: func(t *testing.T, err error) {
				assert.False(t, apierrors.IsInvalid(err))
				assert.Contains(t, err.Error(), "HelmRelease rk-")
				assert.Contains(t, err.Error(), "/web: boom")
			},
			tracked: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			f := newFixture(t)
			app := f.app("store")
			var mods []objMod
			if tc.mod != nil {
				mods = append(mods, tc.mod)
			}
			err := f.helmKeeper(app, 1, tc.releases(f)).Apply(f.t.Context(), "", objs(helmRelease(app, 1, "web", nil, mods...), configMap(app, 1, "web", "plain")))
			require.Error(t, err)
			tc.check(t, err)
			rt := f.tracker(VersionedTrackerName("store", f.ns, 1))
			if tc.tracked {
				require.NotNil(t, rt)
				assert.Len(t, rt.Spec.ManagedResources, 2)
				assert.NotNil(t, f.get("v1", "ConfigMap", "plain"), "the other objects are still applied")
			} else {
				assert.Nil(t, rt, "a refused object fails the Apply before anything is tracked")
				assert.Nil(t, f.get("v1", "ConfigMap", "plain"))
			}
			assert.Equal(t, helmspec.ReasonReleaseNotFound, f.release("web").Reason)
		})
	}
}

func TestHelmReleaseUninstallOptions(t *testing.T) {
	// The options last ensured are used to uninstall; a tracker entry
	// without data still uninstalls with defaults.
	var got []helmspec.Options
	fake := fakeHelm{uninstall: func(_ context.Context, cluster, namespace, name string, opts helmspec.Options) (helmspec.Result, error) {
		assert.Equal(t, "", cluster)
		assert.Equal(t, "apps", namespace)
		assert.Equal(t, "web", name)
		got = append(got, opts)
		return helmspec.Result{Action: helmspec.ActionUninstalled}, nil
	}}
	h := NewHelmReleases(fake)
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": helmspec.APIVersion, "kind": helmspec.Kind,
		"metadata": map[string]any{"name": "web", "namespace": "apps"},
		"spec":     map[string]any{"options": map[string]any{"timeout": "30s", "skipHooks": true}}}}
	data, err := encodeData(obj)
	require.NoError(t, err)
	ref := common.ClusterObjectReference{APIVersion: helmspec.APIVersion, Kind: helmspec.Kind, Namespace: "apps", Name: "web"}
	require.NoError(t, h.Uninstall(context.Background(), "", v1beta1.ManagedResource{ClusterObjectReference: ref, Data: data}))
	require.NoError(t, h.Uninstall(context.Background(), "", v1beta1.ManagedResource{ClusterObjectReference: ref}))
	require.Len(t, got, 2)
	assert.Equal(t, helmspec.Options{Timeout: "30s", SkipHooks: true}, got[0])
	assert.Equal(t, helmspec.Options{}, got[1])
}

// fakeHelm is a helmspec.Releases for tests that need no Helm.
type fakeHelm struct {
	helmspec.Releases // methods the keeper must not call panic on the nil interface
	uninstall         func(ctx context.Context, cluster, namespace, name string, opts helmspec.Options) (helmspec.Result, error)
}

func (f fakeHelm) Ensure(context.Context, helmspec.Request) (helmspec.Result, error) {
	return helmspec.Result{Action: helmspec.ActionUnchanged}, nil
}

func (f fakeHelm) UninstallOwned(ctx context.Context, cluster, namespace, name string, _ helmspec.Owner, opts helmspec.Options) (helmspec.Result, error) {
	return f.uninstall(ctx, cluster, namespace, name, opts)
}

func (f fakeHelm) Owner(context.Context, string, string, string) (helmspec.ReleaseOwner, error) {
	return helmspec.ReleaseOwner{}, nil
}

// helmSecrets lists the Helm storage Secrets of release name.
func (f *fixture) helmSecrets(name string) []corev1.Secret {
	f.t.Helper()
	var list corev1.SecretList
	require.NoError(f.t, env.Client.List(f.t.Context(), &list, client.InNamespace(f.ns), client.MatchingLabels{"owner": "helm", "name": name}))
	return list.Items
}
