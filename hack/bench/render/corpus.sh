#!/usr/bin/env bash
# Whole-process `oamflow dry-run --offline` over the KubeVela conformance
# corpus (../shared/conformance/kubevela next to the clone, or ../../shared
# from a worktree), against a baseline binary built from another commit, in
# one run (issue 14, Performance: "at least as fast as today").
#
# Each round runs every case's command (source.txt) once with the current
# binary and once with the baseline, alternating which goes first, so both
# see the same machine load. Prints per binary the median over ROUNDS of the
# round's wall time and user+system CPU time, and the ratio current/baseline
# (below 1 is faster), for all cases and for the cases both binaries render
# (exit 0): a case the baseline refuses costs it less work, which flatters it.
#
#   hack/bench/render/corpus.sh                  # baseline 545d119, 5 rounds
#   BASE=main ROUNDS=9 hack/bench/render/corpus.sh
#   OAMFLOW=/path/to/oamflow BASELINE=/path/to/old hack/bench/render/corpus.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
ROUNDS=${ROUNDS:-5}
BASE=${BASE:-545d119}

corpus=""
for d in ../shared ../../shared; do
  if [ -d "$d/conformance/kubevela/cases" ]; then corpus=$(cd "$d/conformance/kubevela" && pwd); break; fi
done
[ -n "$corpus" ] || { echo "corpus not found in ../shared or ../../shared" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cur=${OAMFLOW:-}
if [ -z "$cur" ]; then
  cur=$tmp/oamflow-current
  go build -o "$cur" ./cmd/oamflow
fi
old=${BASELINE:-}
if [ -z "$old" ]; then
  old=$tmp/oamflow-baseline
  mkdir "$tmp/base"
  git archive "$BASE" | tar -x -C "$tmp/base"
  (cd "$tmp/base" && go build -o "$old" ./cmd/oamflow)
fi
cur=$(cd "$(dirname "$cur")" && pwd)/$(basename "$cur")
old=$(cd "$(dirname "$old")" && pwd)/$(basename "$old")

# cases: name and argv (after `vela`), one per line.
cases=()
for src in "$corpus"/cases/*/source.txt; do
  cases+=("$(dirname "$src")")
done

export KUBECONFIG=$corpus/kubeconfig-offline
export HOME=$tmp/home
mkdir -p "$HOME"

args_of() { sed -n 's/^command: *vela //p' "$1/source.txt"; }

# both: the cases both binaries render (exit 0), decided once.
both=()
for c in "${cases[@]}"; do
  read -r -a a <<< "$(args_of "$c")"
  if (cd "$c" && "$cur" "${a[@]}" > /dev/null 2>&1) && (cd "$c" && "$old" "${a[@]}" > /dev/null 2>&1); then
    both+=("$c")
  fi
done

# round BIN CASES...: wall and user+sys CPU ms of running every case once.
round() {
  local bin=$1
  shift
  local start end t0 t1 me=$BASHPID
  t0=$(awk '{print $16 + $17}' "/proc/$me/stat")
  start=$(date +%s%N)
  for c in "$@"; do
    read -r -a a <<< "$(args_of "$c")"
    (cd "$c" && "$bin" "${a[@]}" > /dev/null 2>&1) || true
  done
  end=$(date +%s%N)
  t1=$(awk '{print $16 + $17}' "/proc/$me/stat")
  echo "$(( (end - start) / 1000000 )) $(( (t1 - t0) * 1000 / $(getconf CLK_TCK) ))"
}

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2] + a[NR/2+1]) / 2)}'; }

measure() {
  local label=$1
  shift
  local cw=() cc=() ow=() oc=()
  for i in $(seq "$ROUNDS"); do
    if [ $((i % 2)) -eq 1 ]; then
      read -r w c < <(round "$cur" "$@"); cw+=("$w"); cc+=("$c")
      read -r w c < <(round "$old" "$@"); ow+=("$w"); oc+=("$c")
    else
      read -r w c < <(round "$old" "$@"); ow+=("$w"); oc+=("$c")
      read -r w c < <(round "$cur" "$@"); cw+=("$w"); cc+=("$c")
    fi
  done
  local mcw mcc mow moc
  mcw=$(median "${cw[@]}"); mcc=$(median "${cc[@]}"); mow=$(median "${ow[@]}"); moc=$(median "${oc[@]}")
  printf '%-28s current: wall %6d ms, CPU %6d ms | baseline: wall %6d ms, CPU %6d ms | ratio wall %.3f, CPU %.3f\n' \
    "$label ($# cases)" "$mcw" "$mcc" "$mow" "$moc" "$(awk "BEGIN{print $mcw/$mow}")" "$(awk "BEGIN{print $mcc/$moc}")"
}

echo "corpus: $corpus; baseline: ${BASELINE:-$BASE}; rounds: $ROUNDS; load: $(cut -d' ' -f1-3 /proc/loadavg)"
measure "all cases" "${cases[@]}"
measure "cases both render" "${both[@]}"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
