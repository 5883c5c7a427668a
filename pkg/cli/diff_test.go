package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
	"github.com/oamflow/oamflow/pkg/revision"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

func TestPruneTo(t *testing.T) {
	obj := map[string]any{
		"metadata": map[string]any{"name": "web", "labels": map[string]any{"a": "1", "b": "2"}},
		"spec": map[string]any{
			"replicas": int64(3),
			"containers": []any{
				map[string]any{"name": "web", "image": "nginx", "imagePullPolicy": "Always"},
				map[string]any{"name": "side", "image": "busybox"},
			},
			"finalizers": []any{"x", "y"},
			"resources":  map[string]any{"limits": map[string]any{"cpu": "1"}},
		},
	}
	cases := []struct {
		reason string
		set    string
		want   map[string]any
	}{
		{reason: "named fields are kept, others dropped",
			set:  `{"f:metadata":{"f:name":{},"f:labels":{".":{},"f:a":{}}}}`,
			want: map[string]any{"metadata": map[string]any{"name": "web", "labels": map[string]any{"a": "1"}}}},
		{reason: "list items are matched by their keys, and only their owned fields kept",
			set: `{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:name":{},"f:image":{}}}}}`,
			want: map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "image": "nginx"}}}}},
		{reason: "set members are matched by value",
			set:  `{"f:spec":{"f:finalizers":{"v:\"y\"":{}}}}`,
			want: map[string]any{"spec": map[string]any{"finalizers": []any{"y"}}}},
		{reason: "a map owned without children is atomic: kept whole",
			set:  `{"f:spec":{"f:resources":{}}}`,
			want: map[string]any{"spec": map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "1"}}}}},
		{reason: "a field not owned (replicas) is not there",
			set:  `{"f:spec":{"f:finalizers":{"i:0":{}}}}`,
			want: map[string]any{"spec": map[string]any{"finalizers": []any{"x"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			var set map[string]any
			require.NoError(t, json.Unmarshal([]byte(tc.set), &set))
			assert.Equal(t, tc.want, pruneTo(obj, set))
		})
	}
}

func TestMaskSecretData(t *testing.T) {
	live := map[string]any{"data": map[string]any{"same": "c2FtZQ==", "old": "b2xk", "gone": "Z29uZQ=="}}
	after := map[string]any{"data": map[string]any{"same": "c2FtZQ==", "old": "bmV3", "added": "YWRk"}}
	maskSecretData(live, after)
	out := unifiedDiff(live, after)
	for _, v := range []string{"c2FtZQ==", "b2xk", "bmV3", "YWRk", "Z29uZQ=="} {
		assert.NotContains(t, out, v, "no Secret value is printed")
	}
	assert.Equal(t, after["data"].(map[string]any)["same"], live["data"].(map[string]any)["same"], "an unchanged key shows the same on both sides (no diff line)")
	assert.Contains(t, after["data"].(map[string]any)["same"], "<unchanged hmac:")
	assert.Contains(t, after["data"].(map[string]any)["old"], "<changed hmac:")
	assert.Contains(t, after["data"].(map[string]any)["added"], "<changed hmac:")
	assert.NotContains(t, out, "-  same", "an unchanged key is context at most")
	assert.NotContains(t, out, "+  same", "an unchanged key is context at most")
}

// writeCounter counts the requests an API server receives through
// countingProxy: writes (anything but GET and HEAD) without dryRun=All,
// and dry runs.
type writeCounter struct {
	mu      sync.Mutex
	writes  []string
	dryRuns int
}

func (w *writeCounter) counts() ([]string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.writes...), w.dryRuns
}

// countingProxy serves cfg's API server on a local address (HTTPS with
// the returned CA when tls; no authentication: the proxy authenticates as
// cfg) and counts what passes.
func countingProxy(t *testing.T, cfg *rest.Config, tls bool) (string, []byte, *writeCounter) {
	t.Helper()
	rt, err := rest.TransportFor(cfg)
	require.NoError(t, err)
	target, err := url.Parse(cfg.Host)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = rt
	wc := &writeCounter{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			wc.mu.Lock()
			if r.URL.Query().Get("dryRun") == "All" {
				wc.dryRuns++
			} else {
				wc.writes = append(wc.writes, r.Method+" "+r.URL.Path)
			}
			wc.mu.Unlock()
		}
		r.Header.Del("Authorization")
		rp.ServeHTTP(w, r)
	})
	if !tls {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL, nil, wc
	}
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return srv.URL, ca, wc
}

// diffEnv is a hub and a member (both real API servers), each behind a
// counting proxy, with member-1 and an unreachable member-down registered.
type diffEnv struct {
	hub, member *envtest.Environment
	// counted reaches the hub through its proxy; direct does not (the
	// test's own writes).
	counted, direct string
	hubCount        *writeCounter
	memberCount     *writeCounter
	dir             string
}

func proxyKubeconfig(t *testing.T, server string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: server}
	kc.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{Token: "counted"}
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy", Namespace: "default"}
	kc.CurrentContext = "proxy"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, p))
	return p
}

// TestDiffAgainstAPIServers runs `oamflow diff` against a hub and a
// member: creates, updates of exactly the changed field on exactly the
// changed member, drift, fields of other managers, conflicts, Secrets,
// garbage collection, an unreachable member, invalid input; and counts
// the writes the API servers received from diff: none.
func TestDiffAgainstAPIServers(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1beta1.AddToScheme(s))
	hub := envtest.New(t, envtest.WithCRDs("charts/oamflow/crds"), envtest.WithScheme(s))
	member := envtest.New(t, envtest.WithScheme(s))
	for _, c := range []client.Client{hub.Client, member.Client} {
		require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: multicluster.DefaultSystemNamespace}}))
	}
	hubURL, _, hubCount := countingProxy(t, hub.Config, false)
	memberURL, memberCA, memberCount := countingProxy(t, member.Config, true)
	for name, endpoint := range map[string]string{"member-1": memberURL, "member-down": "https://127.0.0.1:1"} {
		sec, err := multicluster.NewClusterSecret(multicluster.DefaultSystemNamespace, name,
			multicluster.Credentials{Endpoint: endpoint, CAData: memberCA, Token: "counted"}, nil, multicluster.ClientSettings{})
		require.NoError(t, err)
		require.NoError(t, hub.Client.Create(ctx, sec))
	}
	e := &diffEnv{hub: hub, member: member, counted: proxyKubeconfig(t, hubURL), direct: writeKubeconfig(t, hub.Config),
		hubCount: hubCount, memberCount: memberCount, dir: t.TempDir()}

	t.Run("a new Application: everything is a create, Secret data masked", func(t *testing.T) {
		out, code := e.diff(t, diffApp(diffAppOpts{mode: "a"}))
		assert.Equal(t, ExitDiffChanges, code, out)
		assert.Contains(t, out, "cluster local:\n  + create Deployment default/web (component web, step deploy-local)")
		assert.Contains(t, out, "cluster member-1:\n  + create Deployment default/web (component web, step deploy-member)")
		assert.Contains(t, out, "+ create Secret default/creds (component config")
		assert.NotContains(t, out, "s3cret")
		assert.NotContains(t, out, "czNjcmV0", "not even base64")
		assert.Contains(t, out, "password: <changed hmac:")
	})

	e.apply(t, diffApp(diffAppOpts{mode: "a"}))
	t.Run("after the apply nothing changes", func(t *testing.T) {
		out, code := e.diff(t, diffApp(diffAppOpts{mode: "a"}))
		assert.Equal(t, ExitDiffNone, code, out)
		assert.Contains(t, out, "Plan: 0 to create, 0 to update, 0 to delete, 0 conflict(s), 4 unchanged")
	})

	t.Run("an apply-object step: its object on its cluster, its if decided from the live status", func(t *testing.T) {
		out, code := e.diff(t, diffApp(diffAppOpts{mode: "a", object: true}))
		assert.Equal(t, ExitDiffChanges, code, out)
		assert.Contains(t, out, "cluster member-1:\n  + create ConfigMap default/note (step note)")
		assert.Contains(t, out, "depends on deploy-local (step note runs only if: status[\"deploy-local\"].succeeded; not in the live Application's status)",
			"no controller ran the workflow here: the live Application has no step status")
		assert.Contains(t, out, "Plan: 1 to create, 0 to update, 0 to delete, 0 conflict(s), 4 unchanged")
	})

	t.Run("one override value changed: exactly that field on exactly that member", func(t *testing.T) {
		out, code := e.diff(t, diffApp(diffAppOpts{mode: "b"}), "-o", "json")
		assert.Equal(t, ExitDiffChanges, code, out)
		var rep diffReport
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		assert.Equal(t, diffSummary{Update: 1, Unchanged: 3}, rep.Summary)
		var updates []string
		for _, cd := range rep.Clusters {
			for _, od := range cd.Objects {
				if od.Action == actionUpdate {
					updates = append(updates, cd.Cluster+" "+od.Kind+" "+od.Name)
					assert.Equal(t, []string{"-          value: a", "+          value: b"}, changedLines(od.Diff))
				}
			}
		}
		assert.Equal(t, []string{"member-1 Deployment web"}, updates)
	})

	t.Run("drift on the live object is an update; fields another manager owns are not shown", func(t *testing.T) {
		d := &appsv1.Deployment{}
		require.NoError(t, hub.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, d))
		d.Spec.Template.Spec.Containers[0].Image = "nginx:hand-edited"
		require.NoError(t, hub.Client.Update(ctx, d, client.FieldOwner("kubectl-edit")))
		scale := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "default"}, "spec": map[string]any{"replicas": int64(5)}}}
		require.NoError(t, hub.Client.Patch(ctx, scale, client.Apply, client.FieldOwner("hpa-controller"), client.ForceOwnership))

		out, code := e.diff(t, diffApp(diffAppOpts{mode: "a"}))
		assert.Equal(t, ExitDiffChanges, code, out)
		assert.Contains(t, out, "cluster local:\n  ~ update Deployment default/web")
		assert.Contains(t, out, "      -      - image: nginx:hand-edited\n      +      - image: nginx:1.27\n")
		assert.NotContains(t, out, "replicas", "spec.replicas is the HPA's")
		assert.Contains(t, out, "Plan: 0 to create, 1 to update")
		e.apply(t, diffApp(diffAppOpts{mode: "a"}))
	})

	t.Run("an object another Application owns is a conflict naming it", func(t *testing.T) {
		taken := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: "default",
			Labels: map[string]string{v1beta1.LabelAppName: "other", v1beta1.LabelAppNamespace: "default"}}}
		require.NoError(t, hub.Client.Create(ctx, taken))
		out, code := e.diff(t, diffApp(diffAppOpts{mode: "a", taken: true}))
		assert.Equal(t, ExitDiffChanges, code, out)
		assert.Contains(t, out, "! conflict ConfigMap default/taken (component taken, step deploy-local): owned by Application default/other")
	})

	t.Run("a removed component is deleted by GC", func(t *testing.T) {
		out, code := e.diff(t, diffApp(diffAppOpts{mode: "a", noConfig: true}))
		assert.Equal(t, ExitDiffChanges, code, out)
		assert.Contains(t, out, "- delete (GC) Secret default/creds (component config)")
		assert.Contains(t, out, "- delete (GC) ConfigMap default/settings (component config)")
	})

	t.Run("keepLegacyResource keeps it", func(t *testing.T) {
		out, code := e.diff(t, diffApp(diffAppOpts{mode: "a", noConfig: true, gc: `{keepLegacyResource: true}`}))
		assert.Equal(t, ExitDiffNone, code, out)
		assert.Contains(t, out, "= kept (GC) Secret default/creds (component config)")
	})

	t.Run("an orphan rule orphans it", func(t *testing.T) {
		out, code := e.diff(t, diffApp(diffAppOpts{mode: "a", noConfig: true,
			gc: `{rules: [{selector: {resourceTypes: [ConfigMap]}, propagation: orphan}]}`}))
		assert.Equal(t, ExitDiffChanges, code, out)
		assert.Contains(t, out, "- orphan (GC) ConfigMap default/settings (component config)")
		assert.Contains(t, out, "- delete (GC) Secret default/creds (component config)")
	})

	t.Run("the live Application's orphan-resource finalizer orphans it, as the controller's collection does", func(t *testing.T) {
		a := &v1beta1.Application{}
		require.NoError(t, yaml.Unmarshal([]byte(diffApp(diffAppOpts{mode: "a"})), a))
		a.Namespace, a.Finalizers = "default", []string{v1beta1.FinalizerOrphanResource}
		require.NoError(t, hub.Client.Create(ctx, a))
		defer func() {
			a.Finalizers = nil
			require.NoError(t, hub.Client.Update(ctx, a))
			require.NoError(t, hub.Client.Delete(ctx, a))
		}()
		out, code := e.diff(t, diffApp(diffAppOpts{mode: "a", noConfig: true}))
		assert.Equal(t, ExitDiffChanges, code, out)
		assert.Contains(t, out, "- orphan (GC) Secret default/creds (component config)")
		assert.Contains(t, out, "- orphan (GC) ConfigMap default/settings (component config)")
	})

	t.Run("an unreachable member is unknown, exit 2 unless ignored", func(t *testing.T) {
		out, code := e.diff(t, diffApp(diffAppOpts{mode: "a", down: true}))
		assert.Equal(t, ExitDiffError, code, out)
		assert.Contains(t, out, "cluster member-down:\n  ? unknown: ")
		assert.Contains(t, out, "1 cluster unknown")
		out, code = e.diff(t, diffApp(diffAppOpts{mode: "a", down: true}), "--ignore-unreachable")
		assert.Equal(t, ExitDiffNone, code, out)
	})

	t.Run("an invalid Application: exit 2 with the messages of up", func(t *testing.T) {
		bad := strings.Replace(diffApp(diffAppOpts{mode: "a"}), "type: webservice", "type: no-such-type", 1)
		file := writeFile(t, e.dir, "bad.yaml", bad)
		_, errOut, code := runOamflow(t, "diff", "-f", file, "--kubeconfig", e.counted)
		assert.Equal(t, ExitDiffError, code)
		_, upErr, upCode := runOamflow(t, "up", "-f", file, "--kubeconfig", e.direct)
		assert.Equal(t, ExitUserError, upCode)
		assert.Equal(t, upErr, errOut)
		assert.Contains(t, errOut, "no-such-type")
	})

	t.Run("a Helm component: the chart's manifest against the live release's", func(t *testing.T) {
		e.helmRecord(t, "hi")
		helmArgs := []string{"--chart-root", "../../charts/testdata"}
		out, code := e.diff(t, helmApp("hi"), helmArgs...)
		assert.Equal(t, ExitDiffNone, code, out)
		assert.Contains(t, out, "= 1 object unchanged")

		out, code = e.diff(t, helmApp("bye"), helmArgs...)
		assert.Equal(t, ExitDiffChanges, code, out)
		assert.Contains(t, out, "~ update HelmRelease default/web (component web, step web)")
		assert.Contains(t, out, "--- release revision 1")
		assert.Contains(t, out, "-  message: hi\n      +  message: bye\n")

		// A remote chart: rendered from the chart the live release's
		// record keeps, when it is exactly the version asked for.
		remote := func(msg, version string) string {
			return strings.Replace(helmApp(msg), "source: simple", "source: simple, repoURL: 'https://charts.example.com', version: '"+version+"'", 1)
		}
		out, code = e.diff(t, remote("hi", "0.1.0"))
		assert.Equal(t, ExitDiffNone, code, out)
		assert.Contains(t, out, "= 1 object unchanged")
		out, code = e.diff(t, remote("bye", "0.1.0"))
		assert.Equal(t, ExitDiffChanges, code, out)
		assert.Contains(t, out, "~ update HelmRelease default/web (component web, step web)")
		assert.Contains(t, out, "(chart simple-0.1.0, as the live release's record keeps it)")
		assert.Contains(t, out, "-  message: hi\n      +  message: bye\n")

		out, code = e.diff(t, remote("bye", ">=0.1.0"))
		assert.Equal(t, ExitDiffNone, code, out)
		assert.Contains(t, out, "? not compared HelmRelease default/web (component web, step web)")
		assert.Contains(t, out, `version ">=0.1.0" is resolved when the controller installs`)
	})

	t.Run("up --diff shows the plan and applies only when confirmed", func(t *testing.T) {
		file := writeFile(t, e.dir, "up.yaml", diffApp(diffAppOpts{mode: "c"}))
		key := client.ObjectKey{Namespace: "default", Name: "shop"}
		out, code := runWithStdin(t, "no\n", "up", "--diff", "-f", file, "--kubeconfig", e.direct)
		assert.Equal(t, ExitOK, code, out)
		assert.Contains(t, out, "~ update Deployment default/web (component web, step deploy-member)")
		assert.Contains(t, out, "Apply? ")
		assert.Contains(t, out, "Nothing was applied.")
		assert.True(t, apierrors.IsNotFound(hub.Client.Get(ctx, key, &v1beta1.Application{})), "not applied")

		out, code = runWithStdin(t, "", "up", "--diff", "--yes", "-f", file, "--kubeconfig", e.direct)
		assert.Equal(t, ExitOK, code, out)
		assert.Contains(t, out, "Application default/shop created")
		assert.NotContains(t, out, "Apply? ")
		require.NoError(t, hub.Client.Get(ctx, key, &v1beta1.Application{}))

		out, code = runWithStdin(t, diffApp(diffAppOpts{mode: "c"}), "up", "--diff", "-f", "-", "--kubeconfig", e.direct)
		assert.Equal(t, ExitUserError, code, out)
		assert.Contains(t, out, "pass --yes")
	})

	t.Run("--revision diffs what a stored revision would apply", func(t *testing.T) {
		a := &v1beta1.Application{}
		require.NoError(t, yaml.Unmarshal([]byte(diffApp(diffAppOpts{mode: "a"})), a))
		a.Namespace = "default"
		live := &v1beta1.Application{}
		require.NoError(t, hub.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shop"}, live))
		a.UID = live.UID
		builtins, err := appfile.NewFSSource(definitions.FS, ".")
		require.NoError(t, err)
		rec := revision.NewRecorder(builtins)
		_, _, err = appfile.Validate(ctx, a, rec, nil)
		require.NoError(t, err)
		defs, err := rec.Definitions()
		require.NoError(t, err)
		require.NoError(t, hub.Client.Create(ctx, revision.Snapshot(a, defs, 1, "h")))
		file := writeFile(t, e.dir, "up.yaml", diffApp(diffAppOpts{mode: "c"}))
		out, code := e.diff(t, diffApp(diffAppOpts{mode: "c"}))
		assert.Equal(t, ExitDiffChanges, code, "the files' spec (mode c) differs from what runs: %s", out)
		out, code = e.diff(t, diffApp(diffAppOpts{mode: "c"}), "--revision", "1")
		assert.Equal(t, ExitDiffNone, code, "revision 1 (mode a) is what runs: %s", out)
		_, errOut, code := runOamflow(t, "diff", "-f", file, "--revision", "9", "--kubeconfig", e.counted)
		assert.Equal(t, ExitDiffError, code)
		assert.Contains(t, errOut, "ApplicationRevision default/shop-v9 does not exist")
	})

	hubWrites, hubDry := e.hubCount.counts()
	memberWrites, memberDry := e.memberCount.counts()
	assert.Empty(t, hubWrites, "diff writes nothing to the hub")
	assert.Empty(t, memberWrites, "diff writes nothing to the member")
	assert.Positive(t, hubDry, "the hub saw dry runs")
	assert.Positive(t, memberDry, "the member saw dry runs")
	t.Logf("dry runs: hub %d, member %d", hubDry, memberDry)
}

// helmApp is an Application with one helm component of the test chart
// "simple" with values {message: msg}.
func helmApp(msg string) string {
	return `apiVersion: core.oam.dev/v1beta1
kind: Application
metadata: {name: store}
spec:
  components:
    - name: web
      type: helm
      properties:
        chart: {source: simple}
        values: {message: ` + msg + `}
`
}

// helmRecord writes the record of Helm release default/web (revision 1,
// deployed, owned by Application default/store) with the manifest the
// chart "simple" renders with message msg.
func (e *diffEnv) helmRecord(t *testing.T, msg string) {
	t.Helper()
	ctx := context.Background()
	spec, err := helmspec.ParseSpecMap(map[string]any{"chart": map[string]any{"source": "simple"}, "values": map[string]any{"message": msg}},
		helmspec.Defaults{Name: "web", Namespace: "default"})
	require.NoError(t, err)
	charts := helmspec.BundledCharts{Root: "../../charts/testdata"}
	objs, err := helmspec.Template(ctx, charts, nil, helmspec.Request{Namespace: "default", Spec: spec})
	require.NoError(t, err)
	// Helm keeps the chart in the record too.
	ch, err := charts.Fetch(ctx, "default", spec.Chart)
	require.NoError(t, err)
	var manifest strings.Builder
	for _, o := range objs {
		y, err := yaml.Marshal(o.Object)
		require.NoError(t, err)
		manifest.WriteString("---\n" + string(y))
	}
	rel, err := json.Marshal(map[string]any{"name": "web", "namespace": "default", "version": 1, "manifest": manifest.String(), "chart": ch.Chart})
	require.NoError(t, err)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err = zw.Write(rel)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	rec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.web.v1", Namespace: "default", Labels: map[string]string{
			helmspec.RecordLabelOwner: helmspec.RecordOwner, helmspec.RecordLabelName: "web", helmspec.RecordLabelStatus: "deployed", helmspec.RecordLabelVersion: "1",
			helmspec.LabelOwnerName: "store", helmspec.LabelOwnerNamespace: "default"}},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{helmspec.RecordDataKey: []byte(base64.StdEncoding.EncodeToString(gz.Bytes()))},
	}
	require.NoError(t, e.hub.Client.Create(ctx, rec))
}

// runWithStdin runs oamflow with stdin and returns its output and error
// text together, and its exit code.
func runWithStdin(t *testing.T, stdin string, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	root := NewRootCommand(&out, &out)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	var ue *UserError
	switch {
	case err == nil:
		return out.String(), ExitOK
	case errors.As(err, &ue):
		return out.String() + err.Error(), ExitUserError
	}
	return out.String() + err.Error(), ExitRuntimeErr
}

// changedLines are the -/+ lines of a unified diff (not its headers).
func changedLines(d string) []string {
	var out []string
	for _, l := range strings.Split(d, "\n") {
		if (strings.HasPrefix(l, "-") || strings.HasPrefix(l, "+")) && !strings.HasPrefix(l, "---") && !strings.HasPrefix(l, "+++") {
			out = append(out, l)
		}
	}
	return out
}

func (e *diffEnv) diff(t *testing.T, app string, args ...string) (string, int) {
	t.Helper()
	file := writeFile(t, e.dir, "app.yaml", app)
	out, errOut, code := runOamflow(t, append([]string{"diff", "-f", file, "--kubeconfig", e.counted}, args...)...)
	if code == ExitDiffError {
		out += errOut
	}
	return out, code
}

// apply applies what diff plans as the controller would (through a
// Keeper, at the planned revision), directly, not through the proxies.
func (e *diffEnv) apply(t *testing.T, app string) {
	t.Helper()
	ctx := context.Background()
	file := writeFile(t, e.dir, "app.yaml", app)
	o := &diffOptions{global: &GlobalOptions{Kubeconfig: e.direct}, files: []string{file}, budgets: appfile.DefaultBudgets()}
	env, di, err := o.load(ctx, nil, &strings.Builder{})
	require.NoError(t, err)
	pols, err := resourcekeeper.ParsePolicies(di.af.App.Spec.Policies)
	require.NoError(t, err)
	k, err := resourcekeeper.New(di.app, di.revision, resourcekeeper.Options{Clients: env.reg, Trackers: env.hub, Policies: pols})
	require.NoError(t, err)
	for _, cl := range di.clusters {
		if cl == "member-1" {
			// The registry reaches member-1 through its proxy: apply
			// with a direct client instead.
			direct := multicluster.ClusterClientsFn(func(_ context.Context, name string) (client.Client, error) {
				if name == "member-1" {
					return e.member.Client, nil
				}
				return env.hub, nil
			})
			k, err = resourcekeeper.New(di.app, di.revision, resourcekeeper.Options{Clients: direct, Trackers: env.hub, Policies: pols})
			require.NoError(t, err)
		}
		var objs []*unstructured.Unstructured
		for _, it := range di.items[cl] {
			objs = append(objs, it.obj)
		}
		require.NoError(t, k.Apply(ctx, cl, objs), "applying to %s", cl)
	}
}

type diffAppOpts struct {
	// mode is the MODE env value the override sets on member-1.
	mode string
	// taken adds a component rendering a ConfigMap another app owns.
	taken bool
	// noConfig drops the config component (a Secret and a ConfigMap).
	noConfig bool
	// gc is a garbage-collect policy's properties.
	gc string
	// down adds the unreachable member-down to the member step.
	down bool
	// object adds an apply-object step putting a ConfigMap on member-1,
	// under an if condition reading deploy-local's outcome.
	object bool
}

// diffApp is an Application deploying web to the hub and to member-1
// (with an override), and a config component to the hub.
func diffApp(o diffAppOpts) string {
	clusters := "[member-1]"
	if o.down {
		clusters = "[member-1, member-down]"
	}
	var b strings.Builder
	b.WriteString(`apiVersion: core.oam.dev/v1beta1
kind: Application
metadata:
  name: shop
spec:
  components:
    - name: web
      type: webservice
      properties: {image: "nginx:1.27"}
`)
	if !o.noConfig {
		b.WriteString(`    - name: config
      type: k8s-objects
      properties:
        objects:
          - apiVersion: v1
            kind: Secret
            metadata: {name: creds}
            stringData: {password: s3cret}
          - apiVersion: v1
            kind: ConfigMap
            metadata: {name: settings}
            data: {level: info}
`)
	}
	if o.taken {
		b.WriteString(`    - name: taken
      type: k8s-objects
      properties:
        objects:
          - apiVersion: v1
            kind: ConfigMap
            metadata: {name: taken}
            data: {mine: "yes"}
`)
	}
	fmt.Fprintf(&b, `  policies:
    - name: to-local
      type: topology
      properties: {clusters: [local]}
    - name: to-members
      type: topology
      properties: {clusters: %s}
    - name: member-env
      type: override
      properties:
        selector: [web]
        components:
          - name: web
            properties:
              env: [{name: MODE, value: %s}]
`, clusters, o.mode)
	if o.gc != "" {
		fmt.Fprintf(&b, `    - name: gc
      type: garbage-collect
      properties: %s
`, o.gc)
	}
	b.WriteString(`  workflow:
    steps:
      - name: deploy-local
        type: deploy
        properties: {policies: [to-local]}
      - name: deploy-member
        type: deploy
        properties: {policies: [to-members, member-env]}
`)
	if o.object {
		b.WriteString(`      - name: note
        type: apply-object
        if: status["deploy-local"].succeeded
        properties:
          cluster: member-1
          value: {apiVersion: v1, kind: ConfigMap, metadata: {name: note}, data: {k: v}}
`)
	}
	return b.String()
}

// TestDiffOffline compares with live objects read from files, without a
// cluster.
func TestDiffOffline(t *testing.T) {
	dir := t.TempDir()
	app := diffApp
	appFile := writeFile(t, dir, "app.yaml", app(diffAppOpts{mode: "a"}))
	// The live objects: what the render makes, with what an API server
	// adds (defaults, status, managedFields, the cluster label).
	o := &diffOptions{global: &GlobalOptions{Namespace: "default"}, files: []string{appFile}, budgets: appfile.DefaultBudgets()}
	a, defs, err := o.readApp(context.Background(), nil, &strings.Builder{})
	require.NoError(t, err)
	di, err := o.render(context.Background(), nil, nil, a, defs, &strings.Builder{})
	require.NoError(t, err)
	liveOf := func(change func(obj *unstructured.Unstructured)) string {
		var b strings.Builder
		for _, cl := range di.clusters {
			for _, it := range di.items[cl] {
				obj := offlineDesired(it.obj)
				if cl != "local" {
					l := obj.GetLabels()
					l[v1beta1.LabelAppCluster] = cl
					obj.SetLabels(l)
				}
				obj.SetResourceVersion("42")
				obj.Object["status"] = map[string]any{"observedGeneration": int64(1)}
				if obj.GetKind() == "Deployment" {
					require.NoError(t, unstructured.SetNestedField(obj.Object, int64(1), "spec", "replicas"))
					require.NoError(t, unstructured.SetNestedField(obj.Object, int64(600), "spec", "progressDeadlineSeconds"))
				}
				if change != nil {
					change(obj)
				}
				y, err := yaml.Marshal(obj.Object)
				require.NoError(t, err)
				b.WriteString("---\n" + string(y))
			}
		}
		return b.String()
	}
	extra := `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: old
  namespace: default
  labels: {app.oam.dev/name: shop, app.oam.dev/namespace: default, app.oam.dev/component: old}
data: {a: b}
`
	cases := []struct {
		reason   string
		app      string
		live     string
		code     int
		contains []string
		absent   []string
	}{
		{reason: "the live objects as rendered, with server defaults and status: unchanged",
			live: liveOf(nil), code: ExitDiffNone, contains: []string{"4 unchanged"}, absent: []string{"replicas", "progressDeadline"}},
		{reason: "nothing live: creates",
			live: "", code: ExitDiffChanges, contains: []string{"+ create Deployment default/web", "password: <changed hmac:"}, absent: []string{"s3cret"}},
		{reason: "a changed image is an update of that field",
			live: liveOf(func(obj *unstructured.Unstructured) {
				if obj.GetKind() == "Deployment" && obj.GetLabels()[v1beta1.LabelAppCluster] == "" {
					c, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
					c[0].(map[string]any)["image"] = "nginx:old"
					_ = unstructured.SetNestedSlice(obj.Object, c, "spec", "template", "spec", "containers")
				}
			}),
			code: ExitDiffChanges, contains: []string{"cluster local:\n  ~ update Deployment default/web", "-      - image: nginx:old\n      +      - image: nginx:1.27"}},
		{reason: "a changed Secret value shows as changed, never printed",
			live: liveOf(func(obj *unstructured.Unstructured) {
				if obj.GetKind() == "Secret" {
					obj.Object["data"] = map[string]any{"password": base64.StdEncoding.EncodeToString([]byte("old-pass"))}
				}
			}),
			code: ExitDiffChanges, contains: []string{"~ update Secret default/creds", "+  password: <changed hmac:"}, absent: []string{"old-pass", "s3cret"}},
		{reason: "another Application's object is a conflict",
			live: liveOf(func(obj *unstructured.Unstructured) {
				if obj.GetKind() == "ConfigMap" {
					l := obj.GetLabels()
					l[v1beta1.LabelAppName] = "other"
					obj.SetLabels(l)
				}
			}),
			code: ExitDiffChanges, contains: []string{"! conflict ConfigMap default/settings (component config, step deploy-local): owned by Application default/other"}},
		{reason: "a live object of the Application no longer rendered is deleted by GC",
			live: liveOf(nil) + extra, code: ExitDiffChanges, contains: []string{"- delete (GC) ConfigMap default/old (component old)"}},
		{reason: "... or kept with keepLegacyResource",
			app:  app(diffAppOpts{mode: "a", gc: `{keepLegacyResource: true}`}),
			live: liveOf(nil) + extra, code: ExitDiffNone, contains: []string{"= kept (GC) ConfigMap default/old (component old)"}},
	}
	for i, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			f := appFile
			if tc.app != "" {
				f = writeFile(t, dir, fmt.Sprintf("app-%d.yaml", i), tc.app)
			}
			liveFile := writeFile(t, dir, fmt.Sprintf("live-%d.yaml", i), tc.live)
			out, errOut, code := runOamflow(t, "diff", "--offline", "-n", "default", "-f", f, "--live", liveFile)
			assert.Equal(t, tc.code, code, out+errOut)
			for _, s := range tc.contains {
				assert.Contains(t, out, s)
			}
			for _, s := range tc.absent {
				assert.NotContains(t, out, s)
			}
		})
	}
	_, errOut, code := runOamflow(t, "diff", "--offline", "-f", appFile)
	assert.Equal(t, ExitDiffError, code)
	assert.Contains(t, errOut, "--offline compares with the objects of --live")

	// Usage errors are "the plan could not be made" (2), not "changes" (1).
	usage := []struct {
		reason string
		args   []string
		want   string
	}{
		{reason: "an unknown flag", args: []string{"--bogus"}, want: "unknown flag: --bogus"},
		{reason: "a flag value of the wrong type", args: []string{"--max-components", "abc"}, want: `invalid argument "abc"`},
		{reason: "a stray argument", args: []string{"stray"}, want: "unexpected arguments"},
	}
	for _, tc := range usage {
		t.Run(tc.reason, func(t *testing.T) {
			_, errOut, code := runOamflow(t, append([]string{"diff", "--offline", "-f", appFile, "--live", appFile}, tc.args...)...)
			assert.Equal(t, ExitDiffError, code, errOut)
			assert.Contains(t, errOut, tc.want)
		})
	}
}

// TestSecretHashIsKeyed: the hash shown for a Secret value is not the
// plain sha256 of the value (a weak one could be looked up from a CI log),
// but tells values apart within a run.
func TestSecretHashIsKeyed(t *testing.T) {
	plain := sha256.Sum256([]byte("YWRtaW4="))
	got := secretHash("YWRtaW4=")
	assert.NotContains(t, got, hex.EncodeToString(plain[:6]))
	assert.Equal(t, got, secretHash("YWRtaW4="), "the same value, the same mark within a run")
	assert.NotEqual(t, got, secretHash("YWRtaW5="), "different values, different marks")
}

// TestDiffOfflineClusterLabels: offline, --cluster-labels names the
// clusters a clusterLabelSelector picks (the warning without it says to
// give it; diff used to answer "unknown flag").
func TestDiffOfflineClusterLabels(t *testing.T) {
	live := writeFile(t, t.TempDir(), "live.yaml", "")
	app := filepath.Join("..", "..", "examples", "multicluster-override", "app.yaml")
	out, errOut, code := runOamflow(t, "diff", "--offline", "--live", live, "-f", app,
		"--cluster-labels", "member-1=region=east", "--cluster-labels", "member-2=region=west")
	assert.Equal(t, ExitDiffChanges, code, errOut)
	assert.Contains(t, out, "cluster member-1:")
	assert.Contains(t, out, "cluster member-2:")
	assert.NotContains(t, errOut, "cannot be resolved offline")
}

// TestDiffWorkflowSteps: diff walks the workflow as the controller runs
// it: objects in step order, only the steps there are (no component is
// deployed without a step deploying it), and a step that writes but is
// not planned is said so, never left out.
func TestDiffWorkflowSteps(t *testing.T) {
	dir := t.TempDir()
	const head = `apiVersion: core.oam.dev/v1beta1
kind: Application
metadata: {name: shop}
spec:
  components:
    - name: web
      type: webservice
      properties: {image: "nginx:1.27"}
  workflow:
    steps:
`
	object := func(name string) string {
		return `      - name: ` + name + `
        type: apply-object
        properties:
          value: {apiVersion: v1, kind: ConfigMap, metadata: {name: ` + name + `}, data: {k: v}}
`
	}
	const deploy = `      - name: deploy
        type: deploy
        properties: {policies: []}
`
	const install = `      - name: install
        type: helm-install
        properties:
          chart: {source: podinfo, repoURL: "https://charts.example.com"}
          release: {name: podinfo}
`
	const read = `      - name: read
        type: read-object
        properties: {apiVersion: v1, kind: ConfigMap, name: settings}
`
	legacy := `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: legacy
  namespace: default
  labels: {app.oam.dev/name: shop, app.oam.dev/namespace: default}
data: {a: b}
`
	const customStep = `import "vela/kube"

"config-note": {
	type:        "workflow-step"
	description: "Apply a ConfigMap naming the revision"
	annotations: {}
	labels: {}
}
template: {
	apply: kube.#Apply & {
		$params: {
			value: {
				apiVersion: "v1"
				kind:       "ConfigMap"
				metadata: name: parameter.name
				data: revision:  context.appRevision
			}
			cluster: parameter.cluster
		}
	}
	parameter: {
		name:    string
		cluster: *"" | string
	}
}
`
	const custom = `      - name: custom
        type: config-note
        properties: {name: noted}
`
	const releaseNote = `      - name: note
        type: release-note
        properties: {component: web}
`
	noteDef, err := os.ReadFile(filepath.Join("..", "..", "examples", "custom-definition", "defs", "release-note.cue"))
	require.NoError(t, err)
	cases := []struct {
		reason string
		steps  string
		// defs is a file of CUE definitions given with -f too.
		defs string
		live string
		// ordered must appear in this order.
		ordered []string
		absent  []string
	}{
		{reason: "apply-object steps around a deploy step: in step order",
			steps:   object("first") + deploy + object("last"),
			ordered: []string{"+ create ConfigMap default/first (step first)", "+ create Deployment default/web (component web, step deploy)", "+ create ConfigMap default/last (step last)"}},
		{reason: "only apply-object steps: the components are not deployed, as the controller runs no step deploying them",
			steps:   object("only"),
			ordered: []string{"+ create ConfigMap default/only (step only)", "Plan: 1 to create"},
			absent:  []string{"Deployment"}},
		{reason: "a step that writes and is not planned is listed; one that only reads is not",
			steps: deploy + install + read,
			ordered: []string{"+ create Deployment default/web", "not planned:\n  ? not planned: step install (type helm-install) applies at run time (helm.#Install)",
				"; 1 step not planned"},
			absent: []string{"step read"}},
		{reason: "an object a step applied, no longer planned: deleted by GC when every step is planned",
			steps: deploy, live: legacy,
			ordered: []string{"- delete (GC) ConfigMap default/legacy"}},
		{reason: "... not judged when a step that is not planned may apply it again",
			steps: deploy + install, live: legacy,
			ordered: []string{"? not compared ConfigMap default/legacy", "unless step install (not planned) applies it again"},
			absent:  []string{"delete (GC)"}},
		{reason: "a custom step applying with kube.#Apply what its properties and context say: planned, in step order",
			steps: object("first") + custom + deploy, defs: customStep,
			ordered: []string{"+ create ConfigMap default/first (step first)", "+ create ConfigMap default/noted (step custom)", "revision: shop-v1",
				"+ create Deployment default/web (component web, step deploy)"},
			absent: []string{"not planned"}},
		{reason: "a custom step applying what it read at run time: not planned, saying why",
			steps: deploy + releaseNote, defs: string(noteDef),
			ordered: []string{"+ create Deployment default/web", "? not planned: step note (type release-note) applies at run time (kube.#Apply)",
				"no apply of it is known before it runs"}},
	}
	for i, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			f := writeFile(t, dir, fmt.Sprintf("app-%d.yaml", i), head+tc.steps)
			liveFile := writeFile(t, dir, fmt.Sprintf("live-%d.yaml", i), tc.live)
			args := []string{"diff", "--offline", "-n", "default", "-f", f, "--live", liveFile}
			if tc.defs != "" {
				args = append(args, "-f", writeFile(t, dir, fmt.Sprintf("defs-%d.cue", i), tc.defs))
			}
			out, errOut, code := runOamflow(t, args...)
			assert.Equal(t, ExitDiffChanges, code, out+errOut)
			rest := out
			for _, s := range tc.ordered {
				i := strings.Index(rest, s)
				if !assert.GreaterOrEqual(t, i, 0, "%q after the previous lines in:\n%s", s, out) {
					return
				}
				rest = rest[i+len(s):]
			}
			for _, s := range tc.absent {
				assert.NotContains(t, out, s)
			}
		})
	}
}
