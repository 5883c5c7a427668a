package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestExitCodes checks the process exit codes for input mistakes that cobra
// itself detects: they are the user's errors (1), not runtime failures (2).
func TestExitCodes(t *testing.T) {
	cases := []struct {
		reason string
		args   []string
		want   int
	}{
		{"an unknown command", []string{"bogus"}, ExitUserError},
		{"an unknown flag", []string{"version", "--bogus"}, ExitUserError},
		{"an extra argument", []string{"version", "extra"}, ExitUserError},
		{"a good command", []string{"version"}, ExitOK},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, Execute(tc.args), tc.reason)
		})
	}
}
