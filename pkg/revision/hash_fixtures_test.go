package revision

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/placement"
	"github.com/oamflow/oamflow/pkg/sharding"
)

// stored gives obj the identity of a version the API server stored.
func stored[T client.Object](obj T, uid, rv string) T {
	obj.SetUID(types.UID(uid))
	obj.SetResourceVersion(rv)
	return obj
}

func cueSchematic(template string) *common.Schematic {
	return &common.Schematic{CUE: &common.CUE{Template: template}}
}

func compDef(name, template string) *v1beta1.ComponentDefinition {
	return &v1beta1.ComponentDefinition{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "oamflow-system"},
		Spec: v1beta1.ComponentDefinitionSpec{
			Workload:  common.WorkloadTypeDescriptor{Definition: &common.WorkloadGVK{APIVersion: "apps/v1", Kind: "Deployment"}},
			Schematic: cueSchematic(template),
		}}
}

func traitDef(name, template string) *v1beta1.TraitDefinition {
	return &v1beta1.TraitDefinition{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "oamflow-system"},
		Spec: v1beta1.TraitDefinitionSpec{AppliesToWorkloads: []string{"deployments.apps", "*"}, Schematic: cueSchematic(template)}}
}

func policyDef(name, template string) *v1beta1.PolicyDefinition {
	return &v1beta1.PolicyDefinition{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "oamflow-system"},
		Spec: v1beta1.PolicyDefinitionSpec{Schematic: cueSchematic(template)}}
}

func stepDef(name, template string) *v1beta1.WorkflowStepDefinition {
	return &v1beta1.WorkflowStepDefinition{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "vela-system"},
		Spec: v1beta1.WorkflowStepDefinitionSpec{Schematic: cueSchematic(template)}}
}

// defsOf adds objs under their keys, as the Recorder does.
func defsOf(t testing.TB, objs map[string]client.Object) Definitions {
	t.Helper()
	var d Definitions
	for k, o := range objs {
		require.NoError(t, d.Add(k, o), k)
	}
	return d
}

// hashCase is one input of Hash.
type hashCase struct {
	reason string
	app    *v1beta1.Application
	defs   Definitions
	sel    placement.Selection
}

// richApp has labels (the shard label among them), operational and other
// annotations, and properties with raw JSON: numbers written in several
// ways, keys out of order, HTML characters, non-ASCII text.
func richApp() *v1beta1.Application {
	app := newApp(
		withProps(`{ "port": 80, "image": "nginx<1>&", "ratio": 1.50, "big": 12345678901234567891, "exp": 1e3, "neg": -0.0, "nested": {"z": [3, 2.0, {"b": null, "a": true}], "a": "é\u00e9"} }`),
		withAnno(v1beta1.AnnoRestartWorkflow, "2024-01-01T00:00:00Z"),
		withAnno("team", "a<b"),
	)
	app.Labels = map[string]string{sharding.LabelScheduledShardID: "shard-1", "tier": "web", "app": "shop"}
	app.Spec.Components = append(app.Spec.Components, common.ApplicationComponent{
		Name: "worker", Type: "worker@v2",
		Properties: &runtime.RawExtension{Raw: []byte(`{"cmd":["sleep","1000"],"env":[{"name":"X","value":"0.1"}]}`)},
		Traits:     []common.ApplicationTrait{{Type: "scaler", Properties: &runtime.RawExtension{Raw: []byte(`{"replicas": 3}`)}}},
	})
	app.Spec.Policies = []common.AppPolicy{{Name: "topo", Type: "topology", Properties: &runtime.RawExtension{Raw: []byte(`{"clusterLabelSelector":{"region":"east"}}`)}}}
	return app
}

// hashCases are varied inputs of Hash: every kind of definition, several
// of each, absent kinds, pinned and unstored (no UID) definitions, specs
// with raw JSON and numbers, selections.
func hashCases(t testing.TB) []hashCase {
	t.Helper()
	web := compDef("webservice", "parameter: {image: string, port: *80 | int}\noutput: {apiVersion: \"apps/v1\", kind: \"Deployment\"}\n")
	web.Spec.Status = &common.Status{HealthPolicy: "isHealth: true", CustomStatus: "message: \"<ok> & \\\"fine\\\"\""}
	web.Spec.Extension = &runtime.RawExtension{Raw: []byte(`{ "z": 1.0, "a": [1e2, 0.10, 12345678901234567891], "m": {"y": "ü", "x": null} }`)}
	web.Spec.PodSpecPath = "spec.template.spec"
	worker := compDef("worker", "output: {kind: \"Deployment\"}\n// invalid UTF-8: \xff\xfe\n")
	task := compDef("task", "output: {kind: \"Job\"}")
	task.Spec.Workload = common.WorkloadTypeDescriptor{Type: "jobs.batch"}
	task.Spec.Version = "1.2.3"
	scaler := traitDef("scaler", "patch: spec: replicas: parameter.replicas\nparameter: replicas: *1 | int\n")
	scaler.Spec.PodDisruptive = true
	env := traitDef("env", "patch: spec: template: spec: containers: [...]")
	env.Spec.ConflictsWith = []string{"command"}
	expose := traitDef("expose", "outputs: service: {kind: \"Service\"}")
	expose.Spec.Stage = "PostDispatch"
	topo := policyDef("topology", "parameter: clusters?: [...string]")
	override := policyDef("override", "parameter: components: [...]")
	override.Spec.ManageHealthCheck = true
	deploy := stepDef("deploy", "import \"vela/op\"\nparameter: policies: [...string]")
	apply := stepDef("apply-component", "parameter: component: string")

	all := defsOf(t, map[string]client.Object{
		"webservice":      stored(web.DeepCopy(), "u-web", "101"),
		"worker@v2":       stored(worker.DeepCopy(), "u-worker", "7"),
		"task":            task.DeepCopy(),
		"scaler":          stored(scaler.DeepCopy(), "u-scaler", "12"),
		"env":             stored(env.DeepCopy(), "u-env", "13"),
		"expose":          stored(expose.DeepCopy(), "u-expose", ""),
		"topology":        stored(topo.DeepCopy(), "u-topo", "5"),
		"override":        stored(override.DeepCopy(), "u-override", "6"),
		"deploy":          stored(deploy.DeepCopy(), "u-deploy", "8"),
		"apply-component": stored(apply.DeepCopy(), "u-apply", "9"),
	})
	sel := placement.Selection{"topo": {"west", "east"}, "a<b": {"c"}}
	return []hashCase{
		{reason: "an app without definitions or selection", app: newApp()},
		{reason: "labels, annotations and raw properties, no definitions", app: richApp()},
		{reason: "every kind of definition, several of each, and a selection", app: richApp(), defs: all, sel: sel},
		{reason: "every kind of definition without a selection", app: newApp(), defs: all},
		{reason: "an empty selection is left out like none", app: newApp(), defs: all, sel: placement.Selection{}},
		{reason: "only traits: the absent kinds are left out", app: newApp(), defs: defsOf(t, map[string]client.Object{
			"scaler": stored(scaler.DeepCopy(), "u-scaler", "12"),
		})},
		{reason: "only workflow steps and policies, with a selection", app: richApp(), defs: defsOf(t, map[string]client.Object{
			"deploy": stored(deploy.DeepCopy(), "u-deploy", "8"), "topology": stored(topo.DeepCopy(), "u-topo", "5"),
		}), sel: sel},
		{reason: "empty maps are left out like absent ones", app: newApp(), defs: Definitions{
			Components: map[string]v1beta1.ComponentDefinition{}, Traits: map[string]v1beta1.TraitDefinition{},
		}},
		{reason: "keys needing escapes, non-ASCII keys and an empty spec", app: newApp(), defs: defsOf(t, map[string]client.Object{
			"a<b&c":       stored(compDef("a<b&c", "output: {}").DeepCopy(), "u-esc", "1"),
			"wébservice":  stored(compDef("wébservice", "output: {}").DeepCopy(), "u-utf", "1"),
			"\"quoted\"":  stored(compDef("quoted", "output: {}").DeepCopy(), "u-q", "1"),
			"empty":       stored(&v1beta1.ComponentDefinition{ObjectMeta: metav1.ObjectMeta{Name: "empty"}}, "u-empty", "1"),
			"Upper-first": stored(compDef("Upper-first", "output: {}").DeepCopy(), "u-up", "1"),
		})},
		{reason: "keys that are not valid UTF-8", app: newApp(), defs: defsOf(t, map[string]client.Object{
			"bad\xffname": stored(compDef("bad", "output: {}").DeepCopy(), "u-bad", "1"),
			"bad\xfename": stored(compDef("bad2", "output: {x: 1}").DeepCopy(), "u-bad2", "1"),
			"good":        stored(compDef("good", "output: {}").DeepCopy(), "u-good", "1"),
		})},
	}
}

// builtinDefs are definitions an ordinary app uses, read from the
// built-ins (templates of a few KB) as the API server stores them.
func builtinDefs(t testing.TB) Definitions {
	t.Helper()
	src, err := appfile.NewFSSource(definitions.FS, ".")
	require.NoError(t, err)
	var d Definitions
	for i, u := range []struct {
		kind appfile.DefinitionKind
		name string
	}{
		{appfile.KindComponent, "webservice"}, {appfile.KindComponent, "worker"},
		{appfile.KindTrait, "scaler"}, {appfile.KindTrait, "env"}, {appfile.KindTrait, "expose"},
		{appfile.KindTrait, "gateway"}, {appfile.KindTrait, "storage"},
		{appfile.KindPolicy, "topology"}, {appfile.KindPolicy, "override"},
		{appfile.KindWorkflowStep, "deploy"},
	} {
		def, err := src.Get(context.Background(), u.kind, u.name)
		require.NoError(t, err, u.name)
		obj := def.Object.DeepCopyObject().(client.Object)
		require.NoError(t, d.Add(u.name, stored(obj, "uid-"+u.name, string(rune('1'+i)))))
	}
	return d
}
