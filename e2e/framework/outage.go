package framework

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/oamflow/oamflow/pkg/localcluster"
)

// process is a snapshot of one local-cluster process: what it takes to
// start it again as it was.
type process struct {
	pid     int
	argv    []string
	env     []string
	dir     string
	pidFile string
	logFile string
	name    string
}

// Outage is a component of a cluster stopped by a test, with the other
// components of that cluster as they were (kube-controller-manager,
// kube-scheduler and kwok exit when they lose their API server, as they
// would on a real control plane until their supervisor restarts them).
type Outage struct {
	stopped  *process
	siblings []*process
}

// Stop kills component comp (localcluster.CompKubeAPIServer, CompEtcd, …)
// of cluster with SIGKILL, as a crash or a lost machine would
// (kube-apiserver's graceful shutdown can take longer than a test wants),
// waits until it is gone and returns how to bring it back. It is safe to
// call from any goroutine.
func (e *Env) Stop(ctx context.Context, cluster, comp string) (*Outage, error) {
	list, err := e.Manager.Status(ctx)
	if err != nil {
		return nil, err
	}
	out := &Outage{}
	for _, c := range list {
		if c.Name != cluster {
			continue
		}
		for _, cs := range c.Components {
			if !cs.Running {
				return nil, fmt.Errorf("%s of %s is not running", cs.Name, cluster)
			}
			p, err := snapshot(cluster, cs)
			if err != nil {
				return nil, err
			}
			if cs.Name == comp {
				out.stopped = p
			} else {
				out.siblings = append(out.siblings, p)
			}
		}
	}
	if out.stopped == nil {
		return nil, fmt.Errorf("no component %s in cluster %s", comp, cluster)
	}
	if err := syscall.Kill(out.stopped.pid, syscall.SIGKILL); err != nil {
		return nil, fmt.Errorf("killing %s: %w", out.stopped.name, err)
	}
	for deadline := time.Now().Add(30 * time.Second); localcluster.ProcessAlive(out.stopped.pid); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s (pid %d) still alive 30 s after SIGKILL", out.stopped.name, out.stopped.pid)
		}
	}
	return out, nil
}

// Name is "<cluster>/<component>" of the stopped component.
func (o *Outage) Name() string { return o.stopped.name }

// snapshot reads the command line, environment and working directory of a
// running component.
func snapshot(cluster string, cs localcluster.ComponentStatus) (*process, error) {
	proc := filepath.Join("/proc", strconv.Itoa(cs.PID))
	cmdline, err := os.ReadFile(filepath.Join(proc, "cmdline"))
	if err != nil {
		return nil, err
	}
	environ, err := os.ReadFile(filepath.Join(proc, "environ"))
	if err != nil {
		return nil, err
	}
	dir, err := os.Readlink(filepath.Join(proc, "cwd"))
	if err != nil {
		return nil, err
	}
	return &process{
		pid:     cs.PID,
		argv:    splitNul(cmdline),
		env:     splitNul(environ),
		dir:     dir,
		pidFile: filepath.Join(filepath.Dir(filepath.Dir(cs.Log)), "pids", cs.Name+".pid"),
		logFile: cs.Log,
		name:    cluster + "/" + cs.Name,
	}, nil
}

// Restart starts the stopped component again, waits (up to 60 s) until c
// answers, then for 20 s starts again every other component that exited
// meanwhile (one that lost its lease while the API server was gone may
// still be on its way out). logf reports each start.
func (o *Outage) Restart(c *Cluster, logf func(format string, args ...any)) error {
	if err := o.stopped.start(logf); err != nil {
		return err
	}
	var last error
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		if _, last = c.Kube.Discovery().ServerVersion(); last == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not answer 60 s after %s started again: %w", c, o.stopped.name, last)
		}
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		for _, p := range o.siblings {
			if !localcluster.ProcessAlive(p.pid) {
				if err := p.start(logf); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// start starts the process with its old command line, environment and
// log, and records its pid where the local-cluster manager looks for it
// (so that Env.Down stops it).
func (p *process) start(logf func(format string, args ...any)) error {
	log, err := os.OpenFile(p.logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := &exec.Cmd{Path: p.argv[0], Args: p.argv, Env: p.env, Dir: p.dir, Stdout: log, Stderr: log,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	go func() { _ = cmd.Wait() }() // reaped when Down stops it
	if err := os.WriteFile(p.pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return err
	}
	p.pid = cmd.Process.Pid
	logf("started %s again (pid %d)", p.name, p.pid)
	return nil
}

func splitNul(b []byte) []string {
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}
