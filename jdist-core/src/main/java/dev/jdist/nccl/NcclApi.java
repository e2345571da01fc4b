package dev.jdist.nccl;

import dev.jdist.DistributedException;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

import static dev.jdist.nccl.CudaRuntime.bind;
import static dev.jdist.nccl.CudaRuntime.rc;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * libnccl bound with java.lang.foreign. Every {@code ncclResult_t} other than {@code ncclSuccess}
 * becomes a {@link DistributedException} with NCCL's error string and, where the library has it,
 * {@code ncclGetLastError}'s detail.
 */
final class NcclApi {

    /** {@code NCCL_UNIQUE_ID_BYTES}. */
    static final int UNIQUE_ID_BYTES = 128;
    /** {@code ncclUniqueId}: {@code struct { char internal[128]; }}, passed by value to ncclCommInitRank. */
    static final StructLayout UNIQUE_ID = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(UNIQUE_ID_BYTES, JAVA_BYTE).withName("internal"));

    /** {@code ncclRedOp_t}. */
    static final int SUM = 0;
    static final int MAX = 2;
    static final int MIN = 3;

    /** {@code ncclResult_t} values jdist tells apart. */
    static final int SUCCESS = 0;
    static final int SYSTEM_ERROR = 2;
    static final int REMOTE_ERROR = 6;
    static final int IN_PROGRESS = 7;

    /** {@code NCCL_API_MAGIC}. */
    private static final int CONFIG_MAGIC = 0xcafebeef;
    /**
     * The head of {@code ncclConfig_t} that NCCL 2.14 introduced: {@code size_t size; unsigned magic; unsigned
     * version; int blocking;}. NCCL copies {@code size} bytes and takes its defaults for every later field, so
     * this is all jdist passes; the version says 2.14 so that NCCL reads no field beyond these.
     */
    private static final StructLayout CONFIG_HEAD = MemoryLayout.structLayout(JAVA_LONG.withName("size"),
            JAVA_INT.withName("magic"), JAVA_INT.withName("version"), JAVA_INT.withName("blocking"));
    private static final int CONFIG_VERSION_2_14 = 21400;

    private final String libraryName;
    private final MethodHandle getUniqueId;      // (ncclUniqueId*)
    private final MethodHandle commInitRank;     // (ncclComm_t*, int, ncclUniqueId, int)
    private final MethodHandle commSplit;        // (comm, int, int, ncclComm_t*, ncclConfig_t*)
    private final MethodHandle commUserRank;     // (comm, int*)
    private final MethodHandle commCount;        // (comm, int*)
    private final MethodHandle allReduce;        // (void*, void*, size_t, type, op, comm, stream)
    private final MethodHandle allGather;        // (void*, void*, size_t, type, comm, stream)
    private final MethodHandle reduceScatter;    // (void*, void*, size_t, type, op, comm, stream)
    private final MethodHandle broadcast;        // (void*, void*, size_t, type, root, comm, stream)
    private final MethodHandle send;             // (void*, size_t, type, peer, comm, stream)
    private final MethodHandle recv;             // (void*, size_t, type, peer, comm, stream)
    private final MethodHandle groupStart;       // ()
    private final MethodHandle groupEnd;         // ()
    private final MethodHandle commDestroy;      // (comm)
    private final MethodHandle commAbort;        // (comm)
    private final MethodHandle getErrorString;   // const char* (ncclResult_t)
    private final MethodHandle getLastError;     // const char* (comm), NCCL >= 2.13; null when absent
    private final MethodHandle getVersion;       // (int*); null when absent
    private final MethodHandle commInitRankConfig;  // (ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*), NCCL >= 2.14
    private final MethodHandle commGetAsyncError;   // (comm, ncclResult_t*), NCCL >= 2.4
    private final MethodHandle commFinalize;        // (comm), NCCL >= 2.14

    NcclApi(NativeLibraries.Opened lib) {
        this.libraryName = lib.name();
        SymbolLookup l = lib.lookup();
        Linker linker = Linker.nativeLinker();
        getUniqueId = bind(linker, lib, "ncclGetUniqueId", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        commInitRank = bind(linker, lib, "ncclCommInitRank",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, UNIQUE_ID, JAVA_INT));
        commSplit = bind(linker, lib, "ncclCommSplit",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
        commUserRank = bind(linker, lib, "ncclCommUserRank", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        commCount = bind(linker, lib, "ncclCommCount", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        allReduce = bind(linker, lib, "ncclAllReduce",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
        allGather = bind(linker, lib, "ncclAllGather",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS, ADDRESS));
        reduceScatter = bind(linker, lib, "ncclReduceScatter",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
        broadcast = bind(linker, lib, "ncclBroadcast",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
        send = bind(linker, lib, "ncclSend", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
        recv = bind(linker, lib, "ncclRecv", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
        groupStart = bind(linker, lib, "ncclGroupStart", FunctionDescriptor.of(JAVA_INT));
        groupEnd = bind(linker, lib, "ncclGroupEnd", FunctionDescriptor.of(JAVA_INT));
        commDestroy = bind(linker, lib, "ncclCommDestroy", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        commAbort = bind(linker, lib, "ncclCommAbort", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        getErrorString = bind(linker, lib, "ncclGetErrorString", FunctionDescriptor.of(ADDRESS, JAVA_INT));
        getLastError = l.find("ncclGetLastError")
                .map(a -> linker.downcallHandle(a, FunctionDescriptor.of(ADDRESS, ADDRESS))).orElse(null);
        getVersion = l.find("ncclGetVersion")
                .map(a -> linker.downcallHandle(a, FunctionDescriptor.of(JAVA_INT, ADDRESS))).orElse(null);
        commInitRankConfig = l.find("ncclCommInitRankConfig").map(a -> linker.downcallHandle(a,
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, UNIQUE_ID, JAVA_INT, ADDRESS))).orElse(null);
        commGetAsyncError = l.find("ncclCommGetAsyncError")
                .map(a -> linker.downcallHandle(a, FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS))).orElse(null);
        commFinalize = l.find("ncclCommFinalize")
                .map(a -> linker.downcallHandle(a, FunctionDescriptor.of(JAVA_INT, ADDRESS))).orElse(null);
    }

    /**
     * Whether communicators can be created non-blocking and watched ({@code ncclCommInitRankConfig},
     * {@code ncclCommGetAsyncError}, {@code ncclCommFinalize}: NCCL 2.14 and later). Without them jdist
     * falls back to blocking calls, which a stopped peer can hang.
     */
    boolean nonblocking() {
        return commInitRankConfig != null && commGetAsyncError != null && commFinalize != null;
    }

    String libraryName() { return libraryName; }

    /** NCCL's version code (e.g. 22703 for 2.27.3), when the library exports {@code ncclGetVersion}. */
    Optional<Integer> version() {
        if (getVersion == null) return Optional.empty();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_INT);
            return rc(() -> (int) getVersion.invokeExact(out)) == 0 ? Optional.of(out.get(JAVA_INT, 0)) : Optional.empty();
        }
    }

    byte[] getUniqueId() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment id = a.allocate(UNIQUE_ID);
            int rc = rc(() -> (int) getUniqueId.invokeExact(id));
            if (rc != 0) throw failure("ncclGetUniqueId", null, rc);
            return id.toArray(JAVA_BYTE);
        }
    }

    /** {@code ncclCommInitRank}: blocking and collective over all {@code nranks} (NCCL before 2.14). */
    MemorySegment commInitRank(int nranks, byte[] uniqueId, int rank) {
        checkId(uniqueId);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            MemorySegment id = a.allocate(UNIQUE_ID);
            MemorySegment.copy(uniqueId, 0, id, JAVA_BYTE, 0, UNIQUE_ID_BYTES);
            int rc = rc(() -> (int) commInitRank.invokeExact(out, nranks, id, rank));
            if (rc != 0) throw failure("ncclCommInitRank(nranks=" + nranks + ", rank=" + rank + ")", null, rc);
            return out.get(ADDRESS, 0);
        }
    }

    /**
     * {@code ncclCommInitRankConfig} with {@code blocking = 0}: returns the communicator at once, while it is
     * still being created ({@link #asyncError} answers {@link #IN_PROGRESS} until every rank has joined).
     * When the call fails outright and NCCL handed out a communicator, it is in {@code failed[0]}, for the
     * caller to abort.
     */
    MemorySegment commInitRankNonblocking(int nranks, byte[] uniqueId, int rank, MemorySegment[] failed) {
        checkId(uniqueId);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            MemorySegment id = a.allocate(UNIQUE_ID);
            MemorySegment.copy(uniqueId, 0, id, JAVA_BYTE, 0, UNIQUE_ID_BYTES);
            MemorySegment config = a.allocate(CONFIG_HEAD);
            config.set(JAVA_LONG, 0, CONFIG_HEAD.byteSize());           // 20: the four fields (no tail padding)
            config.set(JAVA_INT, 8, CONFIG_MAGIC);
            config.set(JAVA_INT, 12, CONFIG_VERSION_2_14);
            config.set(JAVA_INT, 16, 0);                                // blocking = 0
            int rc = rc(() -> (int) commInitRankConfig.invokeExact(out, nranks, id, rank, config));
            MemorySegment comm = out.get(ADDRESS, 0);
            if (rc != SUCCESS && rc != IN_PROGRESS) {
                failed[0] = comm;
                throw failure("ncclCommInitRankConfig(nranks=" + nranks + ", rank=" + rank + ", non-blocking)",
                        comm.equals(MemorySegment.NULL) ? null : comm, rc);
            }
            return comm;
        }
    }

    /** {@code ncclCommGetAsyncError}: {@link #SUCCESS}, {@link #IN_PROGRESS}, or the error that broke the communicator. */
    int asyncError(MemorySegment comm) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_INT);
            int rc = rc(() -> (int) commGetAsyncError.invokeExact(comm, out));
            if (rc != 0) throw failure("ncclCommGetAsyncError", comm, rc);
            return out.get(JAVA_INT, 0);
        }
    }

    /** {@code ncclCommFinalize}: in non-blocking mode it returns {@link #IN_PROGRESS}; {@link #asyncError} says when it is done. */
    void commFinalize(MemorySegment comm) {
        int rc = rc(() -> (int) commFinalize.invokeExact(comm));
        if (rc != SUCCESS && rc != IN_PROGRESS) throw failure("ncclCommFinalize", comm, rc);
    }

    /**
     * {@code ncclCommSplit} with a NULL config: the child inherits the parent's configuration (so it is
     * non-blocking when the parent is: {@link #asyncError} of the child says when it is ready).
     * Returns {@link MemorySegment#NULL} when NCCL gives this rank no communicator.
     */
    MemorySegment commSplit(MemorySegment comm, int color, int key) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            int rc = rc(() -> (int) commSplit.invokeExact(comm, color, key, out, MemorySegment.NULL));
            if (rc != SUCCESS && rc != IN_PROGRESS) throw failure("ncclCommSplit(color=" + color + ", key=" + key + ")", comm, rc);
            return out.get(ADDRESS, 0);
        }
    }

    private static void checkId(byte[] uniqueId) {
        if (uniqueId.length != UNIQUE_ID_BYTES) {
            throw new IllegalArgumentException("an NCCL unique id has " + UNIQUE_ID_BYTES + " bytes, got " + uniqueId.length);
        }
    }

    int commUserRank(MemorySegment comm) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_INT);
            int rc = rc(() -> (int) commUserRank.invokeExact(comm, out));
            if (rc != 0) throw failure("ncclCommUserRank", comm, rc);
            return out.get(JAVA_INT, 0);
        }
    }

    int commCount(MemorySegment comm) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_INT);
            int rc = rc(() -> (int) commCount.invokeExact(comm, out));
            if (rc != 0) throw failure("ncclCommCount", comm, rc);
            return out.get(JAVA_INT, 0);
        }
    }

    void allReduce(MemorySegment send, MemorySegment recv, long count, int type, int op, MemorySegment comm,
                   MemorySegment stream) {
        int rc = rc(() -> (int) allReduce.invokeExact(send, recv, count, type, op, comm, stream));
        if (rc != SUCCESS && rc != IN_PROGRESS) throw failure("ncclAllReduce(count=" + count + ", type=" + type + ", op=" + op + ")", comm, rc);
    }

    void allGather(MemorySegment send, MemorySegment recv, long sendCount, int type, MemorySegment comm,
                   MemorySegment stream) {
        int rc = rc(() -> (int) allGather.invokeExact(send, recv, sendCount, type, comm, stream));
        if (rc != SUCCESS && rc != IN_PROGRESS) throw failure("ncclAllGather(sendcount=" + sendCount + ", type=" + type + ")", comm, rc);
    }

    void broadcast(MemorySegment send, MemorySegment recv, long count, int type, int root, MemorySegment comm,
                   MemorySegment stream) {
        int rc = rc(() -> (int) broadcast.invokeExact(send, recv, count, type, root, comm, stream));
        if (rc != SUCCESS && rc != IN_PROGRESS) throw failure("ncclBroadcast(count=" + count + ", type=" + type + ", root=" + root + ")", comm, rc);
    }

    /** {@code ncclSend} ({@code sending}) or {@code ncclRecv} of {@code count} elements to or from {@code peer}. */
    void pointToPoint(boolean sending, MemorySegment buf, long count, int type, int peer, MemorySegment comm, MemorySegment stream) {
        int rc = rc(() -> sending ? (int) send.invokeExact(buf, count, type, peer, comm, stream)
                : (int) recv.invokeExact(buf, count, type, peer, comm, stream));
        if (rc != SUCCESS && rc != IN_PROGRESS) {
            throw failure((sending ? "ncclSend(count=" : "ncclRecv(count=") + count + ", peer=" + peer + ")", comm, rc);
        }
    }

    void groupStart(MemorySegment comm) {
        int rc = rc(() -> (int) groupStart.invokeExact());
        if (rc != SUCCESS) throw failure("ncclGroupStart", comm, rc);
    }

    void groupEnd(MemorySegment comm) {
        int rc = rc(() -> (int) groupEnd.invokeExact());
        if (rc != SUCCESS && rc != IN_PROGRESS) throw failure("ncclGroupEnd", comm, rc);
    }

    void reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, int type, int op, MemorySegment comm,
                       MemorySegment stream) {
        int rc = rc(() -> (int) reduceScatter.invokeExact(send, recv, recvCount, type, op, comm, stream));
        if (rc != SUCCESS && rc != IN_PROGRESS) {
            throw failure("ncclReduceScatter(recvcount=" + recvCount + ", type=" + type + ", op=" + op + ")", comm, rc);
        }
    }

    void commDestroy(MemorySegment comm) {
        int rc = rc(() -> (int) commDestroy.invokeExact(comm));
        if (rc != 0) throw failure("ncclCommDestroy", null, rc);
    }

    void commAbort(MemorySegment comm) {
        int rc = rc(() -> (int) commAbort.invokeExact(comm));
        if (rc != 0) throw failure("ncclCommAbort", null, rc);
    }

    String errorString(int code) {
        try {
            MemorySegment s = (MemorySegment) getErrorString.invoke(code);
            return s.equals(MemorySegment.NULL) ? "unknown NCCL error" : s.reinterpret(Long.MAX_VALUE).getString(0);
        } catch (Throwable t) {
            return "NCCL error " + code;
        }
    }

    /** {@code ncclGetLastError(comm)}, or empty when the library lacks it or has nothing to say. */
    Optional<String> lastError(MemorySegment comm) {
        if (getLastError == null) return Optional.empty();
        try {
            MemorySegment s = (MemorySegment) getLastError.invoke(comm == null ? MemorySegment.NULL : comm);
            if (s.equals(MemorySegment.NULL)) return Optional.empty();
            String text = s.reinterpret(Long.MAX_VALUE).getString(0).strip();
            return text.isEmpty() ? Optional.empty() : Optional.of(text);
        } catch (Throwable t) {
            return Optional.empty();
        }
    }

    DistributedException failure(String what, MemorySegment comm, int code) {
        String detail = lastError(comm).map(s -> "; NCCL says: " + s).orElse("");
        return new DistributedException(what + " failed: " + errorString(code) + " (ncclResult " + code + ", "
                + libraryName + ")" + detail + "; set NCCL_DEBUG=WARN (or INFO) for NCCL's own log");
    }
}
