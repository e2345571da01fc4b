package dev.jdist.jaccl;

import dev.jdist.algo.MeshSchedule;
import dev.jdist.algo.MeshSchedule.Buffer;
import dev.jdist.algo.MeshSchedule.Message;
import dev.jdist.algo.MeshSchedule.Step;
import dev.jdist.algo.ScheduleRunner;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static dev.jdist.jaccl.JacclCollectives.frames;

/**
 * Runs a data-moving {@link MeshSchedule} over the {@link FrameEngine} (docs/reference/collectives.md §13.9): each step
 * is one {@link FrameEngine#run}, every message a stream of whole frames, so all messages of a step progress together
 * under the engine's deadline, liveness watch and abort, and the messages to (or from) one peer follow each other on its
 * connection in the order listed (the engine starts a connection's next stream when the one before is done).
 *
 * <p>A message is framed exactly as JACCL's own send of that many bytes (§4.5, §4.6), so a single {@code send} and the
 * matching message of a batch are the same frames: mesh — the queue pair to the peer, the frame class of the whole
 * message; ring — the message cut into {@code m} slices of {@code ⌈N/m⌉} bytes, one per wire, the frame class of the
 * slice, on the left connections when the peer is the left neighbour (sending) or not the right one (receiving).
 */
final class FrameScheduleRunner implements ScheduleRunner {
    private final FrameEngine engine;
    private final int rank, size;
    /** 0: a mesh (connection p reaches rank p); else the ring's wires per side. */
    private final int wires;
    private final int left, right;
    private MemorySegment scratch = MemorySegment.NULL;

    /** Over a mesh ({@code wires == 0}) or a ring of {@code wires} wires per side. */
    FrameScheduleRunner(FrameEngine engine, int size, int wires) {
        this.engine = engine;
        this.rank = engine.rank();
        this.size = size;
        this.wires = wires;
        this.left = Math.floorMod(rank - 1, size);
        this.right = (rank + 1) % size;
    }

    @Override
    public void run(String opName, MeshSchedule schedule, MemorySegment work, MemorySegment input) {
        List<Step> steps = schedule.steps();
        MemorySegment scratchBuffer = schedule.scratchBytes() == 0 ? null : scratch(schedule.scratchBytes());
        for (int i = 0; i < steps.size(); i++) {
            Step st = steps.get(i);
            if (!st.combines().isEmpty()) throw new IllegalArgumentException(opName + ": JACCL runs schedules that only move data");
            List<FrameEngine.SendStream> sends = new ArrayList<>();
            List<FrameEngine.RecvStream> recvs = new ArrayList<>();
            for (Message m : st.messages()) {
                MemorySegment buf = switch (m.buffer()) {
                    case WORK -> work;
                    case INPUT -> input;
                    case SCRATCH -> scratchBuffer;
                };
                if (wires == 0) meshStreams(m, buf, sends, recvs);
                else ringStreams(opName, m, buf, sends, recvs);
            }
            engine.run(steps.size() == 1 ? opName : opName + " step " + (i + 1) + "/" + steps.size(), sends, recvs, null);
        }
    }

    /** The peer's queue pair; sends use the peer's scatter slots, receives its data slots (both per peer, per class). */
    private void meshStreams(Message m, MemorySegment buf, List<FrameEngine.SendStream> sends, List<FrameEngine.RecvStream> recvs) {
        int c = Frames.classFor(m.length());
        int p = m.peer();
        if (m.send()) sends.add(sendStream(new int[] {p}, p, buf, m.offset(), m.length(), c, FrameEngine.Role.SCATTER_SEND, p));
        else recvs.add(recvStream(p, p, buf, m.offset(), m.length(), c, FrameEngine.Role.DATA, p));
    }

    /** One slice of the message per wire, as {@link RingCollectives}' send and recv cut it. */
    private void ringStreams(String opName, Message m, MemorySegment buf, List<FrameEngine.SendStream> sends,
                             List<FrameEngine.RecvStream> recvs) {
        int p = m.peer();
        if (p != left && p != right) {
            throw new IllegalStateException(opName + ": JACCL ring rank " + rank + " has no connection to rank " + p
                    + " (its neighbours are ranks " + left + " and " + right + ")");
        }
        long slice = (m.length() + wires - 1) / wires;
        int c = Frames.classFor(slice);
        for (int w = 0; w < wires; w++) {
            long start = Math.min(m.length(), w * slice), len = Math.min(slice, m.length() - start);
            if (m.send()) {
                int conn = p == left ? w : wires + w;
                sends.add(sendStream(new int[] {conn}, conn, buf, m.offset() + start, len, c, FrameEngine.Role.RING_SEND, conn));
            } else {
                int conn = p == right ? wires + w : w;
                recvs.add(recvStream(conn, conn, buf, m.offset() + start, len, c, FrameEngine.Role.RING_RECV, conn));
            }
        }
    }

    private FrameEngine.SendStream sendStream(int[] conns, int tag, MemorySegment buf, long off, long len, int c,
                                              FrameEngine.Role role, int index) {
        int f = Frames.size(c);
        return new FrameEngine.SendStream(conns, tag, frames(len, f), engine.slots(role, index, c),
                (k, frame) -> MemorySegment.copy(buf, off + k * f, frame, 0, Math.min(f, len - k * f)));
    }

    private FrameEngine.RecvStream recvStream(int conn, int tag, MemorySegment buf, long off, long len, int c,
                                              FrameEngine.Role role, int index) {
        int f = Frames.size(c);
        return new FrameEngine.RecvStream(conn, tag, frames(len, f), engine.slots(role, index, c), (k, frame) -> {
            MemorySegment.copy(frame, 0, buf, off + k * f, Math.min(f, len - k * f));
            return true;
        });
    }

    private MemorySegment scratch(long bytes) {
        if (scratch.byteSize() < bytes) scratch = Arena.ofAuto().allocate(Math.max(bytes, 2 * scratch.byteSize()), 64);
        return scratch;
    }
}
