package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

// assertGolden compares got with testdata/<name>; `go test ./pkg/cli
// -update` rewrites the file.
func assertGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run go test ./pkg/cli -run %s -update", t.Name())
	assert.Equal(t, string(want), got, "golden file %s differs; run go test ./pkg/cli -run %s -update to accept", path, t.Name())
}

// goldenNow is the "now" of golden tests; fixtures are dated before it.
var goldenNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// ago is a timestamp d before goldenNow.
func ago(d time.Duration) metav1.Time { return metav1.NewTime(goldenNow.Add(-d)) }

// cliEnv is a kube-apiserver with the oamflow CRDs and a kubeconfig for it.
type cliEnv struct {
	env        *envtest.Environment
	c          client.Client
	kubeconfig string
}

// cliResult is what one in-process run of oamflow printed and returned.
type cliResult struct {
	out, errOut string
	err         error
	code        int
}

// run runs oamflow against the environment with stdin and args and
// returns the exit code Execute would give.
func (e *cliEnv) run(stdin string, args ...string) cliResult {
	var out bytes.Buffer
	return e.runTo(&out, stdin, args...)
}

// runTo is run with stdout written to out as the command prints it.
func (e *cliEnv) runTo(out interface {
	io.Writer
	String() string
}, stdin string, args ...string) cliResult {
	var errOut bytes.Buffer
	root := NewRootCommand(out, &errOut)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(append([]string{"--kubeconfig", e.kubeconfig}, args...))
	err := root.ExecuteContext(context.Background())
	res := cliResult{out: out.String(), errOut: errOut.String(), err: err, code: ExitOK}
	if err != nil {
		res.code = ExitRuntimeErr
		var ue *UserError
		if errors.As(err, &ue) {
			res.code = ExitUserError
		}
	}
	return res
}

// background is a run of oamflow in progress.
type background struct {
	out  *lockedBuffer
	done <-chan cliResult // yields the result once the command returns
}

// waitOutput waits until the command has printed want, so a test changes
// the world only after the command saw the state before the change.
func (b *background) waitOutput(t *testing.T, want string) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(b.out.String(), want) }, 20*time.Second, 10*time.Millisecond,
		"the command never printed %q; it printed:\n%s", want, b.out.String())
}

// lockedBuffer is a bytes.Buffer the command writes while a test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// start runs oamflow in the background.
func (e *cliEnv) start(args ...string) *background {
	ch := make(chan cliResult, 1)
	b := &background{out: &lockedBuffer{}, done: ch}
	go func() { ch <- e.runTo(b.out, "", args...) }()
	return b
}

func TestCheckOutput(t *testing.T) {
	cases := []struct {
		reason  string
		format  string
		allowed []string
		wantErr bool
	}{
		{reason: "an allowed format passes", format: "json", allowed: []string{"table", "yaml", "json"}},
		{reason: "an unknown format is the user's error", format: "xml", allowed: []string{"table", "yaml", "json"}, wantErr: true},
		{reason: "table is refused where only documents are printed", format: "table", allowed: []string{"yaml", "json"}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			err := checkOutput(tc.format, tc.allowed...)
			if !tc.wantErr {
				require.NoError(t, err)
				return
			}
			var ue *UserError
			require.ErrorAs(t, err, &ue)
			assert.Contains(t, err.Error(), tc.format)
		})
	}
}

func TestHumanSpanAndClip(t *testing.T) {
	spans := []struct {
		reason string
		in     time.Duration
		want   string
	}{
		{reason: "sub-second keeps milliseconds", in: 850 * time.Millisecond, want: "850ms"},
		{reason: "seconds are rounded", in: 12400 * time.Millisecond, want: "12s"},
		{reason: "minutes show seconds", in: 3*time.Minute + 4*time.Second, want: "3m4s"},
		{reason: "hours show minutes", in: 2*time.Hour + 5*time.Minute + 10*time.Second, want: "2h5m"},
		{reason: "a negative span (clock skew) is zero", in: -time.Second, want: "0s"},
	}
	for _, tc := range spans {
		assert.Equal(t, tc.want, humanSpan(tc.in), tc.reason)
	}
	clips := []struct {
		reason string
		in     string
		n      int
		want   string
	}{
		{reason: "short strings are kept", in: "abc", n: 5, want: "abc"},
		{reason: "long strings end with an ellipsis", in: "abcdefgh", n: 5, want: "abcd…"},
		{reason: "runes, not bytes, are counted", in: "ääääää", n: 3, want: "ää…"},
		{reason: "no limit keeps everything", in: "abcdefgh", n: 0, want: "abcdefgh"},
	}
	for _, tc := range clips {
		assert.Equal(t, tc.want, clip(tc.in, tc.n), tc.reason)
	}
}
