#!/usr/bin/env bash
# Re-measures the reference figures that docs/benchmarks.md compares jdist with, in the same run:
#   - the loopback TCP ceiling (iperf3, one stream per direction),
#   - Open MPI's MPI_Allreduce over TCP and over shared memory (mpi_collective.c, built here with mpicc).
# Usage: bench/reference/run-references.sh [MIN_BYTES] [MAX_BYTES] [ITERS]
# Needs (installed when run as root): openmpi-bin libopenmpi-dev iperf3.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/bin/lib/common.sh"
MIN=${1:-4}
MAX=${2:-268435456}
ITERS=${3:-20}
jdist_apt_install openmpi-bin libopenmpi-dev iperf3
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"; [ -n "${IPERF_PID:-}" ] && kill "$IPERF_PID" 2>/dev/null || true' EXIT

MPICC=$(command -v mpicc.openmpi || command -v mpicc)
MPIRUN=$(command -v mpirun.openmpi || command -v mpirun)
"$MPICC" -O2 -o "$WORK/mpi_collective" "$ROOT/bench/reference/mpi_collective.c"

echo "## loopback TCP ceiling: iperf3, 2 streams (one per direction), 5 s"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
iperf3 -s -1 -B 127.0.0.1 -p "$PORT" >/dev/null 2>&1 &
IPERF_PID=$!
sleep 0.5
iperf3 -c 127.0.0.1 -p "$PORT" --bidir -t 5 -f g 2>&1 | grep -E 'sender|receiver' || true
wait "$IPERF_PID" 2>/dev/null || true
IPERF_PID=

MPI_FLAGS=(--allow-run-as-root --oversubscribe -np 2)
echo "## Open MPI $("$MPIRUN" --version 2>&1 | head -1 | awk '{print $NF}'), MPI_Allreduce, TCP transport"
"$MPIRUN" "${MPI_FLAGS[@]}" --mca btl tcp,self --mca btl_tcp_if_include lo "$WORK/mpi_collective" allreduce "$MIN" "$MAX" "$ITERS" 5
echo "## Open MPI, MPI_Allreduce, shared memory (vader)"
"$MPIRUN" "${MPI_FLAGS[@]}" --mca btl vader,self "$WORK/mpi_collective" allreduce "$MIN" "$MAX" "$ITERS" 5
