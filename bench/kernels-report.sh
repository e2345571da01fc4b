#!/bin/bash
# One sitting of the measurements docs/benchmarks-log.md records for "Kernels with and without the Vector API
# module" and "What tracing costs":
#   1. JMH: the reduction kernels in a JVM without jdk.incubator.vector (portable kernels) and with it
#      (Vector API kernels), and the plain element loop for reference;
#   2. jdist bench, 2 ranks on loopback, all_sum at 1 MiB and 64 MiB (float32 over TCP and over shared
#      memory, bfloat16 over TCP), each with the ranks' JVMs without and with the module (JDK_JAVA_OPTIONS);
#   3. JMH: an operation's trace with no recording, a recording without the event and one with it;
#   4. jdist bench small-message latency with every rank recording dev.jdist.Operation events, and the
#      summary of those recordings (dev.jdist.flight.OperationSummary).
# Usage: bench/kernels-report.sh [OUT_DIR]   (default: bench-results/kernels-<UTC date-time>). ~15 minutes on 2 cores.
set -euo pipefail
source "$(PATH=/usr/bin:/bin; dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib/start.sh"
OUT=${1:-$ROOT/bench-results/kernels-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
JDIST="$ROOT/bin/jdist"
JAVA="$JDIST_JDK/bin/java"
VECTOR=$(jdist_pom_property "$ROOT" jdist.vector.flags)
JMH_SHORT=(-wi 2 -i 3 -w 500ms -r 500ms)



"$JDIST" --version >/dev/null   # builds jdist once, before anything is timed
bench_jmh_jar
JMH="$ROOT/jdist-jmh/target/benchmarks.jar"

# 1. Kernels: the forked JVM inherits the host JVM's options.
bench_run jmh-kernels-portable "$JAVA" -jar "$JMH" 'ReduceKernelBenchmark.reducer' "${JMH_SHORT[@]}"
# shellcheck disable=SC2086
bench_run jmh-kernels-vector "$JAVA" $VECTOR -jar "$JMH" 'ReduceKernelBenchmark.reducer' "${JMH_SHORT[@]}"
bench_run jmh-kernels-plain-loop "$JAVA" -jar "$JMH" 'ReduceKernelBenchmark.plainLoop' "${JMH_SHORT[@]}"

# 2. The ring end to end, without and with the module in the ranks: float32 over TCP and shared memory,
#    bfloat16 over TCP.
for case in tcp:float32 shm:float32 tcp:bfloat16; do
  transport=${case%%:*} dtype=${case#*:}
  run "bench-$transport-$dtype-portable" "$JDIST" bench -n 2 --env JDIST_TRANSPORT=$transport -d "$dtype" \
    --op all_sum --sizes 1MiB:64MiB -f 64 -w 5 -i 20
  run "bench-$transport-$dtype-vector" "$JDIST" bench -n 2 --env JDIST_TRANSPORT=$transport --env "JDK_JAVA_OPTIONS=$VECTOR" \
    -d "$dtype" --op all_sum --sizes 1MiB:64MiB -f 64 -w 5 -i 20
done

# 3. and 4. Tracing.
bench_run jmh-trace "$JAVA" -jar "$JMH" OperationTrace -prof gc -wi 3 -i 5 -w 1s -r 1s
bench_run latency-untraced "$JDIST" bench -n 2 --op all_sum --sizes 4B:4KiB -f 32 -w 100 -i 3000
mkdir -p "$OUT/jfr"
bench_run latency-traced "$JDIST" bench -n 2 --env "JDK_JAVA_OPTIONS=-XX:StartFlightRecording:filename=$OUT/jfr/rank-%p.jfr" \
  --op all_sum --sizes 4B:4KiB -f 32 -w 100 -i 3000
bench_run trace-summary "$JAVA" -cp "$ROOT/jdist-cli/target/jdist.jar" dev.jdist.flight.OperationSummary "$OUT"/jfr/*.jfr
echo "results in $OUT" >&2
