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

/**
 * One rank of the chaos suite (bench/chaos/run.sh, docs/reliability.md "The chaos suite").
 *
 * <pre>
 * ChaosRank BACKEND ITERATIONS SECONDS [KILL_RANK KILL_AT [ELEMENTS]]
 * </pre>
 *
 * Forms its group with {@code Distributed.init(true, BACKEND)} (ring: the ring over JDIST_TRANSPORT; mpi), then runs
 * all_sums of ELEMENTS float32 (default 1000), checking every sum, until ITERATIONS or SECONDS are reached. Rank KILL_RANK sends itself
 * SIGKILL just before its all_sum number KILL_AT (a death at a chosen operation, not at a random instant of the
 * driver; -1: none). Lines, each with the wall clock in epoch milliseconds (every rank of the suite runs on this machine's clock):
 * {@code READY rank R pid P} after the first sum, {@code KILLING rank R at all_sum #K ms=T},
 * {@code FINISHED rank R sums=N loop_ms=L ms=T}, {@code FAILED Class rank=R peer=P state=S ms=T: message}.
 * Exit codes as LivenessProgram's: 0 finished, 3 PeerLost, 4 DeadlineExceeded, 5 other DistributedException,
 * 6 ConfigException, 7 anything else (wrong sums too), 8 PeerUnresponsive, 9 CollectiveMismatch.
 */
public class ChaosRank {
    public static void main(String[] args) throws Exception {
        String backend = args[0];
        long iterations = Long.parseLong(args[1]);
        long end = System.nanoTime() + Long.parseLong(args[2]) * 1_000_000_000L;
        int killRank = args.length > 3 ? Integer.parseInt(args[3]) : -1;
        long killAt = args.length > 4 ? Long.parseLong(args[4]) : -1;
        int elements = args.length > 5 ? Integer.parseInt(args[5]) : 1000;
        int code;
        int rank = -1;
        try {
            Group g = Distributed.init(true, backend);
            rank = g.rank();
            Array x = Array.ones(DType.FLOAT32, elements);
            long i = 0;
            long t0 = System.nanoTime();
            for (; i < iterations && System.nanoTime() < end; i++) {
                if (i == killAt && rank == killRank) killSelf(rank, i);
                Array y = g.allSum(x);
                for (int e = 0; e < elements; e += Math.max(1, elements / 64)) {   // a sample of elements, the last one too
                    if (y.getDouble(e) != g.size()) throw new IllegalStateException("wrong sum " + y.getDouble(e) + " at all_sum #" + i);
                }
                if (y.getDouble(elements - 1) != g.size()) throw new IllegalStateException("wrong last sum at all_sum #" + i);
                if (i == 0) say("READY rank " + rank + " pid " + ProcessHandle.current().pid());
            }
            long loopMs = (System.nanoTime() - t0) / 1_000_000;
            g.close();
            say("FINISHED rank " + rank + " sums=" + i + " loop_ms=" + loopMs + " ms=" + System.currentTimeMillis());
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
            code = report(e, 7);
        }
        Runtime.getRuntime().halt(code);
    }

    /** SIGKILL from outside the JVM (no shutdown hook, no goodbye): what a crash or the OOM killer does. */
    private static void killSelf(int rank, long op) throws Exception {
        long pid = ProcessHandle.current().pid();
        say("KILLING rank " + rank + " at all_sum #" + op + " ms=" + System.currentTimeMillis());
        new ProcessBuilder("kill", "-KILL", Long.toString(pid)).inheritIO().start().waitFor();
        Thread.sleep(60_000);   // not reached
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static int report(RuntimeException e, int code) {
        long ms = System.currentTimeMillis();
        StringBuilder facts = new StringBuilder();
        if (e instanceof DistributedException d) facts.append(" rank=").append(d.rank().isPresent() ? d.rank().getAsInt() : -1);
        if (e instanceof PeerLostException p) facts.append(" peer=").append(p.peer().isPresent() ? p.peer().getAsInt() : -1);
        if (e instanceof PeerUnresponsiveException p) facts.append(" state=").append(p.state());
        String message = String.valueOf(e.getMessage()).replace('\n', ' ');
        say("FAILED " + e.getClass().getSimpleName() + facts + " ms=" + ms + ": " + message);
        return code;
    }
}
