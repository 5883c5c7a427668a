package multicluster

import (
	"context"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Fleet is what a Prober asks: the registered clusters and whether each
// answers (Registry implements it).
type Fleet interface {
	List(ctx context.Context) ([]Cluster, error)
	Health(ctx context.Context, cluster string) Health
}

var _ Fleet = (*Registry)(nil)

// Prober asks every member cluster for its version (Health: one GET
// /version each) every Interval and sends, on Events, the cluster Secret
// (name and namespace only) of each member whose reachability changed: it
// stopped answering, or answers again. So an Application deployed there
// is checked when a member goes down or comes back, not only at its next
// resync. A member is first assumed reachable; a misconfigured one is not
// probed. Start it with the manager (it runs on the leader only).
type Prober struct {
	Fleet    Fleet
	Interval time.Duration
	Events   chan<- event.TypedGenericEvent[*corev1.Secret]
	// Namespace is the system namespace of the Secrets sent.
	Namespace string
}

// Start probes until ctx is done.
func (p *Prober) Start(ctx context.Context) error {
	down := map[string]bool{}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		for _, name := range p.Probe(ctx, down) {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.Namespace}}
			select {
			case p.Events <- event.TypedGenericEvent[*corev1.Secret]{Object: s}:
			case <-ctx.Done():
				return
			}
		}
	}, p.Interval)
	return nil
}

// probeParallel bounds how many members a Prober asks at once.
const probeParallel = 16

// Probe asks each member once and returns, in the registry's order
// (sorted), those whose reachability differs from down (which it updates:
// true for a member not answering). Members no longer registered are
// forgotten. Members are asked side by side (at most probeParallel at once), so one
// that takes its client's whole timeout to fail does not delay noticing
// the others.
func (p *Prober) Probe(ctx context.Context, down map[string]bool) []string {
	log := logf.FromContext(ctx)
	clusters, err := p.Fleet.List(ctx)
	if err != nil {
		log.V(1).Info("not probing member clusters: the registry cannot be read", "reason", err.Error())
		return nil
	}
	var members []string
	for _, c := range clusters {
		if !IsLocal(c.Name) && c.Err == nil {
			members = append(members, c.Name)
		}
	}
	health := make([]Health, len(members))
	var g errgroup.Group
	g.SetLimit(probeParallel)
	for i, name := range members {
		g.Go(func() error {
			health[i] = p.Fleet.Health(ctx, name)
			return nil
		})
	}
	_ = g.Wait() // the probes return no error
	seen := map[string]bool{}
	var changed []string
	for i, name := range members {
		h := health[i]
		seen[name] = true
		if h.Reachable == !down[name] {
			continue
		}
		if h.Reachable {
			log.Info("member cluster reachable again", "cluster", name)
			delete(down, name)
		} else {
			log.Info("member cluster unreachable", "cluster", name, "reason", h.Message)
			down[name] = true
		}
		changed = append(changed, name)
	}
	for name := range down {
		if !seen[name] {
			delete(down, name)
		}
	}
	return changed
}
