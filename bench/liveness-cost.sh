#!/usr/bin/env bash
# What the liveness watch and the mismatch check cost: jdist bench's 4 B (and 1 MiB) all_sum latency, 2 ranks pinned to
# cores, with the watch off (JDIST_HEARTBEAT=off), on (the default of every jdist launch job), and with
# JDIST_DEBUG=detail; optionally also another build's bin/jdist ("before"). The configurations run interleaved, RUNS
# times each, so that a busy machine disturbs them alike; prints every run's median and, per configuration, the median
# of the medians with the smallest and largest.
#
#   bench/liveness-cost.sh [RUNS] [OTHER_CHECKOUT]      (defaults: 7 runs, no other build)
#
# docs/reliability.md records the figures.
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
RUNS=${1:-7}
OTHER=${2:-}
ITERS=${JDIST_COST_ITERS:-5000}
declare -A SAMPLES
configs=("off" "on" "detail")
[ -n "$OTHER" ] && configs=("before" "${configs[@]}")
run() {   # config size -> median in us
  local cfg=$1 size=$2 jdist="$ROOT/bin/jdist" env=()
  case $cfg in
    before) jdist="$OTHER/bin/jdist" ;;
    off) env=(--env JDIST_HEARTBEAT=off) ;;
    detail) env=(--env JDIST_DEBUG=detail) ;;
  esac
  "$jdist" bench -n 2 --bind-to core --sizes "$size:$size" -w 500 -i "$ITERS" "${env[@]}" 2>/dev/null \
    | awk '!/^#/ && NF >= 7 { print $6; exit }'
}
echo "# $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -n), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); runs=$RUNS iters=$ITERS"
for size in 4B 1MiB; do
  for ((i = 1; i <= RUNS; i++)); do
    line="$size run $i:"
    for cfg in "${configs[@]}"; do
      m=$(run "$cfg" "$size")
      SAMPLES[$cfg/$size]+="$m "
      line+=" $cfg=$m"
    done
    echo "$line"
  done
done
echo "# median of the runs' medians (min..max), us"
for size in 4B 1MiB; do
  for cfg in "${configs[@]}"; do
    echo "${SAMPLES[$cfg/$size]}" | tr ' ' '\n' | grep -v '^$' | sort -g | awk -v c="$cfg" -v s="$size" \
      '{ v[NR] = $1 } END { printf "%-5s %-7s %8.1f  (%.1f..%.1f, %d runs)\n", s, c, (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1], v[NR], NR }'
  done
done
