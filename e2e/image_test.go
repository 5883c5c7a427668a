//go:build e2e

package e2e

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestImage builds the controller image as make image does (this
// machine's platform only), pushes it to an in-process OCI registry,
// installs the chart with that image pinned by digest (the API server
// accepts the Pod spec), then pulls the image back, takes the binary out
// of its layer and runs it outside the cluster with the Deployment's exact
// arguments (plus a kubeconfig and free ports): an Application runs.
// Pods do not run under kwok; this is the closest honest check.
func TestImage(t *testing.T) {
	ctx := context.Background()
	out := t.TempDir()
	platform := "linux/" + runtime.GOARCH
	build := exec.Command("go", "run", "./hack/image", "-out", out, "-platforms", platform)
	build.Dir = ".."
	logs, err := build.CombinedOutput()
	require.NoError(t, err, "make image: %s", logs)
	t.Logf("%s", logs)

	// make image-push REGISTRY=<in-process registry>
	reg := hmNewOCIRegistry(t)
	top, err := layout.ImageIndexFromPath(filepath.Join(out, "oci"))
	require.NoError(t, err)
	im, err := top.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 1)
	idx, err := top.ImageIndex(im.Manifests[0].Digest)
	require.NoError(t, err)
	digest, err := idx.Digest()
	require.NoError(t, err)
	repo := reg.host + "/oamflow/oamflow-controller"
	ref, err := name.NewTag(repo + ":0.1.0")
	require.NoError(t, err)
	require.NoError(t, remote.WriteIndex(ref, idx, remote.WithContext(ctx)))

	env := framework.Start(t, 1, framework.WithNodes(1))
	hub := env.Cluster(t, "local")
	const ns = "oamflow-system"
	framework.InstallChart(t, hub, ns, map[string]any{"image": map[string]any{"repository": repo, "digest": digest.String()}})

	scheme, err := manager.Scheme()
	require.NoError(t, err)
	c, err := client.New(hub.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	dep := &appsv1.Deployment{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "oamflow-controller"}, dep))
	container := dep.Spec.Template.Spec.Containers[0]
	assert.Equal(t, ref.String()+"@"+digest.String(), container.Image, "the chart pins the pushed image")
	framework.WaitFor(t, 2*time.Minute, "the controller Pod object is created (validated by the API server)", func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/component": "controller"}); err != nil {
			return false, err
		}
		return len(pods.Items) > 0 && pods.Items[0].Spec.Containers[0].Image == container.Image, nil
	})

	// Pull the image the Pod names and take the binary out of its layer.
	pinned, err := name.NewDigest(repo + "@" + digest.String())
	require.NoError(t, err)
	pulled, err := remote.Index(pinned, remote.WithContext(ctx))
	require.NoError(t, err)
	pm, err := pulled.IndexManifest()
	require.NoError(t, err)
	var img v1.Image
	for _, m := range pm.Manifests {
		if m.Platform != nil && m.Platform.OS+"/"+m.Platform.Architecture == platform {
			img, err = pulled.Image(m.Digest)
			require.NoError(t, err)
		}
	}
	require.NotNil(t, img, "the index has a %s image", platform)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "65532:65532", cf.Config.User)
	bin := filepath.Join(t.TempDir(), "oamflow-controller")
	extractFile(t, img, strings.TrimPrefix(cf.Config.Entrypoint[0], "/"), bin)

	args := append([]string{}, container.Args...)
	args = append(args, "--kubeconfig="+hub.Kubeconfig,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", freeTCPPort(t)),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", freeTCPPort(t)), fmt.Sprintf("--webhook-port=%d", freeTCPPort(t)))
	t.Logf("$ %s %s", cf.Config.Entrypoint[0], strings.Join(args, " "))
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

	app := &v1beta1.Application{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "Application"},
		ObjectMeta: metav1.ObjectMeta{Name: "from-image", Namespace: "default"},
	}
	require.NoError(t, yaml.Unmarshal([]byte(`
components:
- name: settings
  type: k8s-objects
  properties:
    objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: from-image}, data: {k: v}}]
`), &app.Spec))
	framework.WaitFor(t, 2*time.Minute, "the Application is admitted (the image's binary serves the webhook)", func(ctx context.Context) (bool, error) {
		return c.Create(ctx, app.DeepCopy()) == nil, nil
	})
	framework.WaitFor(t, 3*time.Minute, "the Application runs", func(ctx context.Context) (bool, error) {
		got := &v1beta1.Application{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(app), got); err != nil {
			return false, err
		}
		return got.Status.Phase == common.ApplicationRunning, nil
	})
}

// extractFile writes the regular file path of the image's file system to
// dst, executable.
func extractFile(t *testing.T, img v1.Image, path, dst string) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%s is not in the image", path)
		}
		require.NoError(t, err)
		if h.Name != path || h.Typeflag != tar.TypeReg {
			continue
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		require.NoError(t, err)
		_, err = io.Copy(f, tr)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		return
	}
}
