package dev.jdist.mpi;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.Group;

import java.util.concurrent.TimeUnit;

/**
 * The program {@code MpiFaultIT} runs under {@code mpirun}: every rank prints its pid, checks one all_sum,
 * then rank {@code stopped} stops itself (SIGSTOP) and the others run {@code op} (all_sum, all_gather,
 * sum_scatter, recv from the stopped rank, or close), which cannot complete. With {@code JDIST_TIMEOUT}
 * short, they must end the job with MPI_Abort and a DeadlineExceededException on stderr.
 *
 * <p>With {@code op} {@code partition}, rank {@code stopped} is not stopped: it cuts its own host off the network
 * ({@code iptables} DROP of everything in and out, for a rank alone in a network namespace of the test's own), and
 * every rank goes on with all_sums for up to 200 s, which cannot complete across the cut.
 *
 * <p>Arguments: {@code <stopped rank> <op>}. Prints {@code PID <rank> <pid>}, {@code FIRST OK <rank>},
 * {@code STOPPING <rank>} or {@code CUTTING <rank>}, and {@code RETURNED <rank>} if the operation ever returns (it
 * must not).
 */
public final class MpiStallProgram {
    public static void main(String[] args) throws Exception {
        int stopped = Integer.parseInt(args[0]);
        String op = args[1];
        Group world = Distributed.init(true, "mpi");
        int r = world.rank();
        int n = world.size();
        System.out.println("PID " + r + " " + ProcessHandle.current().pid());
        Array sum = world.allSum(Array.full(DType.FLOAT32, r + 1, 1024));
        if (sum.getDouble(1023) != n * (n + 1) / 2.0) throw new AssertionError("first all_sum: " + sum);
        System.out.println("FIRST OK " + r);
        System.out.flush();
        if (op.equals("partition")) {
            if (r == stopped) cutOwnHost(r);
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(200);
            while (System.nanoTime() < end) world.allSum(Array.ones(DType.FLOAT32, 1024));
            System.out.println("RETURNED " + r);
            System.out.flush();
            return;
        }
        if (r == stopped) {
            System.out.println("STOPPING " + r);
            System.out.flush();
            new ProcessBuilder("kill", "-STOP", Long.toString(ProcessHandle.current().pid())).start().waitFor(10, TimeUnit.SECONDS);
            Thread.sleep(600_000);     // never reached while stopped; continued by the launcher's kill sequence at most
            return;
        }
        Thread.sleep(500);            // let the stopped rank stop before the operation starts
        switch (op) {
            case "all_sum" -> world.allSum(Array.ones(DType.FLOAT32, 1024));
            case "all_gather" -> world.allGather(Array.ones(DType.INT32, 7));
            case "sum_scatter" -> world.sumScatter(Array.ones(DType.FLOAT64, n * 5));
            case "recv" -> world.recv(new int[] {16}, DType.FLOAT32, stopped);
            case "close" -> world.close();
            default -> throw new IllegalArgumentException(op);
        }
        System.out.println("RETURNED " + r);
        System.out.flush();
        Distributed.reset();
    }

    /** Drops every packet in and out of this rank's network namespace (its launcher's output too: say it first). */
    private static void cutOwnHost(int r) throws Exception {
        System.out.println("CUTTING " + r);
        System.out.flush();
        Thread.sleep(300);   // let the line reach mpirun before its way is cut
        for (String chain : new String[] {"INPUT", "OUTPUT"}) {
            Process p = new ProcessBuilder("iptables", "-A", chain, "-j", "DROP").inheritIO().start();
            if (!p.waitFor(20, TimeUnit.SECONDS) || p.exitValue() != 0) throw new IllegalStateException("iptables -A " + chain + " failed");
        }
    }
}
