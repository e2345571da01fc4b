#!/bin/bash
# Compares, in one run, jdist's mpi backend all_sum (float32) with a plain C program calling
# MPI_Allreduce, both under the same mpirun, at 1 MiB and above. Prints a table of medians.
#
#   bench/mpi/compare.sh [ranks] [rounds]        (defaults: 2 ranks, 3 rounds)
#   MPI=mpich bench/mpi/compare.sh               (MPICH instead of Open MPI)
#   SIZES="1048576 16777216" bench/mpi/compare.sh
#
# Each round runs the C program and the Java program once per size, alternating, so both see the
# same machine state; the reported number is the median over rounds of each run's median call time.
set -euo pipefail
ROOT=$(PATH=/usr/bin:/bin; cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
# shellcheck source=../../bin/lib/common.sh
source "$ROOT/bin/lib/common.sh"
jdist_own_path
jdist_find_jdk
RANKS=${1:-2}
ROUNDS=${2:-3}
MPI=${MPI:-openmpi}
SIZES=${SIZES:-"1048576 4194304 16777216 67108864"}
WARMUP=${WARMUP:-}   # untimed calls per run; default: enough for the JIT (3000, fewer for large sizes)
case "$MPI" in
  openmpi) MPIRUN=(mpirun.openmpi --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none); MPICC=mpicc.openmpi ;;
  mpich)   MPIRUN=(mpirun.mpich); MPICC=mpicc.mpich ;;
  *) echo "compare.sh: MPI must be openmpi or mpich, got '$MPI'" >&2; exit 2 ;;
esac
for tool in "${MPIRUN[0]}" "$MPICC"; do
  command -v "$tool" >/dev/null || { echo "compare.sh: $tool not found; install Debian's openmpi-bin libopenmpi-dev or mpich libmpich-dev" >&2; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/jdist-mpi-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
"$MPICC" -O2 -o "$WORK/allreduce_bench" "$ROOT/bench/mpi/allreduce_bench.c"
if [ ! -d "$ROOT/jdist-core/target/classes/dev/jdist/mpi" ]; then
  jdist_find_maven
  (cd "$ROOT" && { jdist_mvn -B -q -o compile -pl jdist-core 2>/dev/null || jdist_mvn -B -q compile -pl jdist-core; })
fi
CP="$ROOT/jdist-core/target/classes"
JACKSON=$(jdist_pom_property "$ROOT" jackson.version)
M2="$HOME/.m2/repository/com/fasterxml/jackson/core"
for j in "$M2"/jackson-databind/"$JACKSON"/*.jar "$M2"/jackson-core/"$JACKSON"/*.jar "$M2"/jackson-annotations/"${JACKSON%.*}"*/*.jar; do
  [ -f "$j" ] && CP="$CP:$j"
done
"$JDIST_JDK/bin/javac" -d "$WORK" -cp "$CP" "$ROOT/bench/mpi/MpiAllSumBench.java" 2>/dev/null
# shellcheck disable=SC2207
JAVA=("$JDIST_JDK/bin/java" $(jdist_pom_property "$ROOT" jdist.jvm.flags) -Xmx1g -cp "$CP:$WORK" MpiAllSumBench)

# The JIT compiles the binding's path after a few thousand calls; before that a Java call costs more, and on
# 2 cores the compiler threads also slow the other rank. 3000 warm-up calls up to 1 MiB, fewer above (>= 30).
warmup_for() { [ -n "$WARMUP" ] && { echo "$WARMUP"; return; }; local b=$1 w=$(( 3 * 1073741824 / $1 )); [ $w -gt 3000 ] && w=3000; [ $w -lt 30 ] && w=30; echo $w; }
iters_for() { local b=$1 i=$(( 512 * 1048576 / $1 )); [ $i -gt 200 ] && i=200; [ $i -lt 10 ] && i=10; echo $i; }

RESULTS=${RESULTS_FILE:-$WORK/results.txt}   # RESULTS_FILE=path keeps the raw rows
: > "$RESULTS"
for round in $(seq 1 "$ROUNDS"); do
  for b in $SIZES; do
    it=$(iters_for "$b"); wu=$(warmup_for "$b")
    # A run that fails or passes the time limit just leaves its rows out (reported as "-").
    timeout 600 "${MPIRUN[@]}" -n "$RANKS" "$WORK/allreduce_bench" "$b" "$it" "$wu" 2>/dev/null | grep '^c' >> "$RESULTS" || true
    timeout 600 "${MPIRUN[@]}" -n "$RANKS" "${JAVA[@]}" "$b" "$it" "$wu" 2>/dev/null | grep '^jdist-' >> "$RESULTS" || true
  done
done

echo "# $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -n) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); MPI=$MPI ranks=$RANKS rounds=$ROUNDS warmup=${WARMUP:-3000 (fewer above 1 MiB)}"
echo "# $("${MPIRUN[0]}" --version 2>&1 | head -1)"
python3 - "$RESULTS" <<'PY'
import sys, statistics
rows, mins = {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault((int(f[1]), f[0]), []).append(float(f[3]))
    mins.setdefault((int(f[1]), f[0]), []).append(float(f[4]))
sizes = sorted({b for b, _ in rows})
cols = [('c', 'C MPI_Allreduce'), ('jdist-binding', 'jdist binding'), ('jdist-into', 'Group.allReduceInto'),
        ('jdist-allsum', 'Group.allSum')]
selfcols = [('c-self', 'C on MPI_COMM_SELF'), ('jdist-self', 'jdist binding on a 1-rank split')]
def stat(b, k):
    v = rows.get((b, k))
    return (statistics.median(v), min(mins[(b, k)])) if v else None
def us(x):
    return f"{x:.1f}" if x < 100 else f"{x:.0f}"
def pct(a, b):
    return f"{100 * (a / b - 1):+.0f}%" if b > 0 else "n/a"
print("median over rounds of each run's median call time in us (best single call in brackets); vs C compares medians")
print("| bytes | " + " | ".join(t for _, t in cols) + " |")
print("|---:|" + "---:|" * len(cols))
for b in sizes:
    c = stat(b, 'c')
    cells = []
    for k, _ in cols:
        s = stat(b, k)
        if s is None:
            cells.append("-")
        elif k == 'c' or c is None:
            cells.append(f"{us(s[0])} ({us(s[1])})")
        else:
            cells.append(f"{us(s[0])} ({us(s[1])}) {pct(s[0], c[0])}")
    print(f"| {b} | " + " | ".join(cells) + " |")
print()
print("the same call on a 1-process communicator (no peer to wait for: isolates the binding's per-call cost)")
print("| bytes | " + " | ".join(t for _, t in selfcols) + " | difference of medians |")
print("|---:|---:|---:|---:|")
for b in sizes:
    c, j = stat(b, 'c-self'), stat(b, 'jdist-self')
    if c and j:
        print(f"| {b} | {c[0]:.1f} ({c[1]:.1f}) | {j[0]:.1f} ({j[1]:.1f}) | {j[0] - c[0]:+.1f} us ({pct(j[0], c[0])}) |")
PY
