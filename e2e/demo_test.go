//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/e2e/framework"
)

// checkDemo applies examples/demo/app.yaml as hack/demo.sh does (TestExamples
// set the clusters up the same way: controller with the vela-workflow chart
// root, members joined with region labels) and checks what `make demo`
// promises: the app running on both members with the per-region
// differences, the Helm chart installed in each, and `status --tree`
// showing both clusters.
func checkDemo(t *testing.T, x *examplesEnv) {
	_, err := framework.Oamflow(t, x.hub.Kubeconfig, "up", "-f", x.appFile(t, "demo"), "--wait", "--timeout", "10m")
	require.NoError(t, err)
	app := x.requireRunning(t, "demo")
	for _, component := range []string{"frontend", "queue-worker", "workflow-engine"} {
		assert.ElementsMatch(t, []string{"member-1", "member-2"}, exServiceClusters(app, component), "component %s", component)
	}

	for _, m := range []struct {
		cluster  string
		region   string
		replicas int32
	}{
		{cluster: "member-1", region: "east", replicas: 2},
		{cluster: "member-2", region: "west", replicas: 3},
	} {
		t.Run(m.cluster, func(t *testing.T) {
			c := x.env.Cluster(t, m.cluster)
			frontend := &appsv1.Deployment{}
			x.get(t, c, "frontend", frontend)
			assert.Equal(t, m.replicas, *frontend.Spec.Replicas, "the %s-size override", m.region)
			assert.Equal(t, m.replicas, frontend.Status.AvailableReplicas)
			assert.Equal(t, []corev1.EnvVar{{Name: "REGION", Value: m.region}}, frontend.Spec.Template.Spec.Containers[0].Env)
			assert.Equal(t, "storefront", frontend.Spec.Template.Labels["team"], "the labels trait")
			x.get(t, c, "frontend", &corev1.Service{})
			x.get(t, c, "queue-worker", &appsv1.Deployment{})
			x.get(t, c, "sh.helm.release.v1.workflow-engine.v1", &corev1.Secret{}) // Helm's release record

			deployments := &appsv1.DeploymentList{}
			require.NoError(t, c.Client.List(context.Background(), deployments, client.InNamespace("default")))
			var chart []string
			for _, d := range deployments.Items {
				if strings.HasPrefix(d.Name, "workflow-engine") {
					chart = append(chart, d.Name)
				}
			}
			assert.NotEmpty(t, chart, "the vela-workflow chart's controller Deployment")
		})
	}
	assert.True(t, apierrors.IsNotFound(x.hub.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "queue-worker"}, &appsv1.Deployment{})),
		"nothing of the demo is deployed to the hub")

	out, err := framework.Oamflow(t, x.hub.Kubeconfig, "status", "demo", "--tree")
	require.NoError(t, err)
	assert.Contains(t, out, "running")
	assert.Contains(t, out, "member-1")
	assert.Contains(t, out, "member-2")
	assert.NotContains(t, out, "MISSING")
}
