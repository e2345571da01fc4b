package dev.jdist.algo;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

/**
 * One rank's part of an operation between the members of a {@link dev.jdist.mesh.PeerMesh}, as plain data (docs/reference/collectives.md §10.3):
 * an ordered list of {@link Step}s, each a set of messages to and from any members followed by local combines. Built
 * by pure functions (the algorithms in {@code dev.jdist.algo}, tested without sockets); {@link dev.jdist.mesh.MeshTransport} runs it.
 *
 * <p>What running a schedule means:
 * <ul>
 *   <li>Steps run one after the other. Within a step every message progresses at the same time; the messages to one
 *       peer go out in the order listed, and those from one peer are read in the order listed. When every message of
 *       the step has been sent and received, the step's combines run in the order listed; then the next step begins.</li>
 *   <li>Between two members each direction of their connection is one byte stream with no framing: the k-th message
 *       rank a's schedule sends to b has exactly the length of the k-th message b's schedule receives from a. Both
 *       sides derive every length from the operation's arguments.</li>
 *   <li>Within a step no received range overlaps another received range or a range sent in that step (a transport may
 *       write received bytes while it still sends), and every step's messages can complete when each member runs its
 *       own schedule (no deadlock even if no byte is buffered between members). {@code MeshScheduleTest} checks both
 *       for every algorithm.</li>
 * </ul>
 *
 * <p>Buffers: {@link Buffer#WORK} is what the operation works on (the output of an all-reduce, which starts as a copy of
 * the input; the output of an all-gather, with this rank's block already in place; a copy of a sum_scatter's input);
 * {@link Buffer#SCRATCH} holds received values before they are combined, {@link #scratchBytes()} long.
 *
 * @param steps        in order
 * @param scratchBytes the scratch buffer this schedule needs (0: none)
 */
public record MeshSchedule(List<Step> steps, long scratchBytes) {

    /**
     * The buffers a schedule addresses. {@code INPUT} is read-only: an operation whose input and output differ in size
     * (all_to_all_v) sends from it and receives into {@code WORK}.
     */
    public enum Buffer { WORK, SCRATCH, INPUT }

    /**
     * Bytes to or from one peer.
     *
     * @param peer   the other member's rank in the group
     * @param send   true: this rank sends {@code buffer[offset, offset+length)}; false: it receives into that range
     * @param length at least 1 (empty messages are left out of schedules, by both sides alike)
     */
    public record Message(int peer, boolean send, Buffer buffer, long offset, long length) {
        public Message {
            if (length <= 0 || offset < 0) throw new IllegalArgumentException("message of " + length + " bytes at " + offset);
        }
    }

    /**
     * A local reduction after a step's messages: {@code into[intoOffset, +bytes) := op(left, right)} element by element,
     * where the left operand is {@code from}'s bytes when {@code fromIsLeft}, else {@code into}'s own (docs/reference/collectives.md §1.3's
     * {@code acc := op(acc, inc)} with acc the left operand). Which side is left decides NaN ties and float rounding,
     * so it is part of the algorithm (docs/reference/collectives.md §10.4). With {@code fromIsLeft} the {@code from} range may be overwritten (a
     * transport forms the result there and copies it), so a schedule never reads it again before receiving into it.
     */
    public record Combine(Buffer into, long intoOffset, Buffer from, long fromOffset, long bytes, boolean fromIsLeft) {
        public Combine {
            if (bytes <= 0) throw new IllegalArgumentException("combine of " + bytes + " bytes");
        }
    }

    /** Messages that progress together, then the combines that use what they brought. */
    public record Step(List<Message> messages, List<Combine> combines) {
        public Step {
            messages = List.copyOf(messages);
            combines = List.copyOf(combines);
        }
    }

    public MeshSchedule {
        steps = List.copyOf(steps);
    }

    /** The schedule of an operation that moves nothing (zero bytes; nothing is sent, every rank returns at once). */
    public static final MeshSchedule EMPTY = new MeshSchedule(List.of(), 0);

    /** The distinct peers this schedule talks to, ascending. */
    public int[] peers() {
        TreeSet<Integer> peers = new TreeSet<>();
        for (Step s : steps) for (Message m : s.messages) peers.add(m.peer);
        return peers.stream().mapToInt(Integer::intValue).toArray();
    }

    /** Bytes this rank sends in all. */
    public long sendBytes() {
        long b = 0;
        for (Step s : steps) for (Message m : s.messages) if (m.send) b += m.length;
        return b;
    }

    /** Builds a schedule step by step; empty steps are dropped. */
    public static final class Builder {
        private final List<Step> steps = new ArrayList<>();
        private List<Message> messages = new ArrayList<>();
        private List<Combine> combines = new ArrayList<>();
        private long scratch;

        /** Sends {@code buffer[offset, +length)} to {@code peer} in the current step; nothing when {@code length == 0}. */
        public Builder send(int peer, Buffer buffer, long offset, long length) {
            if (length > 0) messages.add(new Message(peer, true, buffer, offset, length));
            return this;
        }

        /** Receives into {@code buffer[offset, +length)} from {@code peer} in the current step; nothing when {@code length == 0}. */
        public Builder recv(int peer, Buffer buffer, long offset, long length) {
            if (buffer == Buffer.INPUT) throw new IllegalArgumentException("the INPUT buffer is read-only");
            if (length > 0) {
                messages.add(new Message(peer, false, buffer, offset, length));
                if (buffer == Buffer.SCRATCH) scratch = Math.max(scratch, offset + length);
            }
            return this;
        }

        /** A combine after the current step's messages; nothing when {@code bytes == 0}. */
        public Builder combine(Buffer into, long intoOffset, Buffer from, long fromOffset, long bytes, boolean fromIsLeft) {
            if (bytes > 0) combines.add(new Combine(into, intoOffset, from, fromOffset, bytes, fromIsLeft));
            return this;
        }

        /**
         * Appends the steps of {@code sub}, a schedule among a subgroup, as steps of this one (after ending the current
         * step): the subgroup's member v is {@code peers[v]} here, its WORK offsets are moved by {@code workOffset} and
         * its SCRATCH offsets by {@code scratchOffset}. The hierarchical algorithms run a flat algorithm among one member
         * per host this way, on a slice of the vector.
         */
        public Builder embed(MeshSchedule sub, int[] peers, long workOffset, long scratchOffset) {
            endStep();
            for (Step st : sub.steps()) {
                for (Message m : st.messages()) {
                    long at = m.offset() + (m.buffer() == Buffer.WORK ? workOffset : scratchOffset);
                    if (m.send()) send(peers[m.peer()], m.buffer(), at, m.length());
                    else recv(peers[m.peer()], m.buffer(), at, m.length());
                }
                for (Combine c : st.combines()) {
                    combine(c.into(), c.intoOffset() + (c.into() == Buffer.WORK ? workOffset : scratchOffset), c.from(),
                            c.fromOffset() + (c.from() == Buffer.WORK ? workOffset : scratchOffset), c.bytes(), c.fromIsLeft());
                }
                endStep();
            }
            return this;
        }

        /** Ends the current step (an empty one is dropped). */
        public Builder endStep() {
            if (!messages.isEmpty() || !combines.isEmpty()) steps.add(new Step(messages, combines));
            messages = new ArrayList<>();
            combines = new ArrayList<>();
            return this;
        }

        public MeshSchedule build() {
            endStep();
            return steps.isEmpty() ? EMPTY : new MeshSchedule(steps, scratch);
        }
    }
}
