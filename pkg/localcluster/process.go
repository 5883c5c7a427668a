package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procDir is where Linux exposes processes.
const procDir = "/proc"

// readPidFile returns the pid stored in a kwokctl pid file (decimal, optional
// trailing newline).
func readPidFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pid file %s: invalid content %q", path, string(b))
	}
	return pid, nil
}

// processAlive reports whether pid is a live (not zombie) process started
// as argv0 (see commandPath). Matching the command tells a component from an
// unrelated process that reused the pid of a stale pid file; an empty argv0
// skips that check.
func processAlive(pid int, argv0 string) bool {
	stat, err := os.ReadFile(filepath.Join(procDir, strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	state, err := parseStatState(stat)
	if err != nil || state == 'Z' || state == 'X' || state == 'x' {
		return false
	}
	if argv0 == "" {
		return true
	}
	cmdline, err := os.ReadFile(filepath.Join(procDir, strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return false
	}
	return commandPath(cmdline, func(p string) bool { return p == argv0 }) != ""
}

// commandPath returns the path a process was started as, given its
// /proc/<pid>/cmdline, if match accepts it: argv[0], or argv[1] when the
// command is a script run by its interpreter ("/bin/bash <script> …").
// It returns "" when match accepts neither.
func commandPath(cmdline []byte, match func(string) bool) string {
	args := strings.SplitN(string(cmdline), "\x00", 3)
	if len(args) > 0 && match(args[0]) {
		return args[0]
	}
	if len(args) > 1 && match(args[1]) {
		return args[1]
	}
	return ""
}

// parseStatState returns the state letter of a /proc/<pid>/stat line
// ("R", "S", "Z", …). The command name in parentheses may itself contain
// spaces and parentheses, so the state is read after the last ')'.
func parseStatState(stat []byte) (byte, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) || stat[i+1] != ' ' {
		return 0, fmt.Errorf("malformed /proc stat line %q", string(stat))
	}
	return stat[i+2], nil
}

func residentKiB(pid int) (int64, error) {
	b, err := os.ReadFile(filepath.Join(procDir, strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, fmt.Errorf("reading status of pid %d: %w", pid, err)
	}
	return parseVmRSS(b)
}

// parseVmRSS extracts the "VmRSS: <n> kB" value of a /proc/<pid>/status file.
func parseVmRSS(status []byte) (int64, error) {
	for _, line := range strings.Split(string(status), "\n") {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("malformed VmRSS line %q", line)
		}
		return strconv.ParseInt(fields[0], 10, 64)
	}
	return 0, errors.New("no VmRSS line (kernel thread or exited process)")
}

// stopProcesses sends SIGTERM to every live process in procs (pid → argv[0]),
// waits up to grace for them to exit, then SIGKILLs the rest and waits up to
// grace again. It returns the pids still alive after that (normally none).
func stopProcesses(procs map[int]string, grace time.Duration) []int {
	signalAll := func(sig syscall.Signal) {
		for pid, argv0 := range procs {
			if processAlive(pid, argv0) {
				_ = syscall.Kill(pid, sig)
			}
		}
	}
	waitGone := func() []int {
		deadline := time.Now().Add(grace)
		for {
			var alive []int
			for pid := range procs {
				// By pid only: an exiting process's cmdline reads empty
				// before it is gone, so matching argv[0] here called
				// processes stopped while they were still exiting.
				if processAlive(pid, "") {
					alive = append(alive, pid)
				}
			}
			if len(alive) == 0 || time.Now().After(deadline) {
				return alive
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	signalAll(syscall.SIGTERM)
	if alive := waitGone(); len(alive) == 0 {
		return nil
	}
	signalAll(syscall.SIGKILL)
	return waitGone()
}

// tailFile returns up to the last n lines of the file at path, or a note
// saying why it could not be read.
func tailFile(path string, n int) string {
	const maxBytes = 64 << 10
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	off := fi.Size() - maxBytes
	if off < 0 {
		off = 0
	}
	buf := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	if off > 0 && len(lines) > 1 {
		lines = lines[1:] // first line is cut
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 1 && lines[0] == "" {
		return "(log is empty)"
	}
	return strings.Join(lines, "\n")
}

// processesUnder returns the live processes started as a path that begins
// with prefix (pid → that path; see commandPath), by scanning /proc.
func processesUnder(prefix string) map[int]string {
	found := map[int]string{}
	entries, err := os.ReadDir(procDir)
	if err != nil {
		return found
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(procDir, e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv0 := commandPath(cmdline, func(p string) bool { return strings.HasPrefix(p, prefix) })
		if argv0 != "" && processAlive(pid, argv0) {
			found[pid] = argv0
		}
	}
	return found
}

// ProcessAlive reports whether pid is a live process (not a zombie).
func ProcessAlive(pid int) bool { return processAlive(pid, "") }

// ResidentKiB returns the resident set size of pid in KiB (VmRSS in
// /proc/<pid>/status).
func ResidentKiB(pid int) (int64, error) { return residentKiB(pid) }

// CPUTime returns the user+system CPU time of pid from /proc/<pid>/stat
// (fields 14 and 15, in clock ticks of 1/100 s, the Linux USER_HZ).
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(procDir, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed CPU times in /proc/%d/stat", pid)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}
