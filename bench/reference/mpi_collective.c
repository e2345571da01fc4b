/*
 * Reference figures for docs/benchmarks.md: MPI_Allreduce (float32, sum), MPI_Allgather, MPI_Bcast (from rank 0) or
 * MPI_Alltoall (float32, equal blocks) over a size sweep, timed and reported like `jdist bench` so the rows compare
 * one to one:
 *   - size is the largest buffer of one call: the array for allreduce and bcast, the OUTPUT of allgather, each
 *     rank's whole input (n equal blocks) for alltoall;
 *   - `warmup` untimed calls, then `iters` calls timed one by one; median and p99 of rank 0's times;
 *   - busbw = algbw x 2(n-1)/n (allreduce), (n-1)/n (allgather, alltoall) or 1 (bcast), nccl-tests' factors and
 *     jdist bench's (BenchOp.busFactor);
 *   - after the timed calls, one call on fresh inputs is checked on every rank (#wrong, summed over ranks).
 * Inputs are jdist bench's: element i of rank r is (7r + i) mod 5, exact in float32 after summing. Bcast works in
 * place on that buffer (jdist bench's broadcastInto): every rank must end with rank 0's values. Alltoall: block j of
 * rank q's input goes to rank j, so element i of rank r's output is element r*(count/n) + i mod (count/n) of rank
 * i/(count/n)'s input.
 *
 * Build: mpicc -O2 -o mpi_collective mpi_collective.c
 * Run:   mpirun -np N ./mpi_collective allreduce|allgather|bcast|alltoall MIN_BYTES MAX_BYTES ITERS WARMUP [FACTOR] [--csv]
 * The text table is jdist bench's; --csv prints jdist bench --csv's columns.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static float value(int rank, long index) { return (float)((rank * 7L + index) % 5); }

static double peak_rss_bytes(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kib = 0;
    if (!f) return 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "VmHWM:", 6) == 0) kib = atof(line + 6);
    }
    fclose(f);
    return kib * 1024;
}

enum op { ALLREDUCE, ALLGATHER, BCAST, ALLTOALL };
static const char *const OP_ARG[] = { "allreduce", "allgather", "bcast", "alltoall" };
static const char *const OP_JDIST[] = { "all_sum", "all_gather", "broadcast", "all_to_all" };
static const char *const OP_MPI[] = { "Allreduce", "Allgather", "Bcast", "Alltoall" };

static void call(enum op op, float *in, float *out, long in_count, int n) {
    switch (op) {
    case ALLREDUCE: MPI_Allreduce(in, out, (int)in_count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case ALLGATHER: MPI_Allgather(in, (int)in_count, MPI_FLOAT, out, (int)in_count, MPI_FLOAT, MPI_COMM_WORLD); break;
    case BCAST: MPI_Bcast(in, (int)in_count, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
    case ALLTOALL: MPI_Alltoall(in, (int)(in_count / n), MPI_FLOAT, out, (int)(in_count / n), MPI_FLOAT, MPI_COMM_WORLD); break;
    }
}

/* One row: warm-up, timed calls, a checked call; rank 0 prints it. */
static void run_size(enum op op, int csv, int rank, int n, long bytes, int iters, int warmup, double *times) {
    double bus_factor = op == ALLREDUCE ? 2.0 * (n - 1) / n : op == BCAST ? 1.0 : (double)(n - 1) / n;
    if (n <= 1) bus_factor = op == BCAST ? 1.0 : 0.0;
    /* per-rank input elements (jdist bench's): 1/n of the output for allgather, whole blocks for alltoall */
    long in_count = op == ALLGATHER ? bytes / 4 / n : op == ALLTOALL ? (bytes / 4 / n) * n : bytes / 4;
    if (op == ALLTOALL && in_count < n) in_count = n;
    if (in_count < 1) in_count = 1;
    long out_count = op == ALLGATHER ? in_count * n : in_count;
    float *in = malloc(in_count * sizeof(float)), *out = malloc(out_count * sizeof(float));
    for (long i = 0; i < in_count; i++) in[i] = value(rank, i);
    for (int it = -warmup; it < iters; it++) {
        double t0 = MPI_Wtime();
        call(op, in, out, in_count, n);
        double t = MPI_Wtime() - t0;
        if (it >= 0) times[it] = t;
    }
    /* check one call on fresh inputs and outputs (bcast overwrote its buffer) */
    for (long i = 0; i < in_count; i++) in[i] = value(rank, i);
    memset(out, 0xff, out_count * sizeof(float));
    call(op, in, out, in_count, n);
    const float *result = op == BCAST ? in : out;
    long block = in_count / n, wrong = 0, wrong_all = 0;
    for (long i = 0; i < out_count; i++) {
        float expected = 0;
        switch (op) {
        case ALLREDUCE: for (int q = 0; q < n; q++) expected += value(q, i); break;
        case ALLGATHER: expected = value((int)(i / in_count), i % in_count); break;
        case BCAST: expected = value(0, i); break;
        case ALLTOALL: expected = value((int)(i / block), rank * block + i % block); break;
        }
        if (result[i] != expected) wrong++;
    }
    MPI_Reduce(&wrong, &wrong_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    double rss = peak_rss_bytes(), rss_max = 0;
    MPI_Reduce(&rss, &rss_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    qsort(times, iters, sizeof(double), cmp_double);
    double med = times[iters / 2] * 1e6, p99 = times[(iters * 99 + 99) / 100 - 1] * 1e6;
    long size = out_count * 4;
    double algbw = size / (med * 1e3);
    if (rank == 0) {
        if (csv) printf("%s,out-of-place,%d,%ld,%ld,float32,%s,%.3f,%.3f,%.4f,%.4f,%ld,%.0f\n", OP_JDIST[op], n, size,
                        out_count, op == ALLREDUCE ? "sum" : "none", med, p99, algbw, algbw * bus_factor, wrong_all, rss_max);
        else printf("%12ld %12ld %11.1f %11.1f %9.3f %9.3f %7ld\n", size, out_count, med, p99, algbw, algbw * bus_factor, wrong_all);
        fflush(stdout);
    }
    free(in);
    free(out);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int op = -1;
    for (int k = 0; argc > 1 && k < 4; k++) if (strcmp(argv[1], OP_ARG[k]) == 0) op = k;
    if (argc < 6 || op < 0) {
        if (rank == 0) fprintf(stderr, "usage: mpi_collective allreduce|allgather|bcast|alltoall MIN_BYTES MAX_BYTES ITERS WARMUP [FACTOR] [--csv]\n");
        MPI_Finalize();
        return 2;
    }
    long min_bytes = atol(argv[2]), max_bytes = atol(argv[3]);
    int iters = atoi(argv[4]), warmup = atoi(argv[5]);
    long factor = argc > 6 && argv[6][0] != '-' ? atol(argv[6]) : 2;
    int csv = strcmp(argv[argc - 1], "--csv") == 0;
    if (iters < 1 || warmup < 0 || factor < 2 || min_bytes < 1 || max_bytes < min_bytes) {
        if (rank == 0) fprintf(stderr, "mpi_collective: need ITERS >= 1, WARMUP >= 0, FACTOR >= 2, 1 <= MIN_BYTES <= MAX_BYTES\n");
        MPI_Finalize();
        return 2;
    }
    if (rank == 0) {
        if (csv) printf("op,mode,ranks,size_bytes,count,type,redop,median_us,p99_us,algbw_GBps,busbw_GBps,wrong,peak_rss_bytes\n");
        else printf("# MPI_%s float32, %d ranks\n#%11s %12s %11s %11s %9s %9s %7s\n", OP_MPI[op], n,
                    "size(B)", "count", "median(us)", "p99(us)", "algbw", "busbw", "#wrong");
        fflush(stdout);
    }
    double *times = malloc(sizeof(double) * iters);
    /* sizes as jdist bench's SizeSweep: MIN, MIN*FACTOR, ... up to MAX, and MAX itself */
    long last = 0;
    for (long bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
        run_size((enum op)op, csv, rank, n, bytes, iters, warmup, times);
        last = bytes;
    }
    if (last != max_bytes) run_size((enum op)op, csv, rank, n, max_bytes, iters, warmup, times);
    free(times);
    MPI_Finalize();
    return 0;
}
