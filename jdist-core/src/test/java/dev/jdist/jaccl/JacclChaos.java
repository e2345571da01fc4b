package dev.jdist.jaccl;

import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Group;
import dev.jdist.PeerLostException;
import dev.jdist.PeerUnresponsiveException;
import dev.jdist.WatchedGroups;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The chaos suite's JACCL rows (bench/chaos/run.sh {@code --backends jaccl}, docs/reliability.md "The chaos suite").
 * JACCL's stand-in is the in-memory fabric, so its ranks are threads of this JVM, each with its own group and its own
 * liveness watch on loopback, as {@code JacclLivenessTest} forms them; a process fault is modelled on the thread:
 * {@code kill} stops the rank's watch without a goodbye and makes it vanish from the fabric, {@code stop} stops the watch
 * and silences the rank (nothing moves, no error). UC queue pairs, so no completion error ever reports the peer: what
 * ends the survivors' waits is the watch. Odd trials run a mesh, even ones a ring.
 *
 * <pre>
 * JacclChaos FAULTS TRIALS JDIST_HEARTBEAT TRIAL_LIMIT_S BUDGET_S RESULTS_TSV
 * </pre>
 *
 * Appends one line per trial to RESULTS_TSV in the suite's columns (backend jaccl; detection = fault to every survivor's
 * typed error; leftover = rank threads still running, or groups whose close() did not return, 15 s after).
 */
public final class JacclChaos {
    static final int N = 4;
    static final int ELEMENTS = 1000;

    public static void main(String[] args) throws Exception {
        List<String> faults = List.of(args[0].split(","));
        int trials = Integer.parseInt(args[1]);
        String heartbeat = args[2];
        long limitMs = Long.parseLong(args[3]) * 1000;
        long budgetMs = Long.parseLong(args[4]) * 1000;
        Path results = Path.of(args[5]);
        long start = System.currentTimeMillis();
        Random random = new Random();
        for (String fault : faults) {
            if (!fault.equals("kill") && !fault.equals("stop")) throw new IllegalArgumentException("fault '" + fault + "': kill or stop");
            for (int t = 1; t <= trials; t++) {
                if (budgetMs > 0 && System.currentTimeMillis() - start >= budgetMs) {
                    System.err.println("budget spent: jaccl " + fault + " stops after " + (t - 1) + " trials");
                    break;
                }
                String line = trial(fault, t, random.nextInt(N), 1 + random.nextInt(3000), heartbeat, limitMs);
                Files.writeString(results, line + "\n", StandardOpenOption.APPEND);
                System.err.println("jaccl " + fault + " #" + t + ": " + line);
            }
        }
        System.exit(0);   // daemon rank threads of a hung trial must not keep the JVM
    }

    static String trial(String fault, int t, int victim, int at, String heartbeat, long limitMs) throws Exception {
        boolean mesh = t % 2 == 1;
        MemFabric fabric = mesh ? MemFabric.mesh(N, JacclConfig.QpMode.UC) : MemFabric.ring(N, 1, JacclConfig.QpMode.UC);
        Map<String, String> env = Map.of("JDIST_HEARTBEAT", heartbeat, "JDIST_JOB_TOKEN", "jaccl-chaos-" + t);
        List<Group> groups = WatchedGroups.form(N, q -> JacclGroup.over(q, N, mesh ? JacclConfig.Topology.MESH : JacclConfig.Topology.RING,
                mesh ? 0 : 1, Duration.ofSeconds(120), new JacclLivenessTest.NoSideChannel(q, N), fabric.transport(q)), env);
        long[] faultMs = {0};
        long[] endMs = new long[N];
        Object[] outcome = new Object[N];
        CountDownLatch survivorsDone = new CountDownLatch(N - 1);
        CountDownLatch release = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int q = 0; q < N; q++) {
            int rank = q;
            Group g = groups.get(q);
            threads.add(Thread.ofPlatform().daemon().name("jaccl-chaos-rank-" + q).start(() -> {
                Array x = Array.full(DType.FLOAT32, 1, ELEMENTS);
                try {
                    for (int i = 0; ; i++) {
                        if (rank == victim && i == at) {
                            WatchedGroups.killWatch(g);
                            if (fault.equals("kill")) fabric.kill(rank); else fabric.silence(rank);
                            faultMs[0] = System.currentTimeMillis();
                            release.await();   // the process is gone or frozen: this thread does nothing more
                            return;
                        }
                        Array y = g.allSum(x);
                        if (y.getDouble(ELEMENTS - 1) != N) throw new IllegalStateException("wrong sum " + y.getDouble(ELEMENTS - 1));
                    }
                } catch (Throwable e) {
                    outcome[rank] = e;
                    endMs[rank] = System.currentTimeMillis();
                    survivorsDone.countDown();
                }
            }));
        }
        boolean allEnded = survivorsDone.await(limitMs, TimeUnit.MILLISECONDS);
        release.countDown();
        String result = allEnded ? "ok" : "hang";
        long last = 0;
        List<String> said = new ArrayList<>();
        for (int q = 0; q < N; q++) {
            if (q == victim) continue;
            Object o = outcome[q];
            String text;
            if (o instanceof PeerUnresponsiveException e) text = "PeerUnresponsiveException:peer=" + e.peer().orElse(-1);
            else if (o instanceof PeerLostException e) text = "PeerLostException:peer=" + e.peer().orElse(-1);   // its superclass
            else text = o == null ? "none" : o.getClass().getSimpleName();
            said.add(q + ":" + text);
            if (o != null) System.err.println("  rank " + q + ": " + o);
            last = Math.max(last, endMs[q]);
            if (!result.equals("ok")) continue;
            if (!(o instanceof PeerLostException) && !(o instanceof PeerUnresponsiveException)) result = "wrong-error";
            else if (!text.endsWith(":peer=" + victim)) result = "other-rank-named";
        }
        // teardown: every group closes within 15 s and no rank thread is left running
        int left = 0;
        long closeBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        for (Group g : groups) {
            Thread closer = Thread.ofPlatform().daemon().start(g::close);
            closer.join(Duration.ofNanos(Math.max(1, closeBy - System.nanoTime())));
            if (closer.isAlive()) left++;
        }
        for (Thread th : threads) {
            th.join(Duration.ofNanos(Math.max(1, closeBy - System.nanoTime())));
            if (th.isAlive()) left++;
        }
        String detect = faultMs[0] == 0 || !allEnded ? "-" : Long.toString(last - faultMs[0]);
        if (faultMs[0] == 0) result = "no-fault";
        return String.join("\t", "jaccl", fault, Integer.toString(t), Integer.toString(victim),
                "#" + at + "/" + (mesh ? "mesh" : "ring"), detect, result, String.join(",", said), Integer.toString(left), "-");
    }

    private JacclChaos() {}
}
