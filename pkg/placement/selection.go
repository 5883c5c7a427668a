package placement

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Selection is, for each topology policy that selects clusters by labels,
// the member clusters its selector matched, sorted. It is the part of a
// placement the fleet can change without any edit of the Application: a
// member joining with matching labels, losing them, or being detached.
// Reachability plays no part: an unreachable member is still selected.
type Selection map[string][]string

// Select resolves the label selectors of topologies against resolver (nil
// when none selects by labels). Explicit cluster lists are not part of
// it: the Application says them.
func Select(ctx context.Context, topologies []Topology, resolver Resolver) (Selection, error) {
	var sel Selection
	for _, t := range topologies {
		if !t.SelectsByLabels() {
			continue
		}
		names, err := resolver.SelectClusters(ctx, t.Selector)
		if err != nil {
			return nil, fmt.Errorf("policy %q: selecting clusters {%s}: %w", t.Name, SelectorString(t.Selector), err)
		}
		if sel == nil {
			sel = Selection{}
		}
		names = slices.Clone(names)
		sort.Strings(names)
		sel[t.Name] = names
	}
	return sel, nil
}

// Equal reports whether s and o select the same clusters for the same
// policies (nil and empty are equal).
func (s Selection) Equal(o Selection) bool {
	if len(s) != len(o) {
		return false
	}
	for k, v := range s {
		w, ok := o[k]
		if !ok || !slices.Equal(v, w) {
			return false
		}
	}
	return true
}

// Changes says, one line per policy, which clusters joined and left the
// selection since before ("policy \"spread\": cluster east joined; cluster
// west left"), sorted by policy; nil when nothing changed.
func (s Selection) Changes(before Selection) []string {
	policies := map[string]bool{}
	for k := range s {
		policies[k] = true
	}
	for k := range before {
		policies[k] = true
	}
	names := make([]string, 0, len(policies))
	for k := range policies {
		names = append(names, k)
	}
	sort.Strings(names)
	var out []string
	for _, p := range names {
		now, then := s[p], before[p]
		var parts []string
		for _, c := range now {
			if !slices.Contains(then, c) {
				parts = append(parts, "cluster "+c+" joined")
			}
		}
		for _, c := range then {
			if !slices.Contains(now, c) {
				parts = append(parts, "cluster "+c+" left")
			}
		}
		if len(parts) > 0 {
			out = append(out, fmt.Sprintf("policy %q: %s", p, strings.Join(parts, "; ")))
		}
	}
	return out
}
