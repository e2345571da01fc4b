#!/usr/bin/env bash
# Restart chaos (docs/reliability.md, "Recovery"): the 4-rank data-parallel example (examples/DataParallel.java) run by
# `jdist launch --max-restarts 1` with checkpoints every 20 steps; in each trial a random rank, at a random step of the
# first start, sends itself SIGKILL or SIGSTOP (DP_FAULT). A trial completes when the launcher exits 0 and every rank's
# final weights and the loss equal those of a run without failure, bit for bit. Each trial is bounded by `timeout`
# (past it: a hang); afterwards every process of the trial still alive (found by a marker on its command line) is a
# leftover, counted and ended by its pid. Time lost per failure = from the fault to the moment the restarted ranks have
# agreed on a checkpoint and loaded it (detection + stopping every rank + new start + reload), read from the
# timestamps of the output lines; the steps done again since that checkpoint are counted apart. Detection = from the
# fault to the supervisor's first report of a failed rank (jdist: "[WARN] Node with rank R exited with code C";
# torchrun's agent: "failed (exitcode ..." or its first "closing signal SIGTERM").
# With --torch, the same trials under torchrun (Debian's python3-torch: `python3 -m torch.distributed.run
# --max-restarts 1`, bench/chaos/restart_torch.py: the same model, Gloo, torch.save every 20 steps).
# Writes OUT/restart.csv (one row per trial, the baseline runs' rows first) and prints a summary.
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
# shellcheck source=../../bin/lib/common.sh
source "$ROOT/bin/lib/common.sh"

usage() {
  cat <<'USAGE'
usage: bench/chaos/restart.sh [options]
  --trials N          trials per fault (default 10)
  --faults LIST       kill,stop (default both)
  --heartbeat BOUND   JDIST_HEARTBEAT of the jobs: how soon a stopped rank is found (default 10s, jdist's default)
  --trial-timeout S   hard limit of one trial in seconds; past it the trial is a hang (default 300)
  --torch             also run the trials under torchrun (needs /usr/bin/python3 with torch)
  --torch-timeout S   the Gloo timeout of the torchrun jobs, their only way to find a stopped rank (default 10)
  --out DIR           results folder (default bench-results/restart-<UTC date-time>)
USAGE
}
TRIALS=10 FAULTS=kill,stop HB=10s TRIAL_T=300 TORCH=0 TORCH_T=10 OUT=""
while [ $# -gt 0 ]; do
  case $1 in
    --trials) TRIALS=$2; shift ;;
    --faults) FAULTS=$2; shift ;;
    --heartbeat) HB=$2; shift ;;
    --trial-timeout) TRIAL_T=$2; shift ;;
    --torch) TORCH=1 ;;
    --torch-timeout) TORCH_T=$2; shift ;;
    --out) OUT=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench/chaos/restart.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
die() { echo "bench/chaos/restart.sh: $*" >&2; exit 2; }
[[ $TRIALS =~ ^[1-9][0-9]*$ ]] || die "--trials takes a positive number, got '$TRIALS'"
[[ $TRIAL_T =~ ^[1-9][0-9]*$ ]] || die "--trial-timeout takes a number of seconds, got '$TRIAL_T'"
[[ $TORCH_T =~ ^[1-9][0-9]*$ ]] || die "--torch-timeout takes a number of seconds, got '$TORCH_T'"
IFS=, read -r -a FAULT <<<"$FAULTS"
for f in "${FAULT[@]}"; do [[ $f =~ ^(kill|stop)$ ]] || die "--faults: unknown '$f' (kill, stop)"; done
command -v perl >/dev/null || die "perl is needed to timestamp the output lines"
if [ "$TORCH" = 1 ]; then /usr/bin/python3 -c 'import torch' 2>/dev/null || die "--torch: /usr/bin/python3 has no torch (apt-get install python3-torch)"; fi

jdist_find_jdk
JAR=$ROOT/jdist-cli/target/jdist.jar
[ -f "$JAR" ] || die "$JAR is missing; build it first (mvn -pl jdist-cli -am package -DskipTests)"
OUT=${OUT:-$ROOT/bench-results/restart-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/classes"
# compiled once, so the ranks do not each compile the source file
"$JDIST_JDK/bin/javac" -cp "$JAR" -d "$OUT/classes" -proc:none "$ROOT/examples/DataParallel.java"
CSV=$OUT/restart.csv
echo "system,fault,trial,rank,step,exit,completed,hang,leftovers,identical,resumed_step,redo_steps,detect_s,lost_s,wall_s" >"$CSV"
echo "# $("$JDIST_JDK/bin/java" -version 2>&1 | head -1); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg); JDIST_HEARTBEAT=$HB; results in $OUT" >&2

# stamp: every line prefixed with the time it arrived (seconds, ms)
stamp() { perl -MTime::HiRes=time -ne 'BEGIN { $| = 1 } printf "%.3f %s", time, $_'; }
# first_time LOG REGEX: the timestamp of the first line matching
first_time() { grep -E -m1 "$2" "$1" | cut -d' ' -f1 || true; }
sub() { if [ -n "$1" ] && [ -n "$2" ]; then perl -e 'printf "%.3f", $ARGV[0] - $ARGV[1]' "$1" "$2"; fi; }

# leftovers MARK: processes of a trial still alive; each is ended by its pid
leftovers() {
  local pids n=0 p
  pids=$(pgrep -f -- "$1" || true)
  for p in $pids; do [ "$p" != $$ ] && n=$((n + 1)) && kill -KILL "$p" 2>/dev/null; done
  echo "$n"
}

# after a trial: WALL since T0, LEFT (the processes still alive that carry MARK), its checkpoints removed
trial_done() {
  local t0=$1 mark=$2 ck=$3
  WALL=$(sub "$(date +%s.%N)" "$t0")
  LEFT=$(leftovers "$mark")
  rm -rf "$ck"
}

# run_jdist LOG FAULT(none|kill|stop) RANK STEP: one job; sets EXIT, WALL
run_jdist() {
  local log=$1 fault=$2 rank=$3 step=$4 ck mark port t0
  ck=$(mktemp -d "$OUT/ckpt.XXXXXX")
  mark="chaos-restart-$$-$RANDOM$RANDOM"
  port=$((40000 + (RANDOM % 1200) * 8))
  local env=(DP_CHECKPOINTS="$ck" DP_SAVE_EVERY=20 JDIST_HEARTBEAT="$HB" JDIST_LAUNCH_BACKEND=ring)
  [ "$fault" != none ] && env+=(DP_FAULT="$rank:$step:${fault^^}")
  t0=$(date +%s.%N)
  set +e
  env "${env[@]}" timeout -k 10 "$TRIAL_T" "$ROOT/bin/jdist" launch -n 4 -p "$port" --max-restarts 1 \
    --java-opt "-Dchaos.mark=$mark" --class-path "$OUT/classes" DataParallel </dev/null 2>&1 | stamp >"$log"
  EXIT=${PIPESTATUS[0]}
  set -e
  trial_done "$t0" "$mark" "$ck"
}

# COMPLETED RESUMED DETECT LOST REDO of one trial, once IDENTICAL is known; DETECTED: an extended regex for the line
# that shows the failure was seen
timings() {
  local log=$1 step=$2 detected=$3 tf td tr
  COMPLETED=0; [ "$EXIT" = 0 ] && [ "$IDENTICAL" = 1 ] && COMPLETED=1
  RESUMED=$(sed -n 's/.*rank 0: restart 1, starting at step \([0-9]*\).*/\1/p' "$log" | head -1)
  tf=$(first_time "$log" "to myself before step")
  td=$(first_time "$log" "$detected")
  tr=$(first_time "$log" "rank [0-3]: restart 1, starting at step")
  DETECT=$(sub "$td" "$tf"); LOST=$(sub "$tr" "$tf")
  REDO=""; [ -n "$RESUMED" ] && REDO=$((step - RESUMED))
}

# the figures of one jdist trial's log against the baseline (every rank prints its weights' crc32)
measure_jdist() {
  local log=$1 step=$2 crcs loss
  crcs=$(sed -n 's/.*rank [0-3] of 4: weights crc32=\([0-9a-f]*\).*/\1/p' "$log" | sort -u | tr '\n' ' ')
  loss=$(sed -n 's/.* loss \([0-9.]*\) after 200 iterations.*/\1/p' "$log")
  IDENTICAL=0; [ "$(sed -n 's/.*rank [0-3] of 4: weights crc32=.*/x/p' "$log" | wc -l)" = 4 ] && [ "$crcs" = "$BASE_CRC " ] && [ "$loss" = "$BASE_LOSS" ] && IDENTICAL=1
  timings "$log" "$step" "\[WARN\] Node with rank [0-9]+ exited with code"
}

run_torch() {
  local log=$1 fault=$2 rank=$3 step=$4 ck mark port t0
  ck=$(mktemp -d "$OUT/ckpt.XXXXXX")
  mark="chaos-restart-$$-$RANDOM$RANDOM"
  port=$((50000 + (RANDOM % 1000) * 8))
  local env=(DP_CHECKPOINTS="$ck" DP_SAVE_EVERY=20 DP_GLOO_TIMEOUT="$TORCH_T" OMP_NUM_THREADS=1)
  [ "$fault" != none ] && env+=(DP_FAULT="$rank:$step:${fault^^}")
  t0=$(date +%s.%N)
  set +e
  # torchrun as `python3 -m torch.distributed.run`, with one fix: under Python 3.11 torch 1.13's Std.from_str("0")
  # (the default --redirects/--tee) returns None, as iterating an IntFlag no longer yields its zero member
  env "${env[@]}" timeout -k 10 "$TRIAL_T" /usr/bin/python3 -c 'import sys, torch.distributed.elastic.multiprocessing.api as a
f = a.Std.from_str
a.Std.from_str = classmethod(lambda c, v: a.Std.NONE if v == "0" else f(v))
import torch.distributed.run as r
sys.argv[0] = "torchrun"
r.main()' --nnodes 1 --nproc_per_node 4 \
    --max_restarts 1 --rdzv_backend c10d --rdzv_endpoint "127.0.0.1:$port" \
    "$ROOT/bench/chaos/restart_torch.py" "$mark" </dev/null 2>&1 | stamp >"$log"
  EXIT=${PIPESTATUS[0]}
  set -e
  trial_done "$t0" "$mark" "$ck"
}
# the figures of one torchrun trial's log against the baseline (rank 0 prints the crc32 and whether all ranks agree)
measure_torch() {
  local log=$1 step=$2 loss crc
  IDENTICAL=0; [ "$(grep -c 'weights identical on all 4 ranks' "$log")" -ge 1 ] && IDENTICAL=1
  loss=$(sed -n 's/.* loss \([0-9.]*\) after 200 iterations.*/\1/p' "$log")
  crc=$(sed -n 's/.*rank 0 of 4: weights crc32=\([0-9a-f]*\).*/\1/p' "$log")
  [ "$loss" = "$BASE_LOSS" ] && [ "$crc" = "$BASE_CRC" ] || IDENTICAL=0
  timings "$log" "$step" "closing signal SIGTERM|failed \(exitcode"
}

# trials SYSTEM RUN MEASURE: the run without failure (its rank 0's crc32 and loss in BASE_CRC and BASE_LOSS), then
# TRIALS runs of each fault at a random rank and step, one CSV row each
trials() {
  local system=$1 run=$2 measure=$3 fault t rank step log
  "$run" "$OUT/$system-baseline.log" none 0 0
  BASE_CRC=$(sed -n 's/.*rank 0 of 4: weights crc32=\([0-9a-f]*\).*/\1/p' "$OUT/$system-baseline.log")
  BASE_LOSS=$(sed -n 's/.* loss \([0-9.]*\) after 200 iterations.*/\1/p' "$OUT/$system-baseline.log")
  [ "$EXIT" = 0 ] && [ -n "$BASE_CRC" ] || die "the $system run without failure failed (exit $EXIT): $OUT/$system-baseline.log"
  echo "$system,none,0,,,$EXIT,1,0,$LEFT,1,,,,,$WALL" >>"$CSV"
  echo "# $system baseline: crc32 $BASE_CRC, loss $BASE_LOSS, ${WALL} s" >&2
  for fault in "${FAULT[@]}"; do
    for t in $(seq 1 "$TRIALS"); do
      rank=$((RANDOM % 4)); step=$((1 + RANDOM % 198))
      log="$OUT/$system-$fault-$t.log"
      "$run" "$log" "$fault" "$rank" "$step"
      "$measure" "$log" "$step"
      HANG=$(perl -e 'print $ARGV[0] >= $ARGV[1] ? 1 : 0' "$WALL" "$TRIAL_T")
      echo "$system,$fault,$t,$rank,$step,$EXIT,$COMPLETED,$HANG,$LEFT,$IDENTICAL,$RESUMED,$REDO,$DETECT,$LOST,$WALL" >>"$CSV"
      echo "# $system $fault $t: rank $rank step $step: exit $EXIT, completed $COMPLETED, leftovers $LEFT, resumed at $RESUMED, detect ${DETECT}s, lost ${LOST}s, wall ${WALL}s" >&2
    done
  done
}

trials jdist run_jdist measure_jdist
if [ "$TORCH" = 1 ]; then
  trials torchrun run_torch measure_torch
fi

# summary per system and fault: trials, completed, hangs, leftovers, median and max time lost
perl -F, -lane '
  next if $. == 1 || $F[1] eq "none";
  my $k = "$F[0] $F[1]"; $n{$k}++; $c{$k} += $F[6]; $h{$k} += $F[7]; $l{$k} += $F[8];
  push @{$lost{$k}}, $F[13] if $F[13] ne ""; push @{$det{$k}}, $F[12] if $F[12] ne "";
  END {
    sub med { my @s = sort { $a <=> $b } @_; return @s ? $s[$#s / 2] : "-" }
    sub mx { my @s = sort { $a <=> $b } @_; return @s ? $s[-1] : "-" }
    printf "%-16s %6s %9s %5s %9s %12s %12s %10s\n", "system fault", "trials", "completed", "hangs", "leftovers", "detect med", "lost median", "lost max";
    for my $k (sort keys %n) {
      printf "%-16s %6d %9d %5d %9d %12s %12s %10s\n", $k, $n{$k}, $c{$k}, $h{$k}, $l{$k}, med(@{$det{$k}}), med(@{$lost{$k}}), mx(@{$lost{$k}});
    }
  }' "$CSV"
