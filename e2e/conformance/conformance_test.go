//go:build !e2e

package conformance

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/pkg/cli"
	"github.com/oamflow/oamflow/pkg/testing/corpus"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ (deviations' expected oamflow output)")

// legacyAPIs are the API versions vela renders offline because it assumes
// an ancient cluster (deviation (a)); a case whose vela output holds one
// must render identically with --cluster-version legacyClusterVersion.
var legacyAPIs = regexp.MustCompile(`(?m)^apiVersion: (batch/v1beta1|networking\.k8s\.io/v1beta1|autoscaling/v2beta[12])$`)

const legacyClusterVersion = "v1.18"

// corpusDir is the KubeVela conformance corpus (see pkg/testing/corpus).
func corpusDir(t *testing.T) string { return corpus.Dir(t) }

// vcase is one corpus case.
type vcase struct {
	name, dir string
	args      []string // dry-run arguments (after `vela`)
	refExit   int      // vela's exit code
	expected  string   // vela's stdout
}

func loadCases(t *testing.T, corpus string) []vcase {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(corpus, "cases"))
	require.NoError(t, err)
	var cases []vcase
	for _, e := range entries {
		dir := filepath.Join(corpus, "cases", e.Name())
		src, err := os.ReadFile(filepath.Join(dir, "source.txt"))
		if err != nil {
			continue
		}
		c := vcase{name: e.Name(), dir: dir}
		m := regexp.MustCompile(`(?m)^command:\s*(.+)$`).FindSubmatch(src)
		require.NotNil(t, m, "%s: source.txt has no command: line", c.name)
		words, err := splitCommand(strings.TrimSpace(string(m[1])))
		require.NoError(t, err, c.name)
		require.True(t, len(words) > 1 && words[0] == "vela", "%s: command does not start with vela", c.name)
		c.args = words[1:]
		if m := regexp.MustCompile(`(?m)^exit:\s*(\d+)`).FindSubmatch(src); m != nil {
			c.refExit, _ = strconv.Atoi(string(m[1]))
		} else if _, err := os.Stat(filepath.Join(dir, "error.txt")); err == nil {
			c.refExit = 1
		}
		if c.refExit == 0 {
			b, err := os.ReadFile(filepath.Join(dir, "expected.yaml"))
			require.NoError(t, err, c.name)
			c.expected = string(b)
		}
		cases = append(cases, c)
	}
	return cases
}

// number is the NNN of "NNN-name".
func (c vcase) number() string { n, _, _ := strings.Cut(c.name, "-"); return n }

// run runs `oamflow <args>` in-process in the case folder with an empty
// HOME and the corpus's dummy kubeconfig, as the corpus was made.
func run(t *testing.T, corpus string, c vcase, extra ...string) (stdout, stderr string, err error) {
	t.Chdir(c.dir)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", filepath.Join(corpus, "kubeconfig-offline"))
	var out, errOut bytes.Buffer
	root := cli.NewRootCommand(&out, &errOut)
	root.SetArgs(append(slices.Clone(c.args), extra...))
	err = root.Execute()
	return out.String(), errOut.String(), err
}

// outcome of one case.
type outcome struct {
	ok     bool
	reason string   // why not ok
	diff   []string // path-level diff lines
}

// judge compares a run with vela's output; want is vela's (possibly
// transformed) objects.
func judge(c vcase, stdout, stderr string, runErr error, want objects) outcome {
	if c.refExit != 0 {
		if runErr != nil {
			return outcome{ok: true}
		}
		return outcome{reason: fmt.Sprintf("vela exits %d, oamflow exits 0", c.refExit)}
	}
	if runErr != nil {
		return outcome{reason: "oamflow fails (vela exits 0)", diff: tail(stderr+"Error: "+runErr.Error(), 6)}
	}
	got, err := parseOutput(stdout, nil)
	if err != nil {
		return outcome{reason: "output is not valid YAML: " + err.Error()}
	}
	if d := compare(want, got); len(d) > 0 {
		return outcome{reason: fmt.Sprintf("objects differ (%d expected)", want.count()), diff: d}
	}
	return outcome{ok: true}
}

func tail(s string, n int) []string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		lines[i] = "    | " + l
	}
	return lines
}

const maxDiffLines = 25

func (o outcome) report() string {
	var b strings.Builder
	b.WriteString(o.reason)
	for i, l := range o.diff {
		if i == maxDiffLines {
			fmt.Fprintf(&b, "\n    ... %d more lines", len(o.diff)-maxDiffLines)
			break
		}
		b.WriteString("\n" + l)
	}
	return b.String()
}

// TestConformance renders every corpus case with `dry-run --offline` and
// compares with vela's output. A case passes when identical, or when it is
// a deliberate deviation and oamflow prints exactly the documented
// difference. A pending case may still fail (its reason is printed); one
// that passes must be taken off the pending list.
func TestConformance(t *testing.T) {
	corpus := corpusDir(t)
	wd, err := os.Getwd()
	require.NoError(t, err)
	goldenDir := filepath.Join(wd, "testdata", "deviations") // read before a case changes directory
	cases := loadCases(t, corpus)
	require.NotEmpty(t, cases)
	known := map[string]bool{}
	for _, c := range cases {
		known[c.number()] = true
	}
	for n := range pending {
		assert.True(t, known[n], "pending names case %s, which the corpus does not have", n)
	}
	for n := range deviations {
		assert.True(t, known[n], "deviations names case %s, which the corpus does not have", n)
		_, p := pending[n]
		assert.False(t, p, "case %s is both a deviation and pending", n)
	}

	identical, deviating := 0, 0
	var stillPending, failed []string
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, exact := checkCase(t, corpus, goldenDir, c)
			reason, isPending := pending[c.number()]
			switch {
			case res.ok && isPending:
				t.Errorf("case %s passes now: take it off the pending list in deviations_test.go (it said: %s)", c.name, reason)
			case res.ok && exact:
				identical++
			case res.ok:
				deviating++
			case isPending:
				stillPending = append(stillPending, c.number())
				t.Logf("pending (%s): %s", reason, res.report())
			default:
				failed = append(failed, c.number())
				t.Errorf("%s", res.report())
			}
		})
	}
	t.Logf("%d/%d identical to vela; %d more differ only by a documented deviation; %d pending %v; %d failing %v",
		identical, len(cases), deviating, len(stillPending), stillPending, len(failed), failed)
}

// checkCase runs one case (twice for a case with legacy APIs) and says
// whether it passes and whether the output is identical to vela's (no
// deviation applied).
func checkCase(t *testing.T, corpus, goldenDir string, c vcase) (outcome, bool) {
	dev, isDev := deviations[c.number()]
	stdout, stderr, err := run(t, corpus, c)
	if c.refExit != 0 {
		return judge(c, stdout, stderr, err, nil), true
	}
	vela, perr := parseOutput(c.expected, nil)
	require.NoError(t, perr, "%s: expected.yaml", c.name)
	res := judge(c, stdout, stderr, err, vela)
	if isDev {
		if res.ok {
			return outcome{reason: "identical to vela, but listed as a deviation (" + dev.why + "): take it off the list"}, false
		}
		res = judgeDeviation(t, goldenDir, c, dev, stdout, stderr, err)
		if !res.ok {
			return res, false
		}
	}
	if legacyAPIs.MatchString(c.expected) && dev.refused == "" {
		stdout, stderr, err := run(t, corpus, c, "--cluster-version", legacyClusterVersion)
		if r := judge(c, stdout, stderr, err, vela); !r.ok {
			r.reason = "with --cluster-version " + legacyClusterVersion + ": " + r.reason
			return r, false
		}
	}
	return res, !isDev
}

// judgeDeviation checks that oamflow prints exactly vela's output changed
// as the deviation says.
func judgeDeviation(t *testing.T, goldenDir string, c vcase, dev deviation, stdout, stderr string, runErr error) outcome {
	if dev.refused != "" {
		var ue *cli.UserError
		switch {
		case runErr == nil:
			return outcome{reason: "deviation (" + dev.why + ") not as documented: oamflow renders it"}
		case !errors.As(runErr, &ue) || runErr.Error() != dev.refused:
			return outcome{reason: "deviation (" + dev.why + ") not as documented: another error", diff: tail(runErr.Error(), 6)}
		}
		return outcome{ok: true}
	}
	want, err := parseOutput(c.expected, dev.topologyNamespace)
	require.NoError(t, err)
	if len(dev.replaced) > 0 {
		for _, k := range dev.replaced {
			require.Contains(t, want, k, "%s: deviation replaces %s, which vela does not print", c.name, k)
			delete(want, k)
		}
		golden := filepath.Join(goldenDir, c.name+".yaml")
		if *update && runErr == nil {
			got, err := parseOutput(stdout, nil)
			require.NoError(t, err)
			writeGolden(t, golden, unmatched(got, want))
		}
		b, err := os.ReadFile(golden)
		require.NoError(t, err, "missing golden file; run go test ./e2e/conformance/ -update")
		own, err := parseOutput(string(b), nil)
		require.NoError(t, err, golden)
		for k, l := range own {
			want[k] = append(want[k], l...)
		}
	}
	res := judge(c, stdout, stderr, runErr, want)
	if !res.ok {
		res.reason = "deviation (" + dev.why + ") not as documented: " + res.reason
	}
	return res
}

// unmatched returns the objects of got that have no identical object in want.
func unmatched(got, want objects) []any {
	var out []any
	keys := make([]objKey, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, k := range keys {
		rest := slices.Clone(want[k])
		for _, o := range got[k] {
			co := canon(o)
			if i := slices.IndexFunc(rest, func(x any) bool { return canon(x) == co }); i >= 0 {
				rest = slices.Delete(rest, i, i+1)
				continue
			}
			out = append(out, o)
		}
	}
	return out
}

func writeGolden(t *testing.T, path string, docs []any) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# oamflow's own output in place of vela's (see deviations_test.go); written by go test -update\n")
	for _, d := range docs {
		y, err := yaml.Marshal(d)
		require.NoError(t, err)
		b.WriteString("---\n")
		b.Write(y)
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
}
