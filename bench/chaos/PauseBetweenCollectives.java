import dev.jdist.*;

/**
 * A healthy job in which one rank computes for a long time between two collectives (a checkpoint, an evaluation):
 * 10 all_sums, then rank PAUSE_RANK sleeps PAUSE_SECONDS while the others already wait in the 11th, then 10 more.
 * Every sum is checked. With the default settings of a jdist launch job (the liveness watch on, JDIST_TIMEOUT 30 min)
 * it completes; docs/reliability.md. Run it with bench/chaos/pause.sh.
 */
public class PauseBetweenCollectives {
    public static void main(String[] args) throws Exception {
        long pauseSeconds = args.length > 0 ? Long.parseLong(args[0]) : 300;
        int pauseRank = args.length > 1 ? Integer.parseInt(args[1]) : 1;
        Group g = Distributed.init();
        Array x = Array.ones(DType.FLOAT32, 1000);
        long t0 = System.nanoTime();
        for (int i = 0; i < 21; i++) {
            if (i == 10 && g.rank() == pauseRank) {
                System.out.println("rank " + g.rank() + ": pausing " + pauseSeconds + " s between collectives");
                Thread.sleep(pauseSeconds * 1000);
            }
            Array y = g.allSum(x);
            if (y.getDouble(999) != g.size()) throw new IllegalStateException("rank " + g.rank() + ": wrong sum " + y.getDouble(999));
        }
        System.out.printf("rank %d: 21 all_sums correct in %.1f s (one rank paused %d s; JDIST_TIMEOUT=%s, JDIST_HEARTBEAT=%s)%n",
                g.rank(), (System.nanoTime() - t0) / 1e9, pauseSeconds, System.getenv().getOrDefault("JDIST_TIMEOUT", "unset"),
                System.getenv().getOrDefault("JDIST_HEARTBEAT", "unset"));
        g.close();
    }
}
