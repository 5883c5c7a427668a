package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/pkg/cli"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// KubeVela, measured the same way (-kubevela): issue 18's targets are set
// against KubeVela's figures, and a machine's speed moves every figure, so
// the comparison that holds is the two controllers on one machine, back
// to back. The benchmark builds KubeVela's controller from a source tree
// the user points it at, installs that tree's CRDs and built-in
// definitions (as its chart does: definitions in vela-system) on the same
// fresh cluster, and runs it out of the cluster with the same settings:
// webhook off, the same revision limit and resync period, client defaults
// otherwise (as a KubeVela user runs it).

// kubevelaSystemNamespace is where KubeVela's chart puts its definitions.
const kubevelaSystemNamespace = "vela-system"

// buildKubeVela builds the controller (cmd/core) of the KubeVela source
// tree dir into out.
func buildKubeVela(dir, out string, errOut io.Writer) error {
	if _, err := os.Stat(filepath.Join(dir, "cmd", "core")); err != nil {
		return fmt.Errorf("-kubevela %s: not a KubeVela source tree (no cmd/core): %w", dir, err)
	}
	fmt.Fprintf(errOut, "building KubeVela's controller from %s …\n", dir)
	build := exec.Command("go", "build", "-o", out, "./cmd/core")
	build.Dir, build.Stdout, build.Stderr = dir, errOut, errOut
	if err := build.Run(); err != nil {
		return fmt.Errorf("building KubeVela's controller: %w", err)
	}
	return nil
}

// installKubeVela applies the CRDs of the KubeVela source tree dir, waits
// until they are served, and applies its built-in definitions into
// vela-system.
func installKubeVela(ctx context.Context, cfg *rest.Config, dir string) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	crds, err := readManifests(filepath.Join(dir, "charts", "vela-core", "crds"), nil)
	if err != nil {
		return err
	}
	if err := applyAll(ctx, cl, crds); err != nil {
		return err
	}
	names := make([]string, 0, len(crds))
	for _, crd := range crds {
		names = append(names, crd.GetName())
	}
	if err := cli.WaitEstablished(ctx, cl, names, time.Minute); err != nil {
		return err
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(kubevelaSystemNamespace)
	// The chart's templates name the namespace through a Helm helper; it
	// is the only template expression in them.
	namespaced := strings.NewReplacer(`{{ include "systemDefinitionNamespace" . }}`, kubevelaSystemNamespace)
	defs, err := readManifests(filepath.Join(dir, "charts", "vela-core", "templates", "defwithtemplate"), namespaced)
	if err != nil {
		return err
	}
	// A fresh client: its RESTMapper learns the CRDs just served.
	if cl, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	return applyAll(ctx, cl, append([]*unstructured.Unstructured{ns}, defs...))
}

// readManifests decodes every YAML document of the .yaml files of dir,
// each file's text first passed through r when it is not nil.
func readManifests(dir string, r *strings.Replacer) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no manifests in %s", dir)
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		text := string(raw)
		if r != nil {
			text = r.Replace(text)
		}
		objs, err := helmspec.ParseManifest(text)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// applyAll server-side applies objs in order.
func applyAll(ctx context.Context, cl client.Client, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		if err := cl.Patch(ctx, o, client.Apply, client.FieldOwner("bench-apps"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// kubevelaArgs are KubeVela's flags for what startController sets on
// oamflow's: metrics address, no probes, resync period, webhook off,
// revision limit. KubeVela reads the kubeconfig from $KUBECONFIG.
func kubevelaArgs(c config, metricsAddr string) []string {
	return []string{
		"--metrics-addr", metricsAddr,
		"--health-addr", "0",
		"--application-re-sync-period", c.resync.String(),
		"--use-webhook=" + fmt.Sprint(c.webhook),
		"--application-revision-limit=" + fmt.Sprint(c.revisionLimit),
	}
}
