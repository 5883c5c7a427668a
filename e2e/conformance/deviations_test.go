//go:build !e2e

package conformance

// deviation is a deliberate difference from vela's output (each one is a
// row of docs/compatibility.md). The test checks that oamflow prints
// exactly vela's output changed as described, nothing more.
type deviation struct {
	why string
	// topologyNamespace (deviation (b)): the objects vela prints in the
	// blocks of the named topology policy ("# Application(<app> with
	// topology <policy>) -- ...") are printed by oamflow in the policy's
	// namespace (namespaced objects only).
	topologyNamespace map[string]string
	// replaced (deviation (a)): vela's objects with these keys are not
	// printed; oamflow prints the objects of
	// testdata/deviations/<case>.yaml instead (its own output; go test
	// -update rewrites it). With --cluster-version v1.18 the case must be
	// identical to vela's output (checked for every case whose vela output
	// holds a legacy API).
	replaced []objKey
}

const (
	whyClusterVersion = "(a) offline, oamflow renders for a current cluster, vela for an ancient one"
	whyTopologyNS     = "(b) a topology policy's namespace is applied offline"
	whyPerCluster     = "(c) offline, each cluster a topology names is rendered, with its name in context.cluster"
)

// deviations by case number; docs/compatibility.md explains each.
var deviations = map[string]deviation{
	"013": {why: whyClusterVersion, replaced: []objKey{{APIVersion: "networking.k8s.io/v1beta1", Kind: "Ingress", Namespace: "default", Name: "canary-demo"}}},
	"031": {why: whyTopologyNS, topologyNamespace: map[string]string{"topology-local": "examples-alternative"}},
	"032": {why: whyTopologyNS, topologyNamespace: map[string]string{"topology-local": "examples-alternative"}},
	"033": {why: whyTopologyNS, topologyNamespace: map[string]string{"topology-local": "examples-alternative"}},
	"035": {why: whyTopologyNS, topologyNamespace: map[string]string{"target-prod": "prod"}},
	"064": {why: whyPerCluster, replaced: []objKey{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "test"}}},
}

// pending lists the cases that still differ from vela for a known reason,
// by case number. A fix takes its case off this list (the test fails when
// a pending case passes); the goal is an empty list.
var pending = map[string]string{
	"002": "appliesToWorkloads mismatch (expose on a daemon) is an error, not a warning (renders identically once it is one)",
	"030": "only the first YAML document of a -f file should be read",
	"039": "anonymous policies (no name) are refused",
	"045": "replication policy type unknown",
	"055": "an application without components is refused",
	"057": "policy outputs are not printed",
	"058": "policy outputs are not printed (the legacy list arithmetic now renders)",
	"062": "WARNING lines for standalone files the app does not reference are not printed on stdout",
	"069": "two Applications in the -f files are rendered instead of refused",
}
