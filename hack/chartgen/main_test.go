package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChartUpToDate fails when the chart's generated files (built-in
// definitions, values table) differ from what chartgen makes: run
// `go run ./hack/chartgen`.
func TestChartUpToDate(t *testing.T) {
	files, err := Generate("../../charts/oamflow")
	require.NoError(t, err)
	stale, err := Stale("../../charts/oamflow", files)
	require.NoError(t, err)
	assert.Empty(t, stale, "run `go run ./hack/chartgen`")
}

func TestValuesTable(t *testing.T) {
	cases := []struct {
		reason string
		values string
		want   string
	}{
		{"documented leaf", "# -- Replicas.\nreplicas: 1\n", "| `replicas` | `1` | Replicas. |\n"},
		{"nested and continued", "a:\n  # -- First line\n  # second line.\n  b: x\n", "| `a.b` | `\"x\"` | First line second line. |\n"},
		{"object default", "# -- Res.\nres:\n  cpu: 1\n", "| `res` | `{\"cpu\":1}` | Res. |\n"},
		{"undocumented keys are left out", "x: 1\n", ""},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			got, err := ValuesTable([]byte(tc.values))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
