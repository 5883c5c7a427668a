//go:build faults || e2e

package faults

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	oamv1alpha1 "github.com/kubevela/pkg/apis/oam/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

const (
	namespace = "default"
	member1   = "member-1"
	member2   = "member-2"
)

// kind is what an Application of the workload exercises.
type kind int

const (
	// kindLocal: a webservice with a scaler and an optional second
	// component, on the hub; its workflow deploys, then posts to the
	// suite's counting HTTP server (a step with an external side effect).
	kindLocal kind = iota
	// kindMulti: the same on member-1, and on member-2 while widened
	// (topology narrowed and widened).
	kindMulti
	// kindGC: a garbage-collect policy keeping legacy resources (the
	// second component stays once added) and a component whose objects
	// are never collected (they outlive the Application).
	kindGC
	// kindShared: a ConfigMap shared with the pair's other Application
	// (shared-resource): it lives while either does.
	kindShared
	// kindHelm: a Helm component from the chart root (charts/testdata).
	kindHelm
	// kindApplyOnce: apply-once keeps spec.replicas as set by hand.
	kindApplyOnce
)

func (k kind) String() string {
	return [...]string{"local", "multi", "gc", "shared", "helm", "apply-once"}[k]
}

// kindOf spreads the kinds over the Applications, 8 at a time.
func kindOf(i int) kind {
	switch i % 8 {
	case 0, 1:
		return kindLocal
	case 2, 3:
		return kindMulti
	case 4:
		return kindGC
	case 5, 6:
		return kindShared
	default:
		if (i/8)%2 == 0 {
			return kindHelm
		}
		return kindApplyOnce
	}
}

// sharedName is the ConfigMap Application i shares with its pair.
func sharedName(i int) string { return fmt.Sprintf("shared-%d", i/8) }

// pairOf is the other Application sharing i's ConfigMap (-1 when the
// workload is too small to hold it).
func pairOf(i, apps int) int {
	p := i + 1
	if i%8 == 6 {
		p = i - 1
	}
	if p >= apps {
		return -1
	}
	return p
}

// desired is what the driver last asked of one Application.
type desired struct {
	exists  bool
	created int // how many times the Application was created
	image   string
	// replicas is the scaler's (and the chart's replicaCount).
	replicas int
	// side: a second component <app>-side (kindGC keeps it once deployed:
	// see expectedDeployments).
	side bool
	// wide: kindMulti deploys to member-2 as well.
	wide bool
	// byHand: kindApplyOnce's web Deployment was scaled by hand to this
	// (0: never).
	byHand int
	// version counts the spec changes of this life (0: as created); the
	// webhook step of kindLocal sends it, with created, to hook.
	version int
	hook    string
}

func fresh(created int, hook string) desired {
	return desired{exists: true, created: created, image: "nginx:1", replicas: 1, hook: hook}
}

// mutate changes w at random for an Application of kind k and says what
// changed; handScale reports that the driver must scale by hand instead
// of updating the Application.
func mutate(rng *rand.Rand, k kind, w *desired) (what string, handScale bool) {
	n := rng.IntN(10)
	switch {
	case k == kindApplyOnce && n < 3:
		w.byHand = 2 + rng.IntN(4)
		return fmt.Sprintf("scale by hand to %d", w.byHand), true
	case k == kindMulti && n < 3:
		w.wide = !w.wide
		return fmt.Sprintf("topology wide=%v", w.wide), false
	case (k == kindLocal || k == kindMulti || k == kindGC) && n < 6:
		w.side = !w.side
		return fmt.Sprintf("side=%v", w.side), false
	case k != kindApplyOnce && n < 8:
		w.replicas = 1 + rng.IntN(3)
		return fmt.Sprintf("replicas=%d", w.replicas), false
	default:
		w.image = fmt.Sprintf("nginx:%d", rng.IntN(50)+2)
		return "image " + w.image, false
	}
}

// application is Application i as w describes it.
func application(i int, w desired) *v1beta1.Application {
	k := kindOf(i)
	name := appName(i)
	web := component(name+"-web", "webservice", map[string]any{"image": w.image})
	if k != kindApplyOnce {
		web.Traits = []common.ApplicationTrait{{Type: "scaler", Properties: raw(map[string]any{"replicas": w.replicas})}}
	}
	spec := v1beta1.ApplicationSpec{Components: []common.ApplicationComponent{web}}
	if w.side {
		spec.Components = append(spec.Components, component(name+"-side", "webservice", map[string]any{"image": "nginx:1"}))
	}
	policy := func(name, typ string, props map[string]any) {
		spec.Policies = append(spec.Policies, common.AppPolicy{Name: name, Type: typ, Properties: raw(props)})
	}
	switch k {
	case kindLocal:
		spec.Workflow = &common.Workflow{Steps: []oamv1alpha1.WorkflowStep{
			{WorkflowStepBase: oamv1alpha1.WorkflowStepBase{Name: "deploy", Type: "deploy"}},
			{WorkflowStepBase: oamv1alpha1.WorkflowStepBase{Name: "notify", Type: "webhook", Properties: raw(map[string]any{
				"url":  map[string]any{"value": w.hook},
				"data": hookCall{App: name, Life: w.created, Version: w.version},
			})}},
		}}
	case kindMulti:
		clusters := []string{member1}
		if w.wide {
			clusters = append(clusters, member2)
		}
		policy("where", "topology", map[string]any{"clusters": clusters})
	case kindGC:
		spec.Components = append(spec.Components, component(name+"-keep", "webservice", map[string]any{"image": "nginx:1"}))
		policy("gc", "garbage-collect", map[string]any{"keepLegacyResource": true,
			"rules": []any{map[string]any{"selector": map[string]any{"componentNames": []string{name + "-keep"}}, "strategy": "never"}}})
	case kindShared:
		spec.Components = append(spec.Components, component(name+"-shared", "k8s-objects", map[string]any{"objects": []any{map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": sharedName(i), "namespace": namespace},
			"data":     map[string]any{"shared": "yes"},
		}}}))
		policy("share", "shared-resource", map[string]any{"rules": []any{map[string]any{"selector": map[string]any{"resourceTypes": []string{"ConfigMap"}}}}})
	case kindHelm:
		spec.Components = append(spec.Components, component(name+"-chart", "helm", map[string]any{
			"chart":  map[string]any{"source": "simple"},
			"values": map[string]any{"replicaCount": w.replicas},
		}))
	case kindApplyOnce:
		policy("once", "apply-once", map[string]any{"enable": true, "rules": []any{map[string]any{
			"selector": map[string]any{"resourceTypes": []string{"Deployment"}},
			"strategy": map[string]any{"path": []string{"spec.replicas"}, "affect": "always"},
		}}})
	}
	return &v1beta1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: spec}
}

func component(name, typ string, props map[string]any) common.ApplicationComponent {
	return common.ApplicationComponent{Name: name, Type: typ, Properties: raw(props)}
}

func raw(v any) *runtime.RawExtension {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the workload's own literals
	}
	return &runtime.RawExtension{Raw: b}
}

func appName(i int) string { return fmt.Sprintf("app-%d", i) }
