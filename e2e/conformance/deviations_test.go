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
	// refused (deviation (d)): vela renders the case, silently dropping
	// properties its definitions do not declare; oamflow refuses it
	// (exit 1) with exactly this message.
	refused string
}

const (
	whyClusterVersion = "(a) offline, oamflow renders for a current cluster, vela for an ancient one"
	whyTopologyNS     = "(b) a topology policy's namespace is applied offline"
	whyPerCluster     = "(c) offline, each cluster a topology names is rendered, with its name in context.cluster"
	whyUnknownProp    = "(d) a property the definition does not declare is an error, not silently dropped"
)

// deviations by case number; docs/compatibility.md explains each.
var deviations = map[string]deviation{
	"013": {why: whyUnknownProp, refused: `application default/canary-demo is invalid: spec.workflow.steps[0].properties.promAddress: unknown property; allowed: condition, duration, failDuration, metricEndpoint, query (workflow step "200-status-percent-2-phase")`},
	"031": {why: whyTopologyNS, topologyNamespace: map[string]string{"topology-local": "examples-alternative"}},
	"032": {why: whyTopologyNS, topologyNamespace: map[string]string{"topology-local": "examples-alternative"}},
	"033": {why: whyTopologyNS, topologyNamespace: map[string]string{"topology-local": "examples-alternative"}},
	"035": {why: whyTopologyNS, topologyNamespace: map[string]string{"target-prod": "prod"}},
	"064": {why: whyPerCluster, replaced: []objKey{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "test"}}},
	"015": {why: whyUnknownProp, refused: `application default/testapp is invalid: spec.components[0].traits[0].properties.command: unknown property; allowed: appMountPath, args, cmd, env, extraVolumeMounts, image, imagePullPolicy, initMountPath, mountName, name (component "express-server", trait "init-container")`},
	"060": {why: whyUnknownProp, refused: `application default/app-with-control-plane-only is invalid (2 errors):
  spec.components[0].properties.mem: unknown property; allowed: addRevisionLabel, annotations, args, cmd, cpu, env, exposeType, hostAliases, image, imagePullPolicy, imagePullSecrets, labels, limit, livenessProbe, memory, port, ports, readinessProbe, volumeMounts, volumes (component "app-with-control-plane-only-component-01")
  spec.components[0].traits[0].properties.cpuPercent: unknown property; allowed: cpuUtil, max, min, targetAPIVersion, targetKind (component "app-with-control-plane-only-component-01", trait "hubcpuscaler")`},
}

// pending lists the cases that still differ from vela for a known reason,
// by case number. A fix takes its case off this list (the test fails when
// a pending case passes); the goal is an empty list.
var pending = map[string]string{}
