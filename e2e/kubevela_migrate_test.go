//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/e2e/framework"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
	"github.com/oamflow/oamflow/pkg/testing/corpus"
)

// TestTakeOverKubeVela is issue 24's acceptance on a local cluster: what
// a KubeVela v1.11 controller left for shop/storefront and shop/settings
// (kubevela-state, loaded as it is) is checked by `migrate from-kubevela
// --dry-run`, then taken over by oamflow's controller without re-running a
// workflow step or rolling anything out; what a later revision drops is
// collected through KubeVela's records, and garbage-collect never holds on
// deletion.
func TestTakeOverKubeVela(t *testing.T) {
	env := framework.Start(t, 1)
	hub := env.Cluster(t, "local")
	_, err := framework.Oamflow(t, hub.Kubeconfig, "install")
	require.NoError(t, err)
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1beta1.AddToScheme(s))
	c, err := client.New(hub.Config, client.Options{Scheme: s})
	require.NoError(t, err)
	ctx := context.Background()
	corpus.LoadKubeVelaState(t, c, "applications-and-revisions.yaml", "resourcetrackers.yaml", "workloads.yaml", "configmaps.yaml")

	// The cluster's controllers settle the Deployments first.
	deployments := map[string]*appsv1.Deployment{}
	for _, name := range []string{"frontend", "orders", "cache"} {
		framework.WaitFor(t, 2*time.Minute, "Deployment "+name+" available", func(ctx context.Context) (bool, error) {
			d := &appsv1.Deployment{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: name}, d); err != nil {
				return false, err
			}
			deployments[name] = d
			return framework.DeploymentAvailable(d), nil
		})
	}

	out, err := framework.Oamflow(t, hub.Kubeconfig, "migrate", "from-kubevela", "--dry-run", "-n", "shop")
	require.NoError(t, err, "exit 0: everything adoptable with no change")
	assert.Contains(t, out, "shop/settings: adoptable, 0 changes (2 objects)")
	assert.Contains(t, out, "shop/storefront: adoptable, 0 changes (3 objects)")

	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: "shop", Name: name} }
	steps := func(a *v1beta1.Application) []string {
		var out []string
		for _, s := range a.Status.Workflow.Steps {
			out = append(out, s.ID+"@"+s.LastExecuteTime.UTC().Format(time.RFC3339))
		}
		return out
	}
	before := map[string][]string{}
	for _, name := range []string{"storefront", "settings"} {
		a := &v1beta1.Application{}
		require.NoError(t, c.Get(ctx, key(name), a))
		before[name] = steps(a)
	}

	framework.StartController(t, hub)
	for _, name := range []string{"storefront", "settings"} {
		var last *v1beta1.Application
		framework.WaitFor(t, 2*time.Minute, name+" adopted and running", func(ctx context.Context) (bool, error) {
			a := &v1beta1.Application{}
			if err := c.Get(ctx, key(name), a); err != nil {
				return false, err
			}
			last = a
			cond := meta.FindStatusCondition(a.Status.Conditions, common.ConditionAdopted)
			return a.Status.Phase == common.ApplicationRunning && cond != nil && cond.Status == "True" &&
				!controllerutil.ContainsFinalizer(a, v1beta1.FinalizerResourceTracker), nil
		})
		assert.Equal(t, before[name], steps(last), "%s: no workflow step re-run", name)
		t.Logf("%s: %s", name, meta.FindStatusCondition(last.Status.Conditions, common.ConditionAdopted).Message)
	}
	for name, was := range deployments {
		d := &appsv1.Deployment{}
		require.NoError(t, c.Get(ctx, key(name), d))
		assert.Equal(t, was.UID, d.UID, "%s: adopted in place", name)
		assert.Equal(t, was.Generation, d.Generation, "%s: no rollout (generation unchanged)", name)
		var oamflowOwns, kubevelaOwns bool
		for _, mf := range d.ManagedFields {
			if mf.Subresource != "" || mf.FieldsV1 == nil {
				continue
			}
			ownsImage := strings.Contains(string(mf.FieldsV1.Raw), `"f:image"`)
			switch mf.Manager {
			case resourcekeeper.FieldManager:
				oamflowOwns = oamflowOwns || ownsImage
			case resourcekeeper.KubeVelaFieldManager:
				kubevelaOwns = kubevelaOwns || ownsImage
			}
		}
		assert.True(t, oamflowOwns, "%s: the rendered fields are oamflow's", name)
		assert.False(t, kubevelaOwns, "%s: and no longer kubevela's", name)
	}
	out, err = framework.Oamflow(t, hub.Kubeconfig, "revision", "list", "storefront", "-n", "shop")
	require.NoError(t, err)
	assert.Contains(t, out, "storefront-v1")
	assert.Contains(t, out, "storefront-v2")
	assert.NotContains(t, out, "storefront-v3", "no revision added by the switch")

	// Removing orders deletes exactly its Deployment.
	for i := 0; ; i++ {
		a := &v1beta1.Application{}
		require.NoError(t, c.Get(ctx, key("storefront"), a))
		a.Spec.Components = a.Spec.Components[:1]
		err := c.Update(ctx, a)
		if err == nil {
			break
		}
		require.True(t, apierrors.IsConflict(err) && i < 5, "%v", err)
	}
	framework.WaitFor(t, 2*time.Minute, "orders collected", func(ctx context.Context) (bool, error) {
		a := &v1beta1.Application{}
		if err := c.Get(ctx, key("storefront"), a); err != nil {
			return false, err
		}
		err := c.Get(ctx, key("orders"), &appsv1.Deployment{})
		return a.Status.Phase == common.ApplicationRunning && a.Status.LatestRevision.Name == "storefront-v3" && apierrors.IsNotFound(err), nil
	})
	for _, name := range []string{"frontend", "cache"} {
		d := &appsv1.Deployment{}
		require.NoError(t, c.Get(ctx, key(name), d), "%s is kept", name)
		assert.Nil(t, d.DeletionTimestamp)
	}
	require.NoError(t, c.Get(ctx, key("frontend"), &corev1.Service{}))

	// Deleting settings keeps its garbage-collect never ConfigMap.
	settings := &v1beta1.Application{}
	require.NoError(t, c.Get(ctx, key("settings"), settings))
	require.NoError(t, c.Delete(ctx, settings))
	framework.WaitFor(t, 2*time.Minute, "settings deleted", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, key("settings"), &v1beta1.Application{})
		return apierrors.IsNotFound(err), nil
	})
	cm := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, key("shop-settings"), cm), "garbage-collect never: kept")
	assert.Nil(t, cm.DeletionTimestamp)
	framework.WaitFor(t, time.Minute, "cache collected", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, key("cache"), &appsv1.Deployment{})
		return apierrors.IsNotFound(err), nil
	})
}
