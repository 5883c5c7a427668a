//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/e2e/framework"
	"github.com/oamflow/oamflow/pkg/manager"
)

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestInstallChart installs charts/oamflow with the Helm SDK into a local
// (kwok) cluster, checks what it created, then runs the oamflow-controller
// binary outside the cluster with the flags of the chart's Deployment
// (plus --kubeconfig and free ports): the webhook refuses a bad
// Application with its field path (as `oamflow up` does), a good one runs,
// and /metrics shows the reconcile histogram and the phase gauge.
func TestInstallChart(t *testing.T) {
	env := framework.Start(t, 1, framework.WithNodes(2))
	hub := env.Cluster(t, "local")
	ctx := context.Background()
	const ns = "oamflow-system"

	// helm install oamflow charts/oamflow -n oamflow-system --create-namespace
	framework.InstallChart(t, hub, ns, nil)

	scheme, err := manager.Scheme()
	require.NoError(t, err)
	c, err := client.New(hub.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	dep := &appsv1.Deployment{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "oamflow-controller"}, dep))
	framework.WaitFor(t, 2*time.Minute, "the controller Pod object is created (validated by the API server)", func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/component": "controller"}); err != nil {
			return false, err
		}
		return len(pods.Items) > 0, nil
	})
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "webservice"}, &v1beta1.ComponentDefinition{}), "built-in definitions installed")
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "oamflow-webhook"}, &admissionregistrationv1.ValidatingWebhookConfiguration{}))

	// The same binary, outside the cluster, with the Deployment's flags.
	bin := framework.BuildController(t)
	args := append([]string{}, dep.Spec.Template.Spec.Containers[0].Args...)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	args = append(args, "--kubeconfig="+hub.Kubeconfig, "--metrics-bind-address="+metricsAddr,
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", freeTCPPort(t)), fmt.Sprintf("--webhook-port=%d", freeTCPPort(t)),
		"--unhealthy-requeue-period=2s",
		// The chart serves /metrics over HTTPS to authorized tokens
		// (pkg/manager's TestSecureMetrics); scraped here in plain HTTP.
		"--metrics-secure=false")
	t.Logf("$ oamflow-controller %s", strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = framework.LogWriter(t), framework.LogWriter(t)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			assert.NoError(t, err, "the controller exits cleanly on SIGTERM")
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("the controller did not stop within 30 s")
		}
	})

	bad := &v1beta1.Application{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "Application"},
		ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "default"},
	}
	require.NoError(t, yaml.Unmarshal([]byte("components: [{name: web, type: webservice, properties: {image: 42}}]"), &bad.Spec))
	var denied string
	framework.WaitFor(t, 2*time.Minute, "the webhook refuses an Application with a wrong property type", func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, bad.DeepCopy(), client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), "denied the request") {
			denied = err.Error()
			return true, nil
		}
		return false, nil
	})
	assert.Contains(t, denied, "spec.components[0].properties.image")
	file := filepath.Join(t.TempDir(), "bad.yaml")
	data, err := yaml.Marshal(bad)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, data, 0o600))
	_, upErr := framework.Oamflow(t, hub.Kubeconfig, "up", "-f", file)
	require.Error(t, upErr)
	assert.Contains(t, denied, upErr.Error(), "oamflow up and the webhook say the same")

	good := bad.DeepCopy()
	good.Name = "good"
	require.NoError(t, yaml.Unmarshal([]byte(`
components:
- name: settings
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: installed}, data: {k: v}}]
`), &good.Spec))
	require.NoError(t, c.Create(ctx, good))
	framework.WaitFor(t, 2*time.Minute, "the good Application runs", func(ctx context.Context) (bool, error) {
		got := &v1beta1.Application{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(good), got); err != nil {
			return false, err
		}
		return got.Status.Phase == common.ApplicationRunning, nil
	})
	framework.WaitFor(t, time.Minute, "/metrics shows reconciles and the running Application", func(ctx context.Context) (bool, error) {
		resp, err := http.Get("http://" + metricsAddr + "/metrics") //nolint:noctx // local endpoint
		if err != nil {
			return false, nil //nolint:nilerr // not serving yet
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return false, nil //nolint:nilerr // try again
		}
		text := string(data)
		return strings.Contains(text, `oamflow_reconcile_duration_seconds_count{phase="running"}`) &&
			strings.Contains(text, `oamflow_applications{phase="running"} 1`), nil
	})
}
