#!/usr/bin/env bash
# The ring in two directions (MLX's, JDIST_ALGO=ring) against one (JDIST_ALGO=ring1) on this host, size by size, each
# size in fresh jobs: a JVM that has swept other sizes first can run the same schedule at another speed, and a user's
# job repeats one size. RUNS rounds, each running both algorithms once per size (interleaved); all_sum, all_gather and
# sum_scatter, float32. Prints per op and size the median of the runs' medians and the ratio, and keeps every row.
#
#   bench/ring-directions.sh [RANKS] [RUNS] [OUT_DIR]     (defaults: 2 ranks, 5 runs, bench-results/ring-directions-<UTC>)
#
# docs/benchmarks-log.md "Two ranks on one host: one direction up to 16 MiB" records what it measured and the default rule
# (docs/reference/collectives.md §10.9) it set.
set -euo pipefail
source "$(PATH=/usr/bin:/bin; dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib/start.sh"
RANKS=${1:-2}
RUNS=${2:-5}
OUT=${3:-$ROOT/bench-results/ring-directions-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
JDIST="$ROOT/bin/jdist"
"$JDIST" --version >/dev/null   # builds jdist once, before anything is timed

# size warm-up timed: as many warm-up calls as timed ones up to 4 MiB (a new size reaches its compiled steady state
# only after ~1000 calls on 2 cores), fewer for the sizes whose calls take tens of milliseconds
SIZES=("256KiB 2000 2000" "1MiB 1000 1000" "4MiB 500 500" "16MiB 100 200" "64MiB 30 50" "256MiB 8 15")
bench_machine > "$OUT/machine.txt"
: > "$OUT/rows.csv"
for run in $(seq 1 "$RUNS"); do
  for spec in "${SIZES[@]}"; do
    read -r size warm iters <<< "$spec"
    for algo in ring ring1; do
      echo "== run $run/$RUNS: $size $algo" >&2
      timeout 600 "$JDIST" bench -n "$RANKS" --env JDIST_ALGO=$algo --op all_sum,all_gather,sum_scatter \
          --sizes "$size:$size" -w "$warm" -i "$iters" --csv 2>/dev/null \
        | awk -F, -v a=$algo -v r="$run" '$1 != "op" {print a "," r "," $1 "," $4 "," $8}' >> "$OUT/rows.csv"
    done
  done
done
bench_machine >> "$OUT/machine.txt"
python3 - "$OUT/rows.csv" "$RANKS" <<'EOF' | tee "$OUT/summary.md"
import collections, csv, statistics, sys
times = collections.defaultdict(list)
for algo, run, op, size, median in csv.reader(open(sys.argv[1])):
    times[(op, int(size), algo)].append(float(median))
print(f"{sys.argv[2]} ranks, median of the runs' median µs per call\n")
print("| op | size (B) | ring (two directions) | ring1 (one) | ring ÷ ring1 (> 1: ring1 faster) |")
print("|---|---:|---:|---:|---:|")
for op in ("all_sum", "all_gather", "sum_scatter"):
    for size in sorted({k[1] for k in times if k[0] == op}):
        two, one = times.get((op, size, "ring")), times.get((op, size, "ring1"))
        if two and one:
            a, b = statistics.median(two), statistics.median(one)
            print(f"| {op} | {size} | {a:.1f} | {b:.1f} | {a / b:.2f} |")
EOF
