package controller

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
	"github.com/oamflow/oamflow/pkg/revision"
	"github.com/oamflow/oamflow/pkg/testing/corpus"
	"github.com/oamflow/oamflow/pkg/workflow"
)

// TestTakeOverKubeVela is issue 24's acceptance through the Reconciler:
// what KubeVela v1.11 left for shop/storefront and shop/settings is
// adopted without re-running any workflow step or rolling anything out.
func TestTakeOverKubeVela(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	h.ns = "shop"
	ctx := context.Background()
	c := env(t).Client
	corpus.LoadKubeVelaState(t, c, "applications-and-revisions.yaml", "resourcetrackers.yaml", "workloads.yaml", "configmaps.yaml")

	deployments := map[string]*appsv1.Deployment{}
	for _, name := range []string{"frontend", "orders", "cache"} {
		d, ok := h.deployment(name)
		require.True(t, ok, name)
		deployments[name] = d
	}
	storefront := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "storefront"}}
	settings := &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"}}
	stepsBefore := map[string][]string{}
	for _, app := range []*v1beta1.Application{storefront, settings} {
		for _, s := range h.get(app).Status.Workflow.Steps {
			stepsBefore[app.Name] = append(stepsBefore[app.Name], s.ID+"@"+s.LastExecuteTime.UTC().Format(time.RFC3339))
		}
	}

	for _, app := range []*v1beta1.Application{storefront, settings} {
		got := h.until(app, false, 30*time.Second, func(a *v1beta1.Application) bool {
			return a.Status.Phase == common.ApplicationRunning && !hasFinalizer(a, v1beta1.FinalizerResourceTracker)
		})
		var steps []string
		for _, s := range got.Status.Workflow.Steps {
			steps = append(steps, s.ID+"@"+s.LastExecuteTime.UTC().Format(time.RFC3339))
		}
		assert.Equal(t, stepsBefore[app.Name], steps, "%s: no workflow step re-run", app.Name)
		assert.Equal(t, app.Name+"-v"+map[string]string{"storefront": "2", "settings": "1"}[app.Name], got.Status.LatestRevision.Name)
		assert.Contains(t, got.Finalizers, Finalizer)
	}
	assert.ElementsMatch(t, []string{"storefront-v1", "storefront-v2"}, h.revisions("storefront"), "KubeVela's revisions are the history; none added")
	assert.ElementsMatch(t, []string{"settings-v1"}, h.revisions("settings"))

	for name, before := range deployments {
		after, ok := h.deployment(name)
		require.True(t, ok, name)
		assert.Equal(t, before.UID, after.UID, "%s: adopted in place", name)
		assert.Equal(t, before.Generation, after.Generation, "%s: nothing rolled out", name)
		assert.Equal(t, before.Spec, after.Spec, "%s: spec unchanged", name)
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apps/v1")
		u.SetKind("Deployment")
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: name}, u))
		image := []string{"f:spec", "f:template", "f:spec", "f:containers", `k:{"name":"` + name + `"}`, "f:image"}
		assert.True(t, ownsField(u, resourcekeeper.FieldManager, image...), "%s: the rendered fields are oamflow's: %v", name, managers(u))
		assert.False(t, ownsField(u, "kubevela", image...), "%s: handed over by KubeVela's manager", name)
		assert.True(t, ownsField(u, resourcekeeper.FieldManager, "f:metadata", "f:labels", "f:"+v1beta1.LabelAppName), name)
		assert.False(t, ownsField(u, "kubevela", "f:metadata", "f:labels", "f:"+v1beta1.LabelAppName), name)
	}

	// Removing orders deletes exactly its Deployment.
	h.update(storefront, func(a *v1beta1.Application) { a.Spec.Components = a.Spec.Components[:1] })
	h.until(storefront, true, 30*time.Second, func(a *v1beta1.Application) bool {
		_, exists := h.deployment("orders")
		return a.Status.Phase == common.ApplicationRunning && !exists && a.Status.LatestRevision.Name == "storefront-v3"
	})
	for _, name := range []string{"frontend", "cache"} {
		_, ok := h.deployment(name)
		assert.True(t, ok, "%s is kept", name)
	}
	svc := &corev1.Service{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "frontend"}, svc))

	// Deleting settings keeps its garbage-collect never ConfigMap.
	require.NoError(t, c.Delete(ctx, h.get(settings)))
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := h.reconcile(settings)
		require.NoError(t, err)
		cur := &v1beta1.Application{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(settings), cur); apierrors.IsNotFound(err) {
			break
		}
		require.True(t, time.Now().Before(deadline), "settings was not deleted: finalizers %v", cur.Finalizers)
		time.Sleep(200 * time.Millisecond)
	}
	_, ok := h.deployment("cache")
	assert.False(t, ok, "settings' Deployment is collected with it")
	cm := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "shop-settings"}, cm), "garbage-collect never: kept")
	assert.Nil(t, cm.DeletionTimestamp)
	_ = revision.DefaultLimit
}

func managers(u *unstructured.Unstructured) []string {
	var out []string
	for _, mf := range u.GetManagedFields() {
		out = append(out, mf.Manager+"/"+string(mf.Operation)+"/"+mf.Subresource)
	}
	return out
}

func hasFinalizer(a *v1beta1.Application, f string) bool {
	for _, x := range a.Finalizers {
		if x == f {
			return true
		}
	}
	return false
}

// ownsField reports whether manager's field set of the main resource
// holds the path (FieldsV1 keys).
func ownsField(u *unstructured.Unstructured, manager string, path ...string) bool {
	for _, mf := range u.GetManagedFields() {
		if mf.Manager != manager || mf.Subresource != "" || mf.FieldsV1 == nil {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal(mf.FieldsV1.Raw, &m); err != nil {
			continue
		}
		cur := any(m)
		found := true
		for _, p := range path {
			mm, ok := cur.(map[string]any)
			if !ok {
				found = false
				break
			}
			if cur, ok = mm[p]; !ok {
				found = false
				break
			}
		}
		if found {
			return true
		}
	}
	return false
}

// asKubeVelas makes app look as KubeVela leaves the Applications it
// deployed: KubeVela's finalizer instead of oamflow's.
func (h *harness) asKubeVelas(app *v1beta1.Application) {
	h.t.Helper()
	h.update(app, func(a *v1beta1.Application) {
		a.Finalizers = []string{v1beta1.FinalizerResourceTracker}
	})
}

// TestKubeVelaSuspendedWorkflowContinues: a workflow KubeVela left
// suspended is shown as such, resumes under oamflow's operations, and the
// Application is adopted once it succeeded.
func TestKubeVelaSuspendedWorkflowContinues(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	app := h.app("held", `
components:
- name: web
  type: webservice
  properties: {image: "nginx"}
workflow:
  steps:
  - {name: approve, type: suspend}
  - {name: deploy, type: apply-component, properties: {component: web}}
`)
	h.until(app, false, 30*time.Second, phaseIs(common.ApplicationWorkflowSuspending))
	h.asKubeVelas(app)

	got := h.until(app, false, 30*time.Second, func(a *v1beta1.Application) bool { return hasFinalizer(a, Finalizer) })
	assert.Equal(t, common.ApplicationWorkflowSuspending, got.Status.Phase, "shown as KubeVela left it")
	assert.True(t, hasFinalizer(got, v1beta1.FinalizerResourceTracker), "not adopted while the workflow has not succeeded")

	h.updateStatus(app, func(a *v1beta1.Application) { require.NoError(t, workflow.Resume(a.Status.Workflow)) })
	got = h.until(app, true, 60*time.Second, func(a *v1beta1.Application) bool {
		return a.Status.Phase == common.ApplicationRunning && !hasFinalizer(a, v1beta1.FinalizerResourceTracker)
	})
	c := meta.FindStatusCondition(got.Status.Conditions, common.ConditionAdopted)
	require.NotNil(t, c)
	assert.Equal(t, common.ReasonAdoptedFromKubeVela, c.Reason)
	_, ok := h.deployment("web")
	assert.True(t, ok)
}

// TestDeleteKubeVelaApplication: deleting an Application KubeVela
// deployed, before oamflow adopted it, collects its resources and lets it
// go instead of hanging on KubeVela's finalizer.
func TestDeleteKubeVelaApplication(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	app := h.app("old", exampleApp)
	h.until(app, true, 60*time.Second, phaseIs(common.ApplicationRunning))
	h.asKubeVelas(app)
	h.deleteUntilGone(app)
	for _, name := range []string{"web", "worker"} {
		d, ok := h.deployment(name)
		assert.True(t, !ok || d.DeletionTimestamp != nil, "%s is collected", name)
	}
}

// TestUndecodableKubeVelaTracker: a KubeVela tracker of the Application
// that cannot be decoded stops it before anything is applied or collected,
// and the Policy condition says which tracker and why.
func TestUndecodableKubeVelaTracker(t *testing.T) {
	h := newHarness(t, harnessOpt{})
	ctx := context.Background()
	c := env(t).Client
	app := h.app("broken", exampleApp)
	h.until(app, true, 60*time.Second, phaseIs(common.ApplicationRunning))
	h.asKubeVelas(app)
	bad := &v1beta1.ResourceTracker{ObjectMeta: metav1.ObjectMeta{Name: "broken-v9-" + h.ns,
		Labels: map[string]string{v1beta1.LabelAppName: "broken", v1beta1.LabelAppNamespace: h.ns}},
		Spec: v1beta1.ResourceTrackerSpec{Type: v1beta1.ResourceTrackerTypeVersioned, Compression: &v1beta1.Compression{Type: "zstd", Data: "aGVsbG8="}}}
	require.NoError(t, c.Create(ctx, bad))
	web, ok := h.deployment("web")
	require.True(t, ok)
	// The next revision drops worker and changes web.
	h.update(app, func(a *v1beta1.Application) {
		a.Spec.Components = a.Spec.Components[:1]
		a.Spec.Components[0].Traits = a.Spec.Components[0].Traits[1:]
	})
	// The reconcile fails (and is retried) until the record is repaired.
	for i := 0; i < 3; i++ {
		_, err := h.reconcile(app)
		require.ErrorContains(t, err, "cannot be decoded")
	}
	got := h.get(app)
	cond := meta.FindStatusCondition(got.Status.Conditions, common.ConditionPolicy)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)
	assert.Equal(t, common.ReasonResourceTrackerUnreadable, cond.Reason)
	assert.Contains(t, cond.Message, "ResourceTracker broken-v9-"+h.ns+" cannot be decoded")
	_, ok = h.deployment("worker")
	assert.True(t, ok, "nothing is collected")
	after, _ := h.deployment("web")
	assert.Equal(t, web.Generation, after.Generation, "nothing is applied")
	assert.Equal(t, web.Spec.Replicas, after.Spec.Replicas)
	assert.True(t, hasFinalizer(h.get(app), v1beta1.FinalizerResourceTracker), "not adopted")

	// Deleting it waits for the record too, and Ready says why.
	require.NoError(t, c.Delete(ctx, h.get(app)))
	for i := 0; i < 2; i++ {
		_, err := h.reconcile(app)
		require.ErrorContains(t, err, "cannot be decoded")
	}
	got = h.get(app)
	ready := meta.FindStatusCondition(got.Status.Conditions, common.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, common.ReasonDeleting, ready.Reason)
	assert.Contains(t, ready.Message, "deleting the resources failed (retrying): deleting the resources of "+h.ns+"/broken: ResourceTracker broken-v9-"+h.ns+" cannot be decoded")
	_, ok = h.deployment("worker")
	assert.True(t, ok, "nothing is collected while the record cannot be read")
	require.NoError(t, c.Delete(ctx, bad))
}

// wrappedKeepers makes the real Keeper of each revision, on the hub of
// the test's API server, and hands it to wrap.
func wrappedKeepers(t *testing.T, wrap func(Keeper) Keeper) KeeperFactory {
	return KeeperFactoryFn(func(app *v1beta1.Application, n int64, p resourcekeeper.Policies) (Keeper, error) {
		c := env(t).Client
		k, err := resourcekeeper.New(app, n, resourcekeeper.Options{Clients: multicluster.HubOnly{Hub: c}, Trackers: c, Policies: p})
		if err != nil {
			return nil, err
		}
		return wrap(k), nil
	})
}

// flakyKeeper fails Apply of objects named fail while failing is set.
type flakyKeeper struct {
	Keeper
	failing *atomic.Bool
	fail    string
}

func (k *flakyKeeper) Apply(ctx context.Context, cluster string, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		if k.failing.Load() && o.GetName() == k.fail {
			return fmt.Errorf("injected failure applying %s", o.GetName())
		}
	}
	return k.Keeper.Apply(ctx, cluster, objs)
}

// TestInterruptedAdoptionResumes: an adoption that fails midway leaves
// KubeVela's finalizer (the mark) and says why in Adopted; the next
// reconcile starts over and finishes, re-creating nothing.
func TestInterruptedAdoptionResumes(t *testing.T) {
	var failing atomic.Bool
	keepers := wrappedKeepers(t, func(k Keeper) Keeper { return &flakyKeeper{Keeper: k, failing: &failing, fail: "worker"} })
	h := newHarness(t, harnessOpt{with: []Option{WithKeepers(keepers)}})
	app := h.app("midway", exampleApp)
	h.until(app, true, 60*time.Second, phaseIs(common.ApplicationRunning))
	uids := map[string]types.UID{}
	for _, name := range []string{"web", "worker"} {
		d, ok := h.deployment(name)
		require.True(t, ok)
		uids[name] = d.UID
	}
	h.asKubeVelas(app)

	failing.Store(true)
	_, err := h.reconcile(app)
	require.ErrorContains(t, err, "injected failure")
	got := h.get(app)
	cond := meta.FindStatusCondition(got.Status.Conditions, common.ConditionAdopted)
	require.NotNil(t, cond)
	assert.Equal(t, common.ReasonAdoptionFailed, cond.Reason)
	assert.Contains(t, cond.Message, `adopting component "worker"`)
	assert.True(t, hasFinalizer(got, v1beta1.FinalizerResourceTracker), "still marked: the next reconcile starts over")

	failing.Store(false)
	got = h.until(app, true, 30*time.Second, func(a *v1beta1.Application) bool {
		return !hasFinalizer(a, v1beta1.FinalizerResourceTracker)
	})
	assert.Equal(t, common.ReasonAdoptedFromKubeVela, meta.FindStatusCondition(got.Status.Conditions, common.ConditionAdopted).Reason)
	for name, uid := range uids {
		d, ok := h.deployment(name)
		require.True(t, ok)
		assert.Equal(t, uid, d.UID, "%s is not re-created", name)
	}
}
