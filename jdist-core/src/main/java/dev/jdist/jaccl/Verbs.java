package dev.jdist.jaccl;

import dev.jdist.ConfigException;
import dev.jdist.spi.NativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The libibverbs binding through {@code java.lang.foreign} (docs/reference/collectives.md §4.9). Loaded only
 * when the JACCL backend is chosen or probed. The exported functions are bound by name; the
 * {@code static inline} hot-path calls ({@code ibv_post_send}, {@code ibv_post_recv},
 * {@code ibv_poll_cq}) are reached through the function pointers in the {@code ops} table of the
 * object's {@code struct ibv_context}, exactly as the inline functions in {@code verbs.h} do.
 */
public final class Verbs {

    // ---- constants (rdma-core values; VerbsLayoutsTest checks them against the installed headers) ----
    public static final int IBV_QPT_RC = 2;
    public static final int IBV_QPT_UC = 3;
    public static final int IBV_QPS_RESET = 0;
    public static final int IBV_QPS_INIT = 1;
    public static final int IBV_QPS_RTR = 2;
    public static final int IBV_QPS_RTS = 3;
    public static final int IBV_MTU_1024 = 3;
    public static final int IBV_WR_SEND = 2;
    public static final int IBV_SEND_SIGNALED = 2;
    public static final int IBV_ACCESS_LOCAL_WRITE = 1;
    public static final int IBV_ACCESS_REMOTE_WRITE = 1 << 1;
    public static final int IBV_ACCESS_REMOTE_READ = 1 << 2;
    public static final int IBV_QP_STATE = 1 << 0;
    public static final int IBV_QP_ACCESS_FLAGS = 1 << 3;
    public static final int IBV_QP_PKEY_INDEX = 1 << 4;
    public static final int IBV_QP_PORT = 1 << 5;
    public static final int IBV_QP_AV = 1 << 7;
    public static final int IBV_QP_PATH_MTU = 1 << 8;
    public static final int IBV_QP_TIMEOUT = 1 << 9;
    public static final int IBV_QP_RETRY_CNT = 1 << 10;
    public static final int IBV_QP_RNR_RETRY = 1 << 11;
    public static final int IBV_QP_RQ_PSN = 1 << 12;
    public static final int IBV_QP_MAX_QP_RD_ATOMIC = 1 << 13;
    public static final int IBV_QP_MIN_RNR_TIMER = 1 << 15;
    public static final int IBV_QP_SQ_PSN = 1 << 16;
    public static final int IBV_QP_MAX_DEST_RD_ATOMIC = 1 << 17;
    public static final int IBV_QP_DEST_QPN = 1 << 20;
    public static final int IBV_WC_SUCCESS = 0;
    public static final int IBV_WC_LOC_LEN_ERR = 1;
    public static final int IBV_WC_WR_FLUSH_ERR = 5;
    public static final int IBV_WC_REM_INV_REQ_ERR = 9;
    public static final int IBV_WC_RETRY_EXC_ERR = 12;
    public static final int IBV_WC_RNR_RETRY_EXC_ERR = 13;

    /** Constants by their C names, for the header check. */
    public static final Map<String, Integer> CONSTANTS = constants();

    /** The exported symbols JACCL needs; any missing makes the backend unavailable. */
    public static final List<String> REQUIRED_SYMBOLS = List.of(
            "ibv_get_device_list", "ibv_free_device_list", "ibv_get_device_name", "ibv_open_device",
            "ibv_close_device", "ibv_alloc_pd", "ibv_dealloc_pd", "ibv_create_cq", "ibv_destroy_cq",
            "ibv_create_qp", "ibv_destroy_qp", "ibv_modify_qp", "ibv_query_port", "ibv_query_gid",
            "ibv_reg_mr", "ibv_dereg_mr");

    /** The library name used when {@code JDIST_JACCL_LIB} is not set: MLX's on macOS, rdma-core's soname elsewhere. */
    public static String defaultLibrary() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        return os.contains("mac") || os.contains("darwin") ? "librdma.dylib" : "libibverbs.so.1";
    }

    private static final Linker LINKER = Linker.nativeLinker();
    private static final Linker.Option ERRNO = Linker.Option.captureCallState("errno");
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO_HANDLE =
            CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    private static final Map<String, Verbs> LOADED = new LinkedHashMap<>();

    final String library;
    final MethodHandle getDeviceList, freeDeviceList, getDeviceName, openDevice, closeDevice, allocPd,
            deallocPd, createCq, destroyCq, createQp, destroyQp, modifyQp, queryPort, queryGid, regMr, deregMr;
    final MethodHandle wcStatusStr; // optional
    /** {@code int (*)(struct ibv_cq *, int, struct ibv_wc *)} called through a function pointer. */
    final MethodHandle pollCqPtr;
    /** {@code int (*)(struct ibv_qp *, struct ibv_{send,recv}_wr *, struct ibv_{send,recv}_wr **)}. */
    final MethodHandle postPtr;

    private Verbs(String library, SymbolLookup lookup) {
        this.library = library;
        getDeviceList = bind(lookup, "ibv_get_device_list", FunctionDescriptor.of(ADDRESS, ADDRESS), false);
        freeDeviceList = bind(lookup, "ibv_free_device_list", FunctionDescriptor.ofVoid(ADDRESS), false);
        getDeviceName = bind(lookup, "ibv_get_device_name", FunctionDescriptor.of(ADDRESS, ADDRESS), false);
        openDevice = bind(lookup, "ibv_open_device", FunctionDescriptor.of(ADDRESS, ADDRESS), true);
        closeDevice = bind(lookup, "ibv_close_device", FunctionDescriptor.of(JAVA_INT, ADDRESS), false);
        allocPd = bind(lookup, "ibv_alloc_pd", FunctionDescriptor.of(ADDRESS, ADDRESS), true);
        deallocPd = bind(lookup, "ibv_dealloc_pd", FunctionDescriptor.of(JAVA_INT, ADDRESS), false);
        createCq = bind(lookup, "ibv_create_cq",
                FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT), true);
        destroyCq = bind(lookup, "ibv_destroy_cq", FunctionDescriptor.of(JAVA_INT, ADDRESS), false);
        createQp = bind(lookup, "ibv_create_qp", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS), true);
        destroyQp = bind(lookup, "ibv_destroy_qp", FunctionDescriptor.of(JAVA_INT, ADDRESS), false);
        modifyQp = bind(lookup, "ibv_modify_qp", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT), true);
        queryPort = bind(lookup, "ibv_query_port", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, ADDRESS), true);
        queryGid = bind(lookup, "ibv_query_gid",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, JAVA_INT, ADDRESS), true);
        regMr = bind(lookup, "ibv_reg_mr", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT), true);
        deregMr = bind(lookup, "ibv_dereg_mr", FunctionDescriptor.of(JAVA_INT, ADDRESS), false);
        wcStatusStr = lookup.find("ibv_wc_status_str")
                .map(a -> LINKER.downcallHandle(a, FunctionDescriptor.of(ADDRESS, JAVA_INT)))
                .orElse(null);
        pollCqPtr = LINKER.downcallHandle(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS));
        postPtr = LINKER.downcallHandle(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    }

    private static MethodHandle bind(SymbolLookup lookup, String name, FunctionDescriptor fd, boolean errno) {
        MemorySegment addr = lookup.find(name).orElseThrow(() -> new IllegalStateException(name));
        return errno ? LINKER.downcallHandle(addr, fd, ERRNO) : LINKER.downcallHandle(addr, fd);
    }

    /**
     * Loads (once per name) and binds the library.
     *
     * @throws ConfigException naming the library and the missing symbols, and how to fix it
     */
    public static synchronized Verbs load(String library) {
        Verbs v = LOADED.get(library);
        if (v != null) return v;
        NativeAccess.missing("the jaccl backend (libibverbs)").ifPresent(m -> { throw new ConfigException(m); });
        SymbolLookup lookup;
        try {
            lookup = SymbolLookup.libraryLookup(library, Arena.global());
        } catch (IllegalArgumentException | UnsatisfiedLinkError e) {
            throw new ConfigException("cannot load the ibverbs library '" + library + "' (" + e.getMessage()
                    + "); install rdma-core (Linux: the libibverbs1 package) or on macOS 26.2+ enable RDMA with"
                    + " `rdma_ctl enable`, or set JDIST_JACCL_LIB to the library's path", e);
        }
        List<String> missing = new ArrayList<>();
        for (String s : REQUIRED_SYMBOLS) if (lookup.find(s).isEmpty()) missing.add(s);
        if (!missing.isEmpty()) {
            throw new ConfigException("the ibverbs library '" + library + "' lacks " + String.join(", ", missing)
                    + "; it is not a usable libibverbs — point JDIST_JACCL_LIB at rdma-core's libibverbs.so.1");
        }
        v = new Verbs(library, lookup);
        LOADED.put(library, v);
        return v;
    }

    /** Why the library cannot be used, or empty when it loads and every symbol resolves. Never throws. */
    public static Optional<String> problem(String library) {
        try {
            load(library);
            return Optional.empty();
        } catch (RuntimeException | LinkageError e) {
            return Optional.of(String.valueOf(e.getMessage()));
        }
    }

    /** The text of an {@code ibv_wc_status} ("transport retry counter exceeded"), with its number. */
    public String wcStatus(int status) {
        String text = null;
        if (wcStatusStr != null) {
            try {
                MemorySegment p = (MemorySegment) wcStatusStr.invokeExact(status);
                if (!p.equals(MemorySegment.NULL)) text = p.reinterpret(256).getString(0);
            } catch (Throwable ignored) {
                // fall through to the number alone
            }
        }
        return text == null ? "status " + status : text + " (status " + status + ")";
    }

    static MemorySegment callState(Arena arena) {
        return arena.allocate(CALL_STATE);
    }

    static int errno(MemorySegment state) {
        return (int) ERRNO_HANDLE.get(state, 0L);
    }

    private static Map<String, Integer> constants() {
        Map<String, Integer> m = new LinkedHashMap<>();
        m.put("IBV_QPT_RC", IBV_QPT_RC);
        m.put("IBV_QPT_UC", IBV_QPT_UC);
        m.put("IBV_QPS_RESET", IBV_QPS_RESET);
        m.put("IBV_QPS_INIT", IBV_QPS_INIT);
        m.put("IBV_QPS_RTR", IBV_QPS_RTR);
        m.put("IBV_QPS_RTS", IBV_QPS_RTS);
        m.put("IBV_MTU_1024", IBV_MTU_1024);
        m.put("IBV_WR_SEND", IBV_WR_SEND);
        m.put("IBV_SEND_SIGNALED", IBV_SEND_SIGNALED);
        m.put("IBV_ACCESS_LOCAL_WRITE", IBV_ACCESS_LOCAL_WRITE);
        m.put("IBV_ACCESS_REMOTE_WRITE", IBV_ACCESS_REMOTE_WRITE);
        m.put("IBV_ACCESS_REMOTE_READ", IBV_ACCESS_REMOTE_READ);
        m.put("IBV_QP_STATE", IBV_QP_STATE);
        m.put("IBV_QP_ACCESS_FLAGS", IBV_QP_ACCESS_FLAGS);
        m.put("IBV_QP_PKEY_INDEX", IBV_QP_PKEY_INDEX);
        m.put("IBV_QP_PORT", IBV_QP_PORT);
        m.put("IBV_QP_AV", IBV_QP_AV);
        m.put("IBV_QP_PATH_MTU", IBV_QP_PATH_MTU);
        m.put("IBV_QP_TIMEOUT", IBV_QP_TIMEOUT);
        m.put("IBV_QP_RETRY_CNT", IBV_QP_RETRY_CNT);
        m.put("IBV_QP_RNR_RETRY", IBV_QP_RNR_RETRY);
        m.put("IBV_QP_RQ_PSN", IBV_QP_RQ_PSN);
        m.put("IBV_QP_MAX_QP_RD_ATOMIC", IBV_QP_MAX_QP_RD_ATOMIC);
        m.put("IBV_QP_MIN_RNR_TIMER", IBV_QP_MIN_RNR_TIMER);
        m.put("IBV_QP_SQ_PSN", IBV_QP_SQ_PSN);
        m.put("IBV_QP_MAX_DEST_RD_ATOMIC", IBV_QP_MAX_DEST_RD_ATOMIC);
        m.put("IBV_QP_DEST_QPN", IBV_QP_DEST_QPN);
        m.put("IBV_WC_SUCCESS", IBV_WC_SUCCESS);
        m.put("IBV_WC_LOC_LEN_ERR", IBV_WC_LOC_LEN_ERR);
        m.put("IBV_WC_WR_FLUSH_ERR", IBV_WC_WR_FLUSH_ERR);
        m.put("IBV_WC_REM_INV_REQ_ERR", IBV_WC_REM_INV_REQ_ERR);
        m.put("IBV_WC_RETRY_EXC_ERR", IBV_WC_RETRY_EXC_ERR);
        m.put("IBV_WC_RNR_RETRY_EXC_ERR", IBV_WC_RNR_RETRY_EXC_ERR);
        return java.util.Collections.unmodifiableMap(m);
    }
}
