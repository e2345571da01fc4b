package dev.jdist.algo;

import dev.jdist.DType;
import dev.jdist.ReduceOp;
import dev.jdist.algo.MeshSchedule.Buffer;
import dev.jdist.algo.MeshSchedule.Combine;
import dev.jdist.algo.MeshSchedule.Message;
import dev.jdist.algo.MeshSchedule.Step;
import dev.jdist.reduce.Reducer;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Runs every rank's {@link MeshSchedule} in memory, with the strictest delivery rule: a message moves only while both
 * the sender and the receiver are in the steps that hold it (nothing is buffered between ranks, so a schedule that
 * finishes here cannot deadlock over TCP either). Checks on the way what {@link MeshSchedule} promises: the k-th
 * message a sends to b has the length of the k-th message b receives from a, and no received range overlaps another
 * range of the same step. Combines follow docs/reference/collectives.md §1.3 with the left operand the schedule names.
 */
final class ScheduleSimulator {
    private ScheduleSimulator() {}

    /** A schedule error, with the rank and step. */
    static final class ScheduleError extends AssertionError {
        ScheduleError(String m) { super(m); }
    }

    /**
     * Runs the schedules; {@code work[r]} is rank r's WORK buffer (changed in place). Throws {@link ScheduleError} for
     * mismatched lengths, overlapping ranges, or a deadlock.
     */
    static void run(List<MeshSchedule> schedules, MemorySegment[] work, ReduceOp op, DType dtype) {
        run(schedules, work, null, op, dtype);
    }

    /** As {@link #run(List, MemorySegment[], ReduceOp, DType)}; {@code input[r]} is rank r's INPUT buffer (read only). */
    static void run(List<MeshSchedule> schedules, MemorySegment[] work, MemorySegment[] input, ReduceOp op, DType dtype) {
        int n = schedules.size();
        MemorySegment[] scratch = new MemorySegment[n];
        int[] stepOf = new int[n];
        List<List<boolean[]>> done = new ArrayList<>();
        List<Map<Message, Integer>> pairIndex = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            MeshSchedule s = schedules.get(r);
            scratch[r] = Arena.ofAuto().allocate(Math.max(1, s.scratchBytes()), 16);
            List<boolean[]> d = new ArrayList<>();
            for (Step st : s.steps()) d.add(new boolean[st.messages().size()]);
            done.add(d);
            Map<Message, Integer> idx = new IdentityHashMap<>();
            Map<String, Integer> counters = new HashMap<>();
            for (int si = 0; si < s.steps().size(); si++) {
                Step st = s.steps().get(si);
                checkOverlaps(r, si, st);
                for (Message m : st.messages()) {
                    if (m.peer() == r || m.peer() < 0 || m.peer() >= n) {
                        throw new ScheduleError("rank " + r + " step " + si + " addresses peer " + m.peer());
                    }
                    idx.put(m, counters.merge((m.send() ? "s" : "r") + m.peer(), 1, Integer::sum) - 1);
                }
            }
            pairIndex.add(idx);
        }
        while (true) {
            boolean progress = false;
            boolean finished = true;
            for (int a = 0; a < n; a++) {
                List<Step> steps = schedules.get(a).steps();
                if (stepOf[a] >= steps.size()) continue;
                finished = false;
                Step st = steps.get(stepOf[a]);
                for (int i = 0; i < st.messages().size(); i++) {
                    Message m = st.messages().get(i);
                    if (!m.send() || done.get(a).get(stepOf[a])[i]) continue;
                    int b = m.peer();
                    int k = pairIndex.get(a).get(m);
                    List<Step> bSteps = schedules.get(b).steps();
                    if (stepOf[b] >= bSteps.size()) continue;
                    Step bst = bSteps.get(stepOf[b]);
                    for (int j = 0; j < bst.messages().size(); j++) {
                        Message x = bst.messages().get(j);
                        if (x.send() || x.peer() != a || pairIndex.get(b).get(x) != k) continue;
                        if (x.length() != m.length()) {
                            throw new ScheduleError("rank " + a + " sends " + m.length() + " bytes to rank " + b + " (message " + k
                                    + ") but rank " + b + " receives " + x.length());
                        }
                        MemorySegment.copy(buf(a, m.buffer(), work, scratch, input), m.offset(), buf(b, x.buffer(), work, scratch, input),
                                x.offset(), m.length());
                        done.get(a).get(stepOf[a])[i] = true;
                        done.get(b).get(stepOf[b])[j] = true;
                        progress = true;
                    }
                }
            }
            for (int a = 0; a < n; a++) {
                List<Step> steps = schedules.get(a).steps();
                if (stepOf[a] >= steps.size()) continue;
                boolean all = true;
                for (boolean x : done.get(a).get(stepOf[a])) all &= x;
                if (!all) continue;
                for (Combine c : steps.get(stepOf[a]).combines()) combine(c, buf(a, c.into(), work, scratch, input), buf(a, c.from(), work, scratch, input), op, dtype);
                stepOf[a]++;
                progress = true;
            }
            if (finished) return;
            if (!progress) {
                StringBuilder sb = new StringBuilder("deadlock: ");
                for (int a = 0; a < n; a++) sb.append("rank ").append(a).append(" at step ").append(stepOf[a]).append("; ");
                throw new ScheduleError(sb.toString());
            }
        }
    }

    private static MemorySegment buf(int r, Buffer b, MemorySegment[] work, MemorySegment[] scratch, MemorySegment[] input) {
        return switch (b) {
            case WORK -> work[r];
            case SCRATCH -> scratch[r];
            case INPUT -> input[r];
        };
    }

    /** {@code into := op(left, right)} as the combine says (docs/reference/collectives.md §1.3, ring rule). */
    static void combine(Combine c, MemorySegment into, MemorySegment from, ReduceOp op, DType dtype) {
        int s = dtype.itemSize();
        if (c.bytes() % s != 0) throw new ScheduleError("combine of " + c.bytes() + " bytes is not whole " + dtype + " elements");
        long count = c.bytes() / s;
        if (c.fromIsLeft()) {
            // as the transport does: the result is formed in from (which the schedule must not read again) and copied
            Reducer.reduce(op, dtype, from, c.fromOffset(), into, c.intoOffset(), count);
            MemorySegment.copy(from, c.fromOffset(), into, c.intoOffset(), c.bytes());
        } else {
            Reducer.reduce(op, dtype, into, c.intoOffset(), from, c.fromOffset(), count);
        }
    }

    private static void checkOverlaps(int r, int si, Step st) {
        List<Message> ms = st.messages();
        for (int i = 0; i < ms.size(); i++) {
            Message a = ms.get(i);
            if (a.send()) continue;
            for (int j = 0; j < ms.size(); j++) {
                if (j == i) continue;
                Message b = ms.get(j);
                if (a.buffer() == b.buffer() && a.offset() < b.offset() + b.length() && b.offset() < a.offset() + a.length()) {
                    throw new ScheduleError("rank " + r + " step " + si + ": received range [" + a.offset() + ", +" + a.length()
                            + ") of " + a.buffer() + " overlaps " + (b.send() ? "a sent" : "another received") + " range [" + b.offset()
                            + ", +" + b.length() + ")");
                }
            }
        }
    }
}
