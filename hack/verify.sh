#!/usr/bin/env bash
# Fails when generated code (deepcopy, CRDs, the chart's definitions and
# values table, the CLI reference in README.md) differs from what the API types and definitions produce,
# when Go files are not gofmt-formatted, when go.mod/go.sum are not tidy, when the CLI binary depends
# (even indirectly) on the controller, the workflow engine or Helm's actions, or when golangci-lint
# (.golangci.yml) reports anything. Read-only: the generated files
# are put back as they were, so run 'make generate' to update them.
set -euo pipefail
cd "$(dirname "$0")/.."
gen_files() { find apis -name 'zz_generated.*.go'; find charts/oamflow/crds charts/oamflow/definitions -name '*.yaml'; echo charts/oamflow/README.md; echo pkg/cuepkg/zz_generated.templates.go; echo README.md; }
snap=$(mktemp -d)
trap 'rm -rf "$snap"' EXIT
gen_files | while read -r f; do mkdir -p "$snap/before/$(dirname "$f")"; cp "$f" "$snap/before/$f"; done
make --no-print-directory generate >/dev/null
gen_files | while read -r f; do mkdir -p "$snap/after/$(dirname "$f")"; cp "$f" "$snap/after/$f"; done
# put the tree back as it was
gen_files | xargs -r rm -f
cp -r "$snap/before/." .

status=0
if ! diff -ruN "$snap/before" "$snap/after" >"$snap/diff"; then
  echo "generated files drift from the API types; run 'make generate' and commit the result:" >&2
  head -n 60 "$snap/diff" >&2
  status=1
fi
unformatted=$(git ls-files -co --exclude-standard '*.go' | xargs -r gofmt -l)
if [ -n "$unformatted" ]; then
  echo "gofmt would change these files; run 'make fmt':" >&2
  echo "$unformatted" >&2
  status=1
fi
if ! tidy=$(go mod tidy -diff 2>&1); then
  echo "go.mod/go.sum are not tidy; run 'go mod tidy' and commit the result:" >&2
  echo "$tidy" | head -n 40 >&2
  status=1
fi
for mod in hack/tools/golangci-lint; do
  if ! tidy=$(cd "$mod" && go mod tidy -diff 2>&1); then
    echo "$mod/go.mod is not tidy; run 'go mod tidy' there and commit the result:" >&2
    echo "$tidy" | head -n 40 >&2
    status=1
  fi
done
# depguard (.golangci.yml) sees direct imports only; the CLI must not reach these through another package either.
forbidden=$(go list -deps ./cmd/oamflow | grep -E '^(github\.com/oamflow/oamflow/pkg/(manager|workflow)(/.*)?|helm\.sh/helm/v3/pkg/action|github\.com/kubevela/workflow/pkg(/.*)?)$' || true)
if [ -n "$forbidden" ]; then
  echo "the CLI (cmd/oamflow) depends on packages it must not (controller manager, workflow engine, Helm actions):" >&2
  echo "$forbidden" >&2
  status=1
fi
if ! make --no-print-directory lint >&2; then
  echo "golangci-lint found problems (see above); fix them or, with a reason, exclude them in .golangci.yml" >&2
  status=1
fi
exit $status
