#!/bin/bash
# Data-parallel DJL training over jdist against PyTorch DDP with Gloo, in one sitting (docs/benchmarks.md, "DJL
# data-parallel step time"): an MLP 1024-2048-2048-2048-10 (10.5 M float32 parameters), synthetic input, batch 32 per
# rank, one intra-op thread per rank, ranks on this machine over loopback.
#   1. plain DJL, one process (no jdist): the per-rank work alone;
#   2. jdist-djl's DataParallelTrainer under jdist launch -n 1, 2, 4 (float32, then bf16 on the wire at 4 ranks);
#   3. Debian's python3-torch DDP with Gloo, 1, 2, 4 ranks (its communication share estimated with no_sync()).
# Usage: bench/djl-ddp.sh [OUT_DIR]   (default: bench-results/djl-<UTC date-time>). Needs /usr/bin/python3 with torch
# (apt-get install python3-torch) for part 3. Writes steps.csv; prints it as a table.
set -euo pipefail
source "$(PATH=/usr/bin:/bin; dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib/start.sh"
OUT=${1:-$ROOT/bench-results/djl-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
cd "$ROOT"
export JAVA_HOME=$JDIST_JDK PATH=$JDIST_JDK/bin:$PATH
jdist_find_maven
jdist_mvn -B -q -o -pl jdist-djl -am test-compile dependency:build-classpath -Dmdep.includeScope=test \
  -Dmdep.outputFile="$OUT/classpath.txt" >/dev/null
CP="jdist-djl/target/classes:jdist-core/target/classes:jdist-cli/target/classes:$(cat "$OUT/classpath.txt")"
JVM=(--enable-native-access=ALL-UNNAMED -Dai.djl.offline=true -Dai.djl.pytorch.num_threads=1 -Dai.djl.pytorch.num_interop_threads=1 -Xmx2g)
BENCH=(java "${JVM[@]}" -cp "$CP" bench/djl/DjlStepBench.java)
CSV="$OUT/steps.csv"
echo "ranks,mode,params,batch,median_step_ms,p90_step_ms,median_comm_ms,comm_share" >"$CSV"
{ echo "# $(date -u +%FT%TZ) $(uname -srm); $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"; } >"$OUT/header.txt"

"${BENCH[@]}" --plain >>"$CSV"
for n in 1 2 4; do
  java -cp "$CP" dev.jdist.cli.JdistCommand launch -n "$n" -- "${BENCH[@]}" >>"$CSV"
done
java -cp "$CP" dev.jdist.cli.JdistCommand launch -n 4 -- "${BENCH[@]}" --communication-type bfloat16 >>"$CSV"
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  /usr/bin/python3 -c 'import torch; print("# torch", torch.__version__)' >>"$OUT/header.txt"
  for n in 1 2 4; do /usr/bin/python3 bench/djl/ddp_step.py --ranks "$n" --port $((29500 + n)) >>"$CSV"; done
else
  echo "bench/djl-ddp.sh: /usr/bin/python3 has no torch (apt-get install python3-torch): DDP rows skipped" >&2
fi
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/header.txt"
cat "$OUT/header.txt"
column -t -s, "$CSV"
echo "bench/djl-ddp.sh: $CSV" >&2
