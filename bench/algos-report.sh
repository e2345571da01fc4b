#!/bin/bash
# One sitting of the measurements docs/benchmarks-log.md records for the size-aware algorithms (docs/reference/collectives.md §10),
# for each rank count given, on this host's loopback (or on the hosts of --hostfile HOSTS in JDIST_BENCH_HOSTS):
#   1. before/after: jdist bench with JDIST_ALGO=ring (MLX's ring only, as before §10) and with the default choice,
#      one right after the other, all_sum, all_gather and sum_scatter, 4 B .. 64 MiB;
#   2. jdist bench --tune: every algorithm at every size, interleaved, and the rules it would write;
#   3. the ring with two connections per neighbour (both directions of each) against one, 1 MiB .. 64 MiB.
# Usage: bench/algos-report.sh [OUT_DIR] [N...]   (default: bench-results/algos-<UTC date-time>, ranks 4 8).
# Run it on a quiet machine: the header of every file records the load average before and after.
set -euo pipefail
source "$(PATH=/usr/bin:/bin; dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib/start.sh"
OUT=${1:-$ROOT/bench-results/algos-$(date -u +%Y%m%d-%H%M%S)}
shift || true
RANKS=("$@")
[ ${#RANKS[@]} -gt 0 ] || RANKS=(4 8)
mkdir -p "$OUT"
JDIST="$ROOT/bin/jdist"
OPS=all_sum,all_gather,sum_scatter
# shellcheck disable=SC2206  # JDIST_BENCH_HOSTS is a list of launch options, e.g. "--hostfile hosts.json"
HOSTS=(${JDIST_BENCH_HOSTS:-})



"$JDIST" --version >/dev/null   # builds jdist once, before anything is timed
for n in "${RANKS[@]}"; do
  bench_run "before-$n" env JDIST_ALGO=ring "$JDIST" bench "${HOSTS[@]}" -n "$n" --op "$OPS" --sizes 4B:64MiB -f 4
  bench_run "after-$n" "$JDIST" bench "${HOSTS[@]}" -n "$n" --op "$OPS" --sizes 4B:64MiB -f 4
  bench_run "tune-$n" "$JDIST" bench "${HOSTS[@]}" -n "$n" --tune "$OUT/rules.json" --sizes 4B:64MiB -f 4
  bench_run "ring-k1-$n" env JDIST_ALGO=ring "$JDIST" bench "${HOSTS[@]}" -n "$n" --op all_sum,all_gather --sizes 1MiB:64MiB -f 4
  bench_run "ring-k2-$n" env JDIST_ALGO=ring "$JDIST" bench "${HOSTS[@]}" -n "$n" --connections-per-ip 2 --op all_sum,all_gather --sizes 1MiB:64MiB -f 4
done
echo "results in $OUT" >&2
