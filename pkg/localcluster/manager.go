package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Config says where a Manager keeps its state and finds its binaries.
type Config struct {
	// Home is the state directory (see DefaultHome). Required.
	Home string
	// BinDir holds etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler, kwok and kwokctl (see ResolveBinDir). Up requires it;
	// Status and Kubeconfig do not use it, and Down without kwokctl stops
	// the processes itself.
	BinDir string
	// Progress receives one line per step while Up and Down work; nil
	// discards them.
	Progress io.Writer
}

// Manager starts, inspects and stops the set of local clusters of one state
// directory. Its methods take a lock on the state directory, so concurrent
// commands on the same directory fail fast instead of interleaving.
type Manager struct {
	layout   layout
	binDir   string
	kwokctl  kwokctl
	progress *progress
}

// New returns a Manager for cfg. Paths are made absolute.
func New(cfg Config) (*Manager, error) {
	if cfg.Home == "" {
		return nil, errors.New("localcluster: empty state directory")
	}
	home, err := filepath.Abs(cfg.Home)
	if err != nil {
		return nil, fmt.Errorf("resolving state dir: %w", err)
	}
	binDir := ""
	if cfg.BinDir != "" {
		if binDir, err = filepath.Abs(cfg.BinDir); err != nil {
			return nil, fmt.Errorf("resolving binary dir: %w", err)
		}
	}
	w := cfg.Progress
	if w == nil {
		w = io.Discard
	}
	l := layout{home: home}
	return &Manager{
		layout:   l,
		binDir:   binDir,
		kwokctl:  kwokctl{binary: filepath.Join(binDir, BinKwokctl), layout: l},
		progress: &progress{w: w},
	}, nil
}

// Home returns the state directory.
func (m *Manager) Home() string { return m.layout.home }

// BinDir returns the binary directory.
func (m *Manager) BinDir() string { return m.binDir }

// AuditLogPath is the audit log of cluster name's kube-apiserver when the
// clusters were started with UpOptions.AuditLog (JSON audit.k8s.io/v1
// Events, one per line).
func (m *Manager) AuditLogPath(name string) string { return m.layout.auditLogPath(name) }

// ClusterStatus describes one cluster of the set.
type ClusterStatus struct {
	// Name is "local" or "member-<k>".
	Name string
	// Context is the kubeconfig context (and kwokctl cluster) name: prefix + Name.
	Context string
	// Server is the kube-apiserver URL (https://127.0.0.1:<port>).
	Server string
	// Kubeconfig is the cluster's self-contained kubeconfig file.
	Kubeconfig string
	// Nodes is the number of fake nodes requested.
	Nodes int
	// Components are the processes of the cluster, in start order.
	Components []ComponentStatus
	// KwokctlLog collects the output of the kwokctl commands run for the cluster.
	KwokctlLog string
	// Running is true when every component process is alive.
	Running bool
	// APIReady is true when kube-apiserver answered /readyz (Status, Up).
	APIReady bool
	// Reused is true when Up found the cluster running and kept it.
	Reused bool
	// APIReadyAfter and ReadyAfter are measured by Up from its start to
	// kube-apiserver ready and to the whole cluster ready (nodes included).
	APIReadyAfter, ReadyAfter time.Duration
}

// ComponentStatus describes one process of a cluster.
type ComponentStatus struct {
	// Name is the component (CompEtcd, CompKubeAPIServer, …).
	Name string
	// PID is the process id from the pid file, 0 when there is none.
	PID int
	// Running is true when PID is a live process of this component.
	Running bool
	// Log is the component's log file.
	Log string
}

// PIDs returns the pids of the cluster's live component processes.
func (c ClusterStatus) PIDs() []int {
	var pids []int
	for _, comp := range c.Components {
		if comp.Running {
			pids = append(pids, comp.PID)
		}
	}
	return pids
}

// inspect reads the pid files of rec and checks each process.
func (m *Manager) inspect(rec clusterRecord, prefix string) ClusterStatus {
	cs := ClusterStatus{
		Name:       rec.Name,
		Context:    prefix + rec.Name,
		Server:     fmt.Sprintf("https://%s:%d", loopback, rec.Ports.APIServer),
		Kubeconfig: m.layout.kubeconfigPath(rec.Name),
		Nodes:      rec.Nodes,
		KwokctlLog: m.layout.kwokctlLog(rec.KwokName),
		Running:    true,
	}
	for _, comp := range components() {
		c := ComponentStatus{Name: comp, Log: m.layout.logPath(rec.KwokName, comp)}
		if pid, err := readPidFile(m.layout.pidPath(rec.KwokName, comp)); err == nil {
			c.PID = pid
			c.Running = processAlive(pid, m.layout.argv0(rec.KwokName, comp))
		}
		cs.Running = cs.Running && c.Running
		cs.Components = append(cs.Components, c)
	}
	return cs
}

// deadComponents returns the components of s whose process is not running.
func deadComponents(s ClusterStatus) []string {
	var dead []string
	for _, c := range s.Components {
		if !c.Running {
			dead = append(dead, c.Name)
		}
	}
	return dead
}

// Status returns every cluster of the set in set order, probing each running
// kube-apiserver for readiness (2 s at most each). An empty slice means
// nothing was started from this state directory.
func (m *Manager) Status(ctx context.Context) ([]ClusterStatus, error) {
	st, err := loadState(m.layout.statePath())
	if err != nil {
		return nil, err
	}
	out := make([]ClusterStatus, 0, len(st.Clusters))
	for _, rec := range st.Clusters {
		s := m.inspect(rec, st.NamePrefix)
		if s.Running {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			s.APIReady = m.apiReady(pctx, rec) == nil
			cancel()
		}
		out = append(out, s)
	}
	return out, nil
}

// Kubeconfig returns the kubeconfig file of cluster name. It fails with
// ErrUnknownCluster (wrapped, listing the known names) when the set has no
// such cluster, and when the file was never written (the cluster never
// became ready).
func (m *Manager) Kubeconfig(name string) (string, error) {
	if err := ValidateName(name); err != nil {
		return "", err
	}
	st, err := loadState(m.layout.statePath())
	if err != nil {
		return "", err
	}
	if st.get(name) == nil {
		var known []string
		for _, c := range st.Clusters {
			known = append(known, c.Name)
		}
		if len(known) == 0 {
			return "", fmt.Errorf("%w %q: no local clusters in %s; start them with `oamflow local up`", ErrUnknownCluster, name, m.layout.home)
		}
		return "", fmt.Errorf("%w %q: the clusters in %s are %s", ErrUnknownCluster, name, m.layout.home, strings.Join(known, ", "))
	}
	p := m.layout.kubeconfigPath(name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no kubeconfig for cluster %s yet (it never became ready): run `oamflow local up`: %w", name, err)
	}
	return p, nil
}

// UpResult is what Up started or kept.
type UpResult struct {
	// Clusters are all clusters requested, in set order.
	Clusters []ClusterStatus
	// Extra names clusters of the set beyond the requested count; Up leaves
	// them running.
	Extra []string
}

// Up makes the first o.Clusters clusters of the set run and be ready: a
// running cluster is kept (idempotent), a cluster whose processes died (stale
// pid files) is deleted and created again, a missing one is created. Ready
// means kube-apiserver answers /readyz, kube-controller-manager, kube-scheduler
// and kwok are up, o.Nodes nodes are Ready and the default ServiceAccount
// exists. Each cluster's kubeconfig is (re)written.
//
// Errors: invalid options; *MissingBinariesError; ErrPrefixConflict (wrapped)
// when the set uses another prefix; *ComponentError when a component exits or
// is not ready within o.Timeout. On failure every cluster created by this call
// is stopped (its logs stay for `status`; `down` removes them) and clusters
// that were already running are left alone.
func (m *Manager) Up(ctx context.Context, o UpOptions) (*UpResult, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if m.binDir == "" {
		return nil, fmt.Errorf("no binary directory: set $%s or --k8s-bin (build the binaries with `%s`)", BinDirEnv, BuildCommand)
	}
	if err := CheckBinaries(m.binDir, ClusterBinaries()...); err != nil {
		return nil, err
	}
	unlock, err := lockHome(m.layout)
	if err != nil {
		return nil, err
	}
	defer unlock()

	st, err := loadState(m.layout.statePath())
	if err != nil {
		return nil, err
	}
	if len(st.Clusters) > 0 && st.NamePrefix != o.NamePrefix {
		return nil, fmt.Errorf("%w: the clusters in %s use name prefix %q, not %q: run `oamflow local down` first or use another $%s",
			ErrPrefixConflict, m.layout.home, st.NamePrefix, o.NamePrefix, HomeEnv)
	}
	st.NamePrefix = o.NamePrefix
	names, _ := ClusterNames(o.Clusters)

	m.progress.reset()
	if stamp := ReadStamp(m.binDir); stamp != "" {
		m.progress.printf("", "binaries: %s (%s)", m.binDir, stamp)
	} else {
		m.progress.printf("", "binaries: %s", m.binDir)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	start := time.Now()

	reuse, create, err := m.sortOut(ctx, st, names)
	if err != nil {
		return nil, err
	}
	var extra []string
	for _, c := range st.Clusters {
		if memberIndex(c.Name) >= o.Clusters {
			extra = append(extra, c.Name)
		}
	}

	// Plan the missing ones (ports, configuration, state record), then start
	// every cluster in parallel: kwokctl forks the components of a new one
	// and returns, and each cluster is waited for until ready.
	created, err := m.planClusters(ctx, st, create, o)
	fail := func(err error) (*UpResult, error) {
		m.stopAttempt(created)
		return nil, err
	}
	if err != nil {
		return fail(err)
	}
	results := make([]ClusterStatus, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	for i, name := range names {
		rec := *st.get(name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := m.startCluster(wctx, rec, contains(create, name), o, start)
			if err != nil {
				errs[i] = err
				wcancel() // one failure stops the others
				return
			}
			s.Reused = contains(reuse, name)
			s.Context = st.NamePrefix + name
			results[i] = s
		}()
	}
	wg.Wait()
	if err := firstError(errs); err != nil {
		return fail(err)
	}

	for _, name := range names {
		rec := st.get(name)
		if rec.Nodes < o.Nodes {
			rec.Nodes = o.Nodes
		}
		if err := m.writeKubeconfig(*rec, st.NamePrefix); err != nil {
			return fail(fmt.Errorf("cluster %s: %w", name, err))
		}
	}
	if err := st.save(m.layout.statePath()); err != nil {
		return fail(err)
	}
	for i := range results {
		results[i].Nodes = st.get(results[i].Name).Nodes
	}
	return &UpResult{Clusters: results, Extra: extra}, nil
}

// sortOut splits names into clusters to keep (all processes running) and
// clusters to create (no record, or stale: some process gone, which
// deleteCluster then clears, removing the record).
func (m *Manager) sortOut(ctx context.Context, st *state, names []string) (reuse, create []string, err error) {
	for _, name := range names {
		rec := st.get(name)
		if rec == nil {
			create = append(create, name)
			continue
		}
		s := m.inspect(*rec, st.NamePrefix)
		if s.Running {
			m.progress.printf(name, "already running (kube-apiserver %s), reusing it", s.Server)
			reuse = append(reuse, name)
			continue
		}
		m.progress.printf(name, "stale: %s not running; deleting and creating it again", strings.Join(deadComponents(s), ", "))
		if err := m.deleteCluster(ctx, *rec); err != nil {
			return nil, nil, fmt.Errorf("cluster %s: clearing stale cluster: %w", name, err)
		}
		st.remove(name)
		if err := st.save(m.layout.statePath()); err != nil {
			return nil, nil, err
		}
		create = append(create, name)
	}
	return reuse, create, nil
}

// planClusters picks ports for the clusters in names, writes their kwokctl
// configurations and records them in the state file. It returns the records
// written, also on error, so the caller can clean them up.
func (m *Manager) planClusters(ctx context.Context, st *state, names []string, o UpOptions) ([]clusterRecord, error) {
	if len(names) == 0 {
		return nil, nil
	}
	used := st.usedPorts()
	if o.APIServerPort != 0 {
		used[o.APIServerPort] = true
	}
	if contains(names, HubName) && o.APIServerPort != 0 {
		if err := checkPortFree(o.APIServerPort); err != nil {
			return nil, &ComponentError{Cluster: HubName, Component: CompKubeAPIServer,
				Reason: "cannot listen on its port (" + err.Error() + "); nothing was started: choose another --api-port or stop what listens on it"}
		}
	}
	p, err := pickPorts(6*len(names), used)
	if err != nil {
		return nil, err
	}
	var planned []clusterRecord
	for i, name := range names {
		q := p[6*i : 6*i+6]
		ports := Ports{APIServer: q[0], Etcd: q[1], EtcdPeer: q[2], ControllerManager: q[3], Scheduler: q[4], Kwok: q[5]}
		if name == HubName && o.APIServerPort != 0 {
			ports.APIServer = o.APIServerPort
		}
		rec := clusterRecord{Name: name, KwokName: st.NamePrefix + name, Ports: ports, Nodes: o.Nodes, CreatedAt: time.Now().UTC()}
		// A kwokctl workdir without a record is debris of an interrupted run.
		if _, err := os.Stat(m.layout.kwokDir(rec.KwokName)); err == nil {
			if err := m.deleteCluster(ctx, rec); err != nil {
				return planned, fmt.Errorf("cluster %s: clearing leftovers: %w", name, err)
			}
		}
		cfg, err := renderKwokctlConfig(m.layout, name, m.binDir, ports, o)
		if err != nil {
			return planned, err
		}
		if err := os.MkdirAll(m.layout.clusterDir(name), 0o755); err != nil {
			return planned, fmt.Errorf("cluster %s: %w", name, err)
		}
		if err := os.WriteFile(m.layout.kwokctlConfigPath(name), cfg, 0o644); err != nil {
			return planned, fmt.Errorf("cluster %s: writing kwokctl configuration: %w", name, err)
		}
		if o.AuditLog {
			if err := os.WriteFile(m.layout.auditPolicyPath(name), []byte(auditPolicy), 0o644); err != nil {
				return planned, fmt.Errorf("cluster %s: writing the audit policy: %w", name, err)
			}
		}
		st.put(rec)
		planned = append(planned, rec)
	}
	if err := st.save(m.layout.statePath()); err != nil {
		return planned, err
	}
	return planned, nil
}

// startCluster runs `kwokctl create cluster` when create is set, then waits
// until the cluster is ready and returns its status with timings.
func (m *Manager) startCluster(ctx context.Context, rec clusterRecord, create bool, o UpOptions, start time.Time) (ClusterStatus, error) {
	if create {
		m.progress.printf(rec.Name, "starting etcd, kube-apiserver (127.0.0.1:%d), kube-controller-manager, kube-scheduler, kwok", rec.Ports.APIServer)
		if err := m.kwokctl.run(ctx, rec.KwokName, m.kwokctl.createArgs(rec.KwokName, m.layout.kwokctlConfigPath(rec.Name))...); err != nil {
			if ce := m.firstDeadComponent(rec); ce != nil {
				return ClusterStatus{}, ce
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				log := m.layout.kwokctlLog(rec.KwokName)
				return ClusterStatus{}, &ComponentError{Cluster: rec.Name, Component: BinKwokctl,
					Reason: fmt.Sprintf("did not finish creating the cluster within the timeout of %s", o.Timeout), LogPath: log, LogTail: tailFile(log, logTailLines)}
			}
			return ClusterStatus{}, fmt.Errorf("cluster %s: %w", rec.Name, err)
		}
	}
	t, err := m.waitReady(ctx, rec, o, start)
	if err != nil {
		return ClusterStatus{}, err
	}
	s := m.inspect(rec, "")
	s.APIReady, s.APIReadyAfter, s.ReadyAfter = true, t.apiReady, t.ready
	return s, nil
}

// firstDeadComponent returns a ComponentError for the first component of rec
// (in start order) that has a pid file but no live process, or nil.
func (m *Manager) firstDeadComponent(rec clusterRecord) *ComponentError {
	for _, comp := range components() {
		pid, err := readPidFile(m.layout.pidPath(rec.KwokName, comp))
		if err != nil {
			continue
		}
		if !processAlive(pid, m.layout.argv0(rec.KwokName, comp)) {
			return m.componentError(rec, comp, "exited while starting")
		}
	}
	return nil
}

// stopAttempt stops the clusters an unsuccessful Up created. Their records,
// logs and data stay, so `status` shows them stopped and `up` recreates them.
func (m *Manager) stopAttempt(created []clusterRecord) {
	for _, rec := range created {
		m.progress.printf(rec.Name, "stopping (start failed)")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_ = m.kwokctl.run(ctx, rec.KwokName, "--name", rec.KwokName, "stop", "cluster")
		cancel()
		if left := stopProcesses(m.processesOf(rec.KwokName), 5*time.Second); len(left) > 0 {
			m.progress.printf(rec.Name, "WARNING: pids %v did not exit", left)
		}
	}
}

// DownResult says what Down stopped.
type DownResult struct {
	// Stopped names the clusters removed, in set order; empty when nothing
	// was there.
	Stopped []string
	// PIDs are the processes that were running and are now gone.
	PIDs []int
}

// Down stops every process of every cluster of the set (also clusters left
// by an interrupted or failed Up) and removes their state, data and logs.
// It verifies by pid that no process is left and fails naming the pids
// otherwise. With nothing to stop it returns an empty result and no error.
func (m *Manager) Down(ctx context.Context) (*DownResult, error) {
	if _, err := os.Stat(m.layout.home); errors.Is(err, os.ErrNotExist) {
		return &DownResult{}, nil // never used: nothing to stop, nothing to create
	}
	unlock, err := lockHome(m.layout)
	if err != nil {
		return nil, err
	}
	defer unlock()

	st, err := loadState(m.layout.statePath())
	if err != nil {
		m.progress.printf("", "WARNING: %v; stopping the clusters found on disk", err)
		st = &state{}
	}
	targets := append([]clusterRecord(nil), st.Clusters...)
	// kwokctl workdirs without a record (state file lost or corrupt).
	entries, _ := os.ReadDir(m.layout.kwokClustersDir())
	for _, e := range entries {
		known := false
		for _, t := range targets {
			known = known || t.KwokName == e.Name()
		}
		if e.IsDir() && !known {
			targets = append(targets, clusterRecord{Name: e.Name(), KwokName: e.Name()})
		}
	}
	res := &DownResult{}
	if len(targets) == 0 {
		return res, nil
	}
	m.progress.reset()
	var errs []error
	for _, rec := range targets {
		pids := m.processesOf(rec.KwokName)
		m.progress.printf(rec.Name, "stopping %d processes", len(pids))
		if err := m.deleteCluster(ctx, rec); err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", rec.Name, err))
			continue
		}
		for pid := range pids {
			res.PIDs = append(res.PIDs, pid)
		}
		res.Stopped = append(res.Stopped, rec.Name)
		st.remove(rec.Name)
	}
	sort.Ints(res.PIDs)
	if err := st.save(m.layout.statePath()); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		_ = os.RemoveAll(m.layout.kwokWorkdir())
		_ = os.RemoveAll(filepath.Join(m.layout.home, "clusters"))
	}
	return res, errors.Join(errs...)
}

// deleteCluster runs `kwokctl delete cluster`, then makes sure no process of
// the cluster is left (SIGTERM, then SIGKILL) and removes its directories.
func (m *Manager) deleteCluster(ctx context.Context, rec clusterRecord) error {
	procs := m.processesOf(rec.KwokName)
	var kerr error
	if CheckBinaries(m.binDir, BinKwokctl) == nil {
		kerr = m.kwokctl.run(ctx, rec.KwokName, "--name", rec.KwokName, "delete", "cluster", "--kubeconfig", m.layout.scratchKubeconfig(rec.KwokName))
	} else {
		kerr = fmt.Errorf("no kwokctl in %q", m.binDir)
	}
	if left := stopProcesses(procs, 5*time.Second); len(left) > 0 {
		return fmt.Errorf("pids %v of %s still running after SIGKILL", left, rec.KwokName)
	}
	if left := m.processesOf(rec.KwokName); len(left) > 0 {
		return fmt.Errorf("processes %v of %s appeared while stopping it", mapKeys(left), rec.KwokName)
	}
	if kerr != nil {
		m.progress.printf(rec.Name, "kwokctl delete failed (%v); processes are stopped, removing its files", firstLine(kerr.Error()))
	}
	if err := os.RemoveAll(m.layout.kwokDir(rec.KwokName)); err != nil {
		return fmt.Errorf("removing %s: %w", m.layout.kwokDir(rec.KwokName), err)
	}
	if err := os.RemoveAll(m.layout.clusterDir(rec.Name)); err != nil {
		return fmt.Errorf("removing %s: %w", m.layout.clusterDir(rec.Name), err)
	}
	return nil
}

// processesOf returns the live processes (pid → argv[0]) of cluster kwokName:
// those named by its pid files and any process whose argv[0] lies in its
// kwokctl workdir (found in /proc), so a lost pid file hides nothing.
func (m *Manager) processesOf(kwokName string) map[int]string {
	procs := map[int]string{}
	for _, comp := range components() {
		argv0 := m.layout.argv0(kwokName, comp)
		if pid, err := readPidFile(m.layout.pidPath(kwokName, comp)); err == nil && processAlive(pid, argv0) {
			procs[pid] = argv0
		}
	}
	for pid, argv0 := range processesUnder(m.layout.kwokDir(kwokName) + string(filepath.Separator)) {
		procs[pid] = argv0
	}
	return procs
}

// Processes returns the pids of every live process started for any cluster
// of this state directory (found in /proc by argv[0]), sorted. After Down it
// is empty.
func (m *Manager) Processes() []int {
	return mapKeys(processesUnder(m.layout.kwokClustersDir() + string(filepath.Separator)))
}

// progress prints "[  1.2s] cluster: message" lines; safe for concurrent use.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func (p *progress) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.start = time.Now()
}

func (p *progress) printf(cluster, format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	prefix := ""
	if cluster != "" {
		prefix = cluster + ": "
	}
	fmt.Fprintf(p.w, "[%5.1fs] %s%s\n", time.Since(p.start).Seconds(), prefix, fmt.Sprintf(format, args...))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// firstError prefers a *ComponentError over the context errors of the waits
// it cancelled.
func firstError(errs []error) error {
	var first error
	for _, err := range errs {
		var ce *ComponentError
		if errors.As(err, &ce) {
			return err
		}
		if first == nil && err != nil {
			first = err
		}
	}
	return first
}

func mapKeys(m map[int]string) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
