#!/bin/bash
# One sitting of docs/benchmarks-log.md's "Broadcast and all_to_all beside MPI's": for 2 and 4 ranks on this host,
#   1. jdist bench over the ring: TCP, then JDIST_TRANSPORT=shm,
#   2. jdist bench over the mpi backend (MPI_Ibcast, MPI_Ialltoall; Open MPI picks shared memory),
#   3. Open MPI on its own (bench/reference/mpi_collective.c: MPI_Bcast from rank 0, MPI_Alltoall, values checked),
#      over its TCP transport on loopback (btl tcp,self) and over shared memory (btl vader,self).
# Same sizes, iterations and columns everywhere (float32, out-of-place, medians of rank 0's calls, nccl-tests' bus
# factors). Usage: bench/peer-ops-report.sh [OUT_DIR] [MAX_SIZE]   (default: bench-results/peer-ops-<UTC date-time>,
# 16MiB). Needs (installed when run as root): openmpi-bin libopenmpi-dev. Run it on a quiet machine: every result
# file records the load average before and after.
set -euo pipefail
source "$(PATH=/usr/bin:/bin; dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib/start.sh"
OUT=${1:-$ROOT/bench-results/peer-ops-$(date -u +%Y%m%d-%H%M%S)}
MAX=${2:-16MiB}
mkdir -p "$OUT"
jdist_apt_install openmpi-bin libopenmpi-dev
JDIST="$ROOT/bin/jdist"
SWEEP=(--sizes "4B:$MAX" -f 16 -w 5 -i 50)
MAX_BYTES=$(numfmt --from=iec-i "${MAX%B}")
# Open MPI as root, and with more ranks than cores: yield instead of busy-polling (as the other references do).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPICC=$(command -v mpicc.openmpi || command -v mpicc)
MPIRUN=$(command -v mpirun.openmpi || command -v mpirun)
"$MPICC" -O2 -o "$OUT/mpi_collective" "$ROOT/bench/reference/mpi_collective.c"

"$JDIST" --version >/dev/null   # builds jdist once, before anything is timed
for n in 2 4; do
  mpi_flags=(--allow-run-as-root --oversubscribe -np "$n")
  [ "$n" -gt "$(nproc)" ] && mpi_flags+=(--bind-to none --mca mpi_yield_when_idle 1)
  bench_run "ring-tcp-$n" "$JDIST" bench -n "$n" --op broadcast,all_to_all "${SWEEP[@]}" --csv
  bench_run "ring-shm-$n" "$JDIST" bench -n "$n" --env JDIST_TRANSPORT=shm --op broadcast,all_to_all "${SWEEP[@]}" --csv
  bench_run "jdist-mpi-$n" "$JDIST" bench -n "$n" --backend mpi --op broadcast,all_to_all "${SWEEP[@]}" --csv
  for op in bcast alltoall; do
    bench_run "openmpi-tcp-$op-$n" "$MPIRUN" "${mpi_flags[@]}" --mca btl tcp,self --mca btl_tcp_if_include lo \
      "$OUT/mpi_collective" "$op" 4 "$MAX_BYTES" 50 5 16 --csv
    bench_run "openmpi-vader-$op-$n" "$MPIRUN" "${mpi_flags[@]}" --mca btl vader,self \
      "$OUT/mpi_collective" "$op" 4 "$MAX_BYTES" 50 5 16 --csv
  done
done

# One table: median µs per size, the five columns side by side (rows of the CSVs: op,mode,ranks,size_bytes,...,median_us).
echo "# median us: ring TCP / ring shm / jdist mpi backend / Open MPI TCP / Open MPI vader; #wrong summed over all"
awk -F, '
  FNR == 1 { f = FILENAME; sub(".*/", "", f); sub("[.]txt$", "", f); src = f; sub("-(bcast-|alltoall-)?[0-9]+$", "", src) }
  /^#/ || $1 == "op" || NF < 12 { next }
  { key = $1 " " $3 " " $4; med[key, src] = $8; wrong += $12; keys[key] = 1 }
  END {
    split("ring-tcp ring-shm jdist-mpi openmpi-tcp openmpi-vader", s, " ")
    for (k in keys) {
      line = k ":"
      for (j = 1; j <= 5; j++) line = line " " ((k, s[j]) in med ? med[k, s[j]] : "-")
      print line
    }
    print "#wrong " wrong + 0 > "/dev/stderr"
  }' $(ls "$OUT"/*.txt | grep -v '/summary[.]txt$') 2>&1 | sort -k1,1 -k2,2n -k3,3n | tee "$OUT/summary.txt"
echo "results in $OUT" >&2
