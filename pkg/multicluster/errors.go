package multicluster

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrClusterNotFound is matched (errors.Is) by every error saying a cluster
// name is not registered.
var ErrClusterNotFound = errors.New("cluster not registered")

// ClusterNotFoundError says that clusters are not registered: no Secret of
// that name with the credential-type label in the system namespace.
type ClusterNotFoundError struct {
	// Names are the unknown cluster names, sorted.
	Names []string
	// Namespace is the system namespace that was searched.
	Namespace string
}

func (e *ClusterNotFoundError) Error() string {
	quoted := make([]string, len(e.Names))
	for i, n := range e.Names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	noun := "cluster"
	if len(e.Names) > 1 {
		noun = "clusters"
	}
	return fmt.Sprintf("%s %s not registered (no cluster Secret in namespace %s; `oamflow cluster list` shows the registered ones, `oamflow cluster join` adds one)",
		noun, strings.Join(quoted, ", "), e.Namespace)
}

// Is makes errors.Is(err, ErrClusterNotFound) true.
func (e *ClusterNotFoundError) Is(target error) bool { return target == ErrClusterNotFound }

// ErrClusterMisconfigured is matched (errors.Is) by every
// *MisconfiguredError.
var ErrClusterMisconfigured = errors.New("cluster registration is misconfigured")

// MisconfiguredError says a cluster Secret cannot be turned into a client:
// a field is missing or malformed. Reason never contains credential data.
type MisconfiguredError struct {
	// Cluster is the cluster name (the Secret's name).
	Cluster string
	// Namespace is the Secret's namespace.
	Namespace string
	// Reason says which field is wrong and what was expected.
	Reason string
}

func (e *MisconfiguredError) Error() string {
	return fmt.Sprintf("cluster %q (Secret %s/%s) is misconfigured: %s; join it again with `oamflow cluster join --force`",
		e.Cluster, e.Namespace, e.Cluster, e.Reason)
}

// Is makes errors.Is(err, ErrClusterMisconfigured) true.
func (e *MisconfiguredError) Is(target error) bool { return target == ErrClusterMisconfigured }

// InUseError says a cluster cannot be detached because Applications still
// deploy there.
type InUseError struct {
	Cluster string
	// Users are "Application <ns>/<name>" and "ResourceTracker <name>"
	// entries, sorted.
	Users []string
}

func (e *InUseError) Error() string {
	users := e.Users
	more := ""
	if len(users) > 5 {
		more = fmt.Sprintf(" and %d more", len(users)-5)
		users = users[:5]
	}
	return fmt.Sprintf("cluster %q is in use by %s%s; delete or move those Applications first, or detach with --force (their resources in that cluster are then left behind)",
		e.Cluster, strings.Join(users, ", "), more)
}

// ErrInvalid is matched (errors.Is) by every error refusing caller input
// before any API call: a bad cluster name, label or credentials, or an
// operation the hub does not support.
var ErrInvalid = errors.New("invalid input")

// InvalidError is an input error; its message says what was expected.
type InvalidError struct{ msg string }

func (e *InvalidError) Error() string { return e.msg }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// invalidf builds an *InvalidError.
func invalidf(format string, args ...any) error {
	return &InvalidError{msg: fmt.Sprintf(format, args...)}
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
