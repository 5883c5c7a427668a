package resourcekeeper

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
)

func policy(typ, props string) common.AppPolicy {
	p := common.AppPolicy{Name: typ, Type: typ}
	if props != "" {
		p.Properties = &runtime.RawExtension{Raw: []byte(props)}
	}
	return p
}

func TestParsePolicies(t *testing.T) {
	limit := 5
	cases := []struct {
		reason   string
		policies []common.AppPolicy
		want     Policies
		wantErr  string
	}{
		{
			reason:   "no policies parse to the zero value",
			policies: nil,
			want:     Policies{},
		},
		{
			reason:   "other policy types are ignored",
			policies: []common.AppPolicy{policy("topology", `{"clusters":["local"]}`), policy("override", `{"components":[]}`)},
			want:     Policies{},
		},
		{
			reason: "selector rules of take-over, shared-resource and read-only",
			policies: []common.AppPolicy{
				policy(PolicyTakeOver, `{"rules":[{"selector":{"componentNames":["web"],"resourceTypes":["Deployment"]}}]}`),
				policy(PolicySharedResource, `{"rules":[{"selector":{"resourceNames":["cfg"]}}]}`),
				policy(PolicyReadOnly, `{"rules":[{"selector":{"oamTypes":["TRAIT"],"traitTypes":["expose"]}}]}`),
			},
			want: Policies{
				TakeOver:       []SelectorRule{{Selector: ResourceSelector{ComponentNames: []string{"web"}, ResourceTypes: []string{"Deployment"}}}},
				SharedResource: []SelectorRule{{Selector: ResourceSelector{ResourceNames: []string{"cfg"}}}},
				ReadOnly:       []SelectorRule{{Selector: ResourceSelector{OAMTypes: []string{"TRAIT"}, TraitTypes: []string{"expose"}}}},
			},
		},
		{
			reason: "apply-once with rules",
			policies: []common.AppPolicy{policy(PolicyApplyOnce,
				`{"enable":true,"rules":[{"selector":{"componentTypes":["webservice"]},"strategy":{"path":["spec.replicas"],"affect":"onStateKeep"}}]}`)},
			want: Policies{ApplyOnce: &ApplyOncePolicy{Enable: true, Rules: []ApplyOnceRule{{
				Selector: ResourceSelector{ComponentTypes: []string{"webservice"}},
				Strategy: ApplyOnceStrategy{Path: []string{"spec.replicas"}, Affect: AffectOnStateKeep},
			}}}},
		},
		{
			reason: "garbage-collect with every field; two policies add up",
			policies: []common.AppPolicy{
				policy(PolicyGarbageCollect, `{"applicationRevisionLimit":5,"keepLegacyResource":false,"continueOnFailure":true,"order":"dependency","rules":[{"selector":{"resourceTypes":["PersistentVolumeClaim"]},"strategy":"never"}]}`),
				policy(PolicyGarbageCollect, `{"rules":[{"selector":{"traitTypes":["expose"]},"propagation":"orphan"}]}`),
			},
			want: Policies{GarbageCollect: &GarbageCollectPolicy{
				ApplicationRevisionLimit: &limit, ContinueOnFailure: true, Order: GCOrderDependency,
				Rules: []GarbageCollectRule{
					{Selector: ResourceSelector{ResourceTypes: []string{"PersistentVolumeClaim"}}, Strategy: GCNever},
					{Selector: ResourceSelector{TraitTypes: []string{"expose"}}, Propagation: GCPropagationOrphan},
				},
			}},
		},
		{
			reason:   "resource-update",
			policies: []common.AppPolicy{policy(PolicyResourceUpdate, `{"rules":[{"selector":{"resourceTypes":["Job"]},"strategy":{"op":"replace","recreateFields":["spec.template"]}}]}`)},
			want: Policies{ResourceUpdate: []ResourceUpdateRule{{
				Selector: ResourceSelector{ResourceTypes: []string{"Job"}},
				Strategy: ResourceUpdateStrategy{Op: UpdateOpReplace, RecreateFields: []string{"spec.template"}},
			}}},
		},
		{
			reason:   "a bad enum value names the field path and the allowed values",
			policies: []common.AppPolicy{policy("topology", `{}`), policy(PolicyGarbageCollect, `{"rules":[{"strategy":"sometimes"}]}`)},
			wantErr:  `spec.policies[1].properties.rules[0].strategy: expected one of onAppUpdate, onAppDelete, never, got "sometimes"`,
		},
		{
			reason:   "a wrong type names the field path and what was expected",
			policies: []common.AppPolicy{policy(PolicyApplyOnce, `{"enable":true,"rules":[{"strategy":{"path":"spec.replicas"}}]}`)},
			wantErr:  `spec.policies[0].properties.rules.strategy.path: expected a list, got a JSON string`,
		},
		{
			reason:   "an unknown field is refused with its name",
			policies: []common.AppPolicy{policy(PolicyTakeOver, `{"rules":[{"selectr":{}}]}`)},
			wantErr:  `spec.policies[0].properties: "selectr" is not a known field`,
		},
		{
			reason:   "a bad apply-once affect",
			policies: []common.AppPolicy{policy(PolicyApplyOnce, `{"enable":true,"rules":[{"strategy":{"affect":"onCreate"}}]}`)},
			wantErr:  `spec.policies[0].properties.rules[0].strategy.affect: expected one of onUpdate, onStateKeep, always, got "onCreate"`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			got, err := ParsePolicies(tc.policies)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func FuzzParsePolicies(f *testing.F) {
	for _, seed := range []string{
		`{"rules":[{"selector":{"componentNames":["a"]}}]}`,
		`{"enable":true,"rules":[{"strategy":{"path":["*"],"affect":"always"}}]}`,
		`{"keepLegacyResource":true,"rules":[{"strategy":"never","propagation":"orphan"}]}`,
		`null`, `[]`, `{"rules":{}}`,
	} {
		f.Add(seed)
	}
	types := []string{PolicyTakeOver, PolicySharedResource, PolicyReadOnly, PolicyApplyOnce, PolicyResourceUpdate, PolicyGarbageCollect}
	f.Fuzz(func(t *testing.T, props string) {
		for _, typ := range types {
			_, _ = ParsePolicies([]common.AppPolicy{policy(typ, props)})
		}
	})
}
