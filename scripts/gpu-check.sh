#!/bin/bash
# Real-GPU check of jdist's nccl backend (dev.jdist.nccl.NcclCheck).
#
# Run on a machine with an NVIDIA GPU, the CUDA runtime (libcudart.so.12 or .13) and NCCL (libnccl.so.2):
#     scripts/gpu-check.sh                 # one rank, one GPU: every op x every NCCL dtype on device memory,
#                                          # then the abort path (a rank that never joins: ncclCommAbort and
#                                          # DeadlineExceededException after JDIST_GPU_CHECK_ABORT_TIMEOUT, 5s)
#     JDIST_GPU_CHECK_RANKS=2 scripts/gpu-check.sh   # N ranks, one GPU each (needs N GPUs); then a second run
#                                          # where rank 1 stops itself and rank 0 must fail within JDIST_TIMEOUT
# Java: a JDK >= 25 when there is one; otherwise the runtime and classes of target/gpu-bundle/, which
# scripts/gpu-bundle.sh builds on a machine with a JDK (carry that folder to the GPU machine). No network,
# no Maven. With a JDK it uses jdist-core/target/classes when present, otherwise compiles the few packages
# NcclCheck needs with javac. Output goes to stdout and to $OUT/ (default target/gpu-check/). Exit status 0
# when every check passed.
#
# JDIST_GPU_CHECK_COMPILE=1 compiles even when target/classes exists (needs a JDK).
# Library overrides: JDIST_NCCL_LIBRARY, JDIST_CUDART_LIBRARY (paths). When unset and the dynamic
# linker does not know the library, the script looks under /usr, /opt and /usr/local (pip wheels too).
set -uo pipefail
ROOT=$(PATH=/usr/bin:/bin; cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
# shellcheck source=../bin/lib/common.sh
source "$ROOT/bin/lib/common.sh"
jdist_own_path
BUNDLE="$ROOT/target/gpu-bundle"
# JDIST_GPU_CHECK_BUNDLE=1: use the bundle even where a JDK is installed (how the tests check it).
if [ -z "${JDIST_GPU_CHECK_BUNDLE:-}" ] && jdist_find_jdk 2>/dev/null; then
  JAVA_BIN="$JDIST_JDK/bin/java"
elif [ -x "$BUNDLE/runtime/bin/java" ]; then
  JAVA_BIN="$BUNDLE/runtime/bin/java"          # no JDK here (or JDIST_GPU_CHECK_BUNDLE=1): the jlinked runtime
else
  echo "gpu-check.sh: no JDK >= 25 and no $BUNDLE/runtime; build the bundle with scripts/gpu-bundle.sh on a machine" \
       "with a JDK and carry target/gpu-bundle here, or install a JDK 25" >&2
  exit 2
fi
OUT=${OUT:-$ROOT/target/gpu-check}
mkdir -p "$OUT"
LOG="$OUT/gpu-check.txt"
: > "$LOG"
say() { echo "$*" | tee -a "$LOG"; }

say "== machine"
say "date: $(date -u +%FT%TZ)  host: $(hostname)  java: $JAVA_BIN ($("$JAVA_BIN" -version 2>&1 | grep -v incubator | head -1))"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi -L 2>&1 | tee -a "$LOG"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | tee -a "$LOG"
else
  say "nvidia-smi: not found"
fi

find_lib() { # $1 = glob of the file name
  local hit
  hit=$(ldconfig -p 2>/dev/null | awk -v pat="$1" '$1 ~ pat {print $NF; exit}')
  [ -n "$hit" ] && { echo "$hit"; return; }
  find /usr /opt /usr/local -name "$1*" \( -type f -o -type l \) 2>/dev/null | sort | head -1
}
if [ -z "${JDIST_NCCL_LIBRARY:-}" ]; then
  lib=$(find_lib 'libnccl.so.2'); [ -n "$lib" ] && export JDIST_NCCL_LIBRARY=$lib
fi
if [ -z "${JDIST_CUDART_LIBRARY:-}" ]; then
  lib=$(find_lib 'libcudart.so.13'); [ -z "$lib" ] && lib=$(find_lib 'libcudart.so.12')
  [ -n "$lib" ] && export JDIST_CUDART_LIBRARY=$lib
fi
say "JDIST_NCCL_LIBRARY=${JDIST_NCCL_LIBRARY:-<default search>}"
say "JDIST_CUDART_LIBRARY=${JDIST_CUDART_LIBRARY:-<default search>}"

say "== classes"
CLASSES="$ROOT/jdist-core/target/classes"
if [ -z "${JAVA_HOME:-}" ]; then
  CLASSES="$BUNDLE/classes"
  say "using $CLASSES ($(tr '\n' ' ' < "$BUNDLE/VERSION" 2>/dev/null))"
elif [ -n "${JDIST_GPU_CHECK_COMPILE:-}" ] || [ ! -f "$CLASSES/dev/jdist/nccl/NcclCheck.class" ]; then
  CLASSES="$OUT/classes"
  rm -rf "$CLASSES"
  SRC="$ROOT/jdist-core/src/main/java/dev/jdist"
  # shellcheck disable=SC2046
  # The Vector API kernels compile against the module (the root pom's jdist.vector.flags); running needs only native access.
  "$JDIST_JDK/bin/javac" --release 25 $(jdist_pom_property "$ROOT" jdist.vector.flags) -nowarn -d "$CLASSES" \
      $(find "$SRC" -maxdepth 1 -name '*.java') "$SRC"/spi/*.java "$SRC"/reduce/*.java "$SRC"/nccl/*.java \
      > "$OUT/javac.txt" 2>&1
  javac_rc=$?
  grep -v -i 'incubator' "$OUT/javac.txt" | tee -a "$LOG"
  [ "$javac_rc" -eq 0 ] && [ -f "$CLASSES/dev/jdist/nccl/NcclCheck.class" ] || { say "FAIL: could not compile NcclCheck (javac $javac_rc)"; exit 2; }
  say "compiled with javac into $CLASSES"
else
  say "using $CLASSES"
fi
# shellcheck disable=SC2207
JAVA=("$JAVA_BIN" $(jdist_pom_property "$ROOT" jdist.jvm.flags) -cp "$CLASSES")

RANKS=${JDIST_GPU_CHECK_RANKS:-1}
if [ "$RANKS" -le 1 ]; then
  say "== NcclCheck, 1 rank"
  "${JAVA[@]}" dev.jdist.nccl.NcclCheck 2>&1 | grep -v 'incubator' | tee -a "$LOG"
  rc=${PIPESTATUS[0]}
else
  say "== NcclCheck, $RANKS ranks (one GPU each)"
  PORT=${NCCL_PORT:-$(( 20000 + RANDOM % 20000 ))}
  pids=()
  for ((r = 0; r < RANKS; r++)); do
    NCCL_HOST_IP=127.0.0.1 NCCL_PORT=$PORT MLX_RANK=$r MLX_WORLD_SIZE=$RANKS CUDA_VISIBLE_DEVICES=$r \
      MLX_NCCL_TIMEOUT=60000 "${JAVA[@]}" dev.jdist.nccl.NcclCheck > "$OUT/rank-$r.txt" 2>&1 &
    pids+=($!)
  done
  rc=0
  for ((r = 0; r < RANKS; r++)); do
    wait "${pids[$r]}" || rc=1
    say "-- rank $r"; grep -v 'incubator' "$OUT/rank-$r.txt" | tee -a "$LOG"
  done

  say "== NcclCheck peer-stop, $RANKS ranks: rank 1 stops itself, rank 0 must fail within JDIST_TIMEOUT"
  PORT=$(( PORT + 1 ))
  pids=()
  for ((r = 0; r < RANKS; r++)); do
    NCCL_HOST_IP=127.0.0.1 NCCL_PORT=$PORT MLX_RANK=$r MLX_WORLD_SIZE=$RANKS CUDA_VISIBLE_DEVICES=$r \
      MLX_NCCL_TIMEOUT=60000 JDIST_TIMEOUT=${JDIST_GPU_CHECK_STOP_TIMEOUT:-20s} \
      "${JAVA[@]}" dev.jdist.nccl.NcclCheck peer-stop > "$OUT/stop-rank-$r.txt" 2>&1 &
    pids+=($!)
  done
  # Rank 0 decides; then every rank still running (rank 1 is stopped) is killed by its pid.
  timeout 600 tail --pid="${pids[0]}" -f /dev/null
  wait "${pids[0]}" || rc=1
  for ((r = 1; r < RANKS; r++)); do kill -KILL "${pids[$r]}" 2>/dev/null; wait "${pids[$r]}" 2>/dev/null; done
  for ((r = 0; r < RANKS; r++)); do
    say "-- rank $r"; grep -v 'incubator' "$OUT/stop-rank-$r.txt" | tee -a "$LOG"
  done
fi
say "== exit status $rc"
exit "$rc"
