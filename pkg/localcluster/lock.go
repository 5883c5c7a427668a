package localcluster

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// lockHome takes an exclusive, non-blocking lock on the state directory so
// that two `oamflow local` commands never change the same set at once. The
// returned function releases it. The lock is an flock, so it disappears with
// the process that held it.
func lockHome(l layout) (func(), error) {
	if err := os.MkdirAll(l.home, 0o755); err != nil {
		return nil, fmt.Errorf("creating state dir: %w", err)
	}
	f, err := os.OpenFile(l.lockPath(), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(l.lockPath())
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("state dir %s is in use by another oamflow local command (pid %s): wait for it to finish", l.home, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("locking state dir %s: %w", l.home, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
