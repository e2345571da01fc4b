package dev.jdist.liveness;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.DistributedException;
import dev.jdist.OperationFingerprint;
import dev.jdist.spi.GroupImpl;
import dev.jdist.spi.JobTable;

import java.util.Map;
import java.util.TreeMap;

/**
 * What a group whose members are all jdist adds around each operation (docs/reliability.md): with
 * {@code JDIST_DEBUG=detail}, the ranks compare the operation's {@link OperationFingerprint} before it moves data (an
 * all-gather of {@value OperationFingerprint#BYTES} bytes per rank over the group itself for a collective; the two
 * fingerprints exchanged between sender and receiver for a send/recv); and a failure is explained by the job's liveness
 * watch (the rank where it began) and given the lost peer's host.
 */
public final class GroupWatch implements OperationWatch {
    private final LivenessMonitor monitor;
    private final GroupImpl impl;
    private final JobTable table;      // the world group's; null for groups made by split (their ranks are not the job's)

    public GroupWatch(LivenessMonitor monitor, GroupImpl impl, JobTable table) {
        this.monitor = monitor;
        this.impl = impl;
        this.table = table;
    }

    @Override
    public void before(OperationFingerprint op) {
        // a batch's transfers pair up with another batch's, one by one: there is no single peer to compare with
        if (!monitor.detail() || op.isBatch()) return;
        Map<Integer, OperationFingerprint> calls = op.isCollective() ? compareCollective(op) : comparePair(op);
        if (calls.isEmpty()) return;
        StringBuilder absent = new StringBuilder();
        if (op.isCollective()) {
            for (int q = 0; q < impl.size(); q++) {
                if (!calls.containsKey(q)) absent.append(absent.isEmpty() ? "" : ", ").append(q);
            }
        } else if (!calls.containsKey(op.peer())) {
            absent.append(op.peer());
        }
        String note = absent.isEmpty() ? "" : "; rank(s) " + absent + " sent no fingerprint (in a "
                + (op.isCollective() ? "send or recv" : "collective") + ", or another operation, instead)";
        if (op.isCollective() && earlierDiffer) note += ", but their earlier collectives differ (a rank called another or an extra one before)";
        throw monitor.mismatch(calls, note);
    }

    /** Every rank's fingerprint, all-gathered; empty when all are the same call at the same collective number. */
    private Map<Integer, OperationFingerprint> compareCollective(OperationFingerprint mine) {
        int n = impl.size();
        byte[] all = exchange(mine.encode(), n);
        Map<Integer, OperationFingerprint> calls = new TreeMap<>();
        boolean same = true;
        boolean sameHistory = true;
        for (int q = 0; q < n; q++) {
            OperationFingerprint f = OperationFingerprint.decode(all, q * OperationFingerprint.BYTES);
            if (f == null) {
                same = false;   // not a fingerprint: that rank moved data of another operation (a send or recv)
                continue;
            }
            calls.put(q, f);
            same &= f.collective() == mine.collective() && f.sameCall(mine, true);
            sameHistory &= f.history() == mine.history();
        }
        earlierDiffer = same && !sameHistory;
        if (same && sameHistory) return Map.of();
        calls.put(impl.rank(), mine);
        return calls;
    }

    /** Set by the last {@link #compareCollective}: the calls agree, the collectives before them do not. */
    private boolean earlierDiffer;

    private byte[] exchange(byte[] mine, int n) {
        Array out = Array.zeros(DType.UINT8, mine.length * n);
        impl.allGather(Array.fromBytes(DType.UINT8, mine, mine.length), out);
        return out.toBytes();
    }

    /** The sender's and the receiver's fingerprints, exchanged between the two; empty when they pair up. */
    private Map<Integer, OperationFingerprint> comparePair(OperationFingerprint mine) {
        int peer = mine.peer();
        Array theirs = Array.zeros(DType.UINT8, OperationFingerprint.BYTES);
        Array own = Array.fromBytes(DType.UINT8, mine.encode(), OperationFingerprint.BYTES);
        if (mine.operation().equals("send")) {
            impl.send(own, peer);
            impl.recv(theirs, peer);
        } else {
            impl.recv(theirs, peer);
            impl.send(own, peer);
        }
        OperationFingerprint other = OperationFingerprint.decode(theirs.toBytes(), 0);
        boolean paired = other != null && !other.isCollective() && !other.operation().equals(mine.operation())
                && other.peer() == impl.rank() && other.dtype() == mine.dtype() && other.elements() == mine.elements();
        if (paired) return Map.of();
        Map<Integer, OperationFingerprint> calls = new TreeMap<>();
        calls.put(impl.rank(), mine);
        if (other != null) calls.put(peer, other);
        return calls;
    }

    @Override
    public DistributedException failed(DistributedException failure, OperationFingerprint op) {
        return monitor.explain(failure);
    }

    @Override
    public String peerHost(int peer) {
        return table != null && peer < table.size() ? table.rank(peer).where() : null;
    }
}
