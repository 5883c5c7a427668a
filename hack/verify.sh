#!/usr/bin/env bash
# Fails when generated code (deepcopy, CRDs, the chart's definitions and
# values table, the CLI reference in README.md) differs from what the API types and definitions produce,
# when Go files are not gofmt-formatted, or when go.mod/go.sum are not tidy. Read-only: the generated files
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
exit $status
