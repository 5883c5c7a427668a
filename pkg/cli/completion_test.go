package cli

import (
	"bytes"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompletionScripts(t *testing.T) {
	cases := []struct {
		reason   string
		args     []string
		wantCode int
		wantOut  string
	}{
		{reason: "bash (v2, with descriptions)", args: []string{"completion", "bash"}, wantOut: "__start_oamflow"},
		{reason: "zsh", args: []string{"completion", "zsh"}, wantOut: "#compdef oamflow"},
		{reason: "fish", args: []string{"completion", "fish"}, wantOut: "complete -c oamflow"},
		{reason: "an unsupported shell is the user's error", args: []string{"completion", "tcsh"}, wantCode: ExitUserError},
		{reason: "no shell", args: []string{"completion"}, wantCode: ExitUserError},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			out, _, _, code := runCLI(t, tc.args...)
			assert.Equal(t, tc.wantCode, code)
			assert.Contains(t, out, tc.wantOut)
		})
	}
}

// testCompleteApps asks cobra's hidden __complete command for Application
// names, as the shell scripts do.
func testCompleteApps(t *testing.T, e *cliEnv) {
	var out bytes.Buffer
	root := NewRootCommand(&out, &out)
	root.SetArgs([]string{cobra.ShellCompRequestCmd, "--kubeconfig", e.kubeconfig, "status", "w"})
	require.NoError(t, root.Execute())
	assert.Contains(t, out.String(), "web\n")
	assert.NotContains(t, out.String(), "listed", "only the namespace of the flags")
	assert.Contains(t, out.String(), ":4\n", "no file completion")
}

func TestCompleteOutputFormats(t *testing.T) {
	var out bytes.Buffer
	root := NewRootCommand(&out, &out)
	root.SetArgs([]string{cobra.ShellCompRequestCmd, "ls", "-o", ""})
	require.NoError(t, root.Execute())
	assert.Contains(t, out.String(), "table\nyaml\njson\n:4\n")
}
