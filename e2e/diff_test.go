//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/e2e/framework"
	"github.com/oamflow/oamflow/pkg/cli"
	"github.com/oamflow/oamflow/pkg/localcluster"
)

// diffE2EOpts vary the Application of TestDiffAcceptance.
type diffE2EOpts struct {
	// mode2 is the MODE env value of member-2's override.
	mode2 string
	// noExtra drops the extra component (a ConfigMap on both members).
	noExtra bool
	// keep adds a garbage-collect policy with keepLegacyResource.
	keep bool
	// taken adds a component whose Deployment another Application owns.
	taken bool
}

func diffE2EApp(o diffE2EOpts) string {
	var b strings.Builder
	b.WriteString(`apiVersion: core.oam.dev/v1beta1
kind: Application
metadata: {name: plan, namespace: default}
spec:
  components:
    - name: web
      type: webservice
      properties: {image: "registry.invalid/web:1"}
`)
	if !o.noExtra {
		b.WriteString(`    - name: extra
      type: k8s-objects
      properties:
        objects:
          - {apiVersion: v1, kind: ConfigMap, metadata: {name: extra}, data: {a: b}}
`)
	}
	if o.taken {
		b.WriteString(`    - name: taken
      type: webservice
      properties: {image: "registry.invalid/taken:1"}
`)
	}
	fmt.Fprintf(&b, `  policies:
    - {name: m1, type: topology, properties: {clusters: [member-1]}}
    - {name: m2, type: topology, properties: {clusters: [member-2]}}
    - name: m1-env
      type: override
      properties:
        components: [{name: web, properties: {env: [{name: MODE, value: one}]}}]
    - name: m2-env
      type: override
      properties:
        components: [{name: web, properties: {env: [{name: MODE, value: %s}]}}]
`, o.mode2)
	if o.keep {
		b.WriteString("    - {name: gc, type: garbage-collect, properties: {keepLegacyResource: true}}\n")
	}
	b.WriteString(`  workflow:
    steps:
      - {name: deploy-1, type: deploy, properties: {policies: [m1, m1-env]}}
      - {name: deploy-2, type: deploy, properties: {policies: [m2, m2-env]}}
`)
	return b.String()
}

// TestDiffAcceptance is the acceptance test of `oamflow diff` (issue 22)
// on local clusters with the controller running: an app on two members;
// one override value changed shows exactly that field on exactly that
// member (exit 1) and after up, nothing (exit 0); a removed component is
// deleted by GC on each member, or kept with keepLegacyResource; a
// Deployment another Application owns is a conflict naming it; drift is an
// update, a field another manager owns is not shown; a Helm component's
// changed values are a manifest diff of its release, unchanged ones
// nothing (its remote chart taken from the release's record); an
// unreachable member
// is unknown (exit 2 unless --ignore-unreachable). Every API server keeps
// an audit log; at the end the requests diff sent (its User-Agent) are
// counted per cluster: some reads and dry-runs, 0 writes.
func TestDiffAcceptance(t *testing.T) {
	env := framework.Start(t, 3, framework.WithAuditLog())
	hub := env.Cluster(t, "local")
	m1, m2 := env.Cluster(t, "member-1"), env.Cluster(t, "member-2")
	for _, m := range []*framework.Cluster{m1, m2} {
		_, err := framework.Oamflow(t, hub.Kubeconfig, "cluster", "join", m.Kubeconfig, "--name", m.Name)
		require.NoError(t, err)
	}
	framework.StartController(t, hub)
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1beta1.AddToScheme(s))
	hubClient, err := client.New(hub.Config, client.Options{Scheme: s})
	require.NoError(t, err)
	ctx := context.Background()
	dir := t.TempDir()
	key := client.ObjectKey{Namespace: "default", Name: "plan"}

	diff := func(t *testing.T, o diffE2EOpts, args ...string) (string, int) {
		t.Helper()
		f := filepath.Join(dir, "app.yaml")
		require.NoError(t, os.WriteFile(f, []byte(diffE2EApp(o)), 0o644))
		out, err := framework.Oamflow(t, hub.Kubeconfig, append([]string{"diff", "-f", f}, args...)...)
		var ee *cli.ExitError
		switch {
		case err == nil:
			return out, cli.ExitOK
		case errors.As(err, &ee):
			return out, ee.Code
		}
		t.Fatalf("diff: %v", err)
		return "", 0
	}
	up := func(t *testing.T, o diffE2EOpts) {
		t.Helper()
		f := filepath.Join(dir, "app.yaml")
		require.NoError(t, os.WriteFile(f, []byte(diffE2EApp(o)), 0o644))
		_, err := framework.Oamflow(t, hub.Kubeconfig, "up", "-f", f, "--wait", "--timeout", "5m")
		require.NoError(t, err)
		mcWaitRunningGeneration(t, hubClient, key, 3*time.Minute)
	}

	defer t.Run("NoWritesAtAnyAPIServer", func(t *testing.T) {
		for _, name := range []string{"local", "member-1", "member-2"} {
			n := countDiffRequests(t, env.Manager.AuditLogPath(name))
			t.Logf("cluster %s: diff sent %d requests, %d of them dry-run writes, %d writes", name, n.all, n.dryRun, len(n.writes))
			assert.NotZero(t, n.all, "cluster %s: the audit log holds diff's requests", name)
			assert.Empty(t, n.writes, "cluster %s: diff wrote", name)
			if name != "local" {
				assert.NotZero(t, n.dryRun, "cluster %s: diff compares through dry-run applies", name)
			}
		}
	})
	base := diffE2EOpts{mode2: "two"}
	up(t, base)
	ok := t.Run("UpThenDiffIsClean", func(t *testing.T) {
		out, code := diff(t, base)
		assert.Equal(t, cli.ExitDiffNone, code, out)
		assert.Contains(t, out, "Plan: 0 to create, 0 to update, 0 to delete, 0 conflict(s), 4 unchanged")
	})
	if !ok {
		return
	}

	t.Run("OneOverrideValueOnOneMember", func(t *testing.T) {
		changed := diffE2EOpts{mode2: "three"}
		out, code := diff(t, changed, "-o", "json")
		assert.Equal(t, cli.ExitDiffChanges, code, out)
		var rep struct {
			Clusters []struct {
				Cluster string
				Objects []struct{ Action, Kind, Name, Diff string }
			}
		}
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		var updates []string
		for _, cd := range rep.Clusters {
			for _, od := range cd.Objects {
				if od.Action != "unchanged" {
					updates = append(updates, cd.Cluster+" "+od.Action+" "+od.Kind+" "+od.Name)
					var lines []string
					for _, l := range strings.Split(od.Diff, "\n") {
						if (strings.HasPrefix(l, "-") || strings.HasPrefix(l, "+")) && !strings.HasPrefix(l, "---") && !strings.HasPrefix(l, "+++") {
							lines = append(lines, strings.TrimSpace(l[1:]))
						}
					}
					assert.Equal(t, []string{"value: two", "value: three"}, lines)
				}
			}
		}
		assert.Equal(t, []string{"member-2 update Deployment web"}, updates)

		up(t, changed)
		out, code = diff(t, changed)
		assert.Equal(t, cli.ExitDiffNone, code, out)
	})
	base = diffE2EOpts{mode2: "three"}

	t.Run("RemovedComponentIsGarbage", func(t *testing.T) {
		out, code := diff(t, diffE2EOpts{mode2: "three", noExtra: true})
		assert.Equal(t, cli.ExitDiffChanges, code, out)
		assert.Contains(t, out, "cluster member-1:\n  - delete (GC) ConfigMap default/extra (component extra)")
		assert.Contains(t, out, "cluster member-2:\n  - delete (GC) ConfigMap default/extra (component extra)")
		out, code = diff(t, diffE2EOpts{mode2: "three", noExtra: true, keep: true})
		assert.Equal(t, cli.ExitDiffNone, code, out)
		assert.Contains(t, out, "= kept (GC) ConfigMap default/extra (component extra)")
	})

	t.Run("DeploymentOfAnotherApplication", func(t *testing.T) {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: "default",
			Labels: map[string]string{v1beta1.LabelAppName: "other", v1beta1.LabelAppNamespace: "default"}}}
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "taken"}}
		d.Spec.Template.Labels = map[string]string{"app": "taken"}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "registry.invalid/other:1"}}
		require.NoError(t, m1.Client.Create(ctx, d))
		out, code := diff(t, diffE2EOpts{mode2: "three", taken: true})
		assert.Equal(t, cli.ExitDiffChanges, code, out)
		assert.Contains(t, out, "! conflict Deployment default/taken (component taken, step deploy-1): owned by Application default/other")
	})

	t.Run("DriftAndOtherManagers", func(t *testing.T) {
		// The scale by another manager first, and settled (4 available
		// replicas, the app healthy again): while it is not, the
		// controller re-checks the app every 2 s and its drift repair
		// could undo member-1's drift before diff sees it.
		scale := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "default"}, "spec": map[string]any{"replicas": int64(4)}}}
		require.NoError(t, m2.Client.Patch(ctx, scale, client.Apply, client.FieldOwner("hpa-controller"), client.ForceOwnership))
		framework.WaitFor(t, 2*time.Minute, "member-2's web with 4 available replicas and the app healthy", func(ctx context.Context) (bool, error) {
			d := &appsv1.Deployment{}
			if err := m2.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, d); err != nil {
				return false, err
			}
			a := &v1beta1.Application{}
			if err := hubClient.Get(ctx, key, a); err != nil {
				return false, err
			}
			s := mcFindService(a.Status.Services, "web", "member-2")
			return d.Status.AvailableReplicas == 4 && a.Status.Phase == common.ApplicationRunning && s != nil && s.Healthy, nil
		})
		d := &appsv1.Deployment{}
		require.NoError(t, m1.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, d))
		d.Spec.Template.Spec.Containers[0].Image = "registry.invalid/web:by-hand"
		require.NoError(t, m1.Client.Update(ctx, d, client.FieldOwner("kubectl-edit")))
		out, code := diff(t, base)
		assert.Equal(t, cli.ExitDiffChanges, code, out)
		assert.Contains(t, out, "cluster member-1:\n  ~ update Deployment default/web")
		assert.Contains(t, out, "-        image: registry.invalid/web:by-hand\n      +        image: registry.invalid/web:1")
		assert.Contains(t, out, "cluster member-2:\n  = 2 objects unchanged")
		assert.NotContains(t, out, "replicas")
	})

	t.Run("HelmValuesChangedOrNot", func(t *testing.T) {
		// A chart from a Helm repository, installed by the controller on
		// the hub: diff renders it from the chart the release's record
		// keeps (the CLI fetches no chart).
		repo := hmNewChartRepo(t, "simple")
		chartApp := func(msg string) string {
			return fmt.Sprintf(`apiVersion: core.oam.dev/v1beta1
kind: Application
metadata: {name: chart, namespace: default}
spec:
  components:
    - name: chart
      type: helm
      properties:
        chart: {source: simple, repoURL: %q, version: "0.1.0"}
        values: {message: %s}
`, repo.URL, msg)
		}
		f := filepath.Join(dir, "chart.yaml")
		require.NoError(t, os.WriteFile(f, []byte(chartApp("hi")), 0o644))
		_, err := framework.Oamflow(t, hub.Kubeconfig, "up", "-f", f, "--wait", "--timeout", "3m")
		require.NoError(t, err)
		helmDiff := func(msg string) (string, int) {
			require.NoError(t, os.WriteFile(f, []byte(chartApp(msg)), 0o644))
			out, err := framework.Oamflow(t, hub.Kubeconfig, "diff", "-f", f)
			var ee *cli.ExitError
			switch {
			case err == nil:
				return out, cli.ExitOK
			case errors.As(err, &ee):
				return out, ee.Code
			}
			t.Fatalf("diff: %v", err)
			return "", 0
		}
		out, code := helmDiff("hi")
		assert.Equal(t, cli.ExitDiffNone, code, out)
		assert.Contains(t, out, "cluster local:\n  = 1 object unchanged")
		out, code = helmDiff("bye")
		assert.Equal(t, cli.ExitDiffChanges, code, out)
		assert.Contains(t, out, "~ update HelmRelease default/chart (component chart, step chart)")
		assert.Contains(t, out, "-  message: hi\n      +  message: bye\n")
	})

	t.Run("UnreachableMember", func(t *testing.T) {
		_, err := env.Stop(context.Background(), "member-2", localcluster.CompKubeAPIServer)
		require.NoError(t, err)
		out, code := diff(t, base)
		assert.Equal(t, cli.ExitDiffError, code, out)
		assert.Contains(t, out, "cluster member-2:\n  ? unknown: ")
		// member-1's change is one the controller cannot undo before
		// diff looks (the drift of DriftAndOtherManagers may already be
		// repaired by a resync): the extra component removed.
		out, code = diff(t, diffE2EOpts{mode2: "three", noExtra: true}, "--ignore-unreachable")
		assert.Equal(t, cli.ExitDiffChanges, code, out)
		member1, _, _ := strings.Cut(out, "cluster member-2:")
		assert.Contains(t, member1, "cluster member-1:\n", out)
		assert.Contains(t, member1, "  - delete (GC) ConfigMap default/extra (component extra)\n", "member-1's change is still a change")
	})
}

// diffRequests counts the requests of one audit log sent by `oamflow diff`.
type diffRequests struct {
	all, dryRun int
	// writes are the verb and URI of every request that could change
	// something: neither a read nor a dry-run.
	writes []string
}

// countDiffRequests reads a kube-apiserver audit log (JSON Events, one a
// line) and counts the requests whose User-Agent is diff's.
func countDiffRequests(t *testing.T, path string) diffRequests {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var n diffRequests
	for _, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var ev struct{ Verb, RequestURI, UserAgent, Stage string }
		require.NoError(t, json.Unmarshal([]byte(line), &ev), "audit log %s", path)
		if !strings.HasPrefix(ev.UserAgent, cli.DiffUserAgentPrefix) || ev.Stage != "ResponseComplete" {
			continue
		}
		n.all++
		switch {
		case ev.Verb == "get" || ev.Verb == "list" || ev.Verb == "watch":
		case strings.Contains(ev.RequestURI, "dryRun=All"):
			n.dryRun++
		default:
			n.writes = append(n.writes, ev.Verb+" "+ev.RequestURI)
		}
	}
	return n
}
