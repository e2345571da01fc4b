#!/bin/bash
# One sitting of the measurements docs/benchmarks-log.md records for the ring, side by side:
#   1. the references (loopback TCP ceiling with iperf3; Open MPI MPI_Allreduce over TCP and shared memory),
#   2. jdist bench, 2 ranks on loopback: all ops 4 B..256 MiB over TCP, then over shared memory (JDIST_TRANSPORT=shm),
#   3. jdist bench, small-message latency with many iterations, 2 and 4 ranks, unpinned and --bind-to core,
#      and all_sum in every mode (out-of-place, in-place, returned: the array cache),
#   4. the JMH suite (reduction kernels, ring schedule), short settings.
# Usage: bench/ring-report.sh [OUT_DIR]   (default: bench-results/<UTC date-time>). Takes ~15 minutes on 2 cores.
# Run it on a quiet machine: the header records the load average before and after.
set -euo pipefail
source "$(PATH=/usr/bin:/bin; dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib/start.sh"
OUT=${1:-$ROOT/bench-results/$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
JDIST="$ROOT/bin/jdist"
OPS=all_sum,all_gather,sum_scatter,send_recv



"$JDIST" --version >/dev/null   # builds jdist once, before anything is timed
bench_run references bash "$ROOT/bench/reference/run-references.sh" 4 268435456 20
bench_run ring-tcp-2 "$JDIST" bench -n 2 --op "$OPS" --sizes 4B:256MiB -f 4 --plot "$OUT/ring-tcp-2.png"
bench_run ring-shm-2 "$JDIST" bench -n 2 --env JDIST_TRANSPORT=shm --op "$OPS" --sizes 4B:256MiB -f 4 --plot "$OUT/ring-shm-2.png"
bench_run latency-tcp-2 "$JDIST" bench -n 2 --op all_sum --sizes 4B:4KiB -f 32 -w 100 -i 3000
bench_run latency-tcp-4 "$JDIST" bench -n 4 --op all_sum --sizes 4B:4KiB -f 32 -w 100 -i 3000
bench_run latency-shm-2 "$JDIST" bench -n 2 --env JDIST_TRANSPORT=shm --op all_sum --sizes 4B:4KiB -f 32 -w 100 -i 3000
bench_run latency-tcp-2-bound "$JDIST" bench -n 2 --bind-to core --op all_sum --sizes 4B:4KiB -f 32 -w 100 -i 3000
bench_run latency-shm-2-bound "$JDIST" bench -n 2 --bind-to core --env JDIST_TRANSPORT=shm --op all_sum --sizes 4B:4KiB -f 32 -w 100 -i 3000
bench_run modes-tcp-2 "$JDIST" bench -n 2 --op all_sum --mode all --sizes 1MiB:256MiB -f 16
bench_run ring-tcp-4 "$JDIST" bench -n 4 --op all_sum,all_gather,sum_scatter --sizes 1MiB:64MiB -f 8
bench_jmh_jar
bench_run jmh-kernels "$JDIST_JDK/bin/java" -jar "$ROOT/jdist-jmh/target/benchmarks.jar" ReduceKernel -wi 2 -i 3 -w 500ms -r 500ms
bench_run jmh-schedule "$JDIST_JDK/bin/java" -jar "$ROOT/jdist-jmh/target/benchmarks.jar" RingSchedule -wi 2 -i 3 -w 500ms -r 500ms -p connections=1
echo "results in $OUT" >&2
