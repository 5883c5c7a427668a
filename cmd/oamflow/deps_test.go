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
		{prefix: "k8s.io/apiserver/", reason: "API server library: about 200 ms of package init (via kubevela/pkg/util/singleton)",
			// A few regexps, linked by Helm's chart linter.
			allow: []string{"k8s.io/apiserver/pkg/endpoints/deprecation"}},
		{prefix: "go.etcd.io/", reason: "etcd client, brought by k8s.io/apiserver"},
		{prefix: "github.com/kubevela/workflow/", reason: "the workflow engine: the CLI patches status through pkg/workflowops",
			allow: []string{"github.com/kubevela/workflow/api/"}},
		{prefix: "github.com/oamflow/oamflow/pkg/workflow", reason: "the workflow engine; use pkg/workflowops",
			allow: []string{"github.com/oamflow/oamflow/pkg/workflowops"}},
		{prefix: "github.com/oamflow/oamflow/pkg/controller", reason: "controller code"},
		{prefix: "github.com/oamflow/oamflow/pkg/manager", reason: "controller wiring"},
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
