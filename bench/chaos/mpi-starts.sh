#!/usr/bin/env bash
# How often does an Open MPI job across the namespace hosts fail to start? (docs/reliability.md, "Open MPI jobs that
# never started"). Starts the same short job N times: 4 ranks, one per network namespace host (NetnsClusterMain),
# started by `jdist launch --backend mpi` over ssh as the chaos suite starts them, each running 50 checked all_sums
# (ChaosRank). A start that has not finished within --wait seconds counts as hung: the script records which of
# Open MPI's daemons (orted) are running, then ends the launcher, its children and that job's daemons by pid.
#
# --shared-tmp starts the daemons with TMPDIR=/tmp (through a launch agent), as every host had before NetnsCluster
# gave each host a temporary folder of its own: the hosts share this machine's /tmp and host name, so all daemons of
# a job then keep their session files in one folder. Needs root and Open MPI. `--help` lists the options.
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
# shellcheck source=../../bin/lib/common.sh
source "$ROOT/bin/lib/common.sh"
# shellcheck source=../lib/netns-cluster.sh
source "$ROOT/bench/lib/netns-cluster.sh"

usage() {
  cat <<'EOF'
usage: bench/chaos/mpi-starts.sh [options]
  --attempts N     jobs to start, one after the other (default 60)
  --wait S         seconds a start may take before it counts as hung (default 75; the job itself takes about 6)
  --shared-tmp     the daemons of every host share /tmp (TMPDIR=/tmp), as before each host had its own
  --out DIR        results folder (default bench-results/mpi-starts-<UTC date-time>)
EOF
}
die() { echo "bench/chaos/mpi-starts.sh: $*" >&2; exit 2; }
log() { echo "[$(date -u +%H:%M:%S)] $*"; }

ARGS="$*" ATTEMPTS=60 WAIT=75 SHARED=0 OUT=""
while [ $# -gt 0 ]; do
  case $1 in
    --attempts) ATTEMPTS=$2; shift ;;
    --wait) WAIT=$2; shift ;;
    --shared-tmp) SHARED=1 ;;
    --out) OUT=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench/chaos/mpi-starts.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
[[ $ATTEMPTS =~ ^[1-9][0-9]*$ ]] || die "--attempts: a positive whole number, not '$ATTEMPTS'"
[[ $WAIT =~ ^[1-9][0-9]*$ ]] || die "--wait: seconds, a positive whole number, not '$WAIT'"
[ "$(id -u)" = 0 ] || die "needs root (network namespaces); run it as root"
MPIRUN=$(command -v mpirun.openmpi || true)
[ -n "$MPIRUN" ] || die "needs Open MPI's mpirun.openmpi (Debian: apt-get install openmpi-bin libopenmpi-dev)"
ORTED=$(dirname "$(readlink -f "$MPIRUN")")/orted
[ -x "$ORTED" ] || ORTED=$(dirname "$MPIRUN")/orted

jdist_find_jdk
JAVA=$JDIST_JDK/bin/java
JAR=$ROOT/jdist-cli/target/jdist.jar
[ -f "$JAR" ] || "$ROOT/bin/jdist" --version >/dev/null || die "building jdist failed (bin/jdist --version)"
OUT=${OUT:-$ROOT/bench-results/mpi-starts-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d /tmp/jdist-mpi-starts.XXXXXX)
"$JDIST_JDK/bin/javac" -d "$WORK/classes" -cp "$JAR" "$ROOT/bench/chaos/ChaosRank.java" || die "compiling ChaosRank.java failed"
exec > >(tee -a "$OUT/run.log") 2>&1
echo "# jdist mpi-starts: $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n) ($(nproc) cores), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# bench/chaos/mpi-starts.sh $ARGS"
echo "# $("$MPIRUN" --version 2>&1 | head -1)"

netns_cluster_start 4 "$WORK" "$OUT/cluster.log" || die "the namespace cluster did not start"
log "namespace cluster: ${CLUSTER_ADDRESSES[*]}"
# what the daemons' TMPDIR is, asked of the hosts (a checkout whose fixture gives them none shares /tmp as well)
host_tmps=$(for h in "${CLUSTER_ALIASES[@]:0:4}"; do
  PATH="$CLUSTER_SSH_BIN:$PATH" timeout 30 ssh "$h" 'echo "${TMPDIR:-/tmp}"' </dev/null || echo "?"
done | sort -u | tr '\n' ' ')
if [ "$SHARED" = 1 ]; then LAYOUT="shared /tmp (--shared-tmp)"
elif [ "$(wc -w <<<"$host_tmps")" = 4 ]; then LAYOUT="a TMPDIR per host"
else LAYOUT="shared by the hosts ($host_tmps)"
fi
log "daemons' TMPDIR: $LAYOUT; the hosts' own: $host_tmps"
MPI_BIN=$WORK/mpi-bin; mkdir -p "$MPI_BIN"   # `mpirun` for the launcher: Open MPI's, whatever the alternatives say
ln -sf "$MPIRUN" "$MPI_BIN/mpirun"; ln -sf "$ORTED" "$MPI_BIN/orted"
net="--allow-run-as-root --bind-to none --mca plm_rsh_agent ssh --mca plm_rsh_no_tree_spawn 1 --mca orte_startup_timeout 60"
net+=" --mca btl tcp,self --mca btl_tcp_if_include $CLUSTER_SUBNET --mca oob_tcp_if_include $CLUSTER_SUBNET"
if [ "$SHARED" = 1 ]; then
  printf '#!/bin/sh\nTMPDIR=/tmp exec %s "$@"\n' "$ORTED" >"$WORK/orted-shared-tmp"; chmod +x "$WORK/orted-shared-tmp"
  net+=" --mca orte_launch_agent $WORK/orted-shared-tmp"
fi

# the daemons of this cluster's job: "vpid pid" per line (ssh's children, not mpirun's; the starts run one at a time
# and a hung one's daemons are ended, so every orted calling back to this cluster's bridge belongs to the current start)
BRIDGE_ADDRESS=${CLUSTER_SUBNET%.*}.1
job_daemons() {
  local p cmd
  for p in $(pgrep -x orted || true); do
    cmd=$(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null) || continue
    [[ $cmd == *"tcp://$BRIDGE_ADDRESS:"* ]] || continue
    echo "$(sed -n 's/.*ess_base_vpid \([0-9]*\).*/\1/p' <<<"$cmd") $p"
  done
}

hung=0 ran=0
for ((a = 1; a <= ATTEMPTS; a++)); do
  d=$WORK/start-$a; mkdir -p "$d"; t0=$(date +%s%N)
  env -u MLX_RANK -u MLX_HOSTFILE -u JDIST_RANK -u JDIST_WORLD_SIZE -u JDIST_TIMEOUT PATH="$MPI_BIN:$CLUSTER_SSH_BIN:$PATH" \
    "$ROOT/bin/jdist" launch --backend mpi --hosts "$(IFS=,; echo "${CLUSTER_ALIASES[*]:0:4}")" --env JDIST_HEARTBEAT=10s \
    --mpi-arg "$net" -- "$JAVA" --enable-native-access=ALL-UNNAMED -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Xmx256m -cp "$JAR:$WORK/classes" ChaosRank mpi 50 20 >"$d/job.log" 2>&1 </dev/null &
  launcher=$!; ran=$a
  for ((i = 0; i < WAIT * 10; i++)); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$launcher" 2>/dev/null; then
    hung=$((hung + 1))
    daemons=$(job_daemons)
    log "start $a: HUNG (no end in ${WAIT}s); ranks started: $(grep -c '^READY' "$d/job.log" || true) of 4;" \
      "daemons running (vpid 1-4, one per host): $(echo "$daemons" | awk 'NF{print $1}' | sort -n | tr '\n' ' ')"
    cp "$d/job.log" "$OUT/hung-$a.log"
    # end what this start left, by pid: the launcher's children, the launcher, that job's daemons and their ranks
    for p in $(pgrep -P "$launcher") "$launcher"; do kill "$p" 2>/dev/null || true; done
    sleep 3
    for p in $(echo "$daemons" | awk 'NF{print $2}'); do pkill -9 -P "$p" 2>/dev/null || true; kill -9 "$p" 2>/dev/null || true; done
    for p in $(pgrep -P "$launcher") "$launcher"; do kill -9 "$p" 2>/dev/null || true; done
    wait "$launcher" 2>/dev/null || true
  else
    rc=0; wait "$launcher" || rc=$?
    log "start $a: exit $rc in $(( ($(date +%s%N) - t0) / 1000000 )) ms, $(grep -c '^FINISHED' "$d/job.log" || true) of 4 ranks finished"
    [ "$rc" = 0 ] || cp "$d/job.log" "$OUT/failed-$a.log"
  fi
  rm -rf "$d"
  sleep 1
done
log "hung: $hung of $ran starts (daemons' TMPDIR: $LAYOUT)"
rm -rf "$WORK"
