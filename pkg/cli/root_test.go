package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExecuteExitCodes: a command stopped by Ctrl-C (its context
// cancelled) exits 130 saying so; the same failure without the signal is
// a runtime error.
func TestExecuteExitCodes(t *testing.T) {
	// A cluster that refuses connections: requests fail at once.
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	cases := []struct {
		reason      string
		interrupted bool // the command's context is cancelled, as Ctrl-C does
		args        []string
		want        int
		stderr      string
	}{
		{"an interrupted command exits 130", true, []string{"ls", "--kubeconfig", kubeconfig}, ExitInterrupted, "Interrupted."},
		{"the same failure without the signal is a runtime error", false, []string{"ls", "--kubeconfig", kubeconfig}, ExitRuntimeErr, "Error:"},
		{"an unknown command is the user's error", false, []string{"no-such-command"}, ExitUserError, "unknown command"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.interrupted {
				cancel()
			}
			var out, errOut bytes.Buffer
			assert.Equal(t, tc.want, execute(ctx, tc.args, &out, &errOut), errOut.String())
			assert.Contains(t, errOut.String(), tc.stderr)
		})
	}
}
