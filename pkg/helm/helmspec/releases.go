package helmspec

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Releases is what oamflow does with Helm releases: the one client
// interface its workflow steps (vela/helm), resource keeper (install,
// upgrade, ownership, garbage collection) and health checks depend on.
// pkg/helm's *Client implements it over Helm's SDK; cluster "" is the hub.
type Releases interface {
	// Ensure brings the release req describes to its desired state,
	// writing nothing when it is there already.
	Ensure(ctx context.Context, req Request) (Result, error)
	// Status judges the live release against req.
	Status(ctx context.Context, req Request) (Health, error)
	// Template renders req's chart as `helm template` would.
	Template(ctx context.Context, req Request) ([]*unstructured.Unstructured, error)
	// Owner reads who owns release name in namespace on cluster.
	Owner(ctx context.Context, cluster, namespace, name string) (ReleaseOwner, error)
	// Uninstall removes release name whoever owns it.
	Uninstall(ctx context.Context, cluster, namespace, name string, opts Options) (Result, error)
	// UninstallOwned removes release name only when owner owns it.
	UninstallOwned(ctx context.Context, cluster, namespace, name string, owner Owner, opts Options) (Result, error)
}
