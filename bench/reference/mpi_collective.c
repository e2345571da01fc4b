/*
 * Reference figures for docs/benchmarks.md: MPI_Allreduce (float32, sum) or MPI_Allgather (float32) over a
 * size sweep, timed and reported like `jdist bench` so the rows compare one to one:
 *   - size is the largest buffer of one call: the array for allreduce, the OUTPUT of allgather;
 *   - `warmup` untimed calls, then `iters` calls timed one by one; median and p99 of rank 0's times;
 *   - busbw = algbw x 2(n-1)/n (allreduce) or (n-1)/n (allgather);
 *   - after the timed calls, one call on fresh inputs is checked on every rank (#wrong, summed over ranks).
 * Inputs are jdist bench's: element i of rank r is (7r + i) mod 5, exact in float32 after summing.
 *
 * Build: mpicc -O2 -o mpi_collective mpi_collective.c
 * Run:   mpirun -np N ./mpi_collective allreduce|allgather MIN_BYTES MAX_BYTES ITERS WARMUP [FACTOR] [--csv]
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

/* One row: warm-up, timed calls, a checked call; rank 0 prints it. */
static void run_size(int gather, int csv, int rank, int n, long bytes, int iters, int warmup, double *times) {
    const char *op = gather ? "all_gather" : "all_sum", *redop = gather ? "none" : "sum";
    double bus_factor = gather ? (double)(n - 1) / n : 2.0 * (n - 1) / n;
    /* per-rank input elements: the whole array for allreduce, 1/n of the output for allgather */
    long in_count = gather ? bytes / 4 / n : bytes / 4;
    if (in_count < 1) in_count = 1;
    long out_count = gather ? in_count * n : in_count;
    float *in = malloc(in_count * sizeof(float)), *out = malloc(out_count * sizeof(float));
    for (long i = 0; i < in_count; i++) in[i] = value(rank, i);
    for (int it = -warmup; it < iters; it++) {
        double t0 = MPI_Wtime();
        if (gather) MPI_Allgather(in, (int)in_count, MPI_FLOAT, out, (int)in_count, MPI_FLOAT, MPI_COMM_WORLD);
        else MPI_Allreduce(in, out, (int)in_count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double t = MPI_Wtime() - t0;
        if (it >= 0) times[it] = t;
    }
    /* check one call on fresh outputs */
    memset(out, 0xff, out_count * sizeof(float));
    if (gather) MPI_Allgather(in, (int)in_count, MPI_FLOAT, out, (int)in_count, MPI_FLOAT, MPI_COMM_WORLD);
    else MPI_Allreduce(in, out, (int)in_count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    long wrong = 0, wrong_all = 0;
    for (long i = 0; i < out_count; i++) {
        float expected = 0;
        if (gather) expected = value((int)(i / in_count), i % in_count);
        else for (int q = 0; q < n; q++) expected += value(q, i);
        if (out[i] != expected) wrong++;
    }
    MPI_Reduce(&wrong, &wrong_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    double rss = peak_rss_bytes(), rss_max = 0;
    MPI_Reduce(&rss, &rss_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    qsort(times, iters, sizeof(double), cmp_double);
    double med = times[iters / 2] * 1e6, p99 = times[(iters * 99 + 99) / 100 - 1] * 1e6;
    long size = out_count * 4;
    double algbw = size / (med * 1e3);
    if (rank == 0) {
        if (csv) printf("%s,out-of-place,%d,%ld,%ld,float32,%s,%.3f,%.3f,%.4f,%.4f,%ld,%.0f\n", op, n, size, out_count,
                        redop, med, p99, algbw, algbw * bus_factor, wrong_all, rss_max);
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
    if (argc < 6 || (strcmp(argv[1], "allreduce") != 0 && strcmp(argv[1], "allgather") != 0)) {
        if (rank == 0) fprintf(stderr, "usage: mpi_collective allreduce|allgather MIN_BYTES MAX_BYTES ITERS WARMUP [FACTOR] [--csv]\n");
        MPI_Finalize();
        return 2;
    }
    int gather = strcmp(argv[1], "allgather") == 0;
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
        else printf("# MPI_%s float32, %d ranks\n#%11s %12s %11s %11s %9s %9s %7s\n", gather ? "Allgather" : "Allreduce", n,
                    "size(B)", "count", "median(us)", "p99(us)", "algbw", "busbw", "#wrong");
        fflush(stdout);
    }
    double *times = malloc(sizeof(double) * iters);
    /* sizes as jdist bench's SizeSweep: MIN, MIN*FACTOR, ... up to MAX, and MAX itself */
    long last = 0;
    for (long bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
        run_size(gather, csv, rank, n, bytes, iters, warmup, times);
        last = bytes;
    }
    if (last != max_bytes) run_size(gather, csv, rank, n, max_bytes, iters, warmup, times);
    free(times);
    MPI_Finalize();
    return 0;
}
