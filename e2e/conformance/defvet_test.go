//go:build !e2e

package conformance

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/pkg/cli"
)

// defVet runs `oamflow def vet args...` in-process.
func defVet(args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	root := cli.NewRootCommand(&out, &errOut)
	root.SetArgs(append([]string{"def", "vet"}, args...))
	err = root.Execute()
	return out.String(), errOut.String(), err
}

// TestDefVetCorpusDefinitions: KubeVela's own definitions (the corpus's
// definitions/ folder, walked recursively) load with no error and no
// warning (issue 14 item 5, issue 15 item 2).
func TestDefVetCorpusDefinitions(t *testing.T) {
	corpus := corpusDir(t)
	dir := filepath.Join(corpus, "definitions")
	stdout, stderr, err := defVet(dir)
	require.NoError(t, err, "def vet %s:\n%s%s", dir, stdout, stderr)
	var valid int
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		switch {
		case strings.HasPrefix(line, "✓ "):
			valid++
		default:
			t.Errorf("not a valid-definition line: %s", line)
		}
	}
	files := 0
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".cue") {
			files++
		}
		return err
	}))
	assert.Equal(t, files, valid, "one definition per .cue file, all valid")
	assert.Empty(t, stderr, "no warnings, no skipped files")
	t.Logf("def vet %s: %d/%d valid, no warnings", dir, valid, files)
}

// TestDefVetCaseDefinitions: the case-local definitions load too (058's
// legacy list arithmetic with warnings, not errors).
func TestDefVetCaseDefinitions(t *testing.T) {
	corpus := corpusDir(t)
	dirs, err := filepath.Glob(filepath.Join(corpus, "cases", "*", "definitions"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		stdout, stderr, err := defVet(dir)
		assert.NoError(t, err, "def vet %s:\n%s%s", dir, stdout, stderr)
		if strings.Contains(dir, "058-legacy-cue-defs") {
			assert.Equal(t, 3, strings.Count(stdout, "warning: "), "component, trait and policy each use list arithmetic:\n%s", stdout)
			assert.Contains(t, stdout, "list arithmetic at component legacy-cue-component:4:10")
		}
	}
}

// TestClusterVersionOn013: deviation (a) on the corpus case that shows it.
// 013 itself is refused for an unknown step property (deviation (d)); with
// that property renamed to the field check-metrics declares, oamflow with
// --cluster-version v1.18 prints exactly what vela prints.
func TestClusterVersionOn013(t *testing.T) {
	corpus := corpusDir(t)
	var c vcase
	for _, x := range loadCases(t, corpus) {
		if x.number() == "013" {
			c = x
		}
	}
	require.NotEmpty(t, c.name, "case 013 is in the corpus")
	app, err := os.ReadFile(filepath.Join(c.dir, "app.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(app), "promAddress:")
	fixed := filepath.Join(t.TempDir(), "app.yaml")
	require.NoError(t, os.WriteFile(fixed, []byte(strings.ReplaceAll(string(app), "promAddress:", "metricEndpoint:")), 0o644))
	c.args = []string{"dry-run", "-f", fixed, "--offline", "-d", filepath.Join(corpus, "definitions")}
	vela, err := parseOutput(c.expected, nil)
	require.NoError(t, err)
	stdout, stderr, err := run(t, corpus, c, "--cluster-version", legacyClusterVersion)
	res := judge(c, stdout, stderr, err, vela)
	assert.True(t, res.ok, "%s: %s", res.reason, strings.Join(res.diff, "\n"))
	stdout, stderr, err = run(t, corpus, c)
	assert.False(t, judge(c, stdout, stderr, err, vela).ok, "without --cluster-version oamflow renders for a current cluster")
}
