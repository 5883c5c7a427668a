package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFloorRuns evaluates the bench app; a definition or properties change
// that breaks the floor's shortcut cutting of templates fails here.
func TestFloorRuns(t *testing.T) {
	require.NoError(t, run([]string{"../../../../pkg/render/testdata/bench/one.yaml"}))
	assert.Error(t, run(nil), "usage")
}

// TestFloorIsLean keeps the floor a floor: it must not link what makes the
// oamflow CLI's start-up costly.
func TestFloorIsLean(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	require.NoError(t, err, "go list -deps")
	for _, d := range strings.Fields(string(out)) {
		for _, heavy := range []string{"k8s.io/client-go/", "sigs.k8s.io/controller-runtime/", "helm.sh/", "k8s.io/api/"} {
			assert.False(t, strings.HasPrefix(d, heavy), "the floor links %s", d)
		}
	}
}
