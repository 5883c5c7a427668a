package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLeanImportGraph keeps packages with costly start-up out of the CLI:
// every package linked into the binary runs its init on every command, and
// start-up is most of the time of `oamflow dry-run --offline` (issue 4,
// Performance; hack/bench/render/run.sh measures it). The controller's
// engine belongs to cmd/oamflow-controller.
func TestLeanImportGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	require.NoError(t, err, "go list -deps")
	deps := strings.Fields(string(out))
	forbidden := []struct {
		prefix, reason string
		allow          []string
	}{
		{prefix: "k8s.io/apiserver/", reason: "API server library: about 200 ms of package init (via kubevela/pkg/util/singleton, or Helm's chart linter)"},
		{prefix: "go.etcd.io/", reason: "etcd client, brought by k8s.io/apiserver"},
		{prefix: "github.com/kubevela/workflow/", reason: "the workflow engine: the CLI patches status through pkg/workflowops",
			allow: []string{"github.com/kubevela/workflow/api/"}},
		{prefix: "github.com/oamflow/oamflow/pkg/workflow", reason: "the workflow engine; use pkg/workflowops",
			allow: []string{"github.com/oamflow/oamflow/pkg/workflowops"}},
		{prefix: "github.com/oamflow/oamflow/pkg/controller", reason: "controller code"},
		{prefix: "github.com/oamflow/oamflow/pkg/manager", reason: "controller wiring"},
		// Helm: dry-run templates bundled charts with pkg/helm/helmspec,
		// built on chart/loader, chartutil, engine and releaseutil only.
		{prefix: "github.com/oamflow/oamflow/pkg/helm", reason: "Helm install/upgrade client and remote chart fetchers; use pkg/helm/helmspec",
			allow: []string{"github.com/oamflow/oamflow/pkg/helm/helmspec"}},
		{prefix: "helm.sh/helm/v3/pkg/action", reason: "Helm's install/upgrade actions: with registry, repo, lint and kube, about 560 packages and half the binary"},
		{prefix: "helm.sh/helm/v3/pkg/registry", reason: "Helm's OCI registry client (oras, docker credentials)"},
		{prefix: "helm.sh/helm/v3/pkg/repo", reason: "Helm's chart repository client"},
		{prefix: "helm.sh/helm/v3/pkg/lint", reason: "Helm's chart linter"},
		{prefix: "helm.sh/helm/v3/pkg/kube", reason: "Helm's Kubernetes client (kubectl's resource builder)"},
		{prefix: "oras.land/", reason: "OCI registry client, brought by Helm's registry package"},
		{prefix: "sigs.k8s.io/controller-runtime/pkg/manager", reason: "controller manager (webhook server, metrics, leader election): use controller-runtime/pkg/log, not the root package, for LoggerFrom"},
		{prefix: "github.com/prometheus/", reason: "metrics registries and collectors, brought by controller-runtime's manager"},
		{prefix: "sigs.k8s.io/controller-runtime/pkg/webhook", reason: "webhook server, brought by the controller-runtime root package"},
	}
	for _, f := range forbidden {
		t.Run(f.prefix, func(t *testing.T) {
			var found []string
		next:
			for _, d := range deps {
				if !strings.HasPrefix(d, f.prefix) {
					continue
				}
				for _, a := range f.allow {
					if strings.HasPrefix(d, a) {
						continue next
					}
				}
				found = append(found, d)
			}
			assert.Empty(t, found, "cmd/oamflow links %s (%s); `go list -deps ./cmd/oamflow` and GODEBUG=inittrace=1 show how", f.prefix, f.reason)
		})
	}
}
