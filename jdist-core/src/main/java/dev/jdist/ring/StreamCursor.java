package dev.jdist.ring;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Where one {@link RingSchedule.Stream} stands within an operation — the bookkeeping both transports
 * share ({@link TcpTransport} over TCP, {@link ShmTransport} over shared memory): the item lists, the send and
 * receive positions, the chaining rule, and what the stream waits for when a deadline passes.
 */
abstract class StreamCursor {
    List<RingSchedule.Item> sends;
    List<RingSchedule.Item> recvs;
    boolean chained;
    /** The operation's request; {@link #work} and {@link #source} are its buffers. */
    Transfer transfer;
    MemorySegment work;
    /** Null, or where work's bytes start out ({@link Transfer#sourceOffsetOf}). */
    MemorySegment source;
    int itemSize;
    int sendIdx;
    long sendPos;
    int recvIdx;
    long recvPos;      // bytes of the current receive item that arrived
    long recvStored;   // of those, bytes stored in (or combined into) the work buffer; TCP holds partial elements aside
    /** The last try to send found no room: the peer is not reading (for now). */
    boolean sendBlocked;

    /** Points the cursor at the start of {@code s}, one stream of {@code t}. */
    final void begin(RingSchedule.Stream s, Transfer t) {
        this.sends = s.sends();
        this.recvs = s.recvs();
        this.chained = s.chained();
        this.transfer = t;
        this.work = t.work();
        this.source = t.source();
        this.itemSize = t.itemSize();
        this.sendIdx = 0;
        this.sendPos = 0;
        this.recvIdx = 0;
        this.recvPos = 0;
        this.recvStored = 0;
        this.sendBlocked = false;
    }

    /** The connection the stream sends on, or null when it sends nothing. */
    abstract RingConnection sendConnection();

    /** The connection the stream receives on, or null when it receives nothing. */
    abstract RingConnection recvConnection();

    /** The send item in progress (at {@link #sendIdx}), moving past finished ones; null when every item is sent. */
    final RingSchedule.Item sendItem() {
        while (sendIdx < sends.size()) {
            RingSchedule.Item item = sends.get(sendIdx);
            if (sendPos < item.length()) return item;
            sendIdx++;
            sendPos = 0;
        }
        return null;
    }

    /** The receive item in progress (at {@link #recvIdx}), moving past stored ones; null when every item is stored. */
    final RingSchedule.Item recvItem() {
        while (recvIdx < recvs.size()) {
            RingSchedule.Item item = recvs.get(recvIdx);
            if (recvStored < item.length()) return item;
            recvIdx++;
            recvPos = 0;
            recvStored = 0;
        }
        return null;
    }

    final boolean sendDone() { return sendIdx >= sends.size(); }

    final boolean recvDone() { return recvIdx >= recvs.size(); }

    final boolean done() { return sendDone() && recvDone(); }

    final long sendRemaining() {
        long rem = 0;
        for (int i = sendIdx; i < sends.size(); i++) rem += sends.get(i).length();
        return rem - sendPos;
    }

    final long recvRemaining() {
        long rem = 0;
        for (int i = recvIdx; i < recvs.size(); i++) rem += recvs.get(i).length();
        return rem - recvPos;
    }

    /** How many bytes of send item i may go out (a chained stream's item i forwards received item i-1). */
    final long sendable(int i, long len) {
        if (!chained || i == 0) return len;
        if (recvIdx > i - 1) return len;
        if (recvIdx == i - 1) return recvStored;
        return 0;
    }
}
