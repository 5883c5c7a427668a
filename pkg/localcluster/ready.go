package localcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	pollInterval = 200 * time.Millisecond
	checkTimeout = 3 * time.Second
)

// timings are measured from the start of Up.
type timings struct{ apiReady, ready time.Duration }

// waitReady waits until cluster rec is ready (see Up), adding fake nodes up
// to o.Nodes. Every poll first checks that the components involved are still
// running, so a crash is reported at once, with the component's log.
func (m *Manager) waitReady(ctx context.Context, rec clusterRecord, o UpOptions, start time.Time) (timings, error) {
	var t timings
	cfg, err := m.adminRESTConfig(rec)
	if err != nil {
		return t, fmt.Errorf("cluster %s: %w", rec.Name, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return t, fmt.Errorf("cluster %s: building client: %w", rec.Name, err)
	}
	wait := func(watch []string, owner, what string, check func(context.Context) error) error {
		return m.waitFor(ctx, rec, o.Timeout, watch, owner, what, check)
	}
	all := components()

	apiReady := func(ctx context.Context) error {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}
	if err := wait(all, CompKubeAPIServer, "to serve /readyz", apiReady); err != nil {
		return t, err
	}
	t.apiReady = time.Since(start)
	m.progress.printf(rec.Name, "kube-apiserver ready")

	for _, c := range []struct {
		comp, scheme string
		port         int
	}{
		{CompKubeControllerManager, "https", rec.Ports.ControllerManager},
		{CompKubeScheduler, "https", rec.Ports.Scheduler},
		{CompKwokController, "http", rec.Ports.Kwok},
	} {
		url := fmt.Sprintf("%s://%s/healthz", c.scheme, net.JoinHostPort(loopback, strconv.Itoa(c.port)))
		if err := wait(all, c.comp, "to serve "+url, func(ctx context.Context) error { return healthz(ctx, url) }); err != nil {
			return t, err
		}
	}
	m.progress.printf(rec.Name, "kube-controller-manager, kube-scheduler, kwok healthy")

	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return t, fmt.Errorf("cluster %s: listing nodes: %w", rec.Name, err)
	}
	if len(nodes.Items) < o.Nodes {
		m.progress.printf(rec.Name, "adding %d fake nodes", o.Nodes-len(nodes.Items))
		if err := m.kwokctl.run(ctx, rec.KwokName, scaleNodeArgs(rec.KwokName, o.Nodes)...); err != nil {
			return t, fmt.Errorf("cluster %s: adding nodes: %w", rec.Name, err)
		}
	}
	nodesReady := func(ctx context.Context) error {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if n := countReady(list.Items); n < o.Nodes {
			return fmt.Errorf("%d of %d nodes Ready", n, o.Nodes)
		}
		return nil
	}
	if err := wait(all, CompKwokController, fmt.Sprintf("to make %d nodes Ready", o.Nodes), nodesReady); err != nil {
		return t, err
	}
	saReady := func(ctx context.Context) error {
		_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	}
	if err := wait(all, CompKubeControllerManager, "to create ServiceAccount default/default", saReady); err != nil {
		return t, err
	}
	t.ready = time.Since(start)
	m.progress.printf(rec.Name, "ready with %d nodes", o.Nodes)
	return t, nil
}

// waitFor polls check until it succeeds. Before each poll it checks that
// every component in watch is running, and returns a *ComponentError for the
// first that is not. When ctx expires it returns a *ComponentError for owner
// saying what it waited for and the last error of check.
func (m *Manager) waitFor(ctx context.Context, rec clusterRecord, timeout time.Duration, watch []string, owner, what string, check func(context.Context) error) error {
	for {
		for _, comp := range watch {
			if !m.componentRunning(rec, comp) {
				return m.componentError(rec, comp, "is not running (it exited while the cluster was starting)")
			}
		}
		cctx, cancel := context.WithTimeout(ctx, checkTimeout)
		last := check(cctx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return m.componentError(rec, owner, fmt.Sprintf("was not ready within the timeout of %s (waiting for it %s; last error: %v)", timeout, what, last))
			}
			return fmt.Errorf("cluster %s: stopped waiting for %s %s: %w", rec.Name, owner, what, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// componentRunning reports whether component comp of rec runs. A negative
// answer is confirmed once after a short pause: while a process execs
// (a wrapper script exec-ing the real binary) its command line briefly reads
// as empty.
func (m *Manager) componentRunning(rec clusterRecord, comp string) bool {
	check := func() bool {
		pid, err := readPidFile(m.layout.pidPath(rec.KwokName, comp))
		return err == nil && processAlive(pid, m.layout.argv0(rec.KwokName, comp))
	}
	if check() {
		return true
	}
	time.Sleep(100 * time.Millisecond)
	return check()
}

// apiReady returns nil when cluster rec's kube-apiserver answers /readyz.
func (m *Manager) apiReady(ctx context.Context, rec clusterRecord) error {
	cfg, err := m.adminRESTConfig(rec)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err
}

// healthz GETs url and expects 200. Certificates are not verified: the
// components serve self-signed certificates on 127.0.0.1 and nothing secret
// is sent.
func healthz(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probe of a self-signed component; no credentials sent
		Proxy:           nil,
	}}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}

// countReady returns how many nodes have condition Ready=True.
func countReady(nodes []corev1.Node) int {
	n := 0
	for _, node := range nodes {
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}
