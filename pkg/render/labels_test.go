package render_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
	"github.com/oamflow/oamflow/pkg/render"
)

// renderInline parses appYAML against the given inline definition files
// (name → .cue text) and renders it with opts.
func renderInline(t *testing.T, defs map[string]string, appYAML string, opts render.Options) ([]render.Resource, error) {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, text := range defs {
		fsys[name] = &fstest.MapFile{Data: []byte(text)}
	}
	src, err := appfile.NewFSSource(fsys, ".")
	require.NoError(t, err)
	app := &v1beta1.Application{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(appYAML), app))
	ctx := appfile.WithEngine(context.Background(), cuex.NewEngine())
	af, err := appfile.Parse(ctx, app, src)
	require.NoError(t, err)
	return render.RenderApplication(ctx, af, opts)
}

// labelDefs: a component with a main workload and an auxiliary output, and
// a trait with an output of its own.
var labelDefs = map[string]string{
	"components/box.cue": `box: {
	type: "component"
	attributes: workload: type: "autodetects.core.oam.dev"
}
template: {
	output: {apiVersion: "apps/v1", kind: "Deployment", spec: replicas: 1}
	outputs: svc: {apiVersion: "v1", kind: "Service", metadata: name: context.name}
	parameter: {}
}
`,
	"traits/side.cue": `side: {
	type: "trait"
	attributes: appliesToWorkloads: ["*"]
}
template: {
	outputs: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: context.name + "-side"}
	parameter: {}
}
`,
}

func TestLabels(t *testing.T) {
	res, err := renderInline(t, labelDefs, `
metadata: {name: shop, namespace: prod}
spec:
  components:
    - name: web
      type: box
      traits:
        - type: side
`, render.Options{AppRevision: "shop-v2"})
	require.NoError(t, err)
	common := map[string]string{
		v1beta1.LabelAppName: "shop", v1beta1.LabelAppNamespace: "prod",
		v1beta1.LabelAppComponent: "web", v1beta1.LabelAppRevision: "shop-v2",
	}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range common {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		reason string
		kind   string
		want   map[string]string
	}{
		{
			reason: "the main workload is a WORKLOAD with the component's type",
			kind:   "Deployment",
			want:   with(map[string]string{v1beta1.LabelResourceType: "WORKLOAD", v1beta1.LabelWorkloadType: "box"}),
		},
		{
			reason: "an object of the component's outputs is a TRAIT of type AuxiliaryWorkload, without the workload type",
			kind:   "Service",
			want: with(map[string]string{v1beta1.LabelResourceType: "TRAIT", v1beta1.LabelTraitType: "AuxiliaryWorkload",
				v1beta1.LabelTraitResource: "svc"}),
		},
		{
			reason: "a trait's output is a TRAIT named by its trait type and output name, without the workload type",
			kind:   "ConfigMap",
			want: with(map[string]string{v1beta1.LabelResourceType: "TRAIT", v1beta1.LabelTraitType: "side",
				v1beta1.LabelTraitResource: "cm"}),
		},
	}
	byKind := map[string]render.Resource{}
	for _, r := range res {
		byKind[r.Object.GetKind()] = r
	}
	require.Len(t, byKind, 3)
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			r, ok := byKind[tc.kind]
			require.True(t, ok, "no %s rendered", tc.kind)
			assert.Equal(t, tc.want, r.Object.GetLabels())
		})
	}
}

func TestParseVersion(t *testing.T) {
	cases := []struct {
		reason, in string
		want       render.ClusterVersion
		errMsg     string
	}{
		{reason: "v-prefixed major.minor", in: "v1.18", want: render.ClusterVersion{Major: 1, Minor: 18, GitVersion: "v1.18.0", Platform: "linux/amd64"}},
		{reason: "without the v", in: "1.24", want: render.ClusterVersion{Major: 1, Minor: 24, GitVersion: "v1.24.0", Platform: "linux/amd64"}},
		{reason: "a patch and a vendor suffix are kept in gitVersion", in: "v1.29.3-eks-1", want: render.ClusterVersion{Major: 1, Minor: 29, GitVersion: "v1.29.3-eks-1", Platform: "linux/amd64"}},
		{reason: "a major alone is refused", in: "v1", errMsg: `cluster version "v1": want vMAJOR.MINOR[.PATCH], e.g. v1.18`},
		{reason: "a non-number is refused", in: "v1.x", errMsg: `cluster version "v1.x": want vMAJOR.MINOR[.PATCH]`},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			got, err := render.ParseVersion(tc.in)
			if tc.errMsg != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errMsg)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestClusterVersionContext: templates branch on context.clusterVersion
// as KubeVela's do (hpa, gateway, cron-task).
func TestClusterVersionContext(t *testing.T) {
	defs := map[string]string{"components/cron.cue": `cron: {
	type: "component"
	attributes: workload: type: "autodetects.core.oam.dev"
}
template: {
	output: {
		if context.clusterVersion.minor < 25 {apiVersion: "batch/v1beta1"}
		if context.clusterVersion.minor >= 25 {apiVersion: "batch/v1"}
		kind: "CronJob"
		metadata: annotations: git: context.clusterVersion.gitVersion
	}
	parameter: {}
}
`}
	app := "metadata: {name: a, namespace: d}\nspec: {components: [{name: c, type: cron}]}\n"
	cases := []struct {
		reason, version, apiVersion, git string
	}{
		{reason: "the default is a current cluster", apiVersion: "batch/v1", git: render.DefaultClusterVersion.GitVersion},
		{reason: "an old cluster gets the old API", version: "v1.18", apiVersion: "batch/v1beta1", git: "v1.18.0"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			var cv render.ClusterVersion
			if tc.version != "" {
				var err error
				cv, err = render.ParseVersion(tc.version)
				require.NoError(t, err)
			}
			res, err := renderInline(t, defs, app, render.Options{ClusterVersion: cv})
			require.NoError(t, err)
			require.Len(t, res, 1)
			assert.Equal(t, tc.apiVersion, res[0].Object.GetAPIVersion())
			assert.Equal(t, tc.git, res[0].Object.GetAnnotations()["git"])
		})
	}
}

// TestAppMetadataPassedOn: the Application's labels and annotations reach
// every rendered object, over the template's, except the filtered ones and
// those never passed on; the OAM labels win over the app's.
func TestAppMetadataPassedOn(t *testing.T) {
	defs := map[string]string{
		"components/box.cue": `box: {
	type: "component"
	attributes: workload: type: "autodetects.core.oam.dev"
}
template: {
	output: {apiVersion: "apps/v1", kind: "Deployment", metadata: {labels: team: "tmpl", annotations: {note: "tmpl", secret: "x"}}}
	parameter: {}
}
`,
		"traits/side.cue": labelDefs["traits/side.cue"],
	}
	cases := []struct {
		reason      string
		meta        string
		labels      map[string]string // beyond the OAM ones, on every object
		annotations map[string]string // on the Deployment
		cmAnnos     map[string]string // on the trait's ConfigMap
	}{
		{
			reason:      "app labels and annotations win over the template's; OAM labels win over the app's",
			meta:        `labels: {team: app, app.oam.dev/name: spoofed}, annotations: {app.oam.dev/publishVersion: v2, note: app}`,
			labels:      map[string]string{"team": "app"},
			annotations: map[string]string{"note": "app", "secret": "x", "app.oam.dev/publishVersion": "v2"},
			cmAnnos:     map[string]string{"note": "app", "app.oam.dev/publishVersion": "v2"},
		},
		{
			reason: "filter.oam.dev keys and kubectl's last-applied-configuration are not passed (nor kept from the template)",
			meta: `labels: {team: app, tier: web}, annotations: {filter.oam.dev/label-keys: "tier", filter.oam.dev/annotation-keys: "secret, note",
  kubectl.kubernetes.io/last-applied-configuration: "{}", keep: "yes"}`,
			labels:      map[string]string{"team": "app"},
			annotations: map[string]string{"keep": "yes"},
			cmAnnos:     map[string]string{"keep": "yes"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			res, err := renderInline(t, defs, "metadata: {name: shop, namespace: prod, "+tc.meta+"}\nspec: {components: [{name: web, type: box, traits: [{type: side}]}]}\n", render.Options{})
			require.NoError(t, err)
			require.Len(t, res, 2)
			for _, r := range res {
				labels := r.Object.GetLabels()
				assert.Equal(t, "shop", labels[v1beta1.LabelAppName])
				for k, v := range tc.labels {
					assert.Equal(t, v, labels[k], "%s label %s", r.Object.GetKind(), k)
				}
				assert.NotContains(t, labels, "tier")
				want := tc.annotations
				if r.Object.GetKind() == "ConfigMap" {
					want = tc.cmAnnos
				}
				assert.Equal(t, want, r.Object.GetAnnotations(), r.Object.GetKind())
			}
		})
	}
}
