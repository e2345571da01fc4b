/*
 * Reference figures for docs/benchmarks.md: MPI_Allreduce (float32, sum) over a size sweep,
 * timed like `jdist bench` (warm-up, then per-iteration times; median and p99 on rank 0).
 * Build: mpicc -O2 -o mpi_allreduce mpi_allreduce.c
 * Run:   mpirun -np 2 ./mpi_allreduce MIN_BYTES MAX_BYTES ITERS WARMUP
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long min_bytes = argc > 1 ? atol(argv[1]) : 4;
    long max_bytes = argc > 2 ? atol(argv[2]) : 256L << 20;
    int iters = argc > 3 ? atoi(argv[3]) : 20;
    int warmup = argc > 4 ? atoi(argv[4]) : 5;
    if (rank == 0) printf("# MPI_Allreduce float32 sum, %d ranks\n#%11s %11s %11s %9s %9s\n", size, "size(B)", "median(us)", "p99(us)", "algbw", "busbw");
    double *times = malloc(sizeof(double) * iters);
    for (long bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
        long count = bytes / 4 > 0 ? bytes / 4 : 1;
        float *in = malloc(count * sizeof(float)), *out = malloc(count * sizeof(float));
        for (long i = 0; i < count; i++) in[i] = (float)((rank * 7 + i) % 5);
        for (int it = -warmup; it < iters; it++) {
            double t0 = MPI_Wtime();
            MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double t = MPI_Wtime() - t0;
            if (it >= 0) times[it] = t;
        }
        qsort(times, iters, sizeof(double), cmp_double);
        double med = times[iters / 2] * 1e6, p99 = times[(iters * 99 + 99) / 100 - 1] * 1e6;
        double algbw = count * 4.0 / (med * 1e3);
        if (rank == 0) printf("%12ld %11.1f %11.1f %9.3f %9.3f\n", count * 4, med, p99, algbw, algbw * 2.0 * (size - 1) / size);
        free(in);
        free(out);
    }
    free(times);
    MPI_Finalize();
    return 0;
}
