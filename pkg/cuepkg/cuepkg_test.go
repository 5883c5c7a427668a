package cuepkg

import (
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSchemasBuild checks that every definition of every package builds
// without error (a package's plain fields may be bottom on purpose:
// vela/op's NoExist).
func TestSchemasBuild(t *testing.T) {
	for _, s := range []Set{Step, Workload, Policy} {
		for _, p := range Packages(s) {
			t.Run(string(s)+"/"+p.Name, func(t *testing.T) {
				f, err := parser.ParseFile(p.Path()+".cue", p.Template)
				require.NoError(t, err)
				v := cuecontext.New().BuildFile(f)
				it, err := v.Fields(cue.Definitions(true))
				require.NoError(t, err)
				n := 0
				for it.Next() {
					if !it.Selector().IsDefinition() {
						continue
					}
					n++
					assert.NoError(t, it.Value().Err(), "%s.%s", p.Path(), it.Selector())
				}
				assert.NotZero(t, n, "%s defines something", p.Path())
			})
		}
	}
}

func TestSets(t *testing.T) {
	cases := []struct {
		reason string
		kind   string
		want   []string // some paths the set has
		not    []string // paths it must not have
	}{
		{reason: "workflow steps get KubeVela's workflow compiler packages", kind: "workflow-step",
			want: []string{"vela/op", "vela/ql", "vela/kube", "vela/builtin", "vela/http", "vela/util", "vela/config", "vela/query", "vela/multicluster", "vela/metrics", "vela/helm", "vela/oam", "vela/email", "vela/time", "vela/terraform"}},
		{reason: "components get KubeVela's workload compiler packages", kind: "component",
			want: []string{"vela/kube", "vela/http", "vela/base64", "vela/cue", "vela/config", "vela/helm"}, not: []string{"vela/op", "vela/builtin"}},
		{reason: "traits too", kind: "trait", want: []string{"vela/helm"}, not: []string{"vela/op"}},
		{reason: "policies get kubevela/pkg's default compiler packages", kind: "policy",
			want: []string{"vela/kube", "vela/http", "vela/base64", "vela/cue"}, not: []string{"vela/helm", "vela/op"}},
		{reason: "status CUE gets none", kind: "health policy", not: []string{"vela/kube"}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			s := SetFor(tc.kind)
			for _, w := range tc.want {
				_, ok := Lookup(s, w)
				assert.True(t, ok, w)
			}
			for _, n := range tc.not {
				_, ok := Lookup(s, n)
				assert.False(t, ok, n)
			}
		})
	}
}

func TestKubeVelaActions(t *testing.T) {
	// What KubeVela v1.11's own definitions use must be there.
	cases := []struct {
		set     Set
		pkg     string
		actions []string
	}{
		{Step, "op", []string{"#GetPlacementsFromTopologyPolicies", "#ListClusters", "#Load", "#ApplyComponent", "#ApplyRemaining", "#ApplyApplication", "#ApplyApplicationInParallel", "#ApplyEnvBindApp", "#DeployCloudResource", "#ShareCloudResource", "#HTTPDo", "#ConditionalWait", "#Steps", "#Fail"}},
		{Step, "multicluster", []string{"#Deploy", "#GetPlacementsFromTopologyPolicies", "#GetPlacementsFromTmulticlusterologyPolicies", "#ListClusters"}},
		{Step, "query", []string{"#CollectServiceEndpoints", "#ListResourcesInApp", "#CollectPods"}},
		{Step, "ql", []string{"#CollectServiceEndpoints"}},
		{Step, "config", []string{"#CreateConfig", "#DeleteConfig", "#ReadConfig", "#ListConfig"}},
		{Step, "helm", []string{"#Render", "#Install"}},
		{Workload, "helm", []string{"#Render"}},
		{Workload, "config", []string{"#ImageRegistry", "#HelmRepository"}},
	}
	for _, tc := range cases {
		p, ok := Lookup(tc.set, Prefix+tc.pkg)
		require.True(t, ok, tc.pkg)
		v := cuecontext.New().CompileString(p.Template)
		for _, a := range tc.actions {
			assert.True(t, v.LookupPath(cue.ParsePath(a)).Exists(), "%s %s has %s", tc.set, p.Path(), a)
		}
	}
}

func TestActions(t *testing.T) {
	p, ok := Lookup(Step, "vela/multicluster")
	require.True(t, ok)
	got, err := Actions(p)
	require.NoError(t, err)
	assert.Contains(t, got, Action{Name: "#Deploy", Do: "deploy"})
	assert.Contains(t, got, Action{Name: "#ListClusters", Do: "list-clusters"})
}
