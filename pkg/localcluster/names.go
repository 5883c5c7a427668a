package localcluster

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

const (
	// HubName is the name of the first cluster of a set.
	HubName = "local"
	// memberPrefix starts the names of the other clusters: member-1, member-2, ….
	memberPrefix = "member-"
	// DefaultNamePrefix is prepended to cluster names to form kwokctl cluster
	// names and kubeconfig context names ("oamflow-local").
	DefaultNamePrefix = "oamflow-"
	// MaxClusters bounds a set; every cluster costs about five processes.
	MaxClusters = 10
	// maxPrefixLen keeps "<prefix>member-NN" within a DNS label.
	maxPrefixLen = 40
)

var prefixPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// ClusterNames returns the names of a set of n clusters: "local", then
// "member-1" … "member-<n-1>". n must be in [1, MaxClusters].
func ClusterNames(n int) ([]string, error) {
	if n < 1 || n > MaxClusters {
		return nil, fmt.Errorf("cluster count %d out of range: want 1 to %d", n, MaxClusters)
	}
	names := make([]string, 0, n)
	names = append(names, HubName)
	for i := 1; i < n; i++ {
		names = append(names, memberPrefix+strconv.Itoa(i))
	}
	return names, nil
}

// ValidateName reports whether name is a cluster name this package creates:
// "local" or "member-<k>" with k ≥ 1 and no leading zero.
func ValidateName(name string) error {
	if name == HubName {
		return nil
	}
	if rest, ok := strings.CutPrefix(name, memberPrefix); ok {
		if k, err := strconv.Atoi(rest); err == nil && k >= 1 && k < MaxClusters && strconv.Itoa(k) == rest {
			return nil
		}
	}
	return fmt.Errorf("invalid cluster name %q: want %q or %q with 1 ≤ k < %d", name, HubName, memberPrefix+"<k>", MaxClusters)
}

// ValidatePrefix reports whether p can prefix cluster names: empty, or at most
// 40 lowercase letters, digits and '-' starting with a letter or digit.
func ValidatePrefix(p string) error {
	if p == "" {
		return nil
	}
	if len(p) > maxPrefixLen || !prefixPattern.MatchString(p) {
		return fmt.Errorf("invalid name prefix %q: use at most %d lowercase letters, digits and '-', starting with a letter or digit", p, maxPrefixLen)
	}
	return nil
}

// memberIndex returns k for "member-k" and 0 for the hub; it is used to keep
// clusters in set order. Names that are not valid sort last.
func memberIndex(name string) int {
	if name == HubName {
		return 0
	}
	k, err := strconv.Atoi(strings.TrimPrefix(name, memberPrefix))
	if err != nil || ValidateName(name) != nil {
		return MaxClusters
	}
	return k
}
