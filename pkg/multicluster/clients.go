// Package multicluster gives access to the clusters an Application deploys
// to. The hub is the cluster the controller runs in; its reserved name is
// "local", and the empty name means the hub too.
package multicluster

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// ClusterClients returns a client for a named cluster. Implementations
// must be safe for concurrent use.
type ClusterClients interface {
	// Client returns the client of cluster ("" or "local" is the hub), or an
	// error when the cluster is unknown or unreachable.
	Client(ctx context.Context, cluster string) (client.Client, error)
}

// ClusterClientsFn adapts a function to ClusterClients.
type ClusterClientsFn func(ctx context.Context, cluster string) (client.Client, error)

// Client calls fn.
func (fn ClusterClientsFn) Client(ctx context.Context, cluster string) (client.Client, error) {
	return fn(ctx, cluster)
}

// IsLocal reports whether cluster names the hub ("" or "local").
func IsLocal(cluster string) bool {
	return cluster == "" || cluster == v1beta1.ClusterLocal
}

// HubOnly serves the hub and refuses every other cluster name.
type HubOnly struct {
	Hub client.Client
}

// Client returns the hub client for "" and "local", an error otherwise.
func (h HubOnly) Client(_ context.Context, cluster string) (client.Client, error) {
	if !IsLocal(cluster) {
		return nil, fmt.Errorf("cluster %q is not registered: only the hub (%q) is available", cluster, v1beta1.ClusterLocal)
	}
	return h.Hub, nil
}
