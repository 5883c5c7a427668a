package chart_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const releaseNamespace = "oamflow-system"

// valueSets are the value combinations the tests render.
var valueSets = []struct {
	reason string
	values map[string]any
}{
	{"defaults", nil},
	{"user certificate, cluster-admin, extra rules, no definitions", map[string]any{
		"webhook":     map[string]any{"certSecret": "my-certs", "failurePolicy": "Ignore"},
		"rbac":        map[string]any{"clusterAdmin": true, "extraRules": []any{map[string]any{"apiGroups": []any{"example.com"}, "resources": []any{"widgets"}, "verbs": []any{"get"}}}},
		"definitions": map[string]any{"install": false},
		"replicas":    2,
	}},
	{"webhook off", map[string]any{"webhook": map[string]any{"enabled": false}}},
	{"lockdown", lockdownValues},
	{"sharding", shardingValues},
	{"sharding, the master takes a share, no webhook", map[string]any{"sharding": map[string]any{"enabled": true, "shards": []any{"master", "s1"}}, "webhook": map[string]any{"enabled": false}}},
	{"extra environment", map[string]any{"controller": map[string]any{"extraEnv": []any{map[string]any{"name": "GOGC", "value": "50"}}}}},
	{"lockdown with cross-namespace resources", map[string]any{"tenancy": map[string]any{"lockdown": true, "defaultServiceAccount": "deployer", "allowCrossNamespaceResources": true}}},
}

var shardingValues = map[string]any{"sharding": map[string]any{"enabled": true}}

var lockdownValues = map[string]any{"tenancy": map[string]any{"lockdown": true}}

// TestLint is `helm lint --strict` of the chart with each value set.
func TestLint(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.reason, func(t *testing.T) {
			linter := lint.All(".", vs.values, releaseNamespace, true)
			for _, m := range linter.Messages {
				assert.Less(t, m.Severity, support.WarningSev, "%s", m)
			}
		})
	}
}

// render is `helm template oamflow . -n oamflow-system` with values.
func render(t *testing.T, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := renderErr(values)
	require.NoError(t, err)
	return objs
}

func renderErr(values map[string]any) ([]*unstructured.Unstructured, error) {
	chrt, err := loader.Load(".")
	if err != nil {
		return nil, err
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = "oamflow", releaseNamespace
	install.KubeVersion = &chartutil.KubeVersion{Version: "v1.34.2", Major: "1", Minor: "34"}
	rel, err := install.Run(chrt, values)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(rel.Manifest), 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs, nil
}

// TestTemplateValidatesOnAPIServer sends every object `helm template`
// renders to a real kube-apiserver with server-side dry-run.
func TestTemplateValidatesOnAPIServer(t *testing.T) {
	ctx := context.Background()
	c := env.Client
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": releaseNamespace}}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	for _, vs := range valueSets {
		t.Run(vs.reason, func(t *testing.T) {
			objs := render(t, vs.values)
			kinds := map[string]int{}
			for _, obj := range objs {
				kinds[obj.GetKind()]++
				err := c.Create(ctx, obj.DeepCopy(), client.DryRunAll)
				assert.NoError(t, err, "%s %s", obj.GetKind(), obj.GetName())
			}
			// The master's, and one per other shard.
			deployments := map[string]int{"sharding": 3, "sharding, the master takes a share, no webhook": 2}[vs.reason]
			if deployments == 0 {
				deployments = 1
			}
			assert.Equal(t, deployments, kinds["Deployment"])
			assert.Equal(t, 1, kinds["ServiceAccount"])
			if vs.reason == "defaults" {
				assert.Equal(t, 1, kinds["ValidatingWebhookConfiguration"])
				assert.Greater(t, kinds["ComponentDefinition"]+kinds["TraitDefinition"]+kinds["PolicyDefinition"]+kinds["WorkflowStepDefinition"], 20)
			}
		})
	}
}

// TestDeploymentHardening checks the controller Pod's security settings,
// probes and resources.
func TestDeploymentHardening(t *testing.T) {
	var dep *unstructured.Unstructured
	for _, obj := range render(t, nil) {
		if obj.GetKind() == "Deployment" {
			dep = obj
		}
	}
	require.NotNil(t, dep)
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	require.Len(t, containers, 1)
	ctr := containers[0].(map[string]any)
	for _, tc := range []struct {
		reason string
		path   []string
		want   any
	}{
		{"non-root", []string{"securityContext", "runAsNonRoot"}, true},
		{"read-only root", []string{"securityContext", "readOnlyRootFilesystem"}, true},
		{"no escalation", []string{"securityContext", "allowPrivilegeEscalation"}, false},
		{"liveness", []string{"livenessProbe", "httpGet", "path"}, "/healthz"},
		{"readiness", []string{"readinessProbe", "httpGet", "path"}, "/readyz"},
		{"memory limit", []string{"resources", "limits", "memory"}, "1Gi"},
	} {
		got, found, err := unstructured.NestedFieldNoCopy(ctr, tc.path...)
		require.NoError(t, err)
		assert.True(t, found, tc.reason)
		assert.Equal(t, tc.want, got, tc.reason)
	}
	args, _, _ := unstructured.NestedStringSlice(ctr, "args")
	assert.Contains(t, args, "--system-namespace=oamflow-system")
	assert.Contains(t, args, "--webhook-configuration-name=oamflow-webhook")
	// The Application budgets, as integers (not 1.048576e+06).
	assert.Contains(t, args, "--max-components=500")
	assert.Contains(t, args, "--max-traits-per-component=50")
	assert.Contains(t, args, "--max-application-bytes=1048576")
	for _, a := range args {
		assert.NotContains(t, a, "--outbound-allow", "nothing allow-listed by default")
	}
	assert.Contains(t, args, "--metrics-secure=true", "/metrics is served with TLS and authn/authz")
}

// TestSecureMetricsRBAC: with metrics.secure (the default) the controller
// may create TokenReviews and SubjectAccessReviews, and a metrics-reader
// ClusterRole is there to bind scrapers to; without it, neither.
func TestSecureMetricsRBAC(t *testing.T) {
	rules := func(values map[string]any) (controller []any, reader bool) {
		for _, obj := range render(t, values) {
			if obj.GetKind() != "ClusterRole" {
				continue
			}
			switch obj.GetName() {
			case "oamflow-controller":
				controller, _, _ = unstructured.NestedSlice(obj.Object, "rules")
			case "oamflow-metrics-reader":
				reader = true
			}
		}
		return controller, reader
	}
	has := func(rules []any, resource string) bool {
		for _, r := range rules {
			res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
			for _, x := range res {
				if x == resource {
					return true
				}
			}
		}
		return false
	}
	ctrl, reader := rules(nil)
	assert.True(t, has(ctrl, "tokenreviews"), "the controller reviews scrapers' tokens")
	assert.True(t, has(ctrl, "subjectaccessreviews"), "and their access")
	assert.True(t, reader, "a metrics-reader ClusterRole")
	ctrl, reader = rules(map[string]any{"metrics": map[string]any{"secure": false}})
	assert.False(t, has(ctrl, "tokenreviews"))
	assert.False(t, reader)
}

// TestOutboundAllow: controller.outboundAllow becomes one --outbound-allow
// per entry.
func TestOutboundAllow(t *testing.T) {
	for _, obj := range render(t, map[string]any{"controller": map[string]any{"outboundAllow": []any{"127.0.0.1", "registry.local"}}}) {
		if obj.GetKind() != "Deployment" {
			continue
		}
		args, _, _ := unstructured.NestedStringSlice(controllerContainer(t, obj), "args")
		assert.Contains(t, args, "--outbound-allow=127.0.0.1")
		assert.Contains(t, args, "--outbound-allow=registry.local")
		return
	}
	t.Fatal("no Deployment rendered")
}

// TestExtraEnv is `helm template` with controller.extraEnv: the variables
// are every controller container's (each shard's too), after the chart's
// own; anything but a list is refused with what is expected.
func TestExtraEnv(t *testing.T) {
	home := map[string]any{"name": "HOME", "value": "/tmp"}
	gogc := map[string]any{"name": "GOGC", "value": "50"}
	fromSecret := map[string]any{"name": "TOKEN", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s", "key": "k"}}}
	cases := []struct {
		reason      string
		values      map[string]any
		deployments int
		want        []any
		wantErr     string
	}{
		{"no extra environment: the chart's own only", nil, 1, []any{home}, ""},
		{"GOGC and a Secret's key: after the chart's own", map[string]any{"controller": map[string]any{"extraEnv": []any{gogc, fromSecret}}},
			1, []any{home, gogc, fromSecret}, ""},
		{"sharding: every shard's Deployment has them", map[string]any{"sharding": map[string]any{"enabled": true}, "controller": map[string]any{"extraEnv": []any{gogc}}},
			3, []any{home, gogc}, ""},
		{"a map instead of a list: refused, saying what is expected", map[string]any{"controller": map[string]any{"extraEnv": map[string]any{"GOGC": "50"}}},
			0, nil, "controller.extraEnv must be a list"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			objs, err := renderErr(tc.values)
			if tc.wantErr != "" {
				require.Error(t, err, tc.reason)
				assert.Contains(t, err.Error(), tc.wantErr, tc.reason)
				return
			}
			require.NoError(t, err, tc.reason)
			deployments := 0
			for _, obj := range objs {
				if obj.GetKind() != "Deployment" {
					continue
				}
				deployments++
				env, _, _ := unstructured.NestedSlice(controllerContainer(t, obj), "env")
				assert.Equal(t, tc.want, env, "%s: Deployment %s", tc.reason, obj.GetName())
			}
			assert.Equal(t, tc.deployments, deployments, tc.reason)
		})
	}
}

// controllerContainer is the controller's container of a rendered
// Deployment: its first.
func controllerContainer(t *testing.T, dep *unstructured.Unstructured) map[string]any {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	require.NotEmpty(t, containers, "Deployment %s has no container", dep.GetName())
	return containers[0].(map[string]any)
}

// workloadKinds are resources a lockdown controller must hold no rule on:
// what Applications deploy, and what would let it read credentials.
var workloadKinds = map[string]bool{
	"secrets": true, "serviceaccounts": true, "pods": true, "services": true, "persistentvolumeclaims": true,
	"deployments": true, "statefulsets": true, "daemonsets": true, "replicasets": true, "jobs": true, "cronjobs": true,
	"ingresses": true, "networkpolicies": true, "horizontalpodautoscalers": true, "poddisruptionbudgets": true,
	"roles": true, "rolebindings": true, "clusterroles": true, "clusterrolebindings": true, "namespaces": true, "*": true,
}

// TestLockdownRBAC is `helm template` of the chart in lockdown mode: the
// ClusterRole has no rule on Secrets, on workload kinds, or on
// ServiceAccounts other than impersonating them, and the controller runs
// with --default-service-account; single-tenant mode still holds the rules
// Applications acting as the controller need.
func TestLockdownRBAC(t *testing.T) {
	clusterRules := func(values map[string]any) (rules []map[string]any, args []string) {
		for _, obj := range render(t, values) {
			switch obj.GetKind() {
			case "ClusterRole":
				list, _, _ := unstructured.NestedSlice(obj.Object, "rules")
				for _, r := range list {
					rules = append(rules, r.(map[string]any))
				}
			case "ClusterRoleBinding":
				name, _, _ := unstructured.NestedString(obj.Object, "roleRef", "name")
				assert.NotEqual(t, "cluster-admin", name)
			case "Deployment":
				args, _, _ = unstructured.NestedStringSlice(controllerContainer(t, obj), "args")
			}
		}
		return rules, args
	}
	strs := func(r map[string]any, key string) []string {
		var out []string
		list, _ := r[key].([]any)
		for _, v := range list {
			out = append(out, v.(string))
		}
		return out
	}
	rules, args := clusterRules(lockdownValues)
	require.NotEmpty(t, rules)
	impersonate := false
	for _, r := range rules {
		for _, res := range strs(r, "resources") {
			if res == "serviceaccounts" {
				assert.Equal(t, []string{"impersonate"}, strs(r, "verbs"), "ServiceAccounts are only impersonated")
				impersonate = true
				continue
			}
			assert.False(t, workloadKinds[res], "lockdown ClusterRole has a rule on %s: %v", res, r)
		}
	}
	assert.True(t, impersonate, "the controller impersonates ServiceAccounts")
	assert.Contains(t, args, "--default-service-account=oamflow-app")

	rules, args = clusterRules(nil)
	found := map[string]bool{}
	for _, r := range rules {
		for _, res := range strs(r, "resources") {
			found[res] = true
		}
	}
	assert.True(t, found["secrets"] && found["deployments"], "single-tenant mode keeps the rules of what Applications deploy")
	for _, a := range args {
		assert.NotContains(t, a, "--default-service-account")
	}

	_, err := renderErr(map[string]any{"tenancy": map[string]any{"lockdown": true}, "rbac": map[string]any{"clusterAdmin": true}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tenancy.lockdown and rbac.clusterAdmin exclude each other")
}

// TestImageReference: the default image is what `make image` tags
// (repository:appVersion); a digest pins it; a malformed digest is refused.
func TestImageReference(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	cases := []struct {
		reason string
		values map[string]any
		want   string
		err    string
	}{
		{reason: "defaults", want: "ghcr.io/oamflow/oamflow-controller:0.1.0"},
		{reason: "own registry and tag", values: map[string]any{"image": map[string]any{"repository": "registry.example/oamflow-controller", "tag": "dev"}},
			want: "registry.example/oamflow-controller:dev"},
		{reason: "digest pinning", values: map[string]any{"image": map[string]any{"digest": digest}},
			want: "ghcr.io/oamflow/oamflow-controller:0.1.0@" + digest},
		{reason: "digest without algorithm", values: map[string]any{"image": map[string]any{"digest": strings.Repeat("ab", 32)}},
			err: "image.digest must be sha256:<hex>"},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			objs, err := renderErr(c.values)
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			var images []string
			for _, obj := range objs {
				if obj.GetKind() != "Deployment" {
					continue
				}
				containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
				for _, ctr := range containers {
					images = append(images, ctr.(map[string]any)["image"].(string))
				}
			}
			assert.Equal(t, []string{c.want}, images)
		})
	}
}

// TestShardingDeployments: with sharding, the master's Deployment runs
// --shard-id=master and schedules over sharding.shards; each other shard
// has its own Deployment that serves no webhook; the Pods carry
// controller.core.oam.dev/shard-id; the Service (webhook traffic) selects
// the master's Pods only and no two Deployments select the same Pods.
func TestShardingDeployments(t *testing.T) {
	deps := map[string]*unstructured.Unstructured{}
	var svcSelector map[string]string
	for _, obj := range render(t, shardingValues) {
		switch obj.GetKind() {
		case "Deployment":
			deps[obj.GetName()] = obj
		case "Service":
			svcSelector, _, _ = unstructured.NestedStringMap(obj.Object, "spec", "selector")
		}
	}
	want := map[string][]string{
		"oamflow-controller":         {"--enable-sharding", "--shard-id=master", "--schedulable-shards=shard-0,shard-1", "--webhook=true", "--leader-elect=true"},
		"oamflow-controller-shard-0": {"--enable-sharding", "--shard-id=shard-0", "--webhook=false", "--leader-elect=true"},
		"oamflow-controller-shard-1": {"--enable-sharding", "--shard-id=shard-1", "--webhook=false", "--leader-elect=true"},
	}
	require.Len(t, deps, len(want))
	podLabels := map[string]map[string]string{}
	for name, args := range want {
		dep := deps[name]
		require.NotNil(t, dep, name)
		var got []string
		for _, a := range controllerContainer(t, dep)["args"].([]any) {
			got = append(got, a.(string))
		}
		for _, a := range args {
			assert.Contains(t, got, a, name)
		}
		if name != "oamflow-controller" {
			assert.NotContains(t, strings.Join(got, " "), "--schedulable-shards", name)
		}
		labels, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "labels")
		podLabels[name] = labels
		shard := "master"
		if name != "oamflow-controller" {
			shard = strings.TrimPrefix(name, "oamflow-controller-")
		}
		assert.Equal(t, shard, labels["controller.core.oam.dev/shard-id"], name)
	}
	for name, dep := range deps {
		sel, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "selector", "matchLabels")
		for other, labels := range podLabels {
			assert.Equal(t, name == other, selects(sel, labels), "Deployment %s selects the Pods of %s", name, other)
		}
		assert.Equal(t, name == "oamflow-controller", selects(svcSelector, podLabels[name]), "the Service selects the Pods of %s", name)
	}
	_, err := renderErr(map[string]any{"sharding": map[string]any{"enabled": true}, "leaderElection": map[string]any{"enabled": false}})
	assert.ErrorContains(t, err, "sharding.enabled needs leaderElection.enabled")
}

func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}
