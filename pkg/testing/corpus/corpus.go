// Package corpus finds the KubeVela conformance corpus for tests:
// shared/conformance/kubevela next to the repository (a clone at
// /work/main, CI's clone) or next to its parent folder (a worktree at
// /work/wt/x), the repository being the folder holding go.mod above the
// test's working directory.
package corpus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Dir returns the corpus folder (holding cases/ and definitions/), skipping
// t with where it looked when the corpus is absent.
func Dir(t testing.TB) string {
	t.Helper()
	return find(t, "kubevela", "cases", "KubeVela conformance corpus")
}

// KubeVelaStateDir returns shared/conformance/kubevela-state: what a real
// KubeVela controller left in a cluster for two Applications (see its
// README), skipping t with where it looked when it is absent.
func KubeVelaStateDir(t testing.TB) string {
	t.Helper()
	return find(t, "kubevela-state", "README.md", "KubeVela cluster-state fixtures")
}

// find returns shared/conformance/<sub> (recognised by holding marker)
// next to the repository or next to its parent folder.
func find(t testing.TB, sub, marker, what string) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatalf("working directory: %v", err)
	}
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			t.Fatalf("no go.mod above %s", wd)
		}
		root = parent
	}
	var tried []string
	for _, rel := range []string{"../shared", "../../shared"} {
		dir := filepath.Join(root, rel, "conformance", sub)
		if _, err := os.Stat(filepath.Join(dir, marker)); err == nil {
			return dir
		}
		tried = append(tried, dir)
	}
	t.Skipf("%s not found (looked in %s); they live in shared/conformance/%s next to the clone", what, strings.Join(tried, ", "), sub)
	return ""
}

// StepDefinition returns the path of KubeVela's workflow step definition
// name in the corpus.
func StepDefinition(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(Dir(t), "definitions", "workflowstep", name+".cue")
}
