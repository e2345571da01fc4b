package dev.jdist.ring;

import dev.jdist.Array;
import dev.jdist.ConfigException;
import dev.jdist.ConnectFailedException;
import dev.jdist.DType;
import dev.jdist.DeadlineExceededException;
import dev.jdist.Distributed;
import dev.jdist.Group;
import dev.jdist.PeerLostException;

/**
 * A rank for the fault tests: forms the ring, then runs all_sum in a loop (bounded by count and
 * time), printing "looping" once under way. Exit codes say how it ended: 0 finished, 3 PeerLost,
 * 4 DeadlineExceeded, 5 ConnectFailed, 6 ConfigException, 7 anything else.
 */
public final class RingLoopProgram {
    public static void main(String[] args) {
        long maxIterations = Long.parseLong(args.length > 0 ? args[0] : "1000000");
        long maxSeconds = Long.parseLong(args.length > 1 ? args[1] : "120");
        int code;
        try {
            Group g = Distributed.init(true, "ring");
            Array x = Array.ones(DType.FLOAT32, 1000);
            long end = System.nanoTime() + maxSeconds * 1_000_000_000L;
            for (long i = 0; i < maxIterations && System.nanoTime() < end; i++) {
                Array y = g.allSum(x);
                if (y.getDouble(0) != g.size()) throw new IllegalStateException("wrong sum " + y.getDouble(0));
                if (i == 0) {
                    System.out.println("rank " + g.rank() + " looping");
                    System.out.flush();
                }
            }
            System.out.println("rank " + g.rank() + " finished");
            code = 0;
        } catch (PeerLostException e) {
            code = report(e, 3);
        } catch (DeadlineExceededException e) {
            code = report(e, 4);
        } catch (ConnectFailedException e) {
            code = report(e, 5);
        } catch (ConfigException e) {
            code = report(e, 6);
        } catch (RuntimeException e) {
            e.printStackTrace(System.out);
            code = report(e, 7);
        }
        System.out.flush();
        Runtime.getRuntime().halt(code);
    }

    private static int report(RuntimeException e, int code) {
        System.out.println("FAILED " + e.getClass().getSimpleName() + ": " + e.getMessage());
        return code;
    }
}
