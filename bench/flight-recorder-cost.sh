#!/bin/bash
# What the flight recorder costs (docs/benchmarks-log.md, "What the flight recorder costs"), in one sitting:
#   1. JMH: an operation on a 2-rank group whose backend moves no bytes, with the recorder off
#      (JDIST_FLIGHT_RECORDER=0) and on (1024, the default), time and allocation per operation (-prof gc);
#   2. jdist bench, 2 ranks on loopback, all_sum latency at 4 B and 1 MiB with the recorder off and on,
#      alternating ROUNDS times so that both see the same machine.
# Usage: bench/flight-recorder-cost.sh [OUT_DIR] [ROUNDS]   (default: bench-results/flight-<UTC date-time>, 3 rounds).
# About 5 minutes on 2 cores.
set -euo pipefail
source "$(PATH=/usr/bin:/bin; dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib/start.sh"
OUT=${1:-$ROOT/bench-results/flight-$(date -u +%Y%m%d-%H%M%S)}
ROUNDS=${2:-3}
mkdir -p "$OUT"
JDIST="$ROOT/bin/jdist"
JAVA="$JDIST_JDK/bin/java"



"$JDIST" --version >/dev/null   # builds jdist once, before anything is timed
bench_jmh_jar

# 1. The group's own cost per operation, without JFR recording (jfr=none), recorder off and on.
bench_run jmh-flight "$JAVA" -jar "$ROOT/jdist-jmh/target/benchmarks.jar" OperationTrace -p jfr=none -p flight=0,1024 \
  -prof gc -wi 3 -i 5 -w 1s -r 1s

# 2. Whole operations, off and on alternately.
for round in $(seq 1 "$ROUNDS"); do
  for n in 0 1024; do
    run "bench-flight-$n-round-$round" "$JDIST" bench -n 2 --env JDIST_FLIGHT_RECORDER=$n \
      --op all_sum --sizes 4B:1MiB -f 262144 -w 100 -i 2000
  done
done
echo "results in $OUT" >&2
