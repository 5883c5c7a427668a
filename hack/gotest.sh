#!/usr/bin/env bash
# Runs `go test` with the given arguments and, when it fails, ends its
# output with what failed: every "--- FAIL" line with the test's own
# messages under it, panics and the failing packages. CI shows only the
# last part of a run's output, and the controllers' logs of a failing
# package would otherwise bury the failure far above it.
set -uo pipefail
go="${GO:-go}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
"$go" test "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
	echo
	echo "== go test failed (exit $status); what failed, from the output above:"
	awk '
		/^[[:space:]]*--- FAIL/ { keep = 1; print; next }
		keep && /^    /        { print; next }
		{ keep = 0 }
		/^panic:|^FAIL/         { print }
	' "$log"
fi
exit "$status"
