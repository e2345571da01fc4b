/*
 * A stand-in for libnccl.so.2, built by the nccl tests (NcclStubLibraries) against cudart_stub.c, so
 * that jdist's NCCL binding runs its whole call sequence without a GPU. Same symbols and signatures
 * as NCCL. Several ranks of one communicator may live in one process (one thread each): they meet
 * in a "world" keyed by the unique id and exchange buffer pointers there. Buffers must be stub
 * device pointers of the right size, the stream a stub stream.
 *
 * Nonblocking communicators (ncclCommInitRankConfig with config->blocking == 0) behave as NCCL's: init
 * returns ncclInProgress and ncclCommGetAsyncError answers ncclInProgress until every rank has called
 * it; collectives return ncclInProgress and finish enqueueing by the next ncclCommGetAsyncError.
 * Collectives put their completion on the stream (jdist_stub_stream_enqueue in the cudart stub), so
 * cudaStreamQuery is how a caller sees them finish; ncclCommAbort ends work still on a stream.
 *
 * Two ways to meet:
 *   in-process (default): ranks are threads of one process; a collective's data moves inside the call.
 *   files (JDIST_STUB_NCCL_WORLD_DIR=<dir>): ranks are processes; each rank writes "init.<rank>" (its
 *     pid) and, per collective, "c<seq>.<rank>" (its send buffer); a collective completes on the stream
 *     once every rank's file is there. ncclCommGetAsyncError reports ncclRemoteError when a peer's
 *     process no longer exists (a stopped one still exists: only a deadline finds it) and it had not finalized or
 *     destroyed its communicator (those write "done.<rank>": a peer that left cleanly is not lost). Point-to-point
 *     messages (ncclSend/ncclRecv, alone or grouped) are files "p2p.<src>.<dst>.<k>". ncclCommAbort
 *     writes "abort.<rank>". Each job (unique id) gets a subdirectory; a split's colour gets one below it.
 *
 * Test controls (not part of NCCL):
 *   JDIST_STUB_NCCL_FAIL=<function>  or jdist_stub_nccl_fail("<function>"): that function returns
 *                                    ncclInvalidUsage and ncclGetLastError explains
 *   JDIST_STUB_NCCL_HANG=<collective> or jdist_stub_nccl_hang("<collective>"): that collective never
 *                                    completes on its stream (as with a stopped peer) until aborted
 *   JDIST_STUB_NCCL_ASYNC_ERROR=<code> or jdist_stub_nccl_async_error(code): ncclCommGetAsyncError
 *                                    answers that result for every initialised communicator
 *   jdist_stub_nccl_live()           communicators not yet destroyed or aborted
 *   jdist_stub_nccl_aborts()         how many ncclCommAbort calls so far
 *   jdist_stub_nccl_finalizes()      how many ncclCommFinalize calls so far
 *   jdist_stub_nccl_last_split_config_null()  whether the last ncclCommSplit got a NULL config
 *   jdist_stub_nccl_last_init_blocking()  config->blocking of the last ncclCommInitRankConfig
 *                                    (-2: ncclCommInitRank, no config; INT_MIN: left undefined)
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
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
void jdist_stub_stream_enqueue(cudaStream_t s, int (*poll)(void *), void *arg);

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
    struct msg *mail;           /* in-process point-to-point messages not yet received, oldest first */
};

struct msg { int src, dst; size_t bytes; char *data; struct msg *next; };

struct ncclComm {
    struct world *w;            /* in-process mode */
    int rank, n;
    int nonblocking;
    int initializing;           /* non-blocking init: waiting for the other ranks */
    int async;                  /* what ncclCommGetAsyncError answers (ncclInProgress while init/enqueue runs) */
    int aborted, released;
    int refs;                   /* 1 for the handle + 1 per collective still on a stream */
    int seq;                    /* collectives issued, for file names */
    char dir[512];              /* file mode: the world's directory, else "" */
    pid_t pids[MAXR];           /* file mode: each rank's pid, once its init file is read */
    int sent[MAXR], received[MAXR];  /* file mode: point-to-point messages to / from each peer so far */
};
typedef struct ncclComm *ncclComm_t;

static pthread_mutex_t gmu = PTHREAD_MUTEX_INITIALIZER;
static struct world *pending;       /* worlds still waiting for ranks in ncclCommInitRank */
static int live_comms;
static int aborts;
static int finalizes;
static int last_split_config_null = -1;
static int last_init_blocking = -3;
static char fail_on[128];
static int fail_init;
static char hang_on[128];
static int hang_init;
static int async_error;
static int async_init;
static __thread char last_error[512];

void jdist_stub_nccl_fail(const char *name) {
    pthread_mutex_lock(&gmu);
    fail_init = 1;
    snprintf(fail_on, sizeof fail_on, "%s", name ? name : "");
    pthread_mutex_unlock(&gmu);
}

void jdist_stub_nccl_hang(const char *name) {
    pthread_mutex_lock(&gmu);
    hang_init = 1;
    snprintf(hang_on, sizeof hang_on, "%s", name ? name : "");
    pthread_mutex_unlock(&gmu);
}

void jdist_stub_nccl_async_error(int code) {
    pthread_mutex_lock(&gmu);
    async_init = 1;
    async_error = code;
    pthread_mutex_unlock(&gmu);
}

static int should_hang(const char *fn) {
    pthread_mutex_lock(&gmu);
    if (!hang_init) {
        const char *e = getenv("JDIST_STUB_NCCL_HANG");
        snprintf(hang_on, sizeof hang_on, "%s", e ? e : "");
        hang_init = 1;
    }
    int h = strcmp(hang_on, fn) == 0;
    pthread_mutex_unlock(&gmu);
    return h;
}

static int injected_async_error(void) {
    pthread_mutex_lock(&gmu);
    if (!async_init) {
        const char *e = getenv("JDIST_STUB_NCCL_ASYNC_ERROR");
        async_error = e ? atoi(e) : 0;
        async_init = 1;
    }
    int a = async_error;
    pthread_mutex_unlock(&gmu);
    return a;
}

int jdist_stub_nccl_finalizes(void) { return finalizes; }

int jdist_stub_nccl_last_init_blocking(void) { return last_init_blocking; }

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
    c->n = w->n;
    c->refs = 1;
    pthread_mutex_lock(&w->mu);
    w->members++;
    pthread_mutex_unlock(&w->mu);
    __atomic_add_fetch(&live_comms, 1, __ATOMIC_SEQ_CST);
    return c;
}

static ncclResult_t init_files(ncclComm_t *comm, int nranks, int rank, int nonblocking, const char *dir);
static ncclResult_t join_files(struct ncclComm *c, ncclComm_t *comm);
static ncclResult_t split_files(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, void *config);

static ncclResult_t init_rank(const char *fn, ncclComm_t *comm, int nranks, ncclUniqueId id, int rank, int nonblocking) {
    if (should_fail(fn)) return ncclInvalidUsage;
    if (!comm) return fail(ncclInvalidArgument, "%s", "ncclCommInitRank: comm is NULL");
    if (nranks < 1 || nranks > MAXR || rank < 0 || rank >= nranks)
        return fail(ncclInvalidArgument, "%s", "ncclCommInitRank: bad nranks or rank");
    const char *dir = getenv("JDIST_STUB_NCCL_WORLD_DIR");
    if (dir && *dir) {
        /* one subdirectory per job: named by the unique id every rank of it was given */
        unsigned long long h = 1469598103934665603ULL;
        for (int i = 0; i < (int) sizeof id.internal; i++) h = (h ^ (unsigned char) id.internal[i]) * 1099511628211ULL;
        char job[512];
        snprintf(job, sizeof job, "%.480s/%016llx", dir, h);
        return init_files(comm, nranks, rank, nonblocking, job);
    }
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
    ncclComm_t c = join(w, rank);
    pthread_mutex_unlock(&gmu);
    if (nonblocking) {
        /* Ready once every rank has joined; ncclCommGetAsyncError tells. */
        c->nonblocking = 1;
        c->initializing = 1;
        c->async = ncclInProgress;
        *comm = c;
        return ncclInProgress;
    }
    if (barrier(w) != 0) {
        *comm = NULL;
        return fail(ncclSystemError, "%s", "ncclCommInitRank: not every rank arrived within 30 s");
    }
    *comm = c;
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    last_init_blocking = -2;
    return init_rank("ncclCommInitRank", comm, nranks, id, rank, 0);
}

/* ncclConfig_t as far as the stub reads it: size, magic, version, blocking (NCCL 2.14 and later). */
struct config_head { size_t size; unsigned int magic; unsigned int version; int blocking; };

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank, void *config) {
    const struct config_head *cfg = config;
    int blocking = 1;
    if (cfg) {
        if (cfg->magic != 0xcafebeef || cfg->size < 20)
            return fail(ncclInvalidArgument, "%s", "ncclCommInitRankConfig: config not initialised like NCCL_CONFIG_INITIALIZER");
        last_init_blocking = cfg->blocking;
        blocking = cfg->blocking != 0;          /* NCCL_CONFIG_UNDEF_INT means the default: blocking */
    } else {
        last_init_blocking = -2;
    }
    return init_rank("ncclCommInitRankConfig", comm, nranks, id, rank, !blocking);
}

/* ---------------------------------------------------------------- file mode (ranks are processes) */

static void world_file(const ncclComm_t c, char *out, size_t len, const char *what, int seq, int rank) {
    if (seq >= 0) snprintf(out, len, "%s/%s%d.%d", c->dir, what, seq, rank);
    else snprintf(out, len, "%s/%s.%d", c->dir, what, rank);
}

/* Writes the file whole or not at all (a temporary name, then rename). */
static int write_file(const char *path, const void *data, size_t n) {
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int) getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return -1;
    int ok = fwrite(data, 1, n, f) == n;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0) { unlink(tmp); return -1; }
    return 0;
}

/* The file's bytes (n of them) into out; 0 when present and complete. */
static int read_file(const char *path, void *out, size_t n) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t got = n ? fread(out, 1, n, f) : 0;
    fclose(f);
    return got == n ? 0 : -1;
}

/* File mode: every rank's init file is there (and the pids are known). */
static int files_ready(ncclComm_t c) {
    for (int q = 0; q < c->n; q++) {
        if (c->pids[q]) continue;
        char path[600];
        int pid = 0;
        world_file(c, path, sizeof path, "init", -1, q);
        if (read_file(path, &pid, sizeof pid) != 0) return 0;
        c->pids[q] = pid;
    }
    return 1;
}

/* File mode: the first peer whose process is gone without finalizing or destroying its communicator, or -1 (a peer
 * that left cleanly and then exited is not lost: its last operations were complete). */
static int lost_peer(ncclComm_t c) {
    for (int q = 0; q < c->n; q++) {
        if (q == c->rank || !c->pids[q]) continue;
        if (kill(c->pids[q], 0) != 0 && errno == ESRCH) {
            char path[600];
            struct stat st;
            world_file(c, path, sizeof path, "done", -1, q);
            if (stat(path, &st) != 0) return q;
        }
    }
    return -1;
}

/* File mode: this rank has left cleanly (ncclCommFinalize or ncclCommDestroy); see lost_peer. */
static void mark_done(ncclComm_t c) {
    if (!c->dir[0]) return;
    char path[600];
    world_file(c, path, sizeof path, "done", -1, c->rank);
    write_file(path, "", 0);
}

static ncclResult_t init_files(ncclComm_t *comm, int nranks, int rank, int nonblocking, const char *dir) {
    struct ncclComm *c = calloc(1, sizeof *c);
    c->rank = rank;
    c->n = nranks;
    c->refs = 1;
    c->nonblocking = nonblocking;
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    return join_files(c, comm);
}

/* Writes this rank's init file in c->dir and waits (blocking) or not (non-blocking) for the others. */
static ncclResult_t join_files(struct ncclComm *c, ncclComm_t *comm) {
    int rank = c->rank, nonblocking = c->nonblocking;
    mkdir(c->dir, 0700);
    char path[600];
    int pid = (int) getpid();
    world_file(c, path, sizeof path, "init", -1, rank);
    if (write_file(path, &pid, sizeof pid) != 0) {
        free(c);
        return fail(ncclSystemError, "%s", "ncclCommInitRank: cannot write the init file in JDIST_STUB_NCCL_WORLD_DIR");
    }
    __atomic_add_fetch(&live_comms, 1, __ATOMIC_SEQ_CST);
    if (nonblocking) {
        c->initializing = 1;
        c->async = ncclInProgress;
        *comm = c;
        return ncclInProgress;
    }
    struct timespec pause = { 0, 5000000 };
    for (int i = 0; i < WAIT_SECONDS * 200 && !files_ready(c); i++) nanosleep(&pause, NULL);
    if (!files_ready(c)) {
        *comm = NULL;
        __atomic_sub_fetch(&live_comms, 1, __ATOMIC_SEQ_CST);
        free(c);
        return fail(ncclSystemError, "%s", "ncclCommInitRank: not every rank arrived within 30 s");
    }
    *comm = c;
    return ncclSuccess;
}

/*
 * File mode split: every rank writes "s<seq>.<rank>" ({color, key}); once all are there (at most 30 s) each
 * computes its place, and the ranks of one colour form a new world in "<dir>/split<seq>-<color>".
 */
static ncclResult_t split_files(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, void *config) {
    int seq = comm->seq++;
    int mine[2] = { color, key };
    char path[600];
    world_file(comm, path, sizeof path, "s", seq, comm->rank);
    if (write_file(path, mine, sizeof mine) != 0) return fail(ncclSystemError, "%s", "ncclCommSplit: cannot write its file");
    int colors[MAXR], keys[MAXR];
    struct timespec pause = { 0, 5000000 };
    for (int q = 0; q < comm->n; q++) {
        int got[2];
        world_file(comm, path, sizeof path, "s", seq, q);
        int i = 0;
        while (read_file(path, got, sizeof got) != 0) {
            if (++i > WAIT_SECONDS * 200) return fail(ncclSystemError, "%s", "ncclCommSplit: a rank is missing");
            nanosleep(&pause, NULL);
        }
        colors[q] = got[0];
        keys[q] = got[1];
    }
    if (color < 0) {
        *newcomm = NULL;
        return ncclSuccess;
    }
    struct ncclComm *c = calloc(1, sizeof *c);
    c->refs = 1;
    c->nonblocking = comm->nonblocking && config == NULL;
    for (int q = 0; q < comm->n; q++) {
        if (colors[q] != color) continue;
        c->n++;
        if (keys[q] < key || (keys[q] == key && q < comm->rank)) c->rank++;
    }
    snprintf(c->dir, sizeof c->dir, "%.480s/split%d-%d", comm->dir, seq, color);
    return join_files(c, newcomm);
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, void *config) {
    if (should_fail("ncclCommSplit")) return ncclInvalidUsage;
    if (!comm || !newcomm) return fail(ncclInvalidArgument, "%s", "ncclCommSplit: NULL argument");
    last_split_config_null = config == NULL;
    if (comm->dir[0]) return split_files(comm, color, key, newcomm, config);
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
        (*newcomm)->nonblocking = comm->nonblocking && config == NULL;   /* NULL config: inherit the parent's */
    }
    if (barrier(w) != 0) return fail(ncclSystemError, "%s", "ncclCommSplit: a rank is missing");
    w->child[r] = NULL;
    if (*newcomm && (*newcomm)->nonblocking) {
        (*newcomm)->async = ncclInProgress;      /* ready at the next ncclCommGetAsyncError */
        return ncclInProgress;
    }
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
    *count = comm->n;
    return ncclSuccess;
}

/* Drops one reference; the struct goes when the handle is released and no collective still uses it. */
static void unref(ncclComm_t comm) {
    if (__atomic_sub_fetch(&comm->refs, 1, __ATOMIC_SEQ_CST) == 0) free(comm);
}

static void release(ncclComm_t comm) {
    struct world *w = comm->w;
    if (w) {
        pthread_mutex_lock(&gmu);
        /* a world whose ranks never all arrived is still on the pending list */
        for (struct world **link = &pending; *link; link = &(*link)->next) {
            if (*link == w && w->members == 1) { *link = w->next; break; }
        }
        pthread_mutex_unlock(&gmu);
        pthread_mutex_lock(&w->mu);
        int left = --w->members;
        pthread_mutex_unlock(&w->mu);
        if (left == 0) {
            pthread_mutex_destroy(&w->mu);
            pthread_cond_destroy(&w->cv);
            free(w);
        }
    }
    comm->released = 1;
    __atomic_sub_fetch(&live_comms, 1, __ATOMIC_SEQ_CST);
    unref(comm);
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
    if (should_fail("ncclCommFinalize")) return ncclInvalidUsage;
    if (!comm) return ncclInvalidArgument;
    __atomic_add_fetch(&finalizes, 1, __ATOMIC_SEQ_CST);
    mark_done(comm);
    if (comm->nonblocking) {
        comm->async = ncclInProgress;            /* quiescent at the next ncclCommGetAsyncError */
        return ncclInProgress;
    }
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    if (should_fail("ncclCommDestroy")) return ncclInvalidUsage;
    if (!comm) return ncclInvalidArgument;
    mark_done(comm);
    release(comm);
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
    if (!comm) return ncclSuccess;
    __atomic_add_fetch(&aborts, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&comm->aborted, 1, __ATOMIC_SEQ_CST);   /* work still on a stream ends */
    if (comm->dir[0]) {
        char path[600];
        world_file(comm, path, sizeof path, "abort", -1, comm->rank);
        write_file(path, "", 0);
    }
    release(comm);
    return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *result) {
    if (!comm || !result) return ncclInvalidArgument;
    if (comm->async == ncclInProgress) {
        int ready = 1;                           /* an enqueue, a split or a finalize: done by now */
        if (!comm->initializing) {
            /* nothing to wait for */
        } else if (comm->dir[0]) {
            ready = files_ready(comm);
        } else if (comm->w) {
            pthread_mutex_lock(&comm->w->mu);
            ready = comm->w->members >= comm->w->n;
            pthread_mutex_unlock(&comm->w->mu);
        }
        if (ready) {
            comm->initializing = 0;
            comm->async = ncclSuccess;
        }
    }
    if (comm->async == ncclSuccess) {
        int injected = injected_async_error();
        if (injected) {
            snprintf(last_error, sizeof last_error, "jdist stub: injected asynchronous error %d", injected);
            comm->async = injected;
        } else if (comm->dir[0]) {
            int q = lost_peer(comm);
            if (q >= 0) {
                snprintf(last_error, sizeof last_error, "jdist stub: rank %d (pid %d) has exited", q, (int) comm->pids[q]);
                comm->async = ncclRemoteError;
            }
        }
    }
    *result = comm->async;
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
 *   2: reduce-scatter of count elements per rank; 3: broadcast of count elements from rank op.
 */
static ncclResult_t collective_in_process(const char *fn, int kind, const void *send, void *recv, size_t count, int type,
                                          int op, ncclComm_t comm);

/* A collective's completion, queued on its stream. */
struct pending_op {
    ncclComm_t comm;
    int hang;                   /* never completes unless the communicator is aborted */
    int kind, type, op, seq;
    void *recv;
    size_t count;
};

/* acc := every rank's contribution combined, as in-process mode does it; in[q] is rank q's send buffer. */
static void combine(int kind, char *out, const char *const *in, int n, int r, size_t count, int type, int op) {
    size_t s = type_size(type);
    if (kind == 3) {            /* broadcast: op holds the root */
        memcpy(out, in[op], count * s);
        return;
    }
    if (kind == 1) {
        for (int q = 0; q < n; q++) memcpy(out + q * count * s, in[q], count * s);
        return;
    }
    size_t first = kind == 2 ? r * count : 0;
    memcpy(out, in[0] + first * s, count * s);
    for (int q = 1; q < n; q++)
        for (size_t i = 0; i < count; i++) reduce1(out + i * s, in[q] + (first + i) * s, type, op);
}

/* The stream's poll: 1 when the collective is done (or its communicator aborted). */
static int poll_op(void *arg) {
    struct pending_op *p = arg;
    ncclComm_t c = p->comm;
    int done = 0;
    if (__atomic_load_n(&c->aborted, __ATOMIC_SEQ_CST) || c->released) {
        done = 1;
    } else if (!p->hang && c->dir[0]) {
        int n = c->n;
        size_t s = type_size(p->type);
        size_t in_bytes = p->kind == 2 ? p->count * s * n : p->count * s;
        char path[600];
        struct stat st;
        int all = 1;
        for (int q = 0; q < n && all; q++) {
            world_file(c, path, sizeof path, "c", p->seq, q);
            all = stat(path, &st) == 0 && (size_t) st.st_size == in_bytes;
        }
        if (all) {
            char *buf = malloc(in_bytes * n + 1);
            const char *in[MAXR];
            for (int q = 0; q < n; q++) {
                world_file(c, path, sizeof path, "c", p->seq, q);
                read_file(path, buf + q * in_bytes, in_bytes);
                in[q] = buf + q * in_bytes;
            }
            size_t out_bytes = p->kind == 1 ? p->count * s * n : p->count * s;
            char *out = malloc(out_bytes + 1);
            combine(p->kind, out, in, n, c->rank, p->count, p->type, p->op);
            memcpy(p->recv, out, out_bytes);
            free(out);
            free(buf);
            done = 1;
        }
    }
    if (done) {
        unref(c);
        free(p);
    }
    return done;
}

static void enqueue(ncclComm_t comm, cudaStream_t stream, struct pending_op *p) {
    p->comm = comm;
    __atomic_add_fetch(&comm->refs, 1, __ATOMIC_SEQ_CST);
    jdist_stub_stream_enqueue(stream, poll_op, p);
}

static ncclResult_t collective(const char *fn, int kind, const void *send, void *recv, size_t count, int type,
                               int op, ncclComm_t comm, cudaStream_t stream) {
    if (comm->aborted) return fail(ncclInvalidUsage, "%s: the communicator was aborted", fn);
    if (comm->async != ncclSuccess) {
        return fail(comm->async == ncclInProgress ? ncclInvalidUsage : comm->async,
                    "%s: the communicator is not ready (ncclCommGetAsyncError is not ncclSuccess)", fn);
    }
    ncclResult_t started = comm->nonblocking ? ncclInProgress : ncclSuccess;
    if (comm->nonblocking) comm->async = ncclInProgress;     /* the enqueue finishes by the next query */
    if (should_hang(fn)) {
        struct pending_op *p = calloc(1, sizeof *p);
        p->hang = 1;
        enqueue(comm, stream, p);
        return started;
    }
    if (comm->dir[0]) {
        size_t s = type_size(type);
        size_t in_bytes = kind == 2 ? count * s * comm->n : count * s;
        char path[600];
        int seq = comm->seq++;
        world_file(comm, path, sizeof path, "c", seq, comm->rank);
        if (write_file(path, send, in_bytes) != 0) return fail(ncclSystemError, "%s: cannot write the world's file", fn);
        struct pending_op *p = calloc(1, sizeof *p);
        p->kind = kind;
        p->type = type;
        p->op = op;
        p->seq = seq;
        p->recv = recv;
        p->count = count;
        enqueue(comm, stream, p);
        return started;
    }
    ncclResult_t rc = collective_in_process(fn, kind, send, recv, count, type, op, comm);
    return rc != ncclSuccess ? rc : started;
}

static ncclResult_t collective_in_process(const char *fn, int kind, const void *send, void *recv, size_t count, int type,
                                          int op, ncclComm_t comm) {
    struct world *w = comm->w;
    int n = w->n, r = comm->rank;
    size_t s = type_size(type);
    size_t out_bytes = kind == 1 ? count * s * n : count * s;
    char *tmp = malloc(out_bytes ? out_bytes : 1);
    w->send[r] = send;
    if (barrier(w) != 0) { free(tmp); return fail(ncclRemoteError, "%s: a rank did not arrive within 30 s", fn); }
    if (kind == 3) {            /* broadcast: op holds the root */
        memcpy(tmp, w->send[op], count * s);
    } else if (kind == 1) {
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
    return rc ? rc : collective("ncclAllReduce", 0, send, recv, count, type, op, comm, stream);
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendcount, int type, ncclComm_t comm,
                           cudaStream_t stream) {
    size_t b = sendcount * type_size(type);
    ncclResult_t rc = check_args("ncclAllGather", send, b, recv, comm ? b * comm->n : b, type, ncclSum, comm, stream);
    return rc ? rc : collective("ncclAllGather", 1, send, recv, sendcount, type, ncclSum, comm, stream);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvcount, int type, int op, ncclComm_t comm,
                               cudaStream_t stream) {
    size_t b = recvcount * type_size(type);
    ncclResult_t rc = check_args("ncclReduceScatter", send, comm ? b * comm->n : b, recv, b, type, op, comm, stream);
    return rc ? rc : collective("ncclReduceScatter", 2, send, recv, recvcount, type, op, comm, stream);
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

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, int type, int root, ncclComm_t comm,
                           cudaStream_t stream) {
    size_t b = count * type_size(type);
    ncclResult_t rc = check_args("ncclBroadcast", send, b, recv, b, type, ncclSum, comm, stream);
    if (!rc && (root < 0 || root >= comm->n)) rc = fail(ncclInvalidArgument, "%s: invalid root", "ncclBroadcast");
    return rc ? rc : collective("ncclBroadcast", 3, send, recv, count, type, root, comm, stream);
}

/*
 * Point-to-point: ncclSend/ncclRecv, alone or between ncclGroupStart and ncclGroupEnd. The stand-in buffers every
 * send (in the world's mailbox in-process, as a file per message in file mode), so a group posts all its sends and
 * then takes its receives in order: no order of a group can deadlock, as with NCCL's grouped calls. The data moves
 * inside the call; in file mode collectives finish later, on their stream, so the call first waits for the work
 * already on its streams (NCCL's stream order: a send after an all-reduce sends the all-reduce's result).
 */
int cudaStreamSynchronize(cudaStream_t s);
struct p2p { int send, peer; void *buf; size_t bytes; ncclComm_t comm; cudaStream_t stream; };
static __thread struct p2p group_ops[4096];
static __thread int group_depth, group_count;

static void p2p_file(ncclComm_t c, char *out, size_t len, int src, int dst, int k) {
    snprintf(out, len, "%s/p2p.%d.%d.%d", c->dir, src, dst, k);
}

static ncclResult_t post(struct p2p *op) {
    ncclComm_t c = op->comm;
    if (c->dir[0]) {
        char path[600];
        p2p_file(c, path, sizeof path, c->rank, op->peer, c->sent[op->peer]++);
        return write_file(path, op->buf, op->bytes) == 0 ? ncclSuccess
                : fail(ncclSystemError, "%s: cannot write the message file", "ncclSend");
    }
    struct msg *m = calloc(1, sizeof *m);
    m->src = c->rank;
    m->dst = op->peer;
    m->bytes = op->bytes;
    m->data = malloc(op->bytes ? op->bytes : 1);
    memcpy(m->data, op->buf, op->bytes);
    struct world *w = c->w;
    pthread_mutex_lock(&w->mu);
    struct msg **tail = &w->mail;
    while (*tail) tail = &(*tail)->next;
    *tail = m;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return ncclSuccess;
}

static ncclResult_t take(struct p2p *op) {
    ncclComm_t c = op->comm;
    if (c->dir[0]) {
        char path[600];
        struct stat st;
        p2p_file(c, path, sizeof path, op->peer, c->rank, c->received[op->peer]++);
        for (int waited = 0; waited < WAIT_SECONDS * 1000; waited++) {
            if (stat(path, &st) == 0) {
                if ((size_t) st.st_size != op->bytes)
                    return fail(ncclInvalidUsage, "%s: the message's size differs from the receive's", "ncclRecv");
                int rc = read_file(path, op->buf, op->bytes);
                unlink(path);
                return rc == 0 ? ncclSuccess : fail(ncclSystemError, "%s: cannot read the message file", "ncclRecv");
            }
            if (__atomic_load_n(&c->aborted, __ATOMIC_SEQ_CST)) return fail(ncclInvalidUsage, "%s: aborted", "ncclRecv");
            if (lost_peer(c) == op->peer) return fail(ncclRemoteError, "%s: the peer's process is gone", "ncclRecv");
            usleep(1000);
        }
        return fail(ncclRemoteError, "%s: no message within 30 s", "ncclRecv");
    }
    struct world *w = c->w;
    struct timespec ts = deadline();
    int rc = 0;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        for (struct msg **pm = &w->mail; *pm; pm = &(*pm)->next) {
            struct msg *m = *pm;
            if (m->src != op->peer || m->dst != c->rank) continue;
            *pm = m->next;
            pthread_mutex_unlock(&w->mu);
            ncclResult_t r = m->bytes == op->bytes ? ncclSuccess
                    : fail(ncclInvalidUsage, "%s: the message's size differs from the receive's", "ncclRecv");
            if (r == ncclSuccess) memcpy(op->buf, m->data, m->bytes);
            free(m->data);
            free(m);
            return r;
        }
        if (rc != 0) break;
        rc = pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    pthread_mutex_unlock(&w->mu);
    return fail(ncclRemoteError, "%s: no message within 30 s", "ncclRecv");
}

static ncclResult_t run_p2p(struct p2p *ops, int k) {
    for (int i = 0; i < k; i++) {
        if (ops[i].comm->dir[0] && cudaStreamSynchronize(ops[i].stream) != 0)
            return fail(ncclSystemError, "%s: the work before it on its stream did not finish within 30 s", ops[i].send ? "ncclSend" : "ncclRecv");
    }
    for (int i = 0; i < k; i++) {
        if (!ops[i].send) continue;
        ncclResult_t rc = post(&ops[i]);
        if (rc) return rc;
    }
    for (int i = 0; i < k; i++) {
        if (ops[i].send) continue;
        ncclResult_t rc = take(&ops[i]);
        if (rc) return rc;
    }
    return ncclSuccess;
}

static ncclResult_t p2p_op(const char *fn, int send, void *buf, size_t count, int type, int peer, ncclComm_t comm,
                           cudaStream_t stream) {
    size_t b = count * type_size(type);
    ncclResult_t rc = check_args(fn, send ? buf : NULL, send ? b : 0, send ? NULL : buf, send ? 0 : b, type, ncclSum,
                                 comm, stream);
    if (rc) return rc;
    if (peer < 0 || peer >= comm->n || peer == comm->rank) return fail(ncclInvalidArgument, "%s: invalid peer", fn);
    if (comm->aborted) return fail(ncclInvalidUsage, "%s: the communicator was aborted", fn);
    struct p2p op = {send, peer, buf, b, comm, stream};
    if (group_depth == 0) return run_p2p(&op, 1);
    if (group_count == (int) (sizeof group_ops / sizeof group_ops[0])) return fail(ncclInvalidUsage, "%s: too many calls in one group", fn);
    group_ops[group_count++] = op;
    return ncclSuccess;
}

ncclResult_t ncclSend(const void *buf, size_t count, int type, int peer, ncclComm_t comm, cudaStream_t stream) {
    return p2p_op("ncclSend", 1, (void *) buf, count, type, peer, comm, stream);
}

ncclResult_t ncclRecv(void *buf, size_t count, int type, int peer, ncclComm_t comm, cudaStream_t stream) {
    return p2p_op("ncclRecv", 0, buf, count, type, peer, comm, stream);
}

ncclResult_t ncclGroupStart(void) {
    group_depth++;
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
    if (group_depth <= 0) return fail(ncclInvalidUsage, "%s: no ncclGroupStart before it", "ncclGroupEnd");
    if (--group_depth > 0) return ncclSuccess;
    int k = group_count;
    group_count = 0;
    return run_p2p(group_ops, k);
}
