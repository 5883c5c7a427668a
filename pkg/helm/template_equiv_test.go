package helm

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// actionTemplate is `helm template` through Helm's install action
// (client-only dry run): the reference helmspec.RenderChart must match
// object for object, so that the CLI can render charts without linking
// the action package.
func actionTemplate(ctx context.Context, s *helmspec.Spec, d *helmspec.Desired) ([]*unstructured.Unstructured, error) {
	in := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	in.DryRun = true
	in.ClientOnly = true
	in.Replace = true
	in.ReleaseName = s.Release.Name
	in.Namespace = s.Release.Namespace
	in.IncludeCRDs = !s.Options.EffectiveSkipCRDs()
	in.DisableHooks = s.Options.SkipHooks
	rel, err := in.RunWithContext(ctx, d.Chart.Chart, d.Values)
	if err != nil {
		return nil, err
	}
	objs, err := helmspec.ParseManifest(rel.Manifest)
	if err != nil || s.Options.SkipHooks {
		return objs, err
	}
	for _, h := range rel.Hooks {
		if s.Options.EffectiveSkipTests() && isTestHookForEquiv(h) {
			continue
		}
		hs, err := helmspec.ParseManifest(h.Manifest)
		if err != nil {
			return nil, err
		}
		objs = append(objs, hs...)
	}
	return objs, nil
}

func isTestHookForEquiv(h *release.Hook) bool {
	for _, e := range h.Events {
		if e == release.HookTest {
			return true
		}
	}
	return false
}

// TestRenderChartMatchesHelmInstallDryRun renders every test chart (and
// vela-workflow's real chart when the module cache has it) with several
// option sets through both paths and compares the objects in order.
func TestRenderChartMatchesHelmInstallDryRun(t *testing.T) {
	root := filepath.Join(moduleRoot(t), "charts", "testdata")
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	type chartCase struct{ root, source string }
	var charts []chartCase
	for _, e := range entries {
		if e.IsDir() {
			charts = append(charts, chartCase{root, e.Name()})
		}
	}
	if out, err := exec.Command("go", "mod", "download", "-json", "github.com/kubevela/workflow@v0.7.2").Output(); err == nil {
		var m struct{ Dir string }
		if json.Unmarshal(out, &m) == nil && m.Dir != "" {
			charts = append(charts, chartCase{filepath.Join(m.Dir, "charts"), "vela-workflow"})
		}
	}
	f := false
	optionSets := []struct {
		name string
		opts map[string]any
	}{
		{name: "defaults", opts: map[string]any{}},
		{name: "skipHooks", opts: map[string]any{"skipHooks": true}},
		{name: "withTests", opts: map[string]any{"skipTests": false}},
		{name: "noCRDs", opts: map[string]any{"includeCRDs": f}},
	}
	ctx := context.Background()
	for _, c := range charts {
		for _, o := range optionSets {
			t.Run(c.source+"/"+o.name, func(t *testing.T) {
				s := spec(t, map[string]any{"chart": map[string]any{"source": c.source}, "options": o.opts}, "web", "default")
				fetch := helmspec.BundledCharts{Root: c.root}
				d1, err := helmspec.Prepare(ctx, fetch, nil, helmspec.Request{Namespace: "default", Spec: s})
				if err != nil {
					t.Skipf("chart %s does not load: %v", c.source, err)
				}
				want, wantErr := actionTemplate(ctx, s, d1)
				d2, err := helmspec.Prepare(ctx, fetch, nil, helmspec.Request{Namespace: "default", Spec: s})
				require.NoError(t, err)
				got, gotErr := helmspec.RenderChart(s, d2)
				if wantErr != nil {
					require.Error(t, gotErr, "helm install --dry-run failed with %v", wantErr)
					assert.Contains(t, gotErr.Error(), wantErr.Error())
					return
				}
				require.NoError(t, gotErr)
				assert.Equal(t, want, got)
			})
		}
	}
}
