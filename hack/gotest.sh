#!/usr/bin/env bash
# Runs `go test` with the given arguments and, when it fails, ends its
# output with what failed: every "--- FAIL" line with the test's own
# messages (printed before it with -v, after it without), build errors,
# panics and the failing packages. CI shows only the last part of a run's
# output, and the controllers' logs of a failing package would otherwise
# bury the failure far above it.
# GO names the go command (one word; default: go).
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
		{ last[NR % 30] = $0 }
		# -v: a test'"'"'s messages (indented four spaces or more) come after
		# its "=== RUN/NAME/CONT" line, before its "--- FAIL".
		/^=== (RUN|NAME|CONT|PAUSE) / { name = $3; keep = 0; next }
		/^[[:space:]]*--- (PASS|SKIP)/ { keep = 0; next }
		/^[[:space:]]*--- FAIL: / {
			n = $3; print; printf "%s", said[n]; said[n] = ""
			keep = 1; found = 1; next
		}
		# Without -v the messages follow the "--- FAIL" line.
		/^    / {
			if (keep) print
			else if (name != "") said[name] = said[name] $0 "\n"
			next
		}
		{ keep = 0 }
		/^# /                          { print; build = 1; found = 1; next }
		build && /\.go:[0-9]+/         { print; next }
		{ build = 0 }
		/^panic:/                      { print; trace = 40; found = 1; next }
		trace > 0                      { print; trace--; next }
		/^(FAIL|ok  |--- FAIL)/ && /FAIL/ { print; found = 1 }
		END {
			if (!found) {
				print "(no failing test found; the last lines:)"
				for (i = NR - 29; i <= NR; i++) if (i > 0) print last[i % 30]
			}
		}
	' "$log"
fi
exit "$status"
