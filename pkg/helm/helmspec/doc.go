// Package helmspec is the light half of oamflow's Helm support: what a
// process needs to recognise, parse and render a `helm`/`helmchart`
// component without installing it.
//
//   - The HelmRelease contract: Group, APIVersion, Kind, IsHelmRelease,
//     SpecFromObject, and the Spec types with ParseSpec/ParseSpecMap
//     (strict decoding, defaults, field-path errors).
//   - Values: ResolveValues (valuesFrom then inline values, deep-merged),
//     MergeValues.
//   - Charts on disk: LoadArchive/LoadDir behind archive Limits,
//     LoadBundled and the BundledCharts fetcher (paths under a chart root),
//     CheckDependencies; the ChartFetcher interface that remote fetchers
//     implement.
//   - Client-side rendering: Prepare and Template/RenderChart, equivalent
//     to `helm template` (Helm's install action in client-only dry-run
//     mode with default capabilities) but built only on Helm's chart,
//     chart/loader, chartutil, engine and releaseutil packages.
//   - Release records as Helm's Secret storage driver writes them:
//     RecordLabels, LatestRecord and DecodeRecord (the CLI's `status
//     --tree` reads releases through them), and ParseManifest for the
//     manifest they hold.
//   - The Request, ReleaseInfo and Health types shared with pkg/helm.
//
// It links none of Helm's action, registry, repo, kube, storage or lint
// packages, which cost the CLI about 500 packages, half its binary and
// most of its start-up (cmd/oamflow's TestLeanImportGraph keeps them
// out). Package helm (pkg/helm) holds the install/upgrade/rollback/status
// Client, its Factory and the HTTP repository and OCI fetchers; its
// callers name the contract's types from here (helmspec.Spec,
// helmspec.Request), never through aliases.
package helmspec
