package dev.jdist.ring;

import dev.jdist.Array;
import dev.jdist.CollectiveMismatchException;
import dev.jdist.ConfigException;
import dev.jdist.DType;
import dev.jdist.DeadlineExceededException;
import dev.jdist.Distributed;
import dev.jdist.DistributedException;
import dev.jdist.Group;
import dev.jdist.PeerLostException;
import dev.jdist.PeerUnresponsiveException;
import dev.jdist.TestGroups;

/**
 * A rank for the liveness tests (and bench/chaos/): forms its group with {@code Distributed.init}, then
 * <ul>
 *   <li>{@code loop ITERATIONS SECONDS [PAUSE_RANK PAUSE_SECONDS PAUSE_AT]}: all_sum of 1000 float32 in a loop, checking
 *       every sum, until ITERATIONS or SECONDS (the ranks stop together: the sums carry whether each wants another
 *       round); rank PAUSE_RANK sleeps PAUSE_SECONDS before iteration PAUSE_AT (a healthy rank that computes long);</li>
 *   <li>{@code mismatch op|dtype|shape RANK [SECONDS]}: one all_sum first, then rank RANK calls another collective than
 *       the others (op: all_sum float32[1024] against all_gather int32[12]; dtype: int32[256] against float32[256];
 *       shape: [2,128] against [256]), then, after SECONDS of sleep, 20 more all_sums.</li>
 *   <li>{@code split-mismatch RANK [SECONDS]}: the same "op" mismatch inside a group made by split (colour = rank mod 2,
 *       one all_sum in it first); the other group runs its all_sum; then SECONDS of sleep and 20 all_sums of the job.</li>
 * </ul>
 * Prints "looping" once under way (on a ring, then its progress deadline: "progress deadline N s"), then "finished" or "FAILED Class peer=P state=S: message". Exit codes: 0 finished,
 * 3 PeerLost, 4 DeadlineExceeded, 5 other DistributedException, 6 ConfigException, 7 anything else, 8 PeerUnresponsive,
 * 9 CollectiveMismatch.
 */
public final class LivenessProgram {
    public static void main(String[] args) throws InterruptedException {
        int code;
        try {
            Group g = Distributed.init(true, "ring");
            switch (args[0]) {
                case "loop" -> loop(g, args);
                case "split-mismatch" -> splitMismatch(g, Integer.parseInt(args[1]), args.length > 2 ? Long.parseLong(args[2]) : 0);
                default -> mismatch(g, args[1], Integer.parseInt(args[2]), args.length > 3 ? Long.parseLong(args[3]) : 0);
            }
            System.out.println("rank " + g.rank() + " finished");
            code = 0;
        } catch (PeerUnresponsiveException e) {
            code = report(e, 8);
        } catch (PeerLostException e) {
            code = report(e, 3);
        } catch (DeadlineExceededException e) {
            code = report(e, 4);
        } catch (CollectiveMismatchException e) {
            code = report(e, 9);
        } catch (ConfigException e) {
            code = report(e, 6);
        } catch (DistributedException e) {
            code = report(e, 5);
        } catch (RuntimeException e) {
            e.printStackTrace(System.out);
            code = report(e, 7);
        }
        System.out.flush();
        Runtime.getRuntime().halt(code);
    }

    private static void loop(Group g, String[] args) throws InterruptedException {
        long iterations = Long.parseLong(args[1]);
        long end = System.nanoTime() + Long.parseLong(args[2]) * 1_000_000_000L;
        int pauseRank = args.length > 3 ? Integer.parseInt(args[3]) : -1;
        long pauseSeconds = args.length > 4 ? Long.parseLong(args[4]) : 0;
        long pauseAt = args.length > 5 ? Long.parseLong(args[5]) : -1;
        Array x = Array.ones(DType.FLOAT32, 1000);
        // element 0 says whether this rank wants another round; all stop together when one does not (time is local)
        float[] last = new float[1000];
        java.util.Arrays.fill(last, 1f);
        last[0] = 0f;
        Array lastRound = Array.fromFloats(last, 1000);
        boolean more = true;
        for (long i = 0; more; i++) {
            boolean mine = i + 1 < iterations && System.nanoTime() < end;
            if (i == pauseAt && g.rank() == pauseRank) {
                System.out.println("rank " + g.rank() + " pausing " + pauseSeconds + " s");
                System.out.flush();
                Thread.sleep(pauseSeconds * 1000);
            }
            Array y = g.allSum(mine ? x : lastRound);
            if (y.getDouble(999) != g.size()) throw new IllegalStateException("wrong sum " + y.getDouble(999) + " at iteration " + i);
            more = y.getDouble(0) == g.size();
            if (i == 0) {
                String mesh = TestGroups.impl(g) instanceof RingGroup rg ? rg.peerMesh().map(m -> " (mesh connections: " + m.openConnections()
                        + ", over shared memory: " + m.sharedMemoryConnections() + ")").orElse("") : "";
                System.out.println("rank " + g.rank() + " looping" + mesh);
                if (TestGroups.impl(g) instanceof RingGroup rg) {
                    System.out.println("rank " + g.rank() + " progress deadline " + rg.progressDeadline().toSeconds() + " s");
                }
                System.out.flush();
            }
        }
    }

    private static void mismatch(Group g, String kind, int odd, long thenSleepSeconds) throws InterruptedException {
        g.allSum(Array.ones(DType.FLOAT32, 4));
        System.out.println("rank " + g.rank() + " looping");
        System.out.flush();
        boolean me = g.rank() == odd;
        switch (kind) {
            case "op" -> {
                if (me) g.allSum(Array.zeros(DType.FLOAT32, 1024));
                else g.allGather(Array.zeros(DType.INT32, 12));
            }
            case "dtype" -> g.allSum(Array.zeros(me ? DType.INT32 : DType.FLOAT32, 256));
            case "shape" -> g.allSum(me ? Array.zeros(DType.FLOAT32, 2, 128) : Array.zeros(DType.FLOAT32, 256));
            default -> throw new IllegalArgumentException(kind);
        }
        // the program goes on, as a real one would (after some work of its own, when asked to)
        Thread.sleep(thenSleepSeconds * 1000);
        for (int i = 0; i < 20; i++) g.allSum(Array.ones(DType.FLOAT32, 1000));
    }

    private static void splitMismatch(Group g, int odd, long thenSleepSeconds) throws InterruptedException {
        g.allSum(Array.ones(DType.FLOAT32, 4));
        Group half = g.split(g.rank() % 2);
        half.allSum(Array.ones(DType.FLOAT32, 4));
        System.out.println("rank " + g.rank() + " looping");
        System.out.flush();
        if (g.rank() % 2 != odd % 2) half.allSum(Array.ones(DType.FLOAT32, 4));
        else if (g.rank() == odd) half.allSum(Array.zeros(DType.FLOAT32, 1024));
        else half.allGather(Array.zeros(DType.INT32, 12));
        Thread.sleep(thenSleepSeconds * 1000);
        for (int i = 0; i < 20; i++) g.allSum(Array.ones(DType.FLOAT32, 1000));
    }

    private static int report(RuntimeException e, int code) {
        StringBuilder facts = new StringBuilder();
        if (e instanceof PeerLostException p) {
            facts.append(" peer=").append(p.peer().isPresent() ? p.peer().getAsInt() : -1).append(" host=").append(p.host().orElse("-"));
        }
        if (e instanceof PeerUnresponsiveException p) facts.append(" state=").append(p.state());
        if (e instanceof DistributedException d) {
            facts.append(" rank=").append(d.rank().isPresent() ? d.rank().getAsInt() : -1).append(" op=").append(d.operation().orElse("-"));
        }
        System.out.println("FAILED " + e.getClass().getSimpleName() + facts + ": " + e.getMessage());
        return code;
    }
}
