// Package definitions holds oamflow's built-in definitions, written in the
// KubeVela .cue definition format: one file per definition, a header block
//
//	"<name>": {type: "component" | "trait" | "policy" | "workflow-step", description: ..., attributes: {...}}
//
// followed by `template: {...}`. Their parameters use the names and types of
// KubeVela's built-ins of the same name, so Applications written for KubeVela
// render unchanged.
//
// Layout: components/ (webservice, worker, daemon, statefulset, task,
// cron-task, k8s-objects, ref-objects), traits/ (scaler, labels, env, storage,
// expose, gateway, hpa, json-patch, …) and policies/ (topology, override,
// garbage-collect, apply-once, shared-resource, read-only, take-over,
// resource-update; schemas only). Every direct sub-folder's *.cue files are
// embedded, so a workflowsteps/ folder is picked up when it is added; test
// definitions therefore live one level deeper (testdata/user/*.cue).
//
// Conventions shared by the built-ins:
//   - Top-level parameters are closed: an unknown property is an error naming it.
//   - Traits patching lists (containers, env, volumes, volumeMounts,
//     initContainers, hostAliases, topologySpreadConstraints) mark them with
//     // +patchKey=<field> so patches from several traits and the component
//     merge by key; a trait that rewrites a list it computed from
//     context.output marks it // +patchStrategy=replace, and scalars it
//     overrides // +patchStrategy=retainKeys.
//   - Container traits target the container named after the component unless
//     containerName says otherwise, and report a missing container in errs.
//   - Health policies and custom status messages read only the live objects
//     (context.output, context.outputs) and default every status field, so a
//     freshly created object is simply not yet healthy.
package definitions

import "embed"

// FS holds the built-in definition files, at <kind folder>/<name>.cue
// (components/webservice.cue, traits/env.cue, policies/topology.cue, …).
//
//go:embed */*.cue
var FS embed.FS
