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
	"slices"
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
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
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
// Pods do not run under kwok; this is the closest honest check. Run as
// root, it runs the image's file system as the Pod's securityContext
// would (asInPodScript): user 65532, read-only root, /tmp the only
// writable folder.
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

	ports := []string{fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", freeTCPPort(t)),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", freeTCPPort(t)), fmt.Sprintf("--webhook-port=%d", freeTCPPort(t))}
	var cmd *exec.Cmd
	asInPod := asInPodCommand(t, img, cf, container, hub.Kubeconfig, ports)
	if asInPod != nil {
		cmd = asInPod
	} else {
		bin := filepath.Join(t.TempDir(), "oamflow-controller")
		extractFile(t, img, strings.TrimPrefix(cf.Config.Entrypoint[0], "/"), bin)
		args := append([]string{}, container.Args...)
		args = append(args, "--kubeconfig="+hub.Kubeconfig)
		cmd = exec.Command(bin, append(args, ports...)...)
	}
	t.Logf("$ %s", strings.Join(cmd.Args, " "))
	cmd.Stdout, cmd.Stderr = framework.LogWriter(t), framework.LogWriter(t)
	require.NoError(t, cmd.Start())
	if asInPod != nil {
		// The process is the controller itself (every step execs the
		// next): it runs as the image's user, on a read-only root.
		var seen string
		framework.WaitFor(t, time.Minute, "the controller runs as 65532 on a read-only root", func(context.Context) (bool, error) {
			var err error
			seen, err = runsAsInPod(cmd.Process.Pid)
			return err == nil, err
		})
		t.Logf("the controller (pid %d) %s", cmd.Process.Pid, seen)
	}
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
	found := false
	walkImage(t, img, func(h *tar.Header, r io.Reader) {
		if found || h.Name != path || h.Typeflag != tar.TypeReg {
			return
		}
		found = true
		writeFile(t, dst, r, 0o755)
	})
	require.True(t, found, "%s is not in the image", path)
}

// walkImage calls fn for every entry of the image's flattened file
// system, in order, with a reader of the entry's content.
func walkImage(t *testing.T, img v1.Image, fn func(h *tar.Header, r io.Reader)) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err)
		fn(h, tr)
	}
}

// writeFile writes r to dst with mode perm.
func writeFile(t *testing.T, dst string, r io.Reader, perm os.FileMode) {
	t.Helper()
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	require.NoError(t, err)
	_, err = io.Copy(f, r)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// asInPodScript runs an image's entrypoint the way the chart's Pod does,
// as far as this machine can without a container runtime: in a private
// mount namespace, chrooted into the image's file system mounted
// read-only (readOnlyRootFilesystem), with an empty /tmp (the chart's
// emptyDir) holding the kubeconfig, as the image's user, with only the
// image's and the container's environment. Every step execs the next.
// Arguments: chroot, root, kubeconfig, user, then the env assignments up
// to "--", then the command line.
const asInPodScript = `set -e
chroot=$1 root=$2 kubeconfig=$3 user=$4
shift 4
mount --bind "$root" "$root"
mount -o remount,bind,ro "$root"
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
mount -t proc proc "$root/proc"
cp "$kubeconfig" "$root/tmp/kubeconfig"
chmod 0644 "$root/tmp/kubeconfig"
env=""
while [ "$1" != "--" ]; do env="$env $1"; shift; done
shift
exec env -i $env "$chroot" --userspec="$user" "$root" "$@"
`

// asInPodCommand is the command running img's entrypoint with the
// container's arguments and environment as asInPodScript says, or nil
// when this test may not (not root, or no unshare or chroot).
func asInPodCommand(t *testing.T, img v1.Image, cf *v1.ConfigFile, container corev1.Container, kubeconfig string, extraArgs []string) *exec.Cmd {
	t.Helper()
	unshare, errU := exec.LookPath("unshare")
	chroot, errC := exec.LookPath("chroot")
	if os.Geteuid() != 0 || errU != nil || errC != nil || exec.Command(unshare, "-m", "true").Run() != nil {
		t.Logf("not root, or no unshare, chroot or mount namespaces: running the image's binary as this user, on this machine's file system")
		return nil
	}
	root := filepath.Join(t.TempDir(), "rootfs")
	extractRootfs(t, img, root)
	// The mount points a container runtime makes.
	for _, d := range []string{"tmp", "proc"} {
		require.NoError(t, os.Mkdir(filepath.Join(root, d), 0o755))
	}
	// The kubeconfig is copied into the container's /tmp: it must not
	// name files outside it.
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	require.NoError(t, err)
	require.NoError(t, clientcmdapi.FlattenConfig(kc))
	flat := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, flat))

	args := []string{"-m", "--propagation", "private", "sh", "-c", asInPodScript, "sh", chroot, root, flat, cf.Config.User}
	env := append([]string{}, cf.Config.Env...)
	for _, e := range container.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	for _, e := range env {
		require.NotRegexp(t, `\s`, e, "asInPodScript splits the environment at spaces")
	}
	args = append(args, env...)
	args = append(args, "--")
	args = append(args, cf.Config.Entrypoint...)
	args = append(args, container.Args...)
	args = append(args, "--kubeconfig=/tmp/kubeconfig")
	return exec.Command(unshare, append(args, extraArgs...)...)
}

// runsAsInPod fails unless the process pid runs as 65532:65532 (real,
// effective, saved and file system ids) with a read-only root file
// system, and says what it saw.
func runsAsInPod(pid int) (string, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "", err
	}
	var seen []string
	ok := map[string]bool{}
	for _, l := range strings.Split(string(status), "\n") {
		if f := strings.Fields(l); len(f) == 5 && (f[0] == "Uid:" || f[0] == "Gid:") {
			seen = append(seen, strings.Join(f, " "))
			ok[f[0]] = f[1] == "65532" && f[2] == "65532" && f[3] == "65532" && f[4] == "65532"
		}
	}
	if !ok["Uid:"] || !ok["Gid:"] {
		return "", fmt.Errorf("process %d does not run as 65532:65532 (yet): %v", pid, seen)
	}
	mounts, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		return "", err
	}
	// mountinfo: id parent major:minor root mount-point options ...; the
	// mount points as the process sees them, below its root.
	for _, l := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(l)
		if len(f) > 5 && f[4] == "/" {
			if !slices.Contains(strings.Split(f[5], ","), "ro") {
				return "", fmt.Errorf("the root of process %d is mounted %s", pid, f[5])
			}
			return fmt.Sprintf("runs with %s, its root / mounted %s", strings.Join(seen, ", "), f[5]), nil
		}
	}
	return "", fmt.Errorf("no root mount in /proc/%d/mountinfo", pid)
}

// extractRootfs writes the image's flattened file system under dir, with
// the owners and modes of its layers.
func extractRootfs(t *testing.T, img v1.Image, dir string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	walkImage(t, img, func(h *tar.Header, r io.Reader) {
		dst := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(dst, os.FileMode(h.Mode).Perm()))
		case tar.TypeReg:
			writeFile(t, dst, r, os.FileMode(h.Mode).Perm())
		default:
			t.Fatalf("%s: an entry of type %c, the image should hold files and folders only", h.Name, h.Typeflag)
		}
		require.NoError(t, os.Chown(dst, h.Uid, h.Gid))
		require.NoError(t, os.Chmod(dst, os.FileMode(h.Mode).Perm()))
	})
}
