#!/usr/bin/env bash
# The simulated cluster: N "hosts" as network namespaces, each with a real sshd, joined by a private bridge,
# every host's link shaped both ways with tc tbf. In it, one sitting: a calibration (iperf3 in every namespace
# at once), then jdist bench (started by jdist launch over ssh), Open MPI's MPI_Allreduce/MPI_Allgather (mpirun
# over the same ssh hosts) and Gloo (PyTorch's gloo backend), one rank per namespace (or --ranks-per-host), then a
# report with plots.
# docs/benchmarks-log.md, "Simulated cluster", explains what it does and why; `--help` lists the options.
# Needs root (namespaces, tc); installs its Debian packages when missing.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../bin/lib/common.sh
source "$ROOT/bin/lib/common.sh"
# shellcheck source=../lib/netns-cluster.sh
source "$ROOT/bench/lib/netns-cluster.sh"

usage() {
  cat <<'EOF'
usage: bench/cluster/run.sh [options]
  --hosts LIST         host counts to measure, e.g. 4,8,16 (default 4,8,16; --quick: 4)
  --rate RATE          link rate for the benchmarks: a tc rate for every host count (default 1gbit), per host
                       count (4:1gbit,8:1gbit,16:500mbit), or auto: for each host count the highest calibrated rate
                       that the calibration found link-bound
  --calibrate RATES    rates iperf3 calibrates, "none" = unshaped (default none,2gbit,1gbit,500mbit,200mbit; --quick: the --rate)
  --impls LIST         what to measure: jdist,mpi,gloo (default all three), and ring: jdist with JDIST_ALGO=ring (the
                       flat ring, beside jdist's own choice: the hierarchy when --ranks-per-host is above 1)
  --ranks-per-host R   ranks on every host (default 1); above 1 jdist chooses its hierarchy (hosts are told apart by
                       JDIST_HOST_ID, which each namespace's sshd sets)
  --nics K             network ports per host (default 1; at most 4): eth0..eth<K-1>, each on a bridge of its own and
                       shaped to the rate alike; the hostfile lists all K addresses of a host (jdist's ring makes one
                       connection per address), Open MPI's TCP transport gets every subnet, Gloo every interface; the
                       report's link is the K ports together. The calibration measures eth0 only
  --ops LIST           all_sum,all_gather (default both)
  --max-size SIZE      largest message of the bandwidth sweep, in bytes or with KiB/MiB (default 64MiB; --quick 16MiB)
  --quick              smoke run: 4 hosts, short sweeps, few iterations (a few minutes)
  --no-calibrate       skip the iperf3 calibration
  --calibrate-only     only the calibration
  --out DIR            results folder (default bench-results/cluster-<UTC date-time>)
  --burst BYTES        tbf bucket size (default 75000: one 64 KiB GSO packet with its per-segment headers, plus room)
  --send-queue-ms MS   how long a packet may wait in the tbf of a host's sending side (default 10, as the receiving
                       side's always): a real host's NIC makes TCP wait in the socket instead of dropping, which a
                       short queue here does not (benchmarks-log.md "16 MiB at 16 hosts: the sending side's queue")
  --gso BYTES          gso_max_size of every veth end (default 65536, the kernel's default)
  --delay-ms D         D ms of extra delay each way on every link between hosts: each host's own outgoing TCP
                       connections go through bench/lib/delay-relay (iptables REDIRECT; this kernel has no
                       sch_netem), e.g. 0.05 for a 10-100 GbE network; the relay adds 10-40 us per round trip itself
                       (benchmarks-log.md "With added delay: 50 and 100 us each way"); gcc builds it on first use;
                       0.0 runs the relays without delay (their own cost), 0 runs none
  --latency-only       only the latency sweep (small messages), e.g. with --delay-ms
  --bandwidth-calls W:I  warm-up and timed calls per size of the bandwidth sweep (default 1:5; --quick 1:3), the same for
                       every implementation; a JVM reaches its steady state at a new size after many calls, so give the
                       middle sizes more (e.g. 20:20) when they are what you compare
  --latency-calls W:I  the same for the latency sweep (default 20:200; --quick 10:50)
  --jdist-env K=V      an environment variable for every jdist rank (repeatable), e.g. JDIST_RING_SPIN_US=0
  --jit-warmup S       jdist bench's JIT warm-up before each op's first row, for the sweeps and --tune (default:
                       jdist bench's, 2 s); with 8 or more hosts on 2 cores the JVMs are still compiling after 2 s
                       and the first row (4 B) is slower than the next, so give 10 when the smallest size is what
                       you compare
  --tune               after each host count's sweeps, jdist bench --tune (every algorithm at every size, interleaved)
                       for all_sum, all_gather and sum_scatter from 4 B to the smaller of --max-size and 4 MiB: writes
                       n<N>/rules.json, rules for this cluster that a later run reads with
                       --jdist-env JDIST_ALGO_RULES=<that file>, and puts the measured table in the report
  --tune-calls W:I     warm-up and timed calls per size and algorithm of --tune (default 5:20)
EOF
}

ARGS=("$@")   # for the report: the options as given
HOSTS_LIST=4,8,16 RATE=1gbit CAL_RATES=none,2gbit,1gbit,500mbit,200mbit IMPLS=jdist,mpi,gloo OPS=all_sum,all_gather
MAX_SIZE=64MiB QUICK=0 CALIBRATE=1 BENCH=1 OUT="" BURST=75000 SEND_QUEUE_MS=10 GSO=65536 RPH=1 NICS=1 DELAY_MS=0 LATENCY_ONLY=0 BW_CALLS= LAT_CALLS=
JDIST_ENV=() JIT_WARMUP=
TUNE=0 TUNE_CALLS=5:20 TUNE_MAX=$((4 << 20))   # --tune stops at 4 MiB: above it the defaults choose the ring
RECEIVE_QUEUE_MS=10   # the receiving side's tbf queue, fixed: the switch port in front of a host
HOSTS_SET=0 CAL_SET=0 MAX_SET=0
while [ $# -gt 0 ]; do
  case $1 in
    --hosts) HOSTS_LIST=$2; HOSTS_SET=1; shift ;;
    --rate) RATE=$2; shift ;;
    --calibrate) CAL_RATES=$2; CAL_SET=1; shift ;;
    --impls) IMPLS=$2; shift ;;
    --ranks-per-host) RPH=$2; shift ;;
    --nics) NICS=$2; shift ;;
    --ops) OPS=$2; shift ;;
    --max-size) MAX_SIZE=$2; MAX_SET=1; shift ;;
    --quick) QUICK=1 ;;
    --no-calibrate) CALIBRATE=0 ;;
    --calibrate-only) BENCH=0 ;;
    --out) OUT=$2; shift ;;
    --burst) BURST=$2; shift ;;
    --send-queue-ms) SEND_QUEUE_MS=$2; shift ;;
    --gso) GSO=$2; shift ;;
    --delay-ms) DELAY_MS=$2; shift ;;
    --latency-only) LATENCY_ONLY=1 ;;
    --bandwidth-calls) BW_CALLS=$2; shift ;;
    --latency-calls) LAT_CALLS=$2; shift ;;
    --jdist-env) JDIST_ENV+=("$2"); shift ;;
    --jit-warmup) JIT_WARMUP=$2; shift ;;
    --tune) TUNE=1 ;;
    --tune-calls) TUNE_CALLS=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench/cluster/run.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

die() { echo "bench/cluster/run.sh: $*" >&2; exit 2; }
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

# bytes from 4, 4B, 64KiB, 16MiB, 1GiB
to_bytes() {
  local v=$1 n u
  [[ $v =~ ^([0-9]+)(B|KiB|MiB|GiB)?$ ]] || die "bad size '$v': use a number of bytes, or KiB/MiB/GiB (e.g. 64MiB)"
  n=${BASH_REMATCH[1]} u=${BASH_REMATCH[2]}
  case $u in KiB) n=$((n << 10)) ;; MiB) n=$((n << 20)) ;; GiB) n=$((n << 30)) ;; esac
  echo "$n"
}
# bits/s from a tc rate (kbit, mbit, gbit; decimal as tc)
rate_bps() {
  [[ $1 =~ ^([0-9]+)(kbit|mbit|gbit)$ ]] || die "bad rate '$1': use e.g. 200mbit, 1gbit"
  case ${BASH_REMATCH[2]} in kbit) echo $((BASH_REMATCH[1] * 1000)) ;; mbit) echo $((BASH_REMATCH[1] * 1000000)) ;;
    gbit) echo $((BASH_REMATCH[1] * 1000000000)) ;; esac
}

if [ "$QUICK" = 1 ]; then
  [ "$HOSTS_SET" = 1 ] || HOSTS_LIST=4
  [ "$CAL_SET" = 1 ] || [ "$RATE" = auto ] || CAL_RATES=$(echo "$RATE" | tr ',' '\n' | sed 's/^[0-9]*://' | sort -u | paste -sd,)
  [ "$MAX_SET" = 1 ] || MAX_SIZE=16MiB
fi
IFS=, read -r -a HOSTS <<<"$HOSTS_LIST"
IFS=, read -r -a CAL <<<"$CAL_RATES"
IFS=, read -r -a IMPL <<<"$IMPLS"
IFS=, read -r -a OP <<<"$OPS"
MAX_N=0
for n in "${HOSTS[@]}"; do
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 2 ] && [ "$n" -le 64 ] && [ $((n % 2)) -eq 0 ] \
    || die "--hosts: each count must be an even number 2..64 (iperf3 pairs the hosts), got '$n'"
  [ "$n" -gt "$MAX_N" ] && MAX_N=$n
done
declare -A RATE_OF=()   # host count -> tc rate of the benchmarks
if [ "$RATE" = auto ]; then
  [ "$CALIBRATE" = 1 ] || die "--rate auto needs the calibration (drop --no-calibrate)"
elif [[ $RATE == *:* ]]; then
  IFS=, read -r -a parts <<<"$RATE"
  for p in "${parts[@]}"; do
    [[ $p =~ ^([0-9]+):(.+)$ ]] || die "--rate: '$p' is not N:RATE (e.g. 16:500mbit)"
    RATE_OF[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
    rate_bps "${BASH_REMATCH[2]}" >/dev/null   # (its own match overwrites BASH_REMATCH, hence after)
  done
  for n in "${HOSTS[@]}"; do [ -n "${RATE_OF[$n]:-}" ] || die "--rate names no rate for $n hosts"; done
else
  rate_bps "$RATE" >/dev/null
  for n in "${HOSTS[@]}"; do RATE_OF[$n]=$RATE; done
fi
for r in "${CAL[@]}"; do [ "$r" = none ] || rate_bps "$r" >/dev/null; done
for i in "${IMPL[@]}"; do [[ $i =~ ^(jdist|ring|mpi|gloo)$ ]] || die "--impls: unknown '$i' (jdist, ring, mpi, gloo)"; done
[[ $RPH =~ ^[1-9][0-9]*$ ]] && [ "$RPH" -le 16 ] || die "--ranks-per-host: a number 1..16, got '$RPH'"
[[ $NICS =~ ^[1-4]$ ]] || die "--nics: a number 1..4, got '$NICS'"
[ "$NICS" = 1 ] || [ "$DELAY_MS" = 0 ] || die "--nics and --delay-ms: the delay relays cover eth0 only; use one of them"
for o in "${OP[@]}"; do [[ $o =~ ^(all_sum|all_gather)$ ]] || die "--ops: unknown '$o' (all_sum, all_gather)"; done
[[ $BURST =~ ^[0-9]+$ && $GSO =~ ^[0-9]+$ ]] || die "--burst and --gso take a number of bytes"
[[ $SEND_QUEUE_MS =~ ^[1-9][0-9]*$ ]] || die "--send-queue-ms takes a whole number of milliseconds, 1 or more, not '$SEND_QUEUE_MS'"
for calls in "--bandwidth-calls:$BW_CALLS" "--latency-calls:$LAT_CALLS" "--tune-calls:$TUNE_CALLS"; do
  opt=${calls%%:*} v=${calls#*:}
  [ -z "$v" ] || [[ $v =~ ^[0-9]+:[1-9][0-9]*$ ]] \
    || die "$opt takes WARMUP:ITERS, e.g. 20:20 (warm-up calls 0 or more, timed calls 1 or more), got '$v'"
done
for e in "${JDIST_ENV[@]}"; do [[ $e =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "--jdist-env takes NAME=VALUE, got '$e'"; done
[ -z "$JIT_WARMUP" ] || { [[ $JIT_WARMUP =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v s="$JIT_WARMUP" 'BEGIN {exit !(s <= 600)}'; } \
  || die "--jit-warmup takes seconds 0..600, got '$JIT_WARMUP'"
# What every jdist bench of this run gets (the sweeps' and the tuner's): the --jdist-env variables and --jit-warmup
JDIST_ARGS=()
for e in "${JDIST_ENV[@]}"; do JDIST_ARGS+=(--env "$e"); done
[ -z "$JIT_WARMUP" ] || JDIST_ARGS+=(--jit-warmup "$JIT_WARMUP")
[[ $DELAY_MS =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v d="$DELAY_MS" 'BEGIN {exit !(d <= 1000)}' \
  || die "--delay-ms takes milliseconds 0..1000, got '$DELAY_MS'"

# The sweeps (the same sizes for every implementation): latency-bound sizes with many calls, then bandwidth-bound
# sizes with few (a 64 MiB all-reduce takes about a second at 1 Gbit/s). MIN:MAX:FACTOR:WARMUP:ITERS.
MAX_BYTES=$(to_bytes "$MAX_SIZE")
if [ "$QUICK" = 1 ]; then
  SWEEPS=("4:1024:16:${LAT_CALLS:-10:50}" "65536:$MAX_BYTES:16:${BW_CALLS:-1:3}")
  CAL_SECONDS=3 LIMIT=600
else
  SWEEPS=("4:16384:4:${LAT_CALLS:-20:200}" "65536:$MAX_BYTES:4:${BW_CALLS:-1:5}")
  CAL_SECONDS=5 LIMIT=900
fi
SWEEP_NAMES=(latency bandwidth)
[ "$LATENCY_ONLY" = 1 ] && SWEEPS=("${SWEEPS[0]}") SWEEP_NAMES=(latency)

[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, tc); run it as root"
jdist_find_jdk
PY=/usr/bin/python3  # Debian's python: matplotlib and torch come from Debian packages
PKGS=(iproute2 openssh-server openssh-client iperf3 iputils-ping openmpi-bin libopenmpi-dev python3-matplotlib)
[[ ,$IMPLS, == *,gloo,* ]] && PKGS+=(python3-torch)
jdist_apt_install "${PKGS[@]}"

OUT=${OUT:-$ROOT/bench-results/cluster-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d /tmp/jdist-cluster-bench.XXXXXX)
exec > >(tee -a "$OUT/run.log") 2>&1

# ---------------------------------------------------------------- teardown (always)
CLUSTER_PID="" CURRENT_PID="" STARTED_PIDS=()
cleanup() {
  set +e
  trap - EXIT INT TERM
  if [ -n "$CURRENT_PID" ] && kill -0 "$CURRENT_PID" 2>/dev/null; then
    kill -TERM "$CURRENT_PID" 2>/dev/null
    for _ in $(seq 150); do kill -0 "$CURRENT_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$CURRENT_PID" 2>/dev/null
  fi
  for p in "${STARTED_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  if [ -n "${CLUSTER_BRIDGE:-}" ]; then unshape_all; fi
  if [ -n "$CLUSTER_PID" ]; then
    # the cluster's JVM closes it on SIGTERM: every process in the namespaces, the namespaces, the bridge
    kill -TERM "$CLUSTER_PID" 2>/dev/null
    for _ in $(seq 300); do kill -0 "$CLUSTER_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$CLUSTER_PID" 2>/dev/null; then
      log "cluster JVM $CLUSTER_PID did not end within 30 s; removing the namespaces and the bridge directly"
      kill -KILL "$CLUSTER_PID" 2>/dev/null
      for ns in "${CLUSTER_NAMESPACES[@]}"; do
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
        ip netns del "$ns" 2>/dev/null
      done
      [ -n "${CLUSTER_BRIDGE:-}" ] && ip link del "$CLUSTER_BRIDGE" 2>/dev/null
    fi
  fi
  rm -rf "$WORK"
  log "cleaned up (namespaces, bridge, qdiscs, processes)"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Runs a command with a time limit in the background, so that the trap can end it (by pid) on any exit.
bounded() { # seconds, command...
  local limit=$1 rc=0
  shift
  timeout -k 15 "$limit" "$@" &
  CURRENT_PID=$!
  wait "$CURRENT_PID" || rc=$?
  CURRENT_PID=""
  return $rc
}

cpu_ticks() { awk '/^cpu / {print $2+$3+$4+$5+$6+$7+$8+$9, $5+$6}' /proc/stat; }
# TCP segments sent and retransmitted, summed over the cluster's hosts (each namespace counts its own): packets that
# the links' tbf queues dropped show here as retransmissions, where the medians only show a slower call
tcp_counts() {
  local ns
  for ns in "${CLUSTER_NAMESPACES[@]}"; do ip netns exec "$ns" cat /proc/net/snmp 2>/dev/null; done |
    awk '/^Tcp: [A-Za-z]/ {for (i = 2; i <= NF; i++) col[$i] = i; next}
         /^Tcp: / {o += $col["OutSegs"]; r += $col["RetransSegs"]} END {print o + 0, r + 0}'
}
# packets the links' tbf qdiscs dropped, summed over the hosts: on the sending side (eth0 in each namespace) and on the
# receiving side (the bridge-side veth ends); which side drops tells a sender's burst from several senders meeting
qdisc_dropped() { tc "$@" 2>/dev/null | awk '/dropped/ {gsub("[(),]", ""); for (k = 1; k < NF; k++) if ($k == "dropped") s += $(k+1)} END {print s + 0}'; }
tbf_drops() {
  local i j sent=0 received=0
  for ((i = 0; i < ${#CLUSTER_NAMESPACES[@]}; i++)); do
    for ((j = 0; j < NICS; j++)); do
      sent=$((sent + $(qdisc_dropped -n "${CLUSTER_NAMESPACES[$i]}" -s qdisc show dev "eth$j")))
      received=$((received + $(qdisc_dropped -s qdisc show dev "$(nic_port "$i" "$j")")))
    done
  done
  echo "$sent $received"
}
pair_delta() { awk -v a="$1" -v b="$2" 'BEGIN {split(a, x, " "); split(b, y, " "); print y[1]-x[1] "," y[2]-x[2]}'; }   # "x y", "x' y'" -> x'-x,y'-y
# phase bookkeeping: wall time, whole-machine CPU busy %, load average, exit status, TCP segments and retransmissions,
# tbf drops
PHASE_T0=0 PHASE_CPU0="" PHASE_TCP0="" PHASE_DROPS0=""
phase_start() {
  PHASE_T0=$(date +%s.%N); PHASE_CPU0=$(cpu_ticks); PHASE_LOAD0=$(cut -d' ' -f1 /proc/loadavg)
  PHASE_TCP0=$(tcp_counts); PHASE_DROPS0=$(tbf_drops)
}
phase_end() { # n, name, rc
  local t1 c1 busy tcp drops
  t1=$(date +%s.%N); c1=$(cpu_ticks)
  busy=$(awk -v a="$PHASE_CPU0" -v b="$c1" 'BEGIN {split(a, x, " "); split(b, y, " "); t = y[1]-x[1]; i = y[2]-x[2]; printf "%.0f", (t > 0 ? 100*(t-i)/t : 0)}')
  tcp=$(pair_delta "$PHASE_TCP0" "$(tcp_counts)")
  drops=$(pair_delta "$PHASE_DROPS0" "$(tbf_drops)")
  printf '%s,%s,%.1f,%s,%s,%s,%s,%s,%s\n' "$1" "$2" "$(awk -v a="$PHASE_T0" -v b="$t1" 'BEGIN {print b - a}')" "$busy" "$PHASE_LOAD0" \
    "$(cut -d' ' -f1 /proc/loadavg)" "$3" "$tcp" "$drops" >>"$OUT/phases.csv"
}
echo "n,phase,seconds,cpu_busy_pct,load1_before,load1_after,exit,tcp_out_segs,tcp_retrans_segs,tbf_drops_sending,tbf_drops_receiving" >"$OUT/phases.csv"

# ---------------------------------------------------------------- build
log "building jdist and the cluster fixture"
JDIST_CLI_JAVA_OPTS="" "$ROOT/bin/jdist" --version >/dev/null
MPICC=$(command -v mpicc.openmpi || command -v mpicc)
MPIRUN=$(command -v mpirun.openmpi || command -v mpirun)
"$MPICC" -O2 -o "$WORK/mpi_collective" "$ROOT/bench/reference/mpi_collective.c"

# ---------------------------------------------------------------- the cluster
log "starting $MAX_N namespaces with sshd"
netns_cluster_start "$MAX_N" "$WORK" "$OUT/cluster.log" "$NICS" || die "the cluster did not start"
export PATH="$CLUSTER_SSH_BIN:$PATH"   # `ssh HOST` now reaches the namespaces (ssh -F the cluster's config)
log "cluster: bridge $CLUSTER_BRIDGE, $CLUSTER_SUBNET, hosts ${CLUSTER_ADDRESSES[*]}"

in_ns() { local i=$1; shift; ip netns exec "${CLUSTER_NAMESPACES[$i]}" "$@"; }
# host i's address on network j (eth<j>), and the root-namespace end of its veth there
nic_address() { if [ "$2" = 0 ]; then echo "${CLUSTER_ADDRESSES[$1]}"; else local -n a="CLUSTER_ADDRESSES_$2"; echo "${a[$1]}"; fi; }
nic_port() { if [ "$2" = 0 ]; then echo "${CLUSTER_BRIDGE_PORTS[$1]}"; else local -n p="CLUSTER_BRIDGE_PORTS_$2"; echo "${p[$1]}"; fi; }
ALL_SUBNETS=$CLUSTER_SUBNET
for ((j = 1; j < NICS; j++)); do sub="CLUSTER_SUBNET_$j"; ALL_SUBNETS+=",${!sub}"; done

# Both directions of every host's link: egress of eth0 inside the namespace (what the host sends) and egress of
# the bridge-side veth end (what the host receives). gso_max_size bounds the largest packet that reaches tbf.
shape_all() { # rate | none
  local i j port
  for ((i = 0; i < MAX_N; i++)); do
    for ((j = 0; j < NICS; j++)); do
      port=$(nic_port "$i" "$j")
      ip link set dev "$port" gso_max_size "$GSO"
      in_ns "$i" ip link set dev "eth$j" gso_max_size "$GSO"
      if [ "$1" = none ]; then
        tc qdisc del dev "$port" root 2>/dev/null || true
        in_ns "$i" tc qdisc del dev "eth$j" root 2>/dev/null || true
      else
        tc qdisc replace dev "$port" root tbf rate "$1" burst "$BURST" latency "${RECEIVE_QUEUE_MS}ms"
        in_ns "$i" tc qdisc replace dev "eth$j" root tbf rate "$1" burst "$BURST" latency "${SEND_QUEUE_MS}ms"
      fi
    done
  done
}
unshape_all() {
  local i j
  for ((i = 0; i < ${#CLUSTER_BRIDGE_PORTS[@]}; i++)); do
    for ((j = 0; j < NICS; j++)); do
      tc qdisc del dev "$(nic_port "$i" "$j")" root 2>/dev/null || true
      ip netns exec "${CLUSTER_NAMESPACES[$i]}" tc qdisc del dev "eth$j" root 2>/dev/null || true
    done
  done
}

{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "machine: $(hostname), $(nproc) cores ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(. /etc/os-release && echo "$PRETTY_NAME"), Linux $(uname -r)"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "jdist: $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' (with local changes)'); $("$JDIST_JDK/bin/java" -version 2>&1 | head -1)"
  echo "Open MPI: $("$MPIRUN" --version 2>&1 | head -1)"
  [[ ,$IMPLS, == *,gloo,* ]] && echo "PyTorch (gloo): $("$PY" -c 'import torch, torch.distributed as d; print(torch.__version__, "gloo available:", d.is_gloo_available())' 2>&1 | tail -1)"
  echo "iperf3: $(iperf3 --version | head -1)"
  echo "link: tc tbf burst $BURST on both ends of every host's veth, latency ${SEND_QUEUE_MS}ms sending and ${RECEIVE_QUEUE_MS}ms receiving, rate --rate $RATE; gso_max_size $GSO; MTU 1500; $([ "$DELAY_MS" = 0 ] && echo "no added delay" || echo "added delay $DELAY_MS ms each way on every connection between hosts (bench/lib/delay-relay)")"
  echo "network ports per host: $NICS$([ "$NICS" = 1 ] || echo " (eth0..eth$((NICS - 1)), each on its own bridge and shaped alike; the link in the report is all of them together)")"
  echo "hosts: ${HOSTS[*]}; ranks per host: $RPH; impls: ${IMPL[*]}; ops: ${OP[*]}; sweeps (MIN:MAX:FACTOR:WARMUP:ITERS): ${SWEEPS[*]}"
  echo "command: bench/cluster/run.sh ${ARGS[*]}"
} >"$OUT/meta.txt"
cat "$OUT/meta.txt" >&2

# ---------------------------------------------------------------- calibration
# Intrinsic round trip (nothing emulates delay: this kernel has no netem).
ping_rtt() { # n
  in_ns 0 ping -q -c 500 -i 0.002 -W 2 "${CLUSTER_ADDRESSES[1]}" 2>&1 | awk -F'[ /]+' '/rtt/ {print $7","$8","$9","$10}'
}

# iperf3 in every namespace at once: host i <-> host i+n/2, both directions of each pair at the same time.
calibrate() { # n, rate
  local n=$1 rate=$2 half=$(($1 / 2)) i j srv=() cli=() rc=0
  shape_all "$rate"
  for ((i = 0; i < half; i++)); do
    j=$((i + half))
    in_ns "$j" timeout $((CAL_SECONDS + 40)) iperf3 -s -1 -B "${CLUSTER_ADDRESSES[$j]}" -p 5201 >/dev/null 2>&1 &
    srv+=($!)
  done
  STARTED_PIDS+=("${srv[@]}")
  sleep 1
  phase_start
  for ((i = 0; i < half; i++)); do
    j=$((i + half))
    in_ns "$i" timeout $((CAL_SECONDS + 30)) iperf3 -c "${CLUSTER_ADDRESSES[$j]}" -p 5201 --bidir -t "$CAL_SECONDS" -O 1 -J \
      >"$OUT/calibration/n$n-$rate-pair$i.json" 2>&1 &
    cli+=($!)
  done
  for p in "${cli[@]}"; do wait "$p" || rc=$?; done
  phase_end "$n" "calibrate-$rate" "$rc"
  for p in "${srv[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -TERM "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  STARTED_PIDS=()
}

if [ "$CALIBRATE" = 1 ]; then
  mkdir -p "$OUT/calibration"
  echo "rate,rtt_min_us,rtt_avg_us,rtt_max_us,rtt_mdev_us" >"$OUT/calibration/rtt.csv"
  for r in none "$(printf '%s\n' "${CAL[@]}" | grep -v '^none$' | head -1)"; do
    [ -n "$r" ] || continue
    shape_all "$r"
    echo "$r,$(ping_rtt | awk -F, '{printf "%.0f,%.0f,%.0f,%.0f", $1*1000, $2*1000, $3*1000, $4*1000}')" >>"$OUT/calibration/rtt.csv"
  done
  for n in "${HOSTS[@]}"; do
    for r in "${CAL[@]}"; do
      log "calibration: $n hosts, rate $r, iperf3 ${CAL_SECONDS}s in $((n / 2)) pairs, both directions"
      calibrate "$n" "$r"
    done
  done
  "$PY" "$ROOT/bench/cluster/report.py" calibration "$OUT" >&2
  if [ "$RATE" = auto ]; then
    while read -r n r; do RATE_OF[$n]=$r; done < <("$PY" "$ROOT/bench/cluster/report.py" pick-rates "$OUT")
    for n in "${HOSTS[@]}"; do
      log "rate for $n hosts (auto): ${RATE_OF[$n]}"
      echo "rate for $n hosts (auto, from the calibration): ${RATE_OF[$n]}" >>"$OUT/meta.txt"
    done
  fi
fi

# ---------------------------------------------------------------- added delay (the relays)
# Every host's own outgoing TCP connections to the other hosts (not ssh, not to itself) go through a relay in its
# namespace that holds the bytes DELAY_MS each way; the relays end by themselves after a day at most, and with the
# cluster (the cluster ends every process in its namespaces).
delay_all() { # n
  local i
  "$ROOT/bench/lib/delay-relay" --help >/dev/null || die "the delaying relay did not build (bench/lib/delay-relay.c)"
  for ((i = 0; i < $1; i++)); do
    in_ns "$i" iptables -t nat -F OUTPUT
    in_ns "$i" iptables -t nat -A OUTPUT -d "${CLUSTER_ADDRESSES[$i]}" -j RETURN
    in_ns "$i" iptables -t nat -A OUTPUT -p tcp -d "$CLUSTER_SUBNET" ! --dport 22 -m mark ! --mark 7 -j REDIRECT --to-ports 7777
    in_ns "$i" "$ROOT/bench/lib/delay-relay" --port 7777 --delay-ms "$DELAY_MS" --mark 7 --lifetime 86400 \
      --stats "$OUT/relay-$i.stats" >>"$OUT/relay-$i.log" 2>&1 &
    STARTED_PIDS+=($!)
  done
  sleep 1
}

# ---------------------------------------------------------------- benchmarks
bench_n() { # n
  local n=$1 d=$OUT/n$1 i s name rc spec min max f w it
  mkdir -p "$d"
  echo "${RATE_OF[$n]}" >"$d/rate"
  echo "$NICS" >"$d/nics"
  shape_all "${RATE_OF[$n]}"
  {
    printf '['
    local k sep=""
    for ((i = 0; i < n; i++)); do
      local ips=() j
      for ((j = 0; j < NICS; j++)); do ips+=("\"$(nic_address "$i" "$j")\""); done
      for ((k = 0; k < RPH; k++)); do   # a host's ranks next to each other, as jdist launch and mpirun --map-by slot place them
        printf '%s{"ssh": "%s", "ips": [%s]}' "$sep" "${CLUSTER_ALIASES[$i]}" "$(IFS=,; echo "${ips[*]}")"
        sep=', '
      done
    done
    printf ']\n'
  } >"$d/hosts.json"
  for ((i = 0; i < n; i++)); do echo "${CLUSTER_ADDRESSES[$i]} slots=$RPH"; done >"$d/mpi-hosts"

  for impl in "${IMPL[@]}"; do
    for ((s = 0; s < ${#SWEEPS[@]}; s++)); do
      spec=${SWEEPS[$s]} name=${SWEEP_NAMES[$s]}
      IFS=: read -r min max f w it <<<"$spec"
      case $impl in
        jdist|ring)
          log "$n hosts: jdist bench$([ "$impl" = ring ] && echo " (JDIST_ALGO=ring)"), $name sweep"
          phase_start; rc=0
          local args=("${JDIST_ARGS[@]}")
          [ "$impl" = ring ] && args+=(--env JDIST_ALGO=ring)
          bounded "$LIMIT" "$ROOT/bin/jdist" bench --hostfile "$d/hosts.json" "${args[@]}" --op "$OPS" --sizes "$min:$max" -f "$f" \
            -w "$w" -i "$it" --csv >"$d/$impl-$name.csv" 2>"$d/$impl-$name.log" || rc=$?
          phase_end "$n" "$impl-$name" "$rc"
          ;;
        mpi)
          for o in "${OP[@]}"; do
            for attempt in 1 2; do
              log "$n hosts: Open MPI $o, $name sweep$([ "$attempt" = 2 ] && echo ", again: its daemons did not all start")"
              phase_start; rc=0
              # --bind-to none and mpi_yield_when_idle: ranks that busy-poll on 2 shared cores starve each other otherwise;
              # btl tcp,self: never shared memory (the namespaces share /dev/shm); tree spawn off: only the launcher has
              # the ssh config; orte_startup_timeout: a daemon that fails to start fails the run (one that starts and
              # never reports back is not covered: the retry below is for that, benchmarks-log.md "Simulated cluster")
              bounded "$LIMIT" "$MPIRUN" --allow-run-as-root --hostfile "$d/mpi-hosts" -np $((n * RPH)) --map-by slot --bind-to none \
                --mca plm_rsh_agent ssh --mca plm_rsh_no_tree_spawn 1 --mca orte_startup_timeout 60 --mca btl tcp,self \
                --mca btl_tcp_if_include "$ALL_SUBNETS" --mca oob_tcp_if_include "$CLUSTER_SUBNET" \
                --mca mpi_yield_when_idle 1 \
                "$WORK/mpi_collective" "$([ "$o" = all_sum ] && echo allreduce || echo allgather)" "$min" "$max" "$it" "$w" "$f" --csv \
                >"$d/mpi-$o-$name.csv" 2>>"$d/mpi-$o-$name.log" || rc=$?
              phase_end "$n" "mpi-$o-$name" "$rc"
              # retry only a start-up failure (no row at all), never a run that measured something
              [ "$rc" != 0 ] && [ "$(grep -c '^all_' "$d/mpi-$o-$name.csv")" = 0 ] || break
            done
          done
          ;;
        gloo)
          log "$n hosts: Gloo, $name sweep"
          phase_start; rc=0
          bounded "$LIMIT" "$ROOT/bin/jdist" launch --hostfile "$d/hosts.json" --env "GLOO_SOCKET_IFNAME=$(seq -s, -f 'eth%g' 0 $((NICS - 1)))" \
            --env "GLOO_BENCH_MASTER=${CLUSTER_ADDRESSES[0]}:29500" --env "GLOO_BENCH_WORLD_SIZE=$((n * RPH))" \
            -- "$PY" "$ROOT/bench/cluster/gloo_bench.py" --ops "$OPS" --sweep "$spec" \
            >"$d/gloo-$name.csv.raw" 2>"$d/gloo-$name.log" || rc=$?
          tr -d '\r' <"$d/gloo-$name.csv.raw" | grep -E '^(op,|all_)' >"$d/gloo-$name.csv" || true
          phase_end "$n" "gloo-$name" "$rc"
          ;;
      esac
      [ "$rc" = 0 ] || log "  failed (exit $rc); see $d/$impl-*$name.log"
    done
  done
  [ "$TUNE" = 1 ] && tune_n "$n" "$d"
  return 0
}

# jdist bench --tune on this host count: n<N>/rules.json and the rows it chose from (n<N>/tune.json)
tune_n() {
  local n=$1 d=$2 rc=0 w it max=$((TUNE_MAX < MAX_BYTES ? TUNE_MAX : MAX_BYTES))
  IFS=: read -r w it <<<"$TUNE_CALLS"
  log "$n hosts: jdist bench --tune, 4 B to $max B"
  phase_start
  bounded "$LIMIT" "$ROOT/bin/jdist" bench --hostfile "$d/hosts.json" "${JDIST_ARGS[@]}" --tune "$d/rules.json" \
    --op all_sum,all_gather,sum_scatter --sizes "4:$max" -f 4 -w "$w" -i "$it" \
    --json >"$d/tune.json" 2>"$d/tune.log" || rc=$?
  phase_end "$n" "jdist-tune" "$rc"
  [ "$rc" = 0 ] || log "  failed (exit $rc); see $d/tune.log"
}

if [ "$BENCH" = 1 ]; then
  if [ "$DELAY_MS" != 0 ]; then
    jdist_apt_install iptables python3
    log "added delay: $DELAY_MS ms each way, a relay in each of the $MAX_N hosts"
    delay_all "$MAX_N"
  fi
  for n in "${HOSTS[@]}"; do
    log "$n hosts at ${RATE_OF[$n]}"
    bench_n "$n"
    [ "$DELAY_MS" != 0 ] && log "relays so far (connections, bytes): $(cat "$OUT"/relay-*.stats 2>/dev/null | paste -sd' ')"
  done
  "$PY" "$ROOT/bench/cluster/report.py" report "$OUT" >&2
fi
log "done: $OUT (report.md, plots, raw outputs)"
