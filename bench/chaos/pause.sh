#!/usr/bin/env bash
# A healthy job whose rank 1 computes SECONDS between two collectives (default 300: the issue's five minutes), with the
# default settings of a jdist launch job: the liveness watch on (it hears rank 1's heartbeat while the others wait), the
# progress deadline 30 min. Exits 0 when every rank got every sum right.
#
#   bench/chaos/pause.sh [SECONDS] [RANKS]      (defaults: 300, 3)
#
# Bounded: the launcher's --timeout ends the job SECONDS + 120 s after it started, whatever happens.
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
SECONDS_PAUSE=${1:-300}
RANKS=${2:-3}
echo "# $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -n), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); pause=${SECONDS_PAUSE}s ranks=$RANKS"
start=$(date +%s)
"$ROOT/bin/jdist" launch -n "$RANKS" --timeout "$((SECONDS_PAUSE + 120))" "$ROOT/bench/chaos/PauseBetweenCollectives.java" "$SECONDS_PAUSE" 1
echo "# the job took $(( $(date +%s) - start )) s"
