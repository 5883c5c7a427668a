package localcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// stateVersion is bumped when state.json changes incompatibly.
const stateVersion = 1

// state is the content of <home>/state.json: the clusters a state directory
// manages. It is written before a cluster is created, so an interrupted `up`
// still leaves a record for `down`.
type state struct {
	Version int `json:"version"`
	// NamePrefix is the prefix of every cluster of the set.
	NamePrefix string `json:"namePrefix"`
	// Clusters are kept in set order (hub first).
	Clusters []clusterRecord `json:"clusters"`
}

// clusterRecord is one cluster of the set.
type clusterRecord struct {
	Name      string    `json:"name"`
	KwokName  string    `json:"kwokName"`
	Ports     Ports     `json:"ports"`
	Nodes     int       `json:"nodes"`
	CreatedAt time.Time `json:"createdAt"`
}

// Ports are the TCP ports on 127.0.0.1 one cluster's components listen on.
type Ports struct {
	APIServer         int `json:"apiServer"`
	Etcd              int `json:"etcd"`
	EtcdPeer          int `json:"etcdPeer"`
	ControllerManager int `json:"controllerManager"`
	Scheduler         int `json:"scheduler"`
	Kwok              int `json:"kwok"`
}

// list returns the ports in a fixed order.
func (p Ports) list() []int {
	return []int{p.APIServer, p.Etcd, p.EtcdPeer, p.ControllerManager, p.Scheduler, p.Kwok}
}

// loadState reads <home>/state.json; a missing file is an empty state.
func loadState(path string) (*state, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &state{Version: stateVersion}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading state file: %w", err)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("state file %s is corrupt (%w): remove it; `oamflow local down` still stops the clusters it finds", path, err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("state file %s has version %d, this oamflow understands %d: run `oamflow local down` with the oamflow that wrote it, or remove the state directory", path, st.Version, stateVersion)
	}
	return &st, nil
}

// save writes the state atomically (temporary file + rename); an empty state
// removes the file.
func (s *state) save(path string) error {
	if len(s.Clusters) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing state file: %w", err)
		}
		return nil
	}
	s.Version = stateVersion
	s.sort()
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding state: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating state dir: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing state file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replacing state file: %w", err)
	}
	return nil
}

// get returns the record of name, or nil.
func (s *state) get(name string) *clusterRecord {
	for i := range s.Clusters {
		if s.Clusters[i].Name == name {
			return &s.Clusters[i]
		}
	}
	return nil
}

// put adds or replaces the record of rec.Name.
func (s *state) put(rec clusterRecord) {
	if old := s.get(rec.Name); old != nil {
		*old = rec
		return
	}
	s.Clusters = append(s.Clusters, rec)
	s.sort()
}

// remove drops the record of name, if any.
func (s *state) remove(name string) {
	out := s.Clusters[:0]
	for _, c := range s.Clusters {
		if c.Name != name {
			out = append(out, c)
		}
	}
	s.Clusters = out
}

// usedPorts returns every port recorded for any cluster.
func (s *state) usedPorts() map[int]bool {
	used := map[int]bool{}
	for _, c := range s.Clusters {
		for _, p := range c.Ports.list() {
			used[p] = true
		}
	}
	return used
}

func (s *state) sort() {
	sort.SliceStable(s.Clusters, func(i, j int) bool {
		return memberIndex(s.Clusters[i].Name) < memberIndex(s.Clusters[j].Name)
	})
}
