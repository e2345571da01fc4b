/*
 * A stand-in for libnccl.so.2, built by the nccl tests (NcclStubLibraries) against cudart_stub.c, so
 * that jdist's NCCL binding runs its whole call sequence without a GPU. Same symbols and signatures
 * as NCCL. Several ranks of one communicator may live in one process (one thread each): they meet
 * in a "world" keyed by the unique id and exchange buffer pointers there. Buffers must be stub
 * device pointers of the right size, the stream a stub stream.
 *
 * Test controls (not part of NCCL):
 *   JDIST_STUB_NCCL_FAIL=<function>  or jdist_stub_nccl_fail("<function>"): that function returns
 *                                    ncclInvalidUsage and ncclGetLastError explains
 *   jdist_stub_nccl_live()           communicators not yet destroyed or aborted
 *   jdist_stub_nccl_aborts()         how many ncclCommAbort calls so far
 *   jdist_stub_nccl_last_split_config_null()  whether the last ncclCommSplit got a NULL config
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int ncclResult_t;
typedef void *cudaStream_t;
typedef struct { char internal[128]; } ncclUniqueId;
enum { ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclSystemError = 2, ncclInternalError = 3,
       ncclInvalidArgument = 4, ncclInvalidUsage = 5, ncclRemoteError = 6, ncclInProgress = 7 };
enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 };

int jdist_stub_is_device_ptr(const void *p, size_t n);
int jdist_stub_is_stream(const void *s);

#define MAXR 64
#define WAIT_SECONDS 30

struct world {
    ncclUniqueId id;
    int n, joined, members, arrived, gen;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const void *send[MAXR];
    int color[MAXR], key[MAXR];
    struct world *child[MAXR];
    struct world *next;
};

struct ncclComm { struct world *w; int rank; };
typedef struct ncclComm *ncclComm_t;

static pthread_mutex_t gmu = PTHREAD_MUTEX_INITIALIZER;
static struct world *pending;       /* worlds still waiting for ranks in ncclCommInitRank */
static int live_comms;
static int aborts;
static int last_split_config_null = -1;
static char fail_on[128];
static int fail_init;
static __thread char last_error[512];

void jdist_stub_nccl_fail(const char *name) {
    pthread_mutex_lock(&gmu);
    fail_init = 1;
    snprintf(fail_on, sizeof fail_on, "%s", name ? name : "");
    pthread_mutex_unlock(&gmu);
}

int jdist_stub_nccl_live(void) { return live_comms; }

int jdist_stub_nccl_aborts(void) { return aborts; }

int jdist_stub_nccl_last_split_config_null(void) { return last_split_config_null; }

static int should_fail(const char *fn) {
    pthread_mutex_lock(&gmu);
    if (!fail_init) {
        const char *e = getenv("JDIST_STUB_NCCL_FAIL");
        snprintf(fail_on, sizeof fail_on, "%s", e ? e : "");
        fail_init = 1;
    }
    int f = strcmp(fail_on, fn) == 0;
    pthread_mutex_unlock(&gmu);
    if (f) snprintf(last_error, sizeof last_error, "jdist stub: injected failure in %s", fn);
    return f;
}

static ncclResult_t fail(ncclResult_t r, const char *fmt, const char *what) {
    snprintf(last_error, sizeof last_error, fmt, what);
    return r;
}

static struct world *new_world(int n) {
    struct world *w = calloc(1, sizeof *w);
    w->n = n;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    return w;
}

static struct timespec deadline(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += WAIT_SECONDS;
    return ts;
}

/* All n ranks of w meet; 0 on success, -1 when someone is missing after WAIT_SECONDS. */
static int barrier(struct world *w) {
    struct timespec ts = deadline();
    int rc = 0;
    pthread_mutex_lock(&w->mu);
    int g = w->gen;
    if (++w->arrived == w->n) {
        w->arrived = 0;
        w->gen++;
        pthread_cond_broadcast(&w->cv);
    } else {
        while (g == w->gen && rc == 0) rc = pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    pthread_mutex_unlock(&w->mu);
    return g == w->gen ? -1 : 0;
}

ncclResult_t ncclGetVersion(int *version) {
    if (!version) return ncclInvalidArgument;
    *version = 22703;
    return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    static unsigned counter;
    if (should_fail("ncclGetUniqueId")) return ncclInvalidUsage;
    if (!id) return fail(ncclInvalidArgument, "%s", "ncclGetUniqueId: id is NULL");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, "jdist-stub pid=%d n=%u t=%ld.%09ld", (int) getpid(),
             __atomic_add_fetch(&counter, 1, __ATOMIC_SEQ_CST), (long) ts.tv_sec, ts.tv_nsec);
    for (int i = 100; i < 128; i++) id->internal[i] = (char) (i * 7 + counter);
    return ncclSuccess;
}

static ncclComm_t join(struct world *w, int rank) {
    struct ncclComm *c = calloc(1, sizeof *c);
    c->w = w;
    c->rank = rank;
    pthread_mutex_lock(&w->mu);
    w->members++;
    pthread_mutex_unlock(&w->mu);
    __atomic_add_fetch(&live_comms, 1, __ATOMIC_SEQ_CST);
    return c;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    if (should_fail("ncclCommInitRank")) return ncclInvalidUsage;
    if (!comm) return fail(ncclInvalidArgument, "%s", "ncclCommInitRank: comm is NULL");
    if (nranks < 1 || nranks > MAXR || rank < 0 || rank >= nranks)
        return fail(ncclInvalidArgument, "%s", "ncclCommInitRank: bad nranks or rank");
    pthread_mutex_lock(&gmu);
    struct world *w = pending, **link = &pending;
    while (w && memcmp(&w->id, &id, sizeof id) != 0) { link = &w->next; w = w->next; }
    if (!w) {
        w = new_world(nranks);
        w->id = id;
        w->next = pending;
        pending = w;
        link = &pending;
    } else if (w->n != nranks) {
        pthread_mutex_unlock(&gmu);
        return fail(ncclInvalidUsage, "%s", "ncclCommInitRank: ranks disagree on nranks");
    }
    if (++w->joined == nranks) *link = w->next; /* complete: no longer pending */
    pthread_mutex_unlock(&gmu);
    ncclComm_t c = join(w, rank);
    if (barrier(w) != 0) {
        *comm = NULL;
        return fail(ncclSystemError, "%s", "ncclCommInitRank: not every rank arrived within 30 s");
    }
    *comm = c;
    return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, void *config) {
    if (should_fail("ncclCommSplit")) return ncclInvalidUsage;
    if (!comm || !newcomm) return fail(ncclInvalidArgument, "%s", "ncclCommSplit: NULL argument");
    last_split_config_null = config == NULL;
    struct world *w = comm->w;
    int r = comm->rank;
    w->color[r] = color;
    w->key[r] = key;
    if (barrier(w) != 0) return fail(ncclSystemError, "%s", "ncclCommSplit: a rank is missing");
    if (color < 0) {
        *newcomm = NULL;
    } else {
        int count = 0, mine = 0, leader = -1;
        for (int q = 0; q < w->n; q++) {
            if (w->color[q] != color) continue;
            if (leader < 0) leader = q;
            count++;
            if (w->key[q] < key || (w->key[q] == key && q < r)) mine++;
        }
        pthread_mutex_lock(&w->mu);
        if (!w->child[leader]) w->child[leader] = new_world(count);
        struct world *cw = w->child[leader];
        pthread_mutex_unlock(&w->mu);
        *newcomm = join(cw, mine);
    }
    if (barrier(w) != 0) return fail(ncclSystemError, "%s", "ncclCommSplit: a rank is missing");
    w->child[r] = NULL;
    return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
    if (should_fail("ncclCommUserRank")) return ncclInvalidUsage;
    if (!comm || !rank) return ncclInvalidArgument;
    *rank = comm->rank;
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
    if (should_fail("ncclCommCount")) return ncclInvalidUsage;
    if (!comm || !count) return ncclInvalidArgument;
    *count = comm->w->n;
    return ncclSuccess;
}

static void release(ncclComm_t comm) {
    struct world *w = comm->w;
    pthread_mutex_lock(&w->mu);
    int left = --w->members;
    pthread_mutex_unlock(&w->mu);
    if (left == 0) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        free(w);
    }
    free(comm);
    __atomic_sub_fetch(&live_comms, 1, __ATOMIC_SEQ_CST);
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    if (should_fail("ncclCommDestroy")) return ncclInvalidUsage;
    if (!comm) return ncclInvalidArgument;
    release(comm);
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
    if (!comm) return ncclSuccess;
    __atomic_add_fetch(&aborts, 1, __ATOMIC_SEQ_CST);
    release(comm);
    return ncclSuccess;
}

/* ---------------------------------------------------------------- element-wise reductions */

static size_t type_size(int t) {
    static const size_t sizes[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2 };
    return t >= 0 && t <= 9 ? sizes[t] : 0;
}

static float bf16_to_float(unsigned short h) { unsigned int u = (unsigned int) h << 16; float f; memcpy(&f, &u, 4); return f; }
static unsigned short float_to_bf16(float f) {
    unsigned int u; memcpy(&u, &f, 4);
    if ((u & 0x7fffffff) > 0x7f800000) return (unsigned short) ((u >> 16) | 0x40);
    return (unsigned short) ((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

#define REDUCE_INT(T) { T a = *(T *) acc, b = *(const T *) inc; \
    *(T *) acc = op == ncclSum ? (T) (a + b) : op == ncclProd ? (T) (a * b) : op == ncclMax ? (a < b ? b : a) : (b < a ? b : a); }
#define REDUCE_FLOAT(T) { T a = *(T *) acc, b = *(const T *) inc; \
    *(T *) acc = op == ncclSum ? a + b : op == ncclProd ? a * b : op == ncclMax ? (a < b ? b : a) : (b < a ? b : a); }

/* acc := op(acc, inc) for one element */
static void reduce1(void *acc, const void *inc, int type, int op) {
    switch (type) {
    case 0: REDUCE_INT(signed char) break;
    case 1: REDUCE_INT(unsigned char) break;
    case 2: REDUCE_INT(int) break;
    case 3: REDUCE_INT(unsigned int) break;
    case 4: REDUCE_INT(long long) break;
    case 5: REDUCE_INT(unsigned long long) break;
    case 6: { _Float16 a, b; memcpy(&a, acc, 2); memcpy(&b, inc, 2);
              float fa = a, fb = b, r = op == ncclSum ? fa + fb : op == ncclProd ? fa * fb
                                     : op == ncclMax ? (fa < fb ? fb : fa) : (fb < fa ? fb : fa);
              _Float16 h = (_Float16) r; memcpy(acc, &h, 2); break; }
    case 7: REDUCE_FLOAT(float) break;
    case 8: REDUCE_FLOAT(double) break;
    case 9: { unsigned short a, b; memcpy(&a, acc, 2); memcpy(&b, inc, 2);
              float fa = bf16_to_float(a), fb = bf16_to_float(b);
              float r = op == ncclSum ? fa + fb : op == ncclProd ? fa * fb
                      : op == ncclMax ? (fa < fb ? fb : fa) : (fb < fa ? fb : fa);
              unsigned short h = float_to_bf16(r); memcpy(acc, &h, 2); break; }
    }
}

static ncclResult_t check_args(const char *fn, const void *send, size_t send_bytes, const void *recv,
                               size_t recv_bytes, int type, int op, ncclComm_t comm, cudaStream_t stream) {
    if (should_fail(fn)) return ncclInvalidUsage;
    if (!comm) return fail(ncclInvalidArgument, "%s: comm is NULL", fn);
    if (type_size(type) == 0) return fail(ncclInvalidArgument, "%s: invalid datatype", fn);
    if (op < 0 || op > ncclAvg) return fail(ncclInvalidArgument, "%s: invalid reduction operation", fn);
    if (send_bytes && !jdist_stub_is_device_ptr(send, send_bytes))
        return fail(ncclInvalidArgument, "%s: sendbuff is not a device buffer of that size", fn);
    if (recv_bytes && !jdist_stub_is_device_ptr(recv, recv_bytes))
        return fail(ncclInvalidArgument, "%s: recvbuff is not a device buffer of that size", fn);
    if (!jdist_stub_is_stream(stream)) return fail(ncclInvalidArgument, "%s: stream is not a CUDA stream", fn);
    return ncclSuccess;
}

/*
 * Every rank publishes its send pointer; after a barrier each computes its own result into a
 * scratch buffer (reading every rank's send buffer), waits until all have finished reading, then
 * writes its recv buffer (which may be its own send buffer).
 *   kind 0: all-reduce of count elements; 1: all-gather of count elements per rank;
 *   2: reduce-scatter of count elements per rank.
 */
static ncclResult_t collective(const char *fn, int kind, const void *send, void *recv, size_t count, int type,
                               int op, ncclComm_t comm) {
    struct world *w = comm->w;
    int n = w->n, r = comm->rank;
    size_t s = type_size(type);
    size_t out_bytes = kind == 1 ? count * s * n : count * s;
    char *tmp = malloc(out_bytes ? out_bytes : 1);
    w->send[r] = send;
    if (barrier(w) != 0) { free(tmp); return fail(ncclRemoteError, "%s: a rank did not arrive within 30 s", fn); }
    if (kind == 1) {
        for (int q = 0; q < n; q++) memcpy(tmp + q * count * s, w->send[q], count * s);
    } else {
        size_t first = kind == 2 ? r * count : 0;
        memcpy(tmp, (const char *) w->send[0] + first * s, count * s);
        for (int q = 1; q < n; q++)
            for (size_t i = 0; i < count; i++)
                reduce1(tmp + i * s, (const char *) w->send[q] + (first + i) * s, type, op);
    }
    if (barrier(w) != 0) { free(tmp); return fail(ncclRemoteError, "%s: a rank did not arrive within 30 s", fn); }
    memcpy(recv, tmp, out_bytes);
    free(tmp);
    return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, int type, int op, ncclComm_t comm,
                           cudaStream_t stream) {
    size_t b = count * type_size(type);
    ncclResult_t rc = check_args("ncclAllReduce", send, b, recv, b, type, op, comm, stream);
    return rc ? rc : collective("ncclAllReduce", 0, send, recv, count, type, op, comm);
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendcount, int type, ncclComm_t comm,
                           cudaStream_t stream) {
    size_t b = sendcount * type_size(type);
    ncclResult_t rc = check_args("ncclAllGather", send, b, recv, comm ? b * comm->w->n : b, type, ncclSum, comm, stream);
    return rc ? rc : collective("ncclAllGather", 1, send, recv, sendcount, type, ncclSum, comm);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvcount, int type, int op, ncclComm_t comm,
                               cudaStream_t stream) {
    size_t b = recvcount * type_size(type);
    ncclResult_t rc = check_args("ncclReduceScatter", send, comm ? b * comm->w->n : b, recv, b, type, op, comm, stream);
    return rc ? rc : collective("ncclReduceScatter", 2, send, recv, recvcount, type, op, comm);
}

const char *ncclGetErrorString(ncclResult_t r) {
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

const char *ncclGetLastError(ncclComm_t comm) {
    (void) comm;
    return last_error;
}
