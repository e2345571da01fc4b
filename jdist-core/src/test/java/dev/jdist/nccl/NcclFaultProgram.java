package dev.jdist.nccl;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.DistributedException;
import dev.jdist.Group;

import java.util.concurrent.TimeUnit;

/**
 * A 2-rank nccl job's rank, as its own process, for NcclProcessesIT's fault cases (stub libraries in their
 * file mode, JDIST_STUB_NCCL_WORLD_DIR). Both ranks check one all_sum; then rank 1 stops itself
 * ({@code stop}: SIGSTOP) or exits ({@code exit}), and rank 0's next all_sum must fail: it prints
 * {@code ERROR <class> rank=<r> op=<operation> deadline=<deadline> after=<ms>: <message>} and
 * {@code CLOSED <ms>} (how long close() took), and exits 3.
 */
public final class NcclFaultProgram {
    public static void main(String[] args) throws Exception {
        String scenario = args[0];
        Group g = Distributed.init(true, "nccl");
        int r = g.rank();
        System.out.println("PID " + r + " " + ProcessHandle.current().pid());
        Array first = g.allSum(Array.full(DType.FLOAT32, r + 1, 4));
        if (first.getDouble(3) != 3) throw new AssertionError("first all_sum " + first);
        System.out.println("FIRST OK " + r);
        System.out.flush();
        if (r == 1) {
            if (scenario.equals("stop")) {
                new ProcessBuilder("kill", "-STOP", Long.toString(ProcessHandle.current().pid())).start()
                        .waitFor(10, TimeUnit.SECONDS);
                Thread.sleep(600_000);
            }
            Runtime.getRuntime().halt(0);        // "exit": gone without closing anything, as a crash would be
        }
        Thread.sleep(500);
        long t0 = System.nanoTime();
        try {
            g.allSum(Array.ones(DType.FLOAT32, 4));
            System.out.println("RETURNED");
        } catch (DistributedException e) {
            long ms = (System.nanoTime() - t0) / 1_000_000;
            String deadline = e instanceof dev.jdist.DeadlineExceededException d ? d.deadline().map(String::valueOf).orElse("-") : "-";
            System.out.println("ERROR " + e.getClass().getSimpleName() + " rank=" + e.rank().orElse(-1) + " op="
                    + e.operation().orElse("-") + " deadline=" + deadline + " after=" + ms + ": " + e.getMessage());
        }
        long t1 = System.nanoTime();
        try {
            g.close();
        } catch (RuntimeException e) {
            System.out.println("CLOSE FAILED " + e);
        }
        System.out.println("CLOSED " + (System.nanoTime() - t1) / 1_000_000);
        System.out.flush();
        System.exit(3);
    }
}
