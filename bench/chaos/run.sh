#!/usr/bin/env bash
# The chaos suite (docs/reliability.md, "The chaos suite"): faults injected into real jobs of 4 ranks, per backend,
# each trial timed and bounded, then a summary (bench/chaos/summarise.py).
#
#   kill       SIGKILL of a random rank just before a random all_sum (it sends it to itself: a death at a chosen operation)
#   stop       SIGSTOP of a random rank at a random moment of the loop; afterwards SIGCONT: it must end by itself
#   partition  (root) iptables DROP of everything in and out of one network namespace host (NetnsClusterMain), for the
#              ring over TCP and for MPI jobs across the hosts: Open MPI started as users do, by `jdist launch --backend
#              mpi` over ssh, MPICH by mpirun.mpich over ssh; every rank and the launcher must end while the cut lasts
#   load       the kill trials again with one bounded busy loop per core running
#   degraded   (root) a healthy job of 100 all_sums of 1 MiB over the namespace hosts: clean, 5 % packet loss into one
#              host (iptables statistic), one host's link limited by tc tbf, 20 ms of extra delay each way on the
#              connections one host opens (bench/lib/delay-relay behind an iptables REDIRECT: no sch_netem here);
#              it must complete with correct sums
#
# Backends: tcp (the ring over TCP), shm (the ring over shared memory), mpi (Open MPI's mpirun; a stopped rank: the watch, then MPI_Abort),
# mpich (the same under MPICH's mpirun.mpich, Hydra, with libmpich),
# nccl (the NCCL backend against the stand-in libnccl/libcudart of jdist-core/src/test/c, built here with gcc, its ranks
# separate processes meeting in a directory: a dead peer is NCCL's remote error, a stopped one is found by JDIST_TIMEOUT),
# jaccl (JACCL over its stand-in, the in-memory fabric of jdist-core's tests: its ranks are threads of one JVM, each with
# its own watch; kill and stop only, modelled on the thread by dev.jdist.jaccl.JacclChaos, compiled here with Maven).
# Ring and MPI ranks carry a job token (the liveness watch on, JDIST_HEARTBEAT of --heartbeat, JDIST_TIMEOUT unset: 30 min);
# ring ranks are plain JVMs met through the rendezvous.
# Every trial has a hard limit (--trial-timeout); every process the suite starts is ended by its pid; the rank outputs
# and results.tsv stay in the results folder. `--help` lists the options.
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
# shellcheck source=../../bin/lib/common.sh
source "$ROOT/bin/lib/common.sh"
# shellcheck source=../lib/netns-cluster.sh
source "$ROOT/bench/lib/netns-cluster.sh"

usage() {
  cat <<'EOF'
usage: bench/chaos/run.sh [options]
  --trials N            trials per fault and backend (default 100)
  --backends LIST       tcp,shm,mpi,mpich,nccl,jaccl (default all; mpi is skipped without Open MPI, mpich without
                        MPICH, nccl without gcc;
                        jaccl runs kill and stop only)
  --faults LIST         kill,stop,partition,load,degraded (default all; partition and degraded need root;
                        partition runs for tcp, mpi and mpich)
  --heartbeat BOUND     JDIST_HEARTBEAT of the ring jobs (default 10s, jdist's default)
  --nccl-timeout BOUND  JDIST_TIMEOUT of the NCCL jobs (default 10s; the stand-in's ranks have no watch)
  --trial-timeout S     hard limit of one trial, in seconds: past it the trial counts as a hang (default 120)
  --budget S            start no new trial after S seconds (default: none); the summary says how many ran
  --out DIR             results folder (default bench-results/chaos-<UTC date-time>)
EOF
}

ARGS="$*"
TRIALS=100 BACKENDS=tcp,shm,mpi,mpich,nccl,jaccl FAULTS=kill,stop,partition,load,degraded HB=10s NCCL_TIMEOUT=10s TRIAL_T=120 BUDGET=0 OUT=""
while [ $# -gt 0 ]; do
  case $1 in
    --trials) TRIALS=$2; shift ;;
    --backends) BACKENDS=$2; shift ;;
    --faults) FAULTS=$2; shift ;;
    --heartbeat) HB=$2; shift ;;
    --nccl-timeout) NCCL_TIMEOUT=$2; shift ;;
    --trial-timeout) TRIAL_T=$2; shift ;;
    --budget) BUDGET=$2; shift ;;
    --out) OUT=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench/chaos/run.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
die() { echo "bench/chaos/run.sh: $*" >&2; exit 2; }
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
[[ $TRIALS =~ ^[1-9][0-9]*$ ]] || die "--trials takes a positive number, got '$TRIALS'"
[[ $TRIAL_T =~ ^[1-9][0-9]*$ ]] || die "--trial-timeout takes a number of seconds, got '$TRIAL_T'"
[[ $BUDGET =~ ^[0-9]+$ ]] || die "--budget takes a number of seconds, got '$BUDGET'"
IFS=, read -r -a BACKEND <<<"$BACKENDS"
IFS=, read -r -a FAULT <<<"$FAULTS"
for b in "${BACKEND[@]}"; do [[ $b =~ ^(tcp|shm|mpi|mpich|nccl|jaccl)$ ]] || die "--backends: unknown '$b' (tcp, shm, mpi, mpich, nccl, jaccl)"; done
for f in "${FAULT[@]}"; do [[ $f =~ ^(kill|stop|partition|load|degraded)$ ]] || die "--faults: unknown '$f' (kill, stop, partition, load, degraded)"; done
has() { local x=$1; shift; [[ " $* " == *" $x "* ]]; }

jdist_find_jdk
JAVA=$JDIST_JDK/bin/java
JAR=$ROOT/jdist-cli/target/jdist.jar
[ -f "$JAR" ] || "$ROOT/bin/jdist" --version >/dev/null || die "building jdist failed (bin/jdist --version)"
OUT=${OUT:-$ROOT/bench-results/chaos-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d /tmp/jdist-chaos.XXXXXX)
CLASSES=$WORK/classes
"$JDIST_JDK/bin/javac" -d "$CLASSES" -cp "$JAR" "$ROOT/bench/chaos/ChaosRank.java" || die "compiling ChaosRank.java failed"
JFLAGS=(--add-modules=jdk.incubator.vector --enable-native-access=ALL-UNNAMED -XX:+UseSerialGC -XX:TieredStopAtLevel=1
  -Xshare:auto -Xmx256m -cp "$JAR:$CLASSES" ChaosRank)
N=4
RESULTS=$OUT/results.tsv
printf 'backend\tfault\ttrial\tvictim\tat\tdetect_ms\toutcome\tsurvivors\tleftover\tvictim_after\n' >"$RESULTS"
DEGRADED=$OUT/degraded.tsv
printf 'link\trun\tcompleted\tloop_ms\toutcome\n' >"$DEGRADED"
exec > >(tee -a "$OUT/run.log") 2>&1

echo "# jdist chaos suite: $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n) ($(nproc) cores, $(uname -r)), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# bench/chaos/run.sh $ARGS"
echo "# trials=$TRIALS backends=$BACKENDS faults=$FAULTS JDIST_HEARTBEAT=$HB (ring, mpi, mpich, jaccl) JDIST_TIMEOUT=$NCCL_TIMEOUT (nccl) trial limit ${TRIAL_T}s budget=${BUDGET:-0}s"
echo "# $($JAVA -version 2>&1 | head -1); results in $OUT"

# ---------------------------------------------------------------- processes (ended by pid, always)
RANK_PIDS=() EXTRA_PIDS=() LOAD_PIDS=() CLUSTER_PID="" FAULT_NS=""
now_ms() { date +%s%3N; }
alive() {   # running or stopped, not a zombie
  local st
  [ -r "/proc/$1/stat" ] || return 1
  st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}
end_pids() { local p; for p in "$@"; do [ -n "$p" ] && kill -KILL "$p" 2>/dev/null; done; return 0; }
# tree_pids PID...: each pid and its descendants (a launcher's mpirun and ssh), children first read, then ended by end_pids
tree_pids() {
  local p c
  for p in "$@"; do
    [ -n "$p" ] || continue
    for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do tree_pids "$c"; done
    echo "$p"
  done
}
stop_load() {   # each busy loop is `timeout`'s child: end the child first (SIGKILL to timeout would orphan it), then timeout
  local p
  for p in "${LOAD_PIDS[@]}"; do
    # shellcheck disable=SC2046  # the pids of its children, one per word
    end_pids $(cat /proc/"$p"/task/*/children 2>/dev/null) "$p"
  done
  LOAD_PIDS=()
}
cleanup() {
  set +e
  trap - EXIT INT TERM
  # shellcheck disable=SC2046  # one pid per word
  end_pids "${RANK_PIDS[@]}" $(tree_pids "${EXTRA_PIDS[@]}")
  stop_load
  [ -n "$FAULT_NS" ] && { ip netns exec "$FAULT_NS" iptables -F; ip netns exec "$FAULT_NS" iptables -t nat -F; ip netns exec "$FAULT_NS" tc qdisc del dev eth0 root; } 2>/dev/null
  if [ -n "$CLUSTER_PID" ]; then
    kill -TERM "$CLUSTER_PID" 2>/dev/null   # NetnsClusterMain removes its namespaces, bridge and processes
    for _ in $(seq 300); do kill -0 "$CLUSTER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$CLUSTER_PID" 2>/dev/null
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# From here on every step checks its own outcome (a failed probe is a finding, not a reason to stop the sitting).
set +e

START=$(date +%s)
over_budget() { [ "$BUDGET" -gt 0 ] && [ $(( $(date +%s) - START )) -ge "$BUDGET" ]; }

# ---------------------------------------------------------------- starting a job of N ranks
# start_job BACKEND DIR ARGS...: ring ranks as plain JVMs (in the namespaces when CLUSTER_NAMESPACES is set), or mpirun
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
MPIRUN=$(command -v mpirun.openmpi || true)
MPILIB=$(ldconfig -p 2>/dev/null | awk '/libmpi\.so\.40 /{print $NF; exit}')
MPICHRUN=$(command -v mpirun.mpich || true)
MPICHLIB=$(ldconfig -p 2>/dev/null | awk '/libmpich\.so\.12 /{print $NF; exit}')
is_mpi() { [ "$1" = mpi ] || [ "$1" = mpich ]; }
# mpi_missing BACKEND: true (and says what is missing) when that MPI's launcher or library is not installed
mpi_missing() {
  case $1 in
    mpi) [ -n "$MPIRUN" ] && [ -n "$MPILIB" ] && return 1
      echo "# mpi skipped: mpirun.openmpi or libmpi.so.40 missing (Debian: openmpi-bin libopenmpi-dev)" ;;
    mpich) [ -n "$MPICHRUN" ] && [ -n "$MPICHLIB" ] && return 1
      echo "# mpich skipped: mpirun.mpich or libmpich.so.12 missing (Debian: mpich libmpich-dev)" ;;
    *) return 1 ;;
  esac
}
# The NCCL stand-in: libjdist_stub_cudart.so and libjdist_stub_nccl.so, as NcclStubLibraries builds them for the tests
STUBS=$WORK/nccl-stub
build_nccl_stubs() {
  local src=$ROOT/jdist-core/src/test/c
  command -v gcc >/dev/null && [ -f "$src/nccl_stub.c" ] || return 1
  mkdir -p "$STUBS"
  gcc -O1 -Wall -shared -fPIC -Wl,-soname,libjdist_stub_cudart.so -o "$STUBS/libjdist_stub_cudart.so" "$src/cudart_stub.c" -lpthread \
    && gcc -O1 -Wall -shared -fPIC -o "$STUBS/libjdist_stub_nccl.so" "$src/nccl_stub.c" -L"$STUBS" -l:libjdist_stub_cudart.so \
      -Wl,-rpath,"$STUBS" -lpthread
}
start_job() {
  local backend=$1 dir=$2; shift 2
  RANK_PIDS=() EXTRA_PIDS=()
  local token="chaos-$RANDOM$RANDOM" r
  if [ "$backend" = nccl ]; then
    local port; port=$(free_port); mkdir -p "$dir/world"
    for ((r = 0; r < N; r++)); do
      env -i PATH=/usr/bin:/bin HOME=/tmp NCCL_HOST_IP=127.0.0.1 NCCL_PORT=$port MLX_RANK=$r MLX_WORLD_SIZE=$N \
        MLX_NCCL_TIMEOUT=30000 JDIST_TIMEOUT="$NCCL_TIMEOUT" JDIST_NCCL_LIBRARY="$STUBS/libjdist_stub_nccl.so" \
        JDIST_CUDART_LIBRARY="$STUBS/libjdist_stub_cudart.so" JDIST_STUB_NCCL_WORLD_DIR="$dir/world" \
        "$JAVA" "${JFLAGS[@]}" nccl "$@" >"$dir/rank$r.log" 2>&1 </dev/null &
      RANK_PIDS[r]=$!
    done
    return
  fi
  if is_mpi "$backend" && [ -n "${IN_CLUSTER:-}" ]; then
    start_mpi_across_hosts "$backend" "$dir" "$token" "$@"
    return
  fi
  if is_mpi "$backend"; then
    # a job token, passed by name as `jdist launch --backend mpi` does, so the liveness watch runs beside JDIST_TIMEOUT
    # JDIST_TIMEOUT unset (30 min) as for the ring: what ends a wait for a stopped rank is the watch.
    # Open MPI passes variables named by -x; MPICH's Hydra passes the whole environment
    local lib launcher
    if [ "$backend" = mpi ]; then
      lib=$MPILIB launcher=("$MPIRUN" --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none -n "$N"
        -x JDIST_JOB_TOKEN -x JDIST_HEARTBEAT -x MLX_MPI_LIBNAME)
    else
      lib=$MPICHLIB launcher=("$MPICHRUN" -n "$N")
    fi
    env -u MLX_RANK -u MLX_HOSTFILE -u JDIST_RANK -u JDIST_WORLD_SIZE -u JDIST_TIMEOUT MLX_MPI_LIBNAME="$lib" \
      JDIST_JOB_TOKEN=$token JDIST_HEARTBEAT=$HB \
      "${launcher[@]}" "$JAVA" "${JFLAGS[@]}" mpi "$@" >"$dir/mpirun.log" 2>&1 </dev/null &
    EXTRA_PIDS=($!)
    return
  fi
  local master=127.0.0.1 port
  if [ -n "${IN_CLUSTER:-}" ]; then master=${CLUSTER_ADDRESSES[0]}; port=$((20000 + RANDOM % 20000)); else port=$(free_port); fi
  for ((r = 0; r < N; r++)); do
    local cmd=(env -i PATH=/usr/bin:/bin HOME=/tmp JDIST_RANK=$r JDIST_WORLD_SIZE=$N JDIST_MASTER_ADDR=$master
      JDIST_MASTER_PORT=$port JDIST_JOB_TOKEN=$token JDIST_HEARTBEAT=$HB JDIST_TRANSPORT=$backend "$JAVA" "${JFLAGS[@]}" ring "$@")
    if [ -n "${IN_CLUSTER:-}" ]; then
      ip netns exec "${CLUSTER_NAMESPACES[$r]}" "${cmd[@]}" >"$dir/rank$r.log" 2>&1 </dev/null &
    else
      "${cmd[@]}" >"$dir/rank$r.log" 2>&1 </dev/null &
    fi
    RANK_PIDS[r]=$!
  done
}
# start_mpi_across_hosts BACKEND DIR TOKEN ARGS...: one rank on each namespace host, started over ssh. Open MPI as a user
# starts it, `jdist launch --backend mpi` (the token is the launcher's; it bounds an mpirun that waits for a cut-off
# daemon); MPICH by mpirun.mpich (jdist launch speaks Open MPI's mpirun), its proxies calling back on the bridge.
MPI_BIN=""
start_mpi_across_hosts() {
  local backend=$1 dir=$2 token=$3 i; shift 3
  if [ "$backend" = mpi ]; then
    if [ -z "$MPI_BIN" ]; then   # `mpirun` for the launcher, Open MPI's whatever the alternatives say (orted beside it)
      MPI_BIN=$WORK/mpi-bin; mkdir -p "$MPI_BIN"
      ln -sf "$MPIRUN" "$MPI_BIN/mpirun"; ln -sf "$(dirname "$MPIRUN")/orted" "$MPI_BIN/orted"
    fi
    # ssh from mpirun only (the hosts have no ssh config); TCP on the cluster's network; orte_startup_timeout: a
    # daemon that fails to start fails the job (one that starts and never reports back is not covered: mpi-starts.sh)
    local net="--allow-run-as-root --bind-to none --mca plm_rsh_agent ssh --mca plm_rsh_no_tree_spawn 1"
    net+=" --mca orte_startup_timeout 60 --mca btl tcp,self --mca btl_tcp_if_include $CLUSTER_SUBNET"
    net+=" --mca oob_tcp_if_include $CLUSTER_SUBNET"
    env -u MLX_RANK -u MLX_HOSTFILE -u JDIST_RANK -u JDIST_WORLD_SIZE -u JDIST_TIMEOUT PATH="$MPI_BIN:$CLUSTER_SSH_BIN:$PATH" \
      "$ROOT/bin/jdist" launch --backend mpi --hosts "$(IFS=,; echo "${CLUSTER_ALIASES[*]:0:N}")" --env "JDIST_HEARTBEAT=$HB" \
      --mpi-arg "$net" -- "$JAVA" "${JFLAGS[@]}" mpi "$@" >"$dir/mpirun.log" 2>&1 </dev/null &
  else
    for ((i = 0; i < N; i++)); do echo "${CLUSTER_ADDRESSES[$i]}:1"; done >"$dir/hosts"
    env -u MLX_RANK -u MLX_HOSTFILE -u JDIST_RANK -u JDIST_WORLD_SIZE -u JDIST_TIMEOUT PATH="$CLUSTER_SSH_BIN:$PATH" \
      MLX_MPI_LIBNAME="$MPICHLIB" JDIST_JOB_TOKEN=$token JDIST_HEARTBEAT=$HB \
      "$MPICHRUN" -f "$dir/hosts" -launcher ssh -iface "$CLUSTER_BRIDGE" -n "$N" "$JAVA" "${JFLAGS[@]}" mpi "$@" \
      >"$dir/mpirun.log" 2>&1 </dev/null &
  fi
  EXTRA_PIDS=($!)
}
job_text() { cat "$1"/*.log 2>/dev/null; }
# wait until every rank printed READY (MPI: learn the rank pids from those lines); false past the deadline
await_ready() {
  local backend=$1 dir=$2 deadline=$3
  while [ "$(date +%s)" -lt "$deadline" ]; do
    if [ "$(job_text "$dir" | grep -c '^READY')" -ge "$N" ]; then
      if is_mpi "$backend"; then
        local r p
        while read -r r p; do RANK_PIDS[r]=$p; done < <(job_text "$dir" | sed -n 's/^READY rank \([0-9]*\) pid \([0-9]*\).*/\1 \2/p')
      fi
      return 0
    fi
    job_text "$dir" | grep -q '^KILLING' && is_mpi "$backend" && return 1
    sleep 0.1
  done
  return 1
}

# ---------------------------------------------------------------- one fault trial
# trial BACKEND FAULT NUMBER: appends one line to results.tsv
trial() {
  local backend=$1 fault=$2 t=$3 dir victim at="" fault_ms="" deadline outcome=ok
  dir=$WORK/$backend-$fault-$t
  mkdir -p "$dir"
  victim=$((RANDOM % N))
  deadline=$(( $(date +%s) + TRIAL_T ))
  if [ "$fault" = kill ] || [ "$fault" = load ]; then
    at=$((1 + RANDOM % 3000))
    start_job "$backend" "$dir" 100000000 "$TRIAL_T" "$victim" "$at"
    await_ready "$backend" "$dir" "$deadline" || true
    while [ "$(date +%s)" -lt "$deadline" ] && ! grep -qs '^KILLING' "$dir"/*.log; do sleep 0.05; done
    fault_ms=$(job_text "$dir" | sed -n 's/^KILLING .* ms=\([0-9]*\).*/\1/p' | head -1)
  else
    start_job "$backend" "$dir" 100000000 "$TRIAL_T"
    if await_ready "$backend" "$dir" "$deadline"; then
      at="ready+0.$((2 + RANDOM % 8))s"
      sleep "$(echo "${at#ready+}" | tr -d s)"
      if [ "$fault" = stop ]; then
        kill -STOP "${RANK_PIDS[$victim]}" 2>/dev/null && fault_ms=$(now_ms)
      else
        FAULT_NS=${CLUSTER_NAMESPACES[$victim]}
        # MPI places the ranks: cut the host the victim rank runs on
        is_mpi "$backend" && FAULT_NS=$(ip netns identify "${RANK_PIDS[$victim]}")
        ip netns exec "$FAULT_NS" iptables -A INPUT -j DROP && ip netns exec "$FAULT_NS" iptables -A OUTPUT -j DROP \
          && fault_ms=$(now_ms)
      fi
    fi
  fi
  local survivors=() r
  for ((r = 0; r < N; r++)); do
    if [ "$fault" = partition ] || [ "$r" != "$victim" ]; then survivors+=("$r"); fi
  done
  local detect="" end_ms=""
  if [ -z "$fault_ms" ]; then
    outcome=no-fault   # the job never reached the fault (failed to start, or ended first): see the rank outputs
  else
    while :; do
      local any=0
      for r in "${survivors[@]}"; do alive "${RANK_PIDS[$r]:-0}" && any=1; done
      if is_mpi "$backend" && alive "${EXTRA_PIDS[0]}"; then any=1; fi
      [ $any = 0 ] && { end_ms=$(now_ms); break; }
      [ "$(date +%s)" -ge "$deadline" ] && { outcome=hang; break; }
      sleep 0.05
    done
    [ -n "$end_ms" ] && detect=$((end_ms - fault_ms))
  fi
  # what each survivor said: Class:peer, or exit/abort facts for MPI
  local said=() text
  for r in "${survivors[@]}"; do
    if is_mpi "$backend"; then
      # the typed error a rank printed before MPI_Abort (the watch's names the peer: "…Exception: rank R: rank V …");
      # the ranks mpirun ended first print nothing
      text=$(grep -ao "FAILED [A-Za-z]*\|dev\.jdist\.[A-Za-z]*Exception: \(mpi \)\?rank $r[: ]\( rank [0-9]* \)\?" "$dir/mpirun.log" \
        | head -1 | sed 's/dev\.jdist\.//; s/: \(mpi \)\?rank [0-9]*[: ] *rank \([0-9]*\) $/:peer=\2/; s/: \(mpi \)\?rank [0-9]*[: ].*//')
      said+=("$r:${text:-ended-by-mpirun}")
    else
      text=$(sed -n 's/^FAILED \([A-Za-z]*\).* peer=\([-0-9]*\).*/\1:peer=\2/p; s/^FAILED \([A-Za-z]*\) .*/\1/p' "$dir/rank$r.log" | head -1)
      [ -z "$text" ] && grep -q '^FINISHED' "$dir/rank$r.log" && text=FINISHED
      said+=("$r:${text:-none}")
      # the right typed error. The ring: PeerLost/PeerUnresponsive naming the victim (a partitioned host names a rank
      # across the cut); another rank named is told apart. NCCL: PeerLost for a dead peer, DeadlineExceeded for a stopped one.
      if [ "$outcome" = ok ] || [ "$outcome" = other-rank-named ]; then
        case $backend:$fault:$text in
          nccl:stop:DeadlineExceededException|nccl:kill:PeerLostException*|nccl:load:PeerLostException*) ;;
          nccl:*) outcome=wrong-error ;;
          *:PeerLostException:peer=$victim|*:PeerUnresponsiveException:peer=$victim) ;;
          *:partition:PeerUnresponsiveException:peer=*) [ "$r" = "$victim" ] || outcome=other-rank-named ;;
          *:stop:PeerUnresponsiveException:peer=*|*:kill:PeerLostException:peer=*|*:kill:PeerUnresponsiveException:peer=*|\
          *:load:PeerLostException:peer=*|*:load:PeerUnresponsiveException:peer=*) outcome=other-rank-named ;;
          *) outcome=wrong-error ;;
        esac
      fi
    fi
  done
  if is_mpi "$backend" && [ "$outcome" = ok ]; then
    # a stopped rank: the watch's PeerUnresponsiveException naming it, then MPI_Abort
    if [ "$fault" = stop ] || [ "$fault" = partition ]; then
      # the watch's error naming the stopped or cut-off rank (ranks that printed nothing: ended by mpirun; the cut-off
      # rank's own output cannot reach the launcher)
      local named=0 e
      for e in "${said[@]}"; do
        case $e in
          *:PeerUnresponsiveException:peer=$victim) named=1 ;;
          *:peer=*) outcome=other-rank-named ;;
        esac
      done
      [ "$named" = 1 ] || [ "$outcome" != ok ] || outcome=wrong-error
    fi
  fi
  # the victim afterwards: a stopped rank gets SIGCONT and must end by itself (it was declared lost)
  local victim_after=- vp=${RANK_PIDS[$victim]:-}
  if [ "$fault" = stop ] && [ -n "$vp" ] && alive "$vp"; then
    kill -CONT "$vp" 2>/dev/null
    local until=$(( $(date +%s) + 20 ))
    while alive "$vp" && [ "$(date +%s)" -lt "$until" ]; do sleep 0.1; done
    if alive "$vp"; then victim_after=still-running
    elif is_mpi "$backend"; then victim_after=ended
    else victim_after=$(sed -n 's/^FAILED \([A-Za-z]*\).*/\1/p' "$dir/rank$victim.log" | head -1); victim_after=${victim_after:-ended}
    fi
  fi
  # leftovers: any process of the job still there a second after the survivors ended
  sleep 1
  local left=0 p
  for p in "${RANK_PIDS[@]}" "${EXTRA_PIDS[@]}"; do alive "$p" && left=$((left + 1)); done
  # shellcheck disable=SC2046  # one pid per word
  end_pids "${RANK_PIDS[@]}" $(tree_pids "${EXTRA_PIDS[@]}")
  if [ -n "$FAULT_NS" ]; then
    # MPI: what is left on the cut-off host while the cut lasts (the launcher's daemon or proxy, which cannot be told
    # to go), and whether it goes by itself once the host is reachable again
    if is_mpi "$backend"; then victim_after=$(cut_host_after "$FAULT_NS"); else ip netns exec "$FAULT_NS" iptables -F; fi
    FAULT_NS=""
  fi
  local saidtext="${said[*]}"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$backend" "$fault" "$t" "$victim" "${at:--}" "${detect:--}" "$outcome" \
    "${saidtext// /,}" "$left" "$victim_after" >>"$RESULTS"
  log "$backend $fault #$t: victim $victim ${at:+at $at }-> ${detect:-?} ms, $outcome, [${said[*]}], leftover $left${victim_after:+, victim after: $victim_after}"
  [ "$outcome" = ok ] || { mkdir -p "$OUT/failed"; cp -r "$dir" "$OUT/failed/"; }
  rm -rf "$dir"
}

# job processes in a namespace host: every process there but sshd (its listener and the sessions mpirun opened)
ns_job_pids() { local p; for p in $(ip netns pids "$1" 2>/dev/null); do [ "$(cat "/proc/$p/comm" 2>/dev/null)" = sshd ] || echo "$p"; done; }
# cut_host_after NS: prints "cut:NAMES,healed:Ns" (or "cut:none", "healed:still" after 60 s), lifts the cut, ends what
# is left by pid
cut_host_after() {
  local ns=$1 pids names="" p t=0
  pids=$(ns_job_pids "$ns")
  for p in $pids; do names+="${names:++}$(cat "/proc/$p/comm" 2>/dev/null)"; done
  ip netns exec "$ns" iptables -F
  if [ -z "$pids" ]; then echo "cut:none"; return; fi
  while [ -n "$(ns_job_pids "$ns")" ] && [ $t -lt 60 ]; do sleep 1; t=$((t + 1)); done
  if [ -n "$(ns_job_pids "$ns")" ]; then
    # shellcheck disable=SC2046  # one pid per word
    end_pids $(ns_job_pids "$ns"); echo "cut:$names,healed:still"
  else
    echo "cut:$names,healed:${t}s"
  fi
}

run_trials() {   # BACKEND FAULT
  local t
  for ((t = 1; t <= TRIALS; t++)); do
    if over_budget; then log "budget of ${BUDGET}s spent: $1 $2 stops after $((t - 1)) trials"; return; fi
    trial "$1" "$2" "$t"
  done
}

# ---------------------------------------------------------------- the local faults
NCCL_OK=0
if has nccl "${BACKEND[@]}"; then
  if build_nccl_stubs >"$WORK/gcc.log" 2>&1; then NCCL_OK=1; else echo "# nccl skipped: building the stand-in libraries failed (gcc, libc6-dev): $(tail -3 "$WORK/gcc.log")"; fi
fi
# JACCL: its ranks are threads of one JVM over the in-memory fabric; JacclChaos runs the trials and appends to results.tsv
JACCL_OK=0
if has jaccl "${BACKEND[@]}" && { has kill "${FAULT[@]}" || has stop "${FAULT[@]}"; }; then
  if jdist_find_maven && (cd "$ROOT" && jdist_mvn -q -B -pl jdist-core -am test-compile) >"$WORK/mvn.log" 2>&1; then JACCL_OK=1
  else echo "# jaccl skipped: compiling jdist-core's test classes failed (mvn -pl jdist-core -am test-compile): $(tail -3 "$WORK/mvn.log")"; fi
fi
run_jaccl() {
  local faults=() f left=0
  for f in kill stop; do if has "$f" "${FAULT[@]}"; then faults+=("$f"); fi; done
  if [ "$BUDGET" -gt 0 ]; then
    left=$(( BUDGET - ($(date +%s) - START) ))
    [ "$left" -gt 0 ] || { log "budget spent: jaccl skipped"; return 0; }
  fi
  log "jaccl: ${faults[*]}, $TRIALS trials each (ranks as threads of one JVM; its log: jaccl.log)"
  # bounded as a whole: every trial's own limit, teardown included, and start-up
  timeout $(( TRIALS * ${#faults[@]} * (TRIAL_T + 30) + 120 )) "$JAVA" --add-modules=jdk.incubator.vector \
    --enable-native-access=ALL-UNNAMED -XX:+UseSerialGC -Xmx512m -cp "$ROOT/jdist-core/target/test-classes:$JAR" \
    dev.jdist.jaccl.JacclChaos "$(IFS=,; echo "${faults[*]}")" "$TRIALS" "$HB" "$TRIAL_T" "$left" "$RESULTS" >>"$OUT/jaccl.log" 2>&1 \
    || log "jaccl: JacclChaos ended with status $? (see $OUT/jaccl.log)"
}
for b in "${BACKEND[@]}"; do
  if [ "$b" = jaccl ]; then [ "$JACCL_OK" = 1 ] && run_jaccl; continue; fi
  mpi_missing "$b" && continue
  [ "$b" = nccl ] && [ "$NCCL_OK" = 0 ] && continue
  has kill "${FAULT[@]}" && run_trials "$b" kill
  has stop "${FAULT[@]}" && run_trials "$b" stop
done
if has load "${FAULT[@]}"; then
  for ((c = 0; c < $(nproc); c++)); do timeout 3600 sh -c 'while :; do :; done' & LOAD_PIDS+=($!); done
  log "CPU load: ${#LOAD_PIDS[@]} busy loops (pids ${LOAD_PIDS[*]})"
  for b in "${BACKEND[@]}"; do
    mpi_missing "$b" >/dev/null && continue
    [ "$b" = nccl ] && [ "$NCCL_OK" = 0 ] && continue
    [ "$b" = jaccl ] && continue   # its ranks are threads: the kill trials under load would measure the same JVM
    run_trials "$b" load
  done
  stop_load
fi

# ---------------------------------------------------------------- the network faults, in namespaces
if has partition "${FAULT[@]}" || has degraded "${FAULT[@]}"; then
  if [ "$(id -u)" -ne 0 ] || ! command -v iptables >/dev/null || ! command -v tc >/dev/null; then
    echo "# partition and degraded skipped: they need root, iptables and tc (Debian: iptables iproute2)"
  else
    netns_cluster_start "$N" "$WORK" "$OUT/cluster.log" || die "the namespace cluster did not start"
    IN_CLUSTER=1
    log "namespace cluster: ${CLUSTER_ADDRESSES[*]}"
    if has partition "${FAULT[@]}"; then
      has tcp "${BACKEND[@]}" && run_trials tcp partition
      for b in mpi mpich; do has "$b" "${BACKEND[@]}" && ! mpi_missing "$b" && run_trials "$b" partition; done
    fi
    if has degraded "${FAULT[@]}"; then
      runs=$(( TRIALS < 3 ? TRIALS : 3 ))
      for link in clean loss5 tbf delay20; do
        for ((t = 1; t <= runs; t++)); do
          over_budget && { log "budget spent: degraded stops"; break 2; }
          FAULT_NS=${CLUSTER_NAMESPACES[1]}
          case $link in
            loss5) ip netns exec "$FAULT_NS" iptables -A INPUT -m statistic --mode random --probability 0.05 -j DROP ;;
            tbf) ip netns exec "$FAULT_NS" tc qdisc add dev eth0 root tbf rate 200mbit burst 75000 latency 50ms ;;
            delay20)   # host 1's own outgoing TCP (not ssh, not to itself) through the relay; it ends by itself too
              ip netns exec "$FAULT_NS" iptables -t nat -A OUTPUT -d "${CLUSTER_ADDRESSES[1]}" -j RETURN
              ip netns exec "$FAULT_NS" iptables -t nat -A OUTPUT -p tcp -d "$CLUSTER_SUBNET" ! --dport 22 -m mark ! --mark 7 \
                -j REDIRECT --to-ports 7777
              ip netns exec "$FAULT_NS" "$ROOT/bench/lib/delay-relay" --port 7777 --delay-ms 20 --mark 7 \
                --lifetime $((TRIAL_T + 60)) --stats "$WORK/relay-stats" >>"$OUT/relay.log" 2>&1 &
              EXTRA_PIDS+=($!)
              sleep 1 ;;
          esac
          dir=$WORK/degraded-$link-$t; mkdir -p "$dir"
          start_job tcp "$dir" 100 "$TRIAL_T" -1 -1 262144
          until=$(( $(date +%s) + TRIAL_T + 30 ))
          while :; do
            any=0; for p in "${RANK_PIDS[@]}"; do alive "$p" && any=1; done
            [ $any = 0 ] || [ "$(date +%s)" -ge "$until" ] && break
            sleep 0.1
          done
          end_pids "${RANK_PIDS[@]}" "${EXTRA_PIDS[@]}"; EXTRA_PIDS=()
          ip netns exec "$FAULT_NS" iptables -F; ip netns exec "$FAULT_NS" iptables -t nat -F
          ip netns exec "$FAULT_NS" tc qdisc del dev eth0 root 2>/dev/null || true
          FAULT_NS=""
          done_n=$(cat "$dir"/rank*.log | grep -c '^FINISHED rank [0-9]* sums=100 ' || true)
          loop=$(sed -n 's/^FINISHED .* loop_ms=\([0-9]*\).*/\1/p' "$dir"/rank*.log | sort -n | tail -1)
          outcome=ok
          [ "$done_n" = "$N" ] || outcome=$(grep -ho '^FAILED [A-Za-z]*' "$dir"/rank*.log | head -1 | tr ' ' ':'); outcome=${outcome:-incomplete}
          [ "$done_n" = "$N" ] && outcome=ok
          [ "$link" = delay20 ] && log "relay: $(cat "$WORK/relay-stats" 2>/dev/null)"
          printf '%s\t%s\t%s\t%s\t%s\n' "$link" "$t" "$done_n/$N" "${loop:--}" "$outcome" >>"$DEGRADED"
          log "degraded $link #$t: $done_n/$N ranks completed 100 all_sums of 1 MiB, slowest loop ${loop:-?} ms, $outcome"
          [ "$outcome" = ok ] || { mkdir -p "$OUT/failed"; cp -r "$dir" "$OUT/failed/"; }
          rm -rf "$dir"
        done
      done
    fi
  fi
fi

echo "# finished $(date -u '+%Y-%m-%d %H:%M UTC') after $(( $(date +%s) - START )) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$ROOT/bench/chaos/summarise.py" "$OUT"
