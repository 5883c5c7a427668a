package localcluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startSleeper starts `sleep 60` under the name argv0 (a symlink to sleep,
// like kwokctl's bin/<component>) and returns its pid; the test reaps it.
func startSleeper(t *testing.T, argv0 string) *exec.Cmd {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(argv0), 0o755))
	require.NoError(t, os.Symlink(sleep, argv0))
	cmd := exec.Command(argv0, "60")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	})
	waitExeced(t, cmd.Process.Pid, argv0)
	return cmd
}

// waitExeced waits until pid shows argv0 in /proc: right after exec the
// kernel briefly reports an empty command line.
func waitExeced(t *testing.T, pid int, argv0 string) {
	t.Helper()
	require.Eventually(t, func() bool { return processAlive(pid, argv0) }, 5*time.Second, 5*time.Millisecond,
		"pid %d never showed %s", pid, argv0)
}

func TestReadPidFile(t *testing.T) {
	cases := map[string]struct {
		reason  string
		content string
		want    int
		wantErr bool
	}{
		"Plain":    {reason: "kwokctl writes bare digits", content: "1234", want: 1234},
		"Newline":  {reason: "a trailing newline is fine", content: "1234\n", want: 1234},
		"Empty":    {reason: "an empty file is invalid", content: "", wantErr: true},
		"Garbage":  {reason: "non-digits are invalid", content: "abc", wantErr: true},
		"Zero":     {reason: "pid 0 is not a process", content: "0", wantErr: true},
		"Negative": {reason: "negative pids are process groups", content: "-5", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x.pid")
			writeFile(t, p, tc.content, 0o644)
			got, err := readPidFile(p)
			if tc.wantErr {
				assert.Error(t, err, tc.reason)
				return
			}
			require.NoError(t, err, tc.reason)
			assert.Equal(t, tc.want, got, tc.reason)
		})
	}
	_, err := readPidFile(filepath.Join(t.TempDir(), "missing.pid"))
	assert.ErrorIs(t, err, os.ErrNotExist, "a missing pid file")
}

func TestParseStatState(t *testing.T) {
	cases := map[string]struct {
		reason  string
		stat    string
		want    byte
		wantErr bool
	}{
		"Sleeping": {reason: "a plain line", stat: "42 (etcd) S 1 42 42 0", want: 'S'},
		"Zombie":   {reason: "zombies report Z", stat: "42 (kube-apiserver) Z 1 42", want: 'Z'},
		"Parens":   {reason: "names may contain ') '", stat: "42 (a) b (c)) R 1 42", want: 'R'},
		"Spaces":   {reason: "names may contain spaces", stat: "7 (my proc) D 1", want: 'D'},
		"NoParen":  {reason: "no command name", stat: "42 etcd S", wantErr: true},
		"Cut":      {reason: "truncated after the name", stat: "42 (etcd)", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseStatState([]byte(tc.stat))
			if tc.wantErr {
				assert.Error(t, err, tc.reason)
				return
			}
			require.NoError(t, err, tc.reason)
			assert.Equal(t, string(tc.want), string(got), tc.reason)
		})
	}
}

func TestParseVmRSS(t *testing.T) {
	cases := map[string]struct {
		reason  string
		status  string
		want    int64
		wantErr bool
	}{
		"Normal":    {reason: "the usual layout", status: "Name:\tetcd\nVmPeak:\t 100 kB\nVmRSS:\t   52340 kB\nThreads: 9\n", want: 52340},
		"Missing":   {reason: "kernel threads have no VmRSS", status: "Name:\tkthreadd\nThreads: 1\n", wantErr: true},
		"BadUnit":   {reason: "an unknown unit is not guessed", status: "VmRSS:\t 5 MB\n", wantErr: true},
		"BadNumber": {reason: "a non-number", status: "VmRSS:\t x kB\n", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseVmRSS([]byte(tc.status))
			if tc.wantErr {
				assert.Error(t, err, tc.reason)
				return
			}
			require.NoError(t, err, tc.reason)
			assert.Equal(t, tc.want, got, tc.reason)
		})
	}
}

// TestProcessAlive covers stale pid detection: a pid is a component only
// while a live, non-zombie process with the component's argv[0] has it.
func TestProcessAlive(t *testing.T) {
	dir := t.TempDir()
	argv0 := filepath.Join(dir, "bin", "kube-apiserver")
	cmd := startSleeper(t, argv0)
	pid := cmd.Process.Pid

	assert.True(t, processAlive(pid, argv0), "the running component")
	assert.True(t, processAlive(pid, ""), "any live process without an argv[0] check")
	assert.False(t, processAlive(pid, filepath.Join(dir, "bin", "etcd")), "a reused pid running something else is stale")
	assert.False(t, processAlive(os.Getpid()+1_000_000, ""), "a pid that does not exist")

	rss, err := residentKiB(pid)
	require.NoError(t, err)
	assert.Positive(t, rss, "a live process has resident memory")

	require.NoError(t, cmd.Process.Kill())
	require.Eventually(t, func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		return err == nil && strings.Contains(string(b), ") Z ")
	}, 5*time.Second, 10*time.Millisecond, "the killed child becomes a zombie until reaped")
	assert.False(t, processAlive(pid, argv0), "a zombie is not alive")
	_, _ = cmd.Process.Wait()
	assert.False(t, processAlive(pid, argv0), "a reaped process is gone")
}

func TestProcessesUnderAndStop(t *testing.T) {
	dir := t.TempDir()
	a := startSleeper(t, filepath.Join(dir, "c1", "bin", "etcd"))
	b := startSleeper(t, filepath.Join(dir, "c1", "bin", "kwok-controller"))
	other := startSleeper(t, filepath.Join(dir, "c2", "bin", "etcd"))

	found := processesUnder(filepath.Join(dir, "c1") + "/")
	assert.Equal(t, map[int]string{
		a.Process.Pid: filepath.Join(dir, "c1", "bin", "etcd"),
		b.Process.Pid: filepath.Join(dir, "c1", "bin", "kwok-controller"),
	}, found, "only the processes of that cluster")

	// Reap in the background, as init does for kwokctl's orphans.
	for _, c := range []*exec.Cmd{a, b} {
		go func() { _, _ = c.Process.Wait() }()
	}
	left := stopProcesses(found, 5*time.Second)
	assert.Empty(t, left, "SIGTERM stops them")
	assert.Empty(t, processesUnder(filepath.Join(dir, "c1")+"/"), "nothing of c1 is left")
	assert.True(t, processAlive(other.Process.Pid, ""), "other clusters are untouched")
}

func TestTailFile(t *testing.T) {
	var long strings.Builder
	for i := 1; i <= 100; i++ {
		long.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	cases := map[string]struct {
		reason  string
		content *string
		n       int
		want    string
	}{
		"Short":   {reason: "fewer lines than asked", content: ptr("a\nb\n"), n: 5, want: "a\nb"},
		"Long":    {reason: "the last n lines", content: ptr(long.String()), n: 3, want: "line 98\nline 99\nline 100"},
		"NoNL":    {reason: "no trailing newline", content: ptr("x\ny"), n: 1, want: "y"},
		"Empty":   {reason: "an empty log says so", content: ptr(""), n: 3, want: "(log is empty)"},
		"Missing": {reason: "a missing log says so", n: 3, want: "(no log: "},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c.log")
			if tc.content != nil {
				writeFile(t, p, *tc.content, 0o644)
			}
			got := tailFile(p, tc.n)
			if tc.content == nil {
				assert.True(t, strings.HasPrefix(got, tc.want), tc.reason)
				return
			}
			assert.Equal(t, tc.want, got, tc.reason)
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestCommandPath(t *testing.T) {
	want := "/h/kwok/clusters/c/bin/kube-scheduler"
	is := func(p string) bool { return p == want }
	cases := map[string]struct {
		reason  string
		cmdline string
		want    string
	}{
		"Binary":      {reason: "a binary started by its path", cmdline: want + "\x00--kubeconfig=x\x00", want: want},
		"NoArgs":      {reason: "no arguments, no trailing NUL", cmdline: want, want: want},
		"Script":      {reason: "a script run by its interpreter", cmdline: "/bin/bash\x00" + want + "\x00--v=2\x00", want: want},
		"Other":       {reason: "an unrelated process", cmdline: "/usr/bin/sleep\x00600\x00", want: ""},
		"ThirdArg":    {reason: "only argv[0] and argv[1] count", cmdline: "/bin/sh\x00-c\x00" + want, want: ""},
		"Empty":       {reason: "kernel threads have an empty cmdline", cmdline: "", want: ""},
		"PrefixMatch": {reason: "a longer path is not the same", cmdline: want + "-x\x00", want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, commandPath([]byte(tc.cmdline), is), tc.reason)
		})
	}
}

// TestProcessAliveScript covers components that are scripts: while the
// interpreter runs them, argv[1] is the component's path.
func TestProcessAliveScript(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "bin", "kwok-controller")
	writeFile(t, script, "#!/bin/sh\nsleep 60\n", 0o755)
	cmd := exec.Command(script)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	})
	waitExeced(t, cmd.Process.Pid, script)
	assert.Contains(t, processesUnder(dir+"/"), cmd.Process.Pid)
}

// TestStopWaitsByPid: a process counts as stopped only when its pid is
// gone, not when its cmdline stops matching (an exiting process's cmdline
// reads empty while it still runs; `local down` then said "none left
// running" with an apiserver still exiting, seen in CI).
func TestStopWaitsByPid(t *testing.T) {
	dir := t.TempDir()
	s := startSleeper(t, filepath.Join(dir, "c1", "bin", "etcd"))
	// Recorded under an argv[0] its cmdline does not show, as an exiting
	// process's empty cmdline does not: it is neither signalled nor gone.
	procs := map[int]string{s.Process.Pid: filepath.Join(dir, "c1", "bin", "other")}
	left := stopProcesses(procs, 200*time.Millisecond)
	assert.Equal(t, []int{s.Process.Pid}, left, "a pid that still exists is reported left")
}

func TestCPUTime(t *testing.T) {
	d, err := CPUTime(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, d, "this test process has used some CPU")
	_, err = CPUTime(1 << 30)
	assert.Error(t, err, "no such process")
}
