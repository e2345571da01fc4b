/* Baseline for bench/mpi/compare.sh: MPI_Allreduce(MPI_FLOAT, MPI_SUM) on MPI_COMM_WORLD, timed per call.
 * Usage: allreduce_bench <bytes> <iterations> <warmup>; prints on rank 0:
 *   c <bytes> <iterations> <median_us> <min_us>
 *   c-self <bytes> <iterations> <median_us> <min_us>   (the same call on MPI_COMM_SELF: no peer, no waiting)
 * and checks the result (every element must equal the world size). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long bytes = argc > 1 ? atol(argv[1]) : 1 << 20;
    int iters = argc > 2 ? atoi(argv[2]) : 50;
    int warmup = argc > 3 ? atoi(argv[3]) : 5;
    long n = bytes / 4;
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    double *t = malloc(iters * sizeof(double));
    for (long i = 0; i < n; i++) in[i] = 1.0f;
    for (int i = 0; i < warmup + iters; i++) {
        double t0 = MPI_Wtime();
        MPI_Allreduce(in, out, (int) n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        if (i >= warmup) t[i - warmup] = (MPI_Wtime() - t0) * 1e6;
    }
    int wrong = 0;
    for (long i = 0; i < n; i++) wrong += out[i] != (float) size;
    qsort(t, iters, sizeof(double), cmp);
    if (rank == 0) printf("c %ld %d %.2f %.2f wrong=%d\n", bytes, iters, t[iters / 2], t[0], wrong);
    for (int i = 0; i < warmup + iters; i++) {
        double t0 = MPI_Wtime();
        MPI_Allreduce(in, out, (int) n, MPI_FLOAT, MPI_SUM, MPI_COMM_SELF);
        if (i >= warmup) t[i - warmup] = (MPI_Wtime() - t0) * 1e6;
    }
    for (long i = 0; i < n; i++) wrong += out[i] != 1.0f;
    qsort(t, iters, sizeof(double), cmp);
    if (rank == 0) printf("c-self %ld %d %.2f %.2f wrong=%d\n", bytes, iters, t[iters / 2], t[0], wrong);
    MPI_Finalize();
    return wrong != 0;
}
