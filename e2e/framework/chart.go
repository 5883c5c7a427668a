package framework

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/oamflow/oamflow/hack/buildflags"
)

// repoRoot is the module root (this file is e2e/framework/chart.go).
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// InstallChart installs charts/oamflow into c as release "oamflow" in
// namespace (created), as `helm install oamflow charts/oamflow -n
// <namespace> --create-namespace` does, with values, and fails t on error.
func InstallChart(t testing.TB, c *Cluster, namespace string, values map[string]any) *release.Release {
	t.Helper()
	getter := genericclioptions.NewConfigFlags(false)
	kubeconfig, ns := c.Kubeconfig, namespace
	getter.KubeConfig, getter.Namespace = &kubeconfig, &ns
	cfg := &action.Configuration{}
	if err := cfg.Init(getter, namespace, "secret", func(format string, v ...any) { t.Logf("helm: "+format, v...) }); err != nil {
		t.Fatalf("helm configuration for %s: %v", c, err)
	}
	chrt, err := loader.Load(filepath.Join(repoRoot(), "charts", "oamflow"))
	if err != nil {
		t.Fatalf("loading charts/oamflow: %v", err)
	}
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.CreateNamespace = "oamflow", namespace, true
	install.Timeout = 3 * time.Minute
	rel, err := install.Run(chrt, values)
	if err != nil {
		t.Fatalf("helm install on %s: %v", c, err)
	}
	t.Logf("release %s: %s", rel.Name, rel.Info.Status)
	return rel
}

// BuildController builds cmd/oamflow-controller, with the build tags
// given (the fault suite's "faults" links its API-error injector), into a
// temporary folder and returns the binary's path.
func BuildController(t testing.TB, tags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "oamflow-controller")
	args := []string{"build", "-o", bin, "-tags", strings.Join(append([]string{buildflags.ControllerTags}, tags...), ",")}
	build := exec.Command("go", append(args, "./cmd/oamflow-controller")...)
	build.Dir = repoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/oamflow-controller: %v\n%s", err, out)
	}
	return bin
}
