package localcluster

import (
	"errors"
	"fmt"
)

// ErrPrefixConflict is returned (wrapped) by Up when the state directory
// already manages clusters with another name prefix.
var ErrPrefixConflict = errors.New("name prefix conflict")

// ErrUnknownCluster is returned (wrapped) by Kubeconfig for a name the state
// directory does not manage.
var ErrUnknownCluster = errors.New("unknown cluster")

// logTailLines is how many log lines a ComponentError carries.
const logTailLines = 20

// ComponentError says which component of which cluster failed to start or
// become ready, and carries the end of that component's log.
type ComponentError struct {
	// Cluster is the cluster name ("local", "member-1", …).
	Cluster string
	// Component is the failing component (CompKubeAPIServer, …).
	Component string
	// Reason says what went wrong ("exited while starting", "not ready after 2m0s: …").
	Reason string
	// LogPath is the component's log file; empty when it never started.
	LogPath string
	// LogTail holds the last lines of LogPath.
	LogTail string
}

func (e *ComponentError) Error() string {
	if e.LogPath == "" {
		return fmt.Sprintf("cluster %s: %s %s", e.Cluster, e.Component, e.Reason)
	}
	return fmt.Sprintf("cluster %s: %s %s; last lines of %s:\n%s", e.Cluster, e.Component, e.Reason, e.LogPath, e.LogTail)
}

// componentError builds a ComponentError for component comp of cluster rec,
// reading the tail of its log now.
func (m *Manager) componentError(rec clusterRecord, comp, reason string) *ComponentError {
	p := m.layout.logPath(rec.KwokName, comp)
	return &ComponentError{Cluster: rec.Name, Component: comp, Reason: reason, LogPath: p, LogTail: tailFile(p, logTailLines)}
}
