package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/hack/buildflags"
)

// TestNoGoPlugins: built with its tags, the controller does not link
// package plugin, which makes the Go linker keep every exported method
// and export every symbol (hack/buildflags says why; issue 18, memory).
func TestNoGoPlugins(t *testing.T) {
	for _, tc := range []struct {
		reason string
		tags   string
		want   bool
	}{
		{reason: "with the controller's tags, nothing links package plugin", tags: buildflags.ControllerTags, want: false},
		{reason: "without them kustomize's plugin loader does (the test can fail)", tags: "", want: true},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "-tags="+tc.tags, ".").Output()
			require.NoError(t, err, "go list -deps")
			assert.Equal(t, tc.want, slices.Contains(strings.Fields(string(out)), "plugin"))
		})
	}
}
