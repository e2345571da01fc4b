package dev.jdist.jaccl;

import dev.jdist.ConfigException;
import dev.jdist.ConnectFailedException;
import dev.jdist.DistributedException;
import dev.jdist.PeerLostException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

import static dev.jdist.jaccl.VerbsLayouts.IBV_CONTEXT;
import static dev.jdist.jaccl.VerbsLayouts.IBV_MR;
import static dev.jdist.jaccl.VerbsLayouts.IBV_PORT_ATTR;
import static dev.jdist.jaccl.VerbsLayouts.IBV_QP;
import static dev.jdist.jaccl.VerbsLayouts.IBV_QP_ATTR;
import static dev.jdist.jaccl.VerbsLayouts.IBV_QP_INIT_ATTR;
import static dev.jdist.jaccl.VerbsLayouts.IBV_RECV_WR;
import static dev.jdist.jaccl.VerbsLayouts.IBV_SEND_WR;
import static dev.jdist.jaccl.VerbsLayouts.IBV_SGE;
import static dev.jdist.jaccl.VerbsLayouts.IBV_WC;
import static dev.jdist.jaccl.VerbsLayouts.offset;

/**
 * The JACCL transport over libibverbs (docs/reference/collectives.md §4.3): one device context, protection
 * domain, completion queue (64 entries) and UC (or, with {@code JDIST_JACCL_QP=rc}, RC) queue pair per
 * connection; destinations exchanged over the side channel as 32-byte records; INIT → RTR → RTS;
 * a side-channel barrier. Buffers are page-aligned and registered with every connection's PD.
 *
 * <p>Not exercised on RDMA hardware in jdist's CI (see docs/backends.md): the machine it was built on
 * has no RDMA kernel support.
 */
final class VerbsTransport implements RdmaTransport {
    static final int PORT = 1;
    static final int PSN = 7;
    static final int CQ_ENTRIES = 64;
    static final int MAX_WR = 32;
    static final int RECORD_BYTES = 32;
    static final int ACCESS = Verbs.IBV_ACCESS_LOCAL_WRITE | Verbs.IBV_ACCESS_REMOTE_READ | Verbs.IBV_ACCESS_REMOTE_WRITE;

    private final Verbs v;
    private final int rank;
    private final Arena arena = Arena.ofShared();
    private final Conn[] conns;
    private final List<VerbsBuffer> buffers = new ArrayList<>();
    // hot-path scratch (the engine drives one transport from one thread at a time)
    private final MemorySegment sge, sendWr, recvWr, badWr, wc;
    private boolean closed;

    /** One queue pair and what it hangs off. */
    private static final class Conn {
        final int index, peer;
        final String device;
        MemorySegment ctx = MemorySegment.NULL, pd = MemorySegment.NULL, cq = MemorySegment.NULL, qp = MemorySegment.NULL;
        MemorySegment postSend, postRecv, pollCq;
        int qpn, lid, gidIndex;
        byte[] gid = new byte[16];

        Conn(int index, int peer, String device) {
            this.index = index;
            this.peer = peer;
            this.device = device;
        }

        byte[] recordOf() { return record(lid, qpn, PSN, gid); }
    }

    private record VerbsBuffer(MemorySegment segment, int[] lkeys, MemorySegment[] mrs) implements Buffer {}

    private VerbsTransport(Verbs v, int rank, Conn[] conns) {
        this.v = v;
        this.rank = rank;
        this.conns = conns;
        sge = arena.allocate(IBV_SGE);
        sendWr = arena.allocate(IBV_SEND_WR);
        recvWr = arena.allocate(IBV_RECV_WR);
        badWr = arena.allocate(ValueLayout.ADDRESS);
        wc = arena.allocate(IBV_WC.byteSize() * 32, 8);
    }

    /** The ibverbs device names this host offers (empty when there are none or the kernel has no RDMA support). */
    static List<String> deviceNames(Verbs v) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment num = a.allocate(ValueLayout.JAVA_INT);
            MemorySegment list = (MemorySegment) v.getDeviceList.invokeExact(num);
            if (list.equals(MemorySegment.NULL)) return List.of();
            int n = num.get(ValueLayout.JAVA_INT, 0);
            MemorySegment arr = list.reinterpret(ValueLayout.ADDRESS.byteSize() * n);
            List<String> names = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                MemorySegment dev = arr.getAtIndex(ValueLayout.ADDRESS, i);
                names.add(((MemorySegment) v.getDeviceName.invokeExact(dev)).reinterpret(256).getString(0));
            }
            v.freeDeviceList.invokeExact(list);
            return names;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** What {@link JacclCheck} reports about one device's port 1. */
    record DeviceInfo(String name, int portState, int lid, int gidTableLength, int ipv4GidIndex, byte[] ipv4Gid, String problem) {}

    /** Opens every device, queries port 1 and scans its GIDs; errors become {@code problem} text. */
    static List<DeviceInfo> describeDevices(Verbs v) {
        List<DeviceInfo> out = new ArrayList<>();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment num = a.allocate(ValueLayout.JAVA_INT);
            MemorySegment state = Verbs.callState(a);
            MemorySegment list = (MemorySegment) v.getDeviceList.invokeExact(num);
            if (list.equals(MemorySegment.NULL)) return out;
            int n = num.get(ValueLayout.JAVA_INT, 0);
            MemorySegment arr = list.reinterpret(ValueLayout.ADDRESS.byteSize() * n);
            try {
                for (int i = 0; i < n; i++) {
                    MemorySegment dev = arr.getAtIndex(ValueLayout.ADDRESS, i);
                    String name = ((MemorySegment) v.getDeviceName.invokeExact(dev)).reinterpret(256).getString(0);
                    MemorySegment ctx = (MemorySegment) v.openDevice.invokeExact(state, dev);
                    if (ctx.equals(MemorySegment.NULL)) {
                        out.add(new DeviceInfo(name, -1, -1, 0, -1, null, "ibv_open_device failed (errno " + Verbs.errno(state) + ")"));
                        continue;
                    }
                    try {
                        MemorySegment port = a.allocate(IBV_PORT_ATTR);
                        int rc = (int) v.queryPort.invokeExact(state, ctx, (byte) PORT, port);
                        if (rc != 0) {
                            out.add(new DeviceInfo(name, -1, -1, 0, -1, null, "ibv_query_port failed (errno " + Verbs.errno(state) + ")"));
                            continue;
                        }
                        int gids = port.get(ValueLayout.JAVA_INT, offset(IBV_PORT_ATTR, "gid_tbl_len"));
                        MemorySegment gid = a.allocate(16, 8);
                        int found = -1;
                        byte[] g4 = null;
                        for (int k = 0; k < gids && found < 0; k++) {
                            if ((int) v.queryGid.invokeExact(state, ctx, (byte) PORT, k, gid) != 0) continue;
                            byte[] g = gid.toArray(ValueLayout.JAVA_BYTE);
                            if (isIpv4Mapped(g)) {
                                found = k;
                                g4 = g;
                            }
                        }
                        out.add(new DeviceInfo(name, port.get(ValueLayout.JAVA_INT, offset(IBV_PORT_ATTR, "state")),
                                Short.toUnsignedInt(port.get(ValueLayout.JAVA_SHORT, offset(IBV_PORT_ATTR, "lid"))), gids, found, g4,
                                found < 0 ? "no IPv4-mapped GID: give the interface an IPv4 address" : null));
                    } finally {
                        int ignored = (int) v.closeDevice.invokeExact(ctx);
                    }
                }
            } finally {
                v.freeDeviceList.invokeExact(list);
            }
        } catch (RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
        return out;
    }

    /**
     * Builds every queue pair this rank needs and connects them through the side channel.
     * Connection numbering follows {@link RdmaTransport}.
     */
    static VerbsTransport connect(Verbs v, JacclConfig cfg, SideChannel side) {
        int r = cfg.rank(), n = cfg.size();
        DeviceMatrix dm = cfg.devices();
        Conn[] conns;
        if (cfg.topology() == JacclConfig.Topology.MESH) {
            conns = new Conn[n];
            for (int p = 0; p < n; p++) if (p != r) conns[p] = new Conn(p, p, dm.devices(r, p).get(0));
        } else {
            int m = dm.ringWires(), left = (r - 1 + n) % n, right = (r + 1) % n;
            conns = new Conn[2 * m];
            for (int w = 0; w < m; w++) {
                conns[w] = new Conn(w, left, dm.devices(r, left).get(w));
                conns[m + w] = new Conn(m + w, right, dm.devices(r, right).get(w));
            }
        }
        VerbsTransport t = new VerbsTransport(v, r, conns);
        try {
            t.open(cfg);
            t.exchangeAndConnect(cfg, side);
            side.barrier();
            return t;
        } catch (RuntimeException e) {
            t.close();
            throw e;
        }
    }

    private void open(JacclConfig cfg) throws RuntimeException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment num = a.allocate(ValueLayout.JAVA_INT);
            MemorySegment state = Verbs.callState(a);
            MemorySegment list = (MemorySegment) v.getDeviceList.invokeExact(num);
            List<String> names = new ArrayList<>();
            MemorySegment arr = MemorySegment.NULL;
            if (!list.equals(MemorySegment.NULL)) {
                int n = num.get(ValueLayout.JAVA_INT, 0);
                arr = list.reinterpret(ValueLayout.ADDRESS.byteSize() * n);
                for (int i = 0; i < n; i++) {
                    names.add(((MemorySegment) v.getDeviceName.invokeExact(arr.getAtIndex(ValueLayout.ADDRESS, i))).reinterpret(256).getString(0));
                }
            }
            try {
                for (Conn c : conns) {
                    if (c == null) continue;
                    int idx = names.indexOf(c.device);
                    if (idx < 0) {
                        throw new ConfigException("JACCL rank " + rank + ": the device file names ibverbs device '" + c.device
                                + "' (towards rank " + c.peer + ") but this host has " + names.size() + " device(s)"
                                + (names.isEmpty() ? "" : " " + names) + "; check `ibv_devices` on this host"
                                + (names.isEmpty() ? " (on macOS 26.2+ run `rdma_ctl enable` in recovery mode; on Linux load an RDMA driver or soft-RoCE)" : ""));
                    }
                    c.ctx = (MemorySegment) v.openDevice.invokeExact(state, arr.getAtIndex(ValueLayout.ADDRESS, idx));
                    if (c.ctx.equals(MemorySegment.NULL)) throw fail("ibv_open_device(" + c.device + ")", state);
                    c.ctx = c.ctx.reinterpret(IBV_CONTEXT.byteSize());
                    c.postSend = c.ctx.get(ValueLayout.ADDRESS, offset(IBV_CONTEXT, "ops.post_send"));
                    c.postRecv = c.ctx.get(ValueLayout.ADDRESS, offset(IBV_CONTEXT, "ops.post_recv"));
                    c.pollCq = c.ctx.get(ValueLayout.ADDRESS, offset(IBV_CONTEXT, "ops.poll_cq"));
                }
            } finally {
                if (!list.equals(MemorySegment.NULL)) v.freeDeviceList.invokeExact(list);
            }
            for (Conn c : conns) {
                if (c == null) continue;
                c.pd = (MemorySegment) v.allocPd.invokeExact(state, c.ctx);
                if (c.pd.equals(MemorySegment.NULL)) throw fail("ibv_alloc_pd(" + c.device + ")", state);
                c.cq = (MemorySegment) v.createCq.invokeExact(state, c.ctx, CQ_ENTRIES, MemorySegment.NULL, MemorySegment.NULL, 0);
                if (c.cq.equals(MemorySegment.NULL)) throw fail("ibv_create_cq(" + c.device + ", " + CQ_ENTRIES + ")", state);
                MemorySegment init = a.allocate(IBV_QP_INIT_ATTR);
                init.set(ValueLayout.ADDRESS, offset(IBV_QP_INIT_ATTR, "send_cq"), c.cq);
                init.set(ValueLayout.ADDRESS, offset(IBV_QP_INIT_ATTR, "recv_cq"), c.cq);
                init.set(ValueLayout.JAVA_INT, offset(IBV_QP_INIT_ATTR, "cap.max_send_wr"), MAX_WR);
                init.set(ValueLayout.JAVA_INT, offset(IBV_QP_INIT_ATTR, "cap.max_recv_wr"), MAX_WR);
                init.set(ValueLayout.JAVA_INT, offset(IBV_QP_INIT_ATTR, "cap.max_send_sge"), 1);
                init.set(ValueLayout.JAVA_INT, offset(IBV_QP_INIT_ATTR, "cap.max_recv_sge"), 1);
                init.set(ValueLayout.JAVA_INT, offset(IBV_QP_INIT_ATTR, "qp_type"),
                        cfg.qpMode() == JacclConfig.QpMode.RC ? Verbs.IBV_QPT_RC : Verbs.IBV_QPT_UC);
                c.qp = (MemorySegment) v.createQp.invokeExact(state, c.pd, init);
                if (c.qp.equals(MemorySegment.NULL)) {
                    throw fail("ibv_create_qp(" + c.device + ", " + cfg.qpMode() + ")", state);
                }
                c.qp = c.qp.reinterpret(IBV_QP.byteSize());
                c.qpn = c.qp.get(ValueLayout.JAVA_INT, offset(IBV_QP, "qp_num"));
                // -> INIT
                MemorySegment attr = a.allocate(IBV_QP_ATTR);
                attr.set(ValueLayout.JAVA_INT, offset(IBV_QP_ATTR, "qp_state"), Verbs.IBV_QPS_INIT);
                attr.set(ValueLayout.JAVA_BYTE, offset(IBV_QP_ATTR, "port_num"), (byte) PORT);
                attr.set(ValueLayout.JAVA_SHORT, offset(IBV_QP_ATTR, "pkey_index"), (short) 0);
                attr.set(ValueLayout.JAVA_INT, offset(IBV_QP_ATTR, "qp_access_flags"), ACCESS);
                modify(c, attr, Verbs.IBV_QP_STATE | Verbs.IBV_QP_PKEY_INDEX | Verbs.IBV_QP_PORT | Verbs.IBV_QP_ACCESS_FLAGS, "INIT", state);
                // local destination
                MemorySegment port = a.allocate(IBV_PORT_ATTR);
                int rc = (int) v.queryPort.invokeExact(state, c.ctx, (byte) PORT, port);
                if (rc != 0) throw fail("ibv_query_port(" + c.device + ", " + PORT + ")", state);
                c.lid = Short.toUnsignedInt(port.get(ValueLayout.JAVA_SHORT, offset(IBV_PORT_ATTR, "lid")));
                int gids = port.get(ValueLayout.JAVA_INT, offset(IBV_PORT_ATTR, "gid_tbl_len"));
                c.gidIndex = cfg.gidIndex().orElse(-1);
                MemorySegment gid = a.allocate(16, 8);
                if (c.gidIndex >= 0) {
                    rc = (int) v.queryGid.invokeExact(state, c.ctx, (byte) PORT, c.gidIndex, gid);
                    if (rc != 0) throw fail("ibv_query_gid(" + c.device + ", index " + c.gidIndex + " from JDIST_JACCL_GID_INDEX)", state);
                    c.gid = gid.toArray(ValueLayout.JAVA_BYTE);
                } else {
                    for (int i = 0; i < gids; i++) {
                        rc = (int) v.queryGid.invokeExact(state, c.ctx, (byte) PORT, i, gid);
                        if (rc != 0) continue;
                        byte[] g = gid.toArray(ValueLayout.JAVA_BYTE);
                        if (isIpv4Mapped(g)) {
                            c.gid = g;
                            c.gidIndex = i;
                            break;
                        }
                    }
                    if (c.gidIndex < 0) {
                        throw new ConfigException("JACCL rank " + rank + ": device " + c.device + " has no IPv4-mapped GID among its "
                                + gids + " GID(s); give its network interface an IPv4 address (a link-local 169.254.x.y/16 alias"
                                + " is enough on Thunderbolt), or set JDIST_JACCL_GID_INDEX");
                    }
                }
            }
        } catch (RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static boolean isIpv4Mapped(byte[] g) {
        for (int i = 0; i < 10; i++) if (g[i] != 0) return false;
        return g[10] == (byte) 0xFF && g[11] == (byte) 0xFF;
    }

    /** The 32-byte destination record: LID, QPN, PSN (int32 LE), 4 zero bytes, 16 GID bytes. */
    static byte[] record(int lid, int qpn, int psn, byte[] gid) {
        ByteBuffer b = ByteBuffer.allocate(RECORD_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(lid).putInt(qpn).putInt(psn).putInt(0).put(gid);
        return b.array();
    }

    private void exchangeAndConnect(JacclConfig cfg, SideChannel side) {
        int n = cfg.size();
        if (cfg.topology() == JacclConfig.Topology.MESH) {
            List<byte[]> mine = new ArrayList<>();
            for (int p = 0; p < n; p++) mine.add(p == rank ? record(-1, 0, 0, new byte[16]) : conns[p].recordOf());
            List<List<byte[]>> all = side.allGatherRecords(mine, RECORD_BYTES);
            for (int p = 0; p < n; p++) {
                if (p == rank) continue;
                List<byte[]> theirs = all.get(p);
                if (theirs.size() != n) {
                    throw new ConnectFailedException("JACCL rank " + rank + ": rank " + p + " published " + theirs.size()
                            + " destinations, expected " + n + "; do all ranks use the same device file?");
                }
                connectQp(conns[p], theirs.get(rank), cfg);
            }
        } else {
            int m = cfg.devices().ringWires();
            List<byte[]> left = new ArrayList<>(), right = new ArrayList<>();
            for (int w = 0; w < m; w++) {
                left.add(conns[w].recordOf());
                right.add(conns[m + w].recordOf());
            }
            List<List<byte[]>> lefts = side.allGatherRecords(left, RECORD_BYTES);
            List<List<byte[]>> rights = side.allGatherRecords(right, RECORD_BYTES);
            int l = (rank - 1 + n) % n, r = (rank + 1) % n;
            for (int w = 0; w < m; w++) {
                if (rights.get(l).size() != m || lefts.get(r).size() != m) {
                    throw new ConnectFailedException("JACCL rank " + rank + ": the neighbours published a different number of ring"
                            + " connections than this rank's " + m + "; do all ranks use the same device file?");
                }
                connectQp(conns[w], rights.get(l).get(w), cfg);       // left[w] <-> left neighbour's right[w]
                connectQp(conns[m + w], lefts.get(r).get(w), cfg);    // right[w] <-> right neighbour's left[w]
            }
        }
    }

    private void connectQp(Conn c, byte[] peerRecord, JacclConfig cfg) {
        ByteBuffer b = ByteBuffer.wrap(peerRecord).order(ByteOrder.LITTLE_ENDIAN);
        int lid = b.getInt(), qpn = b.getInt(), psn = b.getInt();
        b.getInt();
        byte[] gid = new byte[16];
        b.get(gid);
        boolean rc = cfg.qpMode() == JacclConfig.QpMode.RC;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = Verbs.callState(a);
            MemorySegment attr = a.allocate(IBV_QP_ATTR);
            attr.set(ValueLayout.JAVA_INT, offset(IBV_QP_ATTR, "qp_state"), Verbs.IBV_QPS_RTR);
            attr.set(ValueLayout.JAVA_INT, offset(IBV_QP_ATTR, "path_mtu"), Verbs.IBV_MTU_1024);
            attr.set(ValueLayout.JAVA_INT, offset(IBV_QP_ATTR, "rq_psn"), psn);
            attr.set(ValueLayout.JAVA_INT, offset(IBV_QP_ATTR, "dest_qp_num"), qpn);
            attr.set(ValueLayout.JAVA_SHORT, offset(IBV_QP_ATTR, "ah_attr.dlid"), (short) lid);
            attr.set(ValueLayout.JAVA_BYTE, offset(IBV_QP_ATTR, "ah_attr.port_num"), (byte) PORT);
            boolean global = false;
            for (int i = 8; i < 16; i++) global |= gid[i] != 0;
            if (global) {
                attr.set(ValueLayout.JAVA_BYTE, offset(IBV_QP_ATTR, "ah_attr.is_global"), (byte) 1);
                attr.set(ValueLayout.JAVA_BYTE, offset(IBV_QP_ATTR, "ah_attr.grh.hop_limit"), (byte) 1);
                attr.set(ValueLayout.JAVA_BYTE, offset(IBV_QP_ATTR, "ah_attr.grh.sgid_index"), (byte) c.gidIndex);
                MemorySegment.copy(gid, 0, attr, ValueLayout.JAVA_BYTE, offset(IBV_QP_ATTR, "ah_attr.grh.dgid"), 16);
            }
            int mask = Verbs.IBV_QP_STATE | Verbs.IBV_QP_AV | Verbs.IBV_QP_PATH_MTU | Verbs.IBV_QP_DEST_QPN | Verbs.IBV_QP_RQ_PSN;
            if (rc) {
                attr.set(ValueLayout.JAVA_BYTE, offset(IBV_QP_ATTR, "max_dest_rd_atomic"), (byte) 1);
                attr.set(ValueLayout.JAVA_BYTE, offset(IBV_QP_ATTR, "min_rnr_timer"), (byte) 12);
                mask |= Verbs.IBV_QP_MAX_DEST_RD_ATOMIC | Verbs.IBV_QP_MIN_RNR_TIMER;
            }
            modify(c, attr, mask, "RTR", state);
            attr.fill((byte) 0);
            attr.set(ValueLayout.JAVA_INT, offset(IBV_QP_ATTR, "qp_state"), Verbs.IBV_QPS_RTS);
            attr.set(ValueLayout.JAVA_INT, offset(IBV_QP_ATTR, "sq_psn"), PSN);
            mask = Verbs.IBV_QP_STATE | Verbs.IBV_QP_SQ_PSN;
            if (rc) {
                attr.set(ValueLayout.JAVA_BYTE, offset(IBV_QP_ATTR, "timeout"), (byte) 14);
                attr.set(ValueLayout.JAVA_BYTE, offset(IBV_QP_ATTR, "retry_cnt"), (byte) 7);
                attr.set(ValueLayout.JAVA_BYTE, offset(IBV_QP_ATTR, "rnr_retry"), (byte) 7);
                attr.set(ValueLayout.JAVA_BYTE, offset(IBV_QP_ATTR, "max_rd_atomic"), (byte) 1);
                mask |= Verbs.IBV_QP_TIMEOUT | Verbs.IBV_QP_RETRY_CNT | Verbs.IBV_QP_RNR_RETRY | Verbs.IBV_QP_MAX_QP_RD_ATOMIC;
            }
            modify(c, attr, mask, "RTS", state);
        }
    }

    private void modify(Conn c, MemorySegment attr, int mask, String to, MemorySegment state) {
        int rc;
        try {
            rc = (int) v.modifyQp.invokeExact(state, c.qp, attr, mask);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (rc != 0) {
            throw new ConnectFailedException("JACCL rank " + rank + ": ibv_modify_qp to " + to + " failed on " + c.device + " towards rank "
                    + c.peer + " (error " + rc + ", errno " + Verbs.errno(state) + "); is the device up (`ibv_devinfo`) and do both"
                    + " ranks use the same device file?");
        }
    }

    private ConnectFailedException fail(String call, MemorySegment state) {
        int errno = Verbs.errno(state);
        String hint = errno == 12 ? "; raise the locked-memory limit (ulimit -l unlimited)"
                : errno == 13 || errno == 1 ? "; make /dev/infiniband/uverbs* accessible to this user" : "";
        return new ConnectFailedException("JACCL rank " + rank + ": " + call + " failed (errno " + errno + ")" + hint);
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new DistributedException("ibverbs call failed: " + t, t);
    }

    // ------------------------------------------------------------------ RdmaTransport

    @Override
    public synchronized Buffer allocate(long bytes) {
        MemorySegment seg = arena.allocate(bytes, 4096);
        int[] lkeys = new int[conns.length];
        MemorySegment[] mrs = new MemorySegment[conns.length];
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = Verbs.callState(a);
            for (Conn c : conns) {
                if (c == null) continue;
                MemorySegment mr = (MemorySegment) v.regMr.invokeExact(state, c.pd, seg, bytes, ACCESS);
                if (mr.equals(MemorySegment.NULL)) throw fail("ibv_reg_mr(" + bytes + " bytes on " + c.device + ")", state);
                mrs[c.index] = mr.reinterpret(IBV_MR.byteSize());
                lkeys[c.index] = mrs[c.index].get(ValueLayout.JAVA_INT, offset(IBV_MR, "lkey"));
            }
        } catch (RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
        VerbsBuffer b = new VerbsBuffer(seg, lkeys, mrs);
        buffers.add(b);
        return b;
    }

    private void fillSge(Buffer buffer, int conn) {
        VerbsBuffer b = (VerbsBuffer) buffer;
        sge.set(ValueLayout.JAVA_LONG, offset(IBV_SGE, "addr"), b.segment().address());
        sge.set(ValueLayout.JAVA_INT, offset(IBV_SGE, "length"), (int) b.segment().byteSize());
        sge.set(ValueLayout.JAVA_INT, offset(IBV_SGE, "lkey"), b.lkeys()[conn]);
    }

    @Override
    public void postSend(int conn, Buffer buffer, long wrId) {
        Conn c = conns[conn];
        fillSge(buffer, conn);
        sendWr.fill((byte) 0);
        sendWr.set(ValueLayout.JAVA_LONG, offset(IBV_SEND_WR, "wr_id"), wrId);
        sendWr.set(ValueLayout.ADDRESS, offset(IBV_SEND_WR, "sg_list"), sge);
        sendWr.set(ValueLayout.JAVA_INT, offset(IBV_SEND_WR, "num_sge"), 1);
        sendWr.set(ValueLayout.JAVA_INT, offset(IBV_SEND_WR, "opcode"), Verbs.IBV_WR_SEND);
        sendWr.set(ValueLayout.JAVA_INT, offset(IBV_SEND_WR, "send_flags"), Verbs.IBV_SEND_SIGNALED);
        int rc;
        try {
            rc = (int) v.postPtr.invokeExact(c.postSend, c.qp, sendWr, badWr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (rc != 0) throw new PeerLostException("JACCL rank " + rank + ": ibv_post_send to " + describe(conn) + " failed (error " + rc + ")");
    }

    @Override
    public void postRecv(int conn, Buffer buffer, long wrId) {
        Conn c = conns[conn];
        fillSge(buffer, conn);
        recvWr.fill((byte) 0);
        recvWr.set(ValueLayout.JAVA_LONG, offset(IBV_RECV_WR, "wr_id"), wrId);
        recvWr.set(ValueLayout.ADDRESS, offset(IBV_RECV_WR, "sg_list"), sge);
        recvWr.set(ValueLayout.JAVA_INT, offset(IBV_RECV_WR, "num_sge"), 1);
        int rc;
        try {
            rc = (int) v.postPtr.invokeExact(c.postRecv, c.qp, recvWr, badWr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (rc != 0) throw new PeerLostException("JACCL rank " + rank + ": ibv_post_recv from " + describe(conn) + " failed (error " + rc + ")");
    }

    @Override
    public int poll(int conn, long[] wrIds, int[] status) {
        Conn c = conns[conn];
        int max = Math.min(32, wrIds.length);
        int got;
        try {
            got = (int) v.pollCqPtr.invokeExact(c.pollCq, c.cq, max, wc);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (got < 0) throw new PeerLostException("JACCL rank " + rank + ": ibv_poll_cq on " + describe(conn) + " failed (" + got + ")");
        long size = IBV_WC.byteSize();
        for (int i = 0; i < got; i++) {
            wrIds[i] = wc.get(ValueLayout.JAVA_LONG, i * size + offset(IBV_WC, "wr_id"));
            status[i] = wc.get(ValueLayout.JAVA_INT, i * size + offset(IBV_WC, "status"));
        }
        return got;
    }

    @Override
    public int peerOf(int conn) { return conns[conn].peer; }

    @Override
    public String describe(int conn) {
        Conn c = conns[conn];
        return "rank " + c.peer + " (via " + c.device + ", QP " + c.qpn + ")";
    }

    @Override
    public String statusText(int status) { return v.wcStatus(status); }

    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        try {
            for (Conn c : conns) if (c != null && !c.qp.equals(MemorySegment.NULL)) { int ignored = (int) v.destroyQp.invokeExact(c.qp); }
            for (VerbsBuffer b : buffers) for (MemorySegment mr : b.mrs()) if (mr != null) { int ignored = (int) v.deregMr.invokeExact(mr); }
            for (Conn c : conns) if (c != null && !c.cq.equals(MemorySegment.NULL)) { int ignored = (int) v.destroyCq.invokeExact(c.cq); }
            for (Conn c : conns) if (c != null && !c.pd.equals(MemorySegment.NULL)) { int ignored = (int) v.deallocPd.invokeExact(c.pd); }
            for (Conn c : conns) if (c != null && !c.ctx.equals(MemorySegment.NULL)) { int ignored = (int) v.closeDevice.invokeExact(c.ctx); }
        } catch (Throwable ignored) {
            // closing is best effort
        }
        arena.close();
    }

    /** Human-readable GID, for logs. */
    static String gidText(byte[] gid) { return HexFormat.ofDelimiter(":").formatHex(gid); }

}
