/*
 * A stand-in for libcudart, built by the nccl tests (NcclStubLibraries) so that jdist's CUDA binding
 * runs without a GPU. Same symbols and signatures as the CUDA runtime; "device" memory is host
 * memory from malloc, but every allocation is registered so that copies and the nccl stub can check
 * that device-side arguments really are device pointers (and the right size).
 *
 * Test controls (not part of CUDA):
 *   JDIST_STUB_CUDA_FAIL=<function>  or jdist_stub_cuda_fail("<function>"): that function fails
 *   JDIST_STUB_DEVICES=<n>           or jdist_stub_set_devices(n): cudaGetDeviceCount's answer (default 1)
 *   jdist_stub_cuda_live()           allocations + streams not yet freed/destroyed
 *   jdist_stub_is_device_ptr(p, n)   whether [p, p+n) lies inside one live allocation
 *   jdist_stub_is_stream(s)          whether s is a live stream
 *   jdist_stub_stream_enqueue(s, poll, arg)  puts work on stream s (the nccl stub's collectives): the
 *                                    stream is busy until poll(arg) returns nonzero. cudaStreamQuery
 *                                    polls once (cudaErrorNotReady while busy), cudaStreamSynchronize
 *                                    and cudaMemcpyAsync poll until done (at most 30 s, then an error:
 *                                    the real ones would wait forever), cudaStreamDestroy drops the work.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int cudaError_t;
typedef void *cudaStream_t;

enum { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
       cudaErrorInvalidMemcpyDirection = 21, cudaErrorInvalidResourceHandle = 400,
       cudaErrorNoDevice = 100, cudaErrorInvalidDevice = 101, cudaErrorNotReady = 600,
       cudaErrorLaunchTimeout = 702 };

/* Work queued on a stream: done when poll(arg) returns nonzero. */
struct work { int (*poll)(void *); void *arg; struct work *next; };
struct stream { struct work *head, *tail; };

/* Recursive: stream work polled under it may ask whether a pointer is device memory. */
static pthread_mutex_t mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static char fail_on[128];
static int fail_init;
static int devices = -1;
static __thread int current_device;

struct block { char *p; size_t n; int stream; };
static struct block *blocks;
static size_t nblocks, capblocks;

void jdist_stub_cuda_fail(const char *name) {
    pthread_mutex_lock(&mu);
    fail_init = 1;
    snprintf(fail_on, sizeof fail_on, "%s", name ? name : "");
    pthread_mutex_unlock(&mu);
}

void jdist_stub_set_devices(int n) { devices = n; }

static int should_fail(const char *fn) {
    pthread_mutex_lock(&mu);
    if (!fail_init) {
        const char *e = getenv("JDIST_STUB_CUDA_FAIL");
        snprintf(fail_on, sizeof fail_on, "%s", e ? e : "");
        fail_init = 1;
    }
    int f = strcmp(fail_on, fn) == 0;
    pthread_mutex_unlock(&mu);
    return f;
}

static int device_count(void) {
    if (devices < 0) {
        const char *e = getenv("JDIST_STUB_DEVICES");
        devices = e ? atoi(e) : 1;
    }
    return devices;
}

static void track(void *p, size_t n, int stream) {
    pthread_mutex_lock(&mu);
    if (nblocks == capblocks) {
        capblocks = capblocks ? capblocks * 2 : 64;
        blocks = realloc(blocks, capblocks * sizeof *blocks);
    }
    blocks[nblocks++] = (struct block){ p, n, stream };
    pthread_mutex_unlock(&mu);
}

/* 1 when removed, 0 when p was not a live block of that kind. */
static int untrack(void *p, int stream) {
    int found = 0;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < nblocks; i++) {
        if (blocks[i].p == p && blocks[i].stream == stream) {
            blocks[i] = blocks[--nblocks];
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&mu);
    return found;
}

int jdist_stub_is_device_ptr(const void *p, size_t n) {
    int ok = 0;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < nblocks; i++) {
        const char *c = p;
        if (!blocks[i].stream && c >= blocks[i].p && c + n <= blocks[i].p + blocks[i].n) { ok = 1; break; }
    }
    pthread_mutex_unlock(&mu);
    return ok;
}

int jdist_stub_is_stream(const void *s) {
    int ok = 0;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < nblocks; i++) if (blocks[i].stream && blocks[i].p == s) { ok = 1; break; }
    pthread_mutex_unlock(&mu);
    return ok;
}

int jdist_stub_cuda_live(void) {
    pthread_mutex_lock(&mu);
    int n = (int) nblocks;
    pthread_mutex_unlock(&mu);
    return n;
}

cudaError_t cudaGetDeviceCount(int *count) {
    if (should_fail("cudaGetDeviceCount")) return cudaErrorNoDevice;
    if (!count) return cudaErrorInvalidValue;
    *count = device_count();
    return *count > 0 ? cudaSuccess : cudaErrorNoDevice;
}

cudaError_t cudaSetDevice(int device) {
    if (should_fail("cudaSetDevice")) return cudaErrorInvalidDevice;
    if (device < 0 || device >= device_count()) return cudaErrorInvalidDevice;
    current_device = device;
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t n) {
    if (should_fail("cudaMalloc")) return cudaErrorMemoryAllocation;
    if (!p) return cudaErrorInvalidValue;
    *p = malloc(n ? n : 1);
    if (!*p) return cudaErrorMemoryAllocation;
    memset(*p, 0xA5, n); /* like real device memory, not zeroed */
    track(*p, n, 0);
    return cudaSuccess;
}

cudaError_t cudaFree(void *p) {
    if (should_fail("cudaFree")) return cudaErrorInvalidValue;
    if (!p) return cudaSuccess;
    if (!untrack(p, 0)) return cudaErrorInvalidValue;
    free(p);
    return cudaSuccess;
}

static cudaError_t copy(void *dst, const void *src, size_t n, int kind) {
    int dst_dev = jdist_stub_is_device_ptr(dst, n), src_dev = jdist_stub_is_device_ptr(src, n);
    switch (kind) {
    case 1: if (!dst_dev || src_dev) return cudaErrorInvalidValue; break;   /* host to device */
    case 2: if (dst_dev || !src_dev) return cudaErrorInvalidValue; break;   /* device to host */
    case 3: if (!dst_dev || !src_dev) return cudaErrorInvalidValue; break;  /* device to device */
    case 0: case 4: break;
    default: return cudaErrorInvalidMemcpyDirection;
    }
    memmove(dst, src, n);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, int kind) {
    if (should_fail("cudaMemcpy")) return cudaErrorInvalidValue;
    return copy(dst, src, n, kind);
}

/* Runs the stream's queued work as far as it goes: 1 when the stream is idle afterwards. Caller holds mu. */
static int advance(struct stream *st) {
    while (st->head) {
        struct work *w = st->head;
        if (!w->poll(w->arg)) return 0;
        st->head = w->next;
        if (!st->head) st->tail = NULL;
        free(w);
    }
    return 1;
}

/* Polls until the stream is idle or 30 s have passed (0 when idle). */
static int drain(struct stream *st) {
    struct timespec start, now, pause = { 0, 200000 };
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        pthread_mutex_lock(&mu);
        int idle = advance(st);
        pthread_mutex_unlock(&mu);
        if (idle) return 0;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec >= 30) return -1;
        nanosleep(&pause, NULL);
    }
}

void jdist_stub_stream_enqueue(cudaStream_t s, int (*poll)(void *), void *arg) {
    struct stream *st = s;
    struct work *w = calloc(1, sizeof *w);
    w->poll = poll;
    w->arg = arg;
    pthread_mutex_lock(&mu);
    if (st->tail) st->tail->next = w; else st->head = w;
    st->tail = w;
    pthread_mutex_unlock(&mu);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, cudaStream_t stream) {
    if (should_fail("cudaMemcpyAsync")) return cudaErrorInvalidValue;
    if (stream && !jdist_stub_is_stream(stream)) return cudaErrorInvalidResourceHandle;
    if (stream && drain(stream) != 0) return cudaErrorLaunchTimeout;   /* ordered after the stream's work */
    return copy(dst, src, n, kind);
}

cudaError_t cudaStreamCreate(cudaStream_t *s) {
    if (should_fail("cudaStreamCreate")) return cudaErrorInvalidValue;
    if (!s) return cudaErrorInvalidValue;
    *s = calloc(1, sizeof(struct stream));
    track(*s, sizeof(struct stream), 1);
    return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t s) {
    if (should_fail("cudaStreamQuery")) return cudaErrorInvalidValue;
    if (!s) return cudaSuccess;
    if (!jdist_stub_is_stream(s)) return cudaErrorInvalidResourceHandle;
    pthread_mutex_lock(&mu);
    int idle = advance(s);
    pthread_mutex_unlock(&mu);
    return idle ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    if (should_fail("cudaStreamSynchronize")) return cudaErrorInvalidValue;
    if (!s) return cudaSuccess;
    if (!jdist_stub_is_stream(s)) return cudaErrorInvalidResourceHandle;
    return drain(s) == 0 ? cudaSuccess : cudaErrorLaunchTimeout;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
    if (should_fail("cudaStreamDestroy")) return cudaErrorInvalidValue;
    if (!untrack(s, 1)) return cudaErrorInvalidResourceHandle;
    struct stream *st = s;
    pthread_mutex_lock(&mu);
    while (st->head) { struct work *w = st->head; st->head = w->next; free(w); }
    pthread_mutex_unlock(&mu);
    free(s);
    return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorLaunchTimeout: return "the launch timed out and was terminated";
    default: return "unrecognized error code";
    }
}
