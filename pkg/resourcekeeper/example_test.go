package resourcekeeper_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
)

func ExampleParsePolicies() {
	policies, err := resourcekeeper.ParsePolicies([]common.AppPolicy{
		{Name: "keep-pvcs", Type: "garbage-collect", Properties: &runtime.RawExtension{Raw: []byte(
			`{"order":"dependency","rules":[{"selector":{"resourceTypes":["PersistentVolumeClaim"]},"strategy":"never"}]}`)}},
		{Name: "adopt", Type: "take-over", Properties: &runtime.RawExtension{Raw: []byte(
			`{"rules":[{"selector":{"componentNames":["legacy"]}}]}`)}},
	})
	fmt.Println(err)
	fmt.Println(policies.GarbageCollect.Order, policies.GarbageCollect.Rules[0].Strategy)
	fmt.Println(policies.TakeOver[0].Selector.ComponentNames)

	_, err = resourcekeeper.ParsePolicies([]common.AppPolicy{
		{Name: "gc", Type: "garbage-collect", Properties: &runtime.RawExtension{Raw: []byte(`{"rules":[{"propagation":"delete"}]}`)}},
	})
	fmt.Println(err)
	// Output:
	// <nil>
	// dependency never
	// [legacy]
	// spec.policies[0].properties.rules[0].propagation: expected one of orphan, cascading, got "delete"
}
