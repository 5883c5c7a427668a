// Package helm installs, upgrades, rolls back, uninstalls, templates and
// health-checks Helm releases for oamflow's `helm` (alias `helmchart`)
// components and Helm workflow steps.
//
// # One seam
//
// Every Helm action gets its *action.Configuration from a Factory
// (NewFactory: per cluster and namespace, Helm's Secret storage driver,
// a discovery cache per cluster). Tests swap the storage with
// WithStorage(MemoryStorage()). Charts come from a ChartFetcher (Fetcher:
// Helm repositories, http(s) .tgz URLs, oci:// registries, bundled charts
// under a root) through a digest-keyed Cache and archive Limits.
//
// The spec types, HelmRelease contract, bundled chart loading and
// client-side templating live in pkg/helm/helmspec (its callers import it directly), so
// that processes which only parse or render HelmReleases — the CLI's
// dry-run and status, pkg/health — do not link Helm's install, registry,
// repository and lint code.
//
// # Routing contract with the controller
//
// The `helm` ComponentDefinition (definitions/components/helm.cue) renders
// a single output object:
//
//	apiVersion: helm.oamflow.dev/v1alpha1
//	kind: HelmRelease
//	metadata: {name: <release name>, namespace: <release namespace>}
//	spec: <the component properties: chart, release, values, valuesFrom, healthStatus, options>
//
// HelmRelease is a virtual kind: no CRD serves it and it is never applied.
// The controller (and the dispatcher of workflow steps) must route every
// rendered object whose apiVersion/kind equal APIVersion/Kind (use
// IsHelmRelease) to this package instead of applying it:
//
//  1. Parse: SpecFromObject(obj, Defaults{Name: component, Namespace: app
//     namespace}) returns the Spec or a field-path error (a user error:
//     the component fails with it, nothing is retried until the app changes).
//  2. Apply: Client.Ensure(ctx, Request{Cluster, Namespace: app namespace,
//     Spec}). It installs, upgrades, or does nothing when the chart digest,
//     merged values and release name are unchanged, so it is safe on every
//     reconcile. A non-empty Result.Recovery (a stuck or failed release
//     repaired) deserves a Normal Event (reason HelmReleaseRecovered; the
//     resource keeper records it, and HelmReleaseFailed Warnings, with
//     resourcekeeper.WithReleaseEvents); ActionPending means requeue after
//     Result.RetryAfter. Errors for which errclass.IsTerminal is true are terminal
//     for the current spec: ErrChartNotFound, ErrUnsafeChart, and
//     *RenderError (the chart's templates do not render with these
//     values: a missing `required` value, `fail`, a template error, a
//     values.schema.json violation; nothing was installed or upgraded).
//     Other errors, including a *ChartError from a repository that does
//     not answer, may pass on a retry.
//  3. Track: record the release as a managed resource with this same
//     apiVersion/kind/namespace/name (namespace = Spec.Release.Namespace,
//     name = Spec.Release.Name) on the cluster. Garbage collection of such
//     a tracked entry (component removed, app deleted, subject to
//     garbage-collect rules) calls Client.Uninstall(ctx, cluster,
//     namespace, name, spec.Options) instead of deleting an object.
//  4. Health: Client.Status(ctx, Request) gives Health: Healthy, a Reason,
//     Message ("release R revision N, chart C-V: N/M resources ready") for
//     services[].message and Details() for services[].details. A chart that
//     cannot be fetched is unhealthy (ReasonChartUnavailable), never healthy.
//  5. Dry run: Client.Template renders without a cluster (`helm template`).
//
// # Workflow steps
//
// The vela/helm CUE package of pkg/workflow (#Install, #Uninstall,
// #Status, #Template) runs on a Client; its #Install hands the same
// virtual HelmRelease to the Application's resource keeper, so a release
// installed by a step (the built-in helm-install step) is tracked and
// uninstalled like a component's.
//
// # Security
//
// Helm is pinned at 3.16.x, so charts are checked before Helm loads them:
// archive size, file count, per-file and total decompressed size, no links,
// no absolute or ".." paths; `dependency update` is never run; panics in
// Helm calls become errors (ErrHelmPanic); credentials from auth Secrets
// (basic, bearer token, TLS client certificate, CA bundle; application
// namespace only) are never put in errors, status, events or logs.
package helm
