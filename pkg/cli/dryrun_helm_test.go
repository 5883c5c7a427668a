package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDryRunHelmGolden(t *testing.T) {
	out, errOut, code := runOamflow(t, "dry-run", "--offline", "--chart-root", "../../charts/testdata", "-f", "testdata/dryrun-helm/app.yaml")
	require.Equal(t, ExitOK, code, errOut)
	golden := filepath.Join("testdata", "dryrun-helm", "simple.golden")
	if *updateGolden {
		require.NoError(t, os.WriteFile(golden, []byte(out), 0o644))
		return
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test ./pkg/cli -run TestDryRunHelmGolden -update")
	assert.Equal(t, string(want), out)
	assert.NotContains(t, out, "kind: HelmRelease", "the chart's objects replace the virtual HelmRelease")
}

func TestDryRunHelmSources(t *testing.T) {
	app := func(chart string, extra string) string {
		return `apiVersion: core.oam.dev/v1beta1
kind: Application
metadata: {name: store, namespace: shop}
spec:
  components:
  - name: web
    type: helm
    properties:
      chart: ` + chart + `
` + extra
	}
	cases := []struct {
		reason   string
		app      string
		code     int
		stdout   []string
		stderr   []string
		noStdout []string
	}{
		{
			reason: "a bundled chart renders its objects with the values",
			app:    app("{source: simple}", "      values: {message: hi}\n"),
			code:   ExitOK,
			stdout: []string{"kind: Deployment", "name: web-web", "name: web-config", "message: hi"},
		},
		{
			reason:   "a remote chart is not fetched: the HelmRelease is printed with a warning",
			app:      app("{source: simple, repoURL: 'https://charts.example.com'}", ""),
			code:     ExitOK,
			stdout:   []string{"kind: HelmRelease"},
			stderr:   []string{"Warning: component web: chart \"simple\" is remote and not fetched by dry-run"},
			noStdout: []string{"kind: Deployment"},
		},
		{
			reason:   "an oci:// chart is not fetched either (the CLI links no registry client)",
			app:      app("{source: 'oci://registry.example.com/charts/simple', version: '1.0.0'}", ""),
			code:     ExitOK,
			stdout:   []string{"kind: HelmRelease"},
			stderr:   []string{"Warning: component web: chart \"oci://registry.example.com/charts/simple\" is remote and not fetched by dry-run"},
			noStdout: []string{"kind: Deployment"},
		},
		{
			reason: "a bundled chart needs no credentials: chart.auth is not read",
			app:    app("{source: simple, auth: {secretRef: {name: creds}}}", ""),
			code:   ExitOK,
			stdout: []string{"kind: Deployment", "name: web-web"},
		},
		{
			reason: "a typo in a bundled chart name is the user's error and says not found",
			app:    app("{source: simpel}", ""),
			code:   ExitUserError,
			stderr: []string{"component web:", "chart not found"},
		},
		{
			reason: "a chart path leaving the chart root is refused",
			app:    app("{source: ../cli}", ""),
			code:   ExitUserError,
			stderr: []string{"unsafe chart"},
		},
		{
			reason: "valuesFrom needs a cluster",
			app:    app("{source: simple}", "      valuesFrom: [{kind: ConfigMap, name: vals}]\n"),
			code:   ExitUserError,
			stderr: []string{"spec.valuesFrom[0]", "dry-run reads no cluster objects"},
		},
		{
			reason: "a spec error names the field",
			app:    app("{source: simple, versoin: '1'}", ""),
			code:   ExitUserError,
			stderr: []string{"versoin"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			f := writeFile(t, t.TempDir(), "app.yaml", tc.app)
			out, errOut, code := runOamflow(t, "dry-run", "--offline", "--chart-root", "../../charts/testdata", "-f", f)
			require.Equal(t, tc.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			for _, s := range tc.stdout {
				assert.Contains(t, out, s)
			}
			for _, s := range tc.noStdout {
				assert.NotContains(t, out, s)
			}
			for _, s := range tc.stderr {
				assert.Contains(t, errOut, s)
			}
		})
	}
}
