package localcluster

import (
	"fmt"
	"net"
	"time"
)

// Defaults of UpOptions. They fit a benchmark of ~1,000 two-component
// applications per cluster: a kwok node holds 110 pods, kube-controller-manager's
// default client rate limit (20 requests/s) throttles such a load, and the
// default /24 Service range runs out at ~250 Services.
const (
	DefaultNodes       = 30
	DefaultTimeout     = 3 * time.Minute
	DefaultServiceCIDR = "10.96.0.0/16"
	maxNodes           = 1000
)

// UpOptions configure Up. Start from DefaultUpOptions; zero values are not
// replaced by defaults.
type UpOptions struct {
	// Clusters is the size of the set, hub included: 1 to MaxClusters.
	Clusters int
	// NamePrefix prefixes kwokctl cluster names and kubeconfig contexts
	// ("oamflow-" gives "oamflow-local"); see ValidatePrefix.
	NamePrefix string
	// Nodes is the number of fake Ready nodes per cluster, 1 to 1000.
	Nodes int
	// Timeout bounds the whole Up, from start to every cluster ready.
	Timeout time.Duration
	// APIServerPort fixes the hub's kube-apiserver port on 127.0.0.1;
	// 0 picks a free port. Members always get free ports.
	APIServerPort int
	// DisableQPSLimits lifts the client rate limits of the control-plane
	// components and kube-apiserver's in-flight request limits.
	DisableQPSLimits bool
	// ServiceCIDR is kube-apiserver's Service IP range ("" keeps its default
	// 10.0.0.0/24, about 250 Services).
	ServiceCIDR string
	// AuditLog makes each kube-apiserver write an audit log of every
	// request (level Metadata, one JSON event per line at ResponseComplete)
	// to Manager.AuditLogPath; tests count requests with it.
	AuditLog bool
}

// DefaultUpOptions returns the options of `oamflow local up` without flags:
// one cluster, prefix "oamflow-", 30 nodes, 3 minutes, no QPS limits and a
// /16 Service range.
func DefaultUpOptions() UpOptions {
	return UpOptions{
		Clusters:         1,
		NamePrefix:       DefaultNamePrefix,
		Nodes:            DefaultNodes,
		Timeout:          DefaultTimeout,
		DisableQPSLimits: true,
		ServiceCIDR:      DefaultServiceCIDR,
	}
}

// Validate checks every field and returns the first problem, naming the field.
func (o UpOptions) Validate() error {
	if _, err := ClusterNames(o.Clusters); err != nil {
		return fmt.Errorf("clusters: %w", err)
	}
	if err := ValidatePrefix(o.NamePrefix); err != nil {
		return fmt.Errorf("name prefix: %w", err)
	}
	if o.Nodes < 1 || o.Nodes > maxNodes {
		return fmt.Errorf("nodes: %d out of range: want 1 to %d", o.Nodes, maxNodes)
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("timeout: %s must be positive", o.Timeout)
	}
	if o.APIServerPort < 0 || o.APIServerPort > 65535 {
		return fmt.Errorf("API server port: %d out of range 0 to 65535", o.APIServerPort)
	}
	if o.ServiceCIDR != "" {
		ip, n, err := net.ParseCIDR(o.ServiceCIDR)
		if err != nil {
			return fmt.Errorf("service CIDR: %w", err)
		}
		if ones, bits := n.Mask.Size(); ip.To4() != nil && (ones < 12 || ones > 28) || bits == 128 && (ones < 108 || ones > 124) {
			return fmt.Errorf("service CIDR: %s: want an IPv4 prefix from /12 to /28 (or IPv6 /108 to /124)", o.ServiceCIDR)
		}
	}
	return nil
}
