// Package definition reads and writes OAM definitions in the two forms users
// keep them in: the KubeVela ".cue" definition file (a header block naming the
// definition plus a `template: {...}` block) and the Kubernetes CRD objects
// (ComponentDefinition, TraitDefinition, PolicyDefinition,
// WorkflowStepDefinition) as YAML. It converts between the two without ever
// evaluating a template, so files that import provider packages (vela/kube,
// vela/op, …) load without those packages being available.
package definition
