#!/usr/bin/env bash
# Whole-process timing of `oamflow dry-run --offline` (issue 4, Performance):
# one webservice with four traits, with a folder of ~90 definitions passed
# by -d (copies of the built-ins, including workflow steps that import
# provider packages, under new names). Prints the median wall time of RUNS
# runs (default 10) and the user+system CPU time, using hyperfine when it
# is installed and a plain loop otherwise (median, min and max). Also
# prints the time the binary spends initializing packages before main
# (GODEBUG=inittrace=1, summed), and how many packages it initializes:
# start-up is most of a dry-run's time, and every package linked into
# cmd/oamflow adds to it. The bytes allocated by package init and the
# number of packages linked barely move with load, unlike times. The machine is shared: the load average is
# printed with the numbers, and wall times taken under load are not
# comparable with the target. Last, it times the floor (see
# hack/bench/render/floor): what any dry-run of this app costs at least on
# this machine with the pinned CUE.
#
#   hack/bench/render/run.sh            # build bin/oamflow, then measure
#   RUNS=30 hack/bench/render/run.sh
#   OAMFLOW=/path/to/oamflow hack/bench/render/run.sh   # measure that binary
set -euo pipefail
cd "$(dirname "$0")/../../.."
RUNS=${RUNS:-10}
APP=pkg/render/testdata/bench/one.yaml
BIN=${OAMFLOW:-bin/oamflow}
if [ -z "${OAMFLOW:-}" ]; then
  go build -o bin/oamflow ./cmd/oamflow
fi

defs=$(mktemp -d)
trap 'rm -rf "$defs"' EXIT
n=0
copy=0
while [ "$n" -lt 90 ]; do
  for f in definitions/*/*.cue; do
    [ "$n" -ge 90 ] && break
    name=$(basename "$f" .cue)
    dir="$defs/$(basename "$(dirname "$f")")"
    mkdir -p "$dir"
    if [ "$copy" -eq 0 ]; then
      cp "$f" "$dir/$name.cue"
    else
      # Same definition under another name: rename the header label.
      sed -E "0,/^\"?$name\"?: *\{/s//\"$name-copy$copy\": {/" "$f" > "$dir/$name-copy$copy.cue"
    fi
    n=$((n + 1))
  done
  copy=$((copy + 1))
done
echo "definitions in -d folder: $(find "$defs" -name '*.cue' | wc -l) ($(find "$defs" -path '*workflowsteps*' -name '*.cue' | wc -l) workflow steps)"
cmd=("$BIN" dry-run --offline -f "$APP" -d "$defs")
"${cmd[@]}" > /dev/null   # check it works (and warm the page cache)

# timeit CMD...: median, min and max wall ms of RUNS runs.
timeit() {
  local t=()
  for _ in $(seq "$RUNS"); do
    local start end
    start=$(date +%s%N)
    "$@" > /dev/null
    end=$(date +%s%N)
    t+=($(( (end - start) / 1000000 )))
  done
  printf '%s\n' "${t[@]}" | sort -n | awk '{a[NR]=$1} END {printf "median %d ms (min %d, max %d)\n", (NR % 2) ? a[(NR+1)/2] : int((a[NR/2] + a[NR/2+1]) / 2), a[1], a[NR]}'
}

if command -v hyperfine > /dev/null; then
  hyperfine --warmup 2 --runs "$RUNS" "${cmd[*]}"
  exit 0
fi
times=()
cpu=()
for _ in $(seq "$RUNS"); do
  start=$(date +%s%N)
  t=$( { /usr/bin/time -f "%U %S" "${cmd[@]}" > /dev/null; } 2>&1 )
  end=$(date +%s%N)
  times+=($(( (end - start) / 1000000 )))
  cpu+=("$(awk '{printf "%d", ($1 + $2) * 1000}' <<< "$t")")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2] + a[NR/2+1]) / 2)}'; }
range() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print "min " a[1] ", max " a[NR]}'; }
echo "runs: $RUNS  wall ms: ${times[*]}"
echo "median wall: $(median "${times[@]}") ms ($(range "${times[@]}"))   median user+sys CPU: $(median "${cpu[@]}") ms ($(range "${cpu[@]}"))   load: $(cut -d' ' -f1-3 /proc/loadavg)"
# Start-up alone, for comparison: the same binary printing its version.
vcpu=()
for _ in $(seq "$RUNS"); do
  t=$( { /usr/bin/time -f "%U %S" "$BIN" version > /dev/null; } 2>&1 )
  vcpu+=("$(awk '{printf "%d", ($1 + $2) * 1000}' <<< "$t")")
done
echo "start-up only (oamflow version): median user+sys CPU $(median "${vcpu[@]}") ms ($(range "${vcpu[@]}"))"
# Package initialization before main, summed over packages (ms of clock).
inits=()
for _ in $(seq "$RUNS"); do
  inits+=("$(GODEBUG=inittrace=1 "$BIN" version 2>&1 > /dev/null | awk '$1 == "init" {s += $5; n++} END {printf "%d", s}')")
done
read -r npkg initkb < <(GODEBUG=inittrace=1 "$BIN" version 2>&1 > /dev/null | awk '$1 == "init" {n++; b += $8} END {printf "%d %d\n", n, b / 1024}')
echo "package init (GODEBUG=inittrace=1): median $(median "${inits[@]}") ms ($(range "${inits[@]}")), $npkg packages with init work, ${initkb} KiB allocated by init (stable under load); binary $(( $(stat -c %s "$BIN") / 1048576 )) MiB"
if [ -z "${OAMFLOW:-}" ]; then
  echo "packages linked into cmd/oamflow (go list -deps): $(go list -deps ./cmd/oamflow | wc -l)"
fi
# The floor, timed the same way (FLOOR=0 skips it): spawning a process that
# does nothing, and hack/bench/render/floor, a binary linking only CUE,
# YAML and the built-ins, starting up and then doing the least CUE work
# this app needs (compile and evaluate its five templates once each).
if [ "${FLOOR:-1}" != 0 ]; then
  floor=$(mktemp)
  trap 'rm -rf "$defs" "$floor"' EXIT
  go build -o "$floor" ./hack/bench/render/floor
  echo "floor: process spawn (/bin/true): $(timeit /bin/true)"
  echo "floor: lean binary start-up (floor -startup): $(timeit "$floor" -startup)"
  echo "floor: lean binary + the app's CUE work (floor $APP): $(timeit "$floor" "$APP")"
  echo "floor: CUE work in-process, cold: $("$floor" -v "$APP" 2>&1 | sed 's/^CUE work: //')"
fi
