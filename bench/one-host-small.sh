#!/usr/bin/env bash
# Issue 17's one-host targets, side by side in one sitting: 2 ranks on loopback, float32 all_sum, jdist against Open
# MPI's TCP transport, each with its own default settings (mpirun binds 2 ranks to cores by default; jdist launch
# does not pin), plus the variants that explain the difference:
#   jdist            jdist bench defaults (2 jdist ranks on one host: rd up to 16 KiB, ring1 up to 16 MiB, ring above)
#   jdist-ring       JDIST_ALGO=ring (MLX's ring, both directions, at every size)
#   jdist-before     the defaults of another jdist checkout, JDIST_BEFORE=/path/to/its/bin/jdist (a before/after sitting)
#   jdist-rhd        JDIST_ALGO=all_reduce=rhd (the mesh's reduce-scatter + all-gather: the ring's exchanges, another engine)
#   jdist-ring1      JDIST_ALGO=ring1 (the ring in one direction, the default between hosts and at 2 ranks to 16 MiB)
#   jdist-bound      --bind-to core
#   jdist-shm        JDIST_TRANSPORT=shm
#   ompi-tcp         mpirun --mca btl tcp,self (its default binding)
#   ompi-tcp-unbound the same with --bind-to none
#   ompi-vader       mpirun --mca btl vader,self (shared memory)
# The configurations run interleaved, RUNS times each, so a busy machine disturbs them alike. Prints every run's row
# into OUT and a summary: per configuration and size, the median of the runs' medians (µs) and of their busbw (GB/s).
#
#   bench/one-host-small.sh [RUNS] [OUT_DIR]        (defaults: 5 runs, bench-results/one-host-<UTC time>)
#   ONE_HOST_CONFIGS="jdist ompi-tcp" bench/one-host-small.sh 5      (only those configurations)
#
# Needs Open MPI (installed when run as root). docs/benchmarks-log.md "Small messages on one host" records the figures.
set -euo pipefail
source "$(PATH=/usr/bin:/bin; dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib/start.sh"
RUNS=${1:-5}
OUT=${2:-$ROOT/bench-results/one-host-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
jdist_apt_install openmpi-bin libopenmpi-dev
MPICC=$(command -v mpicc.openmpi || command -v mpicc)
MPIRUN=$(command -v mpirun.openmpi || command -v mpirun)
"$MPICC" -O2 -o "$OUT/mpi_collective" "$ROOT/bench/reference/mpi_collective.c"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
JDIST="$ROOT/bin/jdist"
"$JDIST" --version >/dev/null   # builds jdist once, before anything is timed

# Each size group: min max iters warm-up, the same for jdist and Open MPI. Small sizes: many calls (the JVM's JIT
# needs the first ~0.2 s). 1 and 16 MiB: as many warm-up calls as timed ones, because a JVM's per-operation path
# reaches its compiled steady state only after ~1000 calls of a new large size on 2 cores (docs/benchmarks-log.md, "1 MiB
# in its steady state"); 256 MiB: few calls (each is ~0.2 s).
SIZE_GROUPS=("4 1024 20000 20000" "1048576 1048576 1000 1000" "16777216 16777216 100 100" "268435456 268435456 20 5")

# measure CONFIG MIN MAX ITERS WARMUP: prints the data rows ("size median p99 ... busbw ...") of one run
measure() {
  local cfg=$1 min=$2 max=$3 iters=$4 warm=$5 factor=16
  [ "$min" = 4 ] && factor=256
  local mpi=("$MPIRUN" --allow-run-as-root --oversubscribe -np 2)
  case $cfg in
    jdist)            "$JDIST" bench -n 2 --op all_sum --sizes "${min}B:${max}B" -f $factor -w "$warm" -i "$iters" --csv ;;
    jdist-ring)       "$JDIST" bench -n 2 --env JDIST_ALGO=ring --op all_sum --sizes "${min}B:${max}B" -f $factor -w "$warm" -i "$iters" --csv ;;
    jdist-rhd)        "$JDIST" bench -n 2 --env JDIST_ALGO=all_reduce=rhd --op all_sum --sizes "${min}B:${max}B" -f $factor -w "$warm" -i "$iters" --csv ;;
    jdist-before)     "$JDIST_BEFORE" bench -n 2 --op all_sum --sizes "${min}B:${max}B" -f $factor -w "$warm" -i "$iters" --csv ;;
    jdist-ring1)      "$JDIST" bench -n 2 --env JDIST_ALGO=ring1 --op all_sum --sizes "${min}B:${max}B" -f $factor -w "$warm" -i "$iters" --csv ;;
    jdist-bound)      "$JDIST" bench -n 2 --bind-to core --op all_sum --sizes "${min}B:${max}B" -f $factor -w "$warm" -i "$iters" --csv ;;
    jdist-shm)        "$JDIST" bench -n 2 --env JDIST_TRANSPORT=shm --op all_sum --sizes "${min}B:${max}B" -f $factor -w "$warm" -i "$iters" --csv ;;
    ompi-tcp)         "${mpi[@]}" --mca btl tcp,self --mca btl_tcp_if_include lo "$OUT/mpi_collective" allreduce "$min" "$max" "$iters" "$warm" $factor --csv ;;
    ompi-tcp-unbound) "${mpi[@]}" --bind-to none --mca btl tcp,self --mca btl_tcp_if_include lo "$OUT/mpi_collective" allreduce "$min" "$max" "$iters" "$warm" $factor --csv ;;
    ompi-vader)       "${mpi[@]}" --mca btl vader,self "$OUT/mpi_collective" allreduce "$min" "$max" "$iters" "$warm" $factor --csv ;;
  esac 2>/dev/null | awk -F, '$1 == "all_sum"'
}

ALL_CONFIGS=(jdist jdist-before jdist-ring jdist-rhd jdist-ring1 jdist-bound jdist-shm ompi-tcp ompi-tcp-unbound ompi-vader)
# ONE_HOST_CONFIGS="jdist ompi-tcp" measures only those (a shorter sitting); jdist-before only when JDIST_BEFORE is set
DEFAULT_CONFIGS=("${ALL_CONFIGS[@]}")
[ -n "${JDIST_BEFORE:-}" ] || DEFAULT_CONFIGS=("${DEFAULT_CONFIGS[@]/jdist-before}")
read -r -a CONFIGS <<< "${ONE_HOST_CONFIGS:-${DEFAULT_CONFIGS[*]}}"
for cfg in "${CONFIGS[@]}"; do
  [[ " ${ALL_CONFIGS[*]} " == *" $cfg "* ]] || { echo "ONE_HOST_CONFIGS: unknown configuration '$cfg' (known: ${ALL_CONFIGS[*]})" >&2; exit 2; }
done
if [[ " ${CONFIGS[*]} " == *" jdist-before "* ]]; then
  [ -x "${JDIST_BEFORE:-}" ] || { echo "jdist-before needs JDIST_BEFORE=/path/to/another/checkout/bin/jdist (got '${JDIST_BEFORE:-}')" >&2; exit 2; }
  "$JDIST_BEFORE" --version >/dev/null   # builds that checkout once, before anything is timed
fi
{ bench_machine; echo "# runs=$RUNS configs=${CONFIGS[*]}${JDIST_BEFORE:+ JDIST_BEFORE=$JDIST_BEFORE}"; } > "$OUT/machine.txt"
for run in $(seq 1 "$RUNS"); do
  for cfg in "${CONFIGS[@]}"; do
    echo "== run $run/$RUNS: $cfg" >&2
    for group in "${SIZE_GROUPS[@]}"; do
      # shellcheck disable=SC2086  # a group is four numbers
      measure "$cfg" $group
    done | sed "s/^/$cfg,$run,/" >> "$OUT/rows.txt"
  done
done
bench_machine >> "$OUT/machine.txt"

# rows.txt: CONFIG,RUN, then jdist bench --csv's columns (mpi_collective --csv prints the same ones)
python3 - "$OUT/rows.txt" "${CONFIGS[@]}" <<'EOF' | tee "$OUT/summary.md"
import statistics, sys
rows, configs = sys.argv[1], sys.argv[2:]
data = {}
for line in open(rows):
    f = line.strip().split(",")
    cfg, size, median, busbw = f[0], int(f[5]), float(f[9]), float(f[12])
    data.setdefault((cfg, size), []).append((median, busbw))
sizes = sorted({s for (_, s) in data})
def label(b):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale: return f"{b // scale} {unit}"
    return f"{b} B"
print("| configuration | " + " | ".join(label(s) for s in sizes) + " |")
print("|---|" + "---:|" * len(sizes))
for cfg in configs:
    cells = []
    for s in sizes:
        v = data.get((cfg, s))
        if not v: cells.append("–"); continue
        m = statistics.median(x[0] for x in v)
        bw = statistics.median(x[1] for x in v)
        cells.append(f"{m:.1f} µs" if s < (1 << 20) else f"{bw:.2f} GB/s")
    print(f"| {cfg} | " + " | ".join(cells) + " |")
print()
print(f"median of {len(next(iter(data.values())))} runs' medians: µs for the small sizes, busbw for 1 MiB and up")
EOF
echo "results in $OUT" >&2
