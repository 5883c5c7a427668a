package v1beta1_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/randfill"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// filler fills API objects with random but JSON-representable values:
// RawExtension gets a small JSON object, times are whole seconds (RFC 3339
// keeps no more), metadata gets the fields users set.
func filler(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.2).NumElements(1, 3).MaxDepth(12).Funcs(
		func(r *runtime.RawExtension, c randfill.Continue) {
			r.Raw = []byte(fmt.Sprintf(`{"image":%q,"replicas":%d,"nested":{"list":[1,"two",true]}}`, c.String(8), c.Intn(100)))
		},
		func(t *metav1.Time, c randfill.Continue) {
			*t = metav1.NewTime(time.Unix(c.Int63n(1<<32), 0).UTC())
		},
		func(m *metav1.ObjectMeta, c randfill.Continue) {
			m.Name = c.String(10)
			m.Namespace = c.String(5)
			m.Labels = map[string]string{"app.oam.dev/name": c.String(6)}
			m.Annotations = map[string]string{"note": c.String(12)}
			m.Generation = c.Int63n(10)
		},
		func(tm *metav1.TypeMeta, c randfill.Continue) {},
		func(lm *metav1.ListMeta, c randfill.Continue) { lm.ResourceVersion = c.String(4) },
	)
}

// TestRoundTrip fills every registered kind with random content, then checks
// that DeepCopy yields an equal, independent object and that JSON
// marshalling round-trips without loss.
func TestRoundTrip(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, v1beta1.AddToScheme(scheme))
	kinds := scheme.KnownTypes(v1beta1.GroupVersion)
	require.GreaterOrEqual(t, len(kinds), 16, "every kind and its list must be registered")

	for kind, typ := range kinds {
		if typ.PkgPath() != reflect.TypeOf(v1beta1.Application{}).PkgPath() {
			continue // meta types the scheme adds (WatchEvent, options, …)
		}
		t.Run(kind, func(t *testing.T) {
			for seed := int64(0); seed < 20; seed++ {
				obj := reflect.New(typ).Interface().(runtime.Object)
				filler(seed).Fill(obj)

				cp := obj.DeepCopyObject()
				require.True(t, equality.Semantic.DeepEqual(obj, cp), "DeepCopy must equal the original (seed %d)", seed)
				if reflect.ValueOf(obj).Elem().NumField() > 0 {
					require.NotSame(t, obj, cp)
				}

				data, err := json.Marshal(obj)
				require.NoError(t, err)
				back := reflect.New(typ).Interface().(runtime.Object)
				require.NoError(t, json.Unmarshal(data, back))
				again, err := json.Marshal(back)
				require.NoError(t, err)
				require.JSONEq(t, string(data), string(again), "JSON must round-trip (seed %d)", seed)
			}
		})
	}
}

// TestDeepCopyIndependent checks that mutating a copy leaves the original
// untouched, including nested slices, maps and raw properties.
func TestDeepCopyIndependent(t *testing.T) {
	app := &v1beta1.Application{}
	filler(7).NilChance(0).Fill(app)
	require.NotEmpty(t, app.Spec.Components)
	before := app.DeepCopy()

	cp := app.DeepCopy()
	cp.Spec.Components[0].Name = "changed"
	cp.Spec.Components[0].Properties.Raw[0] = ' '
	cp.Spec.Components[0].Traits = append(cp.Spec.Components[0].Traits, cp.Spec.Components[0].Traits...)
	cp.Labels["x"] = "y"
	cp.Status.Conditions[0].Reason = "Changed"

	require.True(t, equality.Semantic.DeepEqual(before, app), "mutating the copy must not change the original")
}
