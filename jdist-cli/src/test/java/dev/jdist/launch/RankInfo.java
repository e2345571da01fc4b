package dev.jdist.launch;

/**
 * A main class for LocalLaunchIT: prints its rank, a system property, its first argument, whether jdist-core loads, and
 * whether its JVM got {@code -XX:TieredStopAtLevel=1} (from {@code JDIST_JAVA_OPTIONS}, which the tests' CLI sets).
 */
public final class RankInfo {
    private RankInfo() {
    }

    public static void main(String[] args) {
        boolean core;
        try {
            Class.forName("dev.jdist.Distributed");
            core = true;
        } catch (ClassNotFoundException e) {
            core = false;
        }
        System.out.println("rank " + System.getenv("MLX_RANK") + " " + System.getProperty("x.y") + " " + args[0] + " " + core
                + " " + java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments().contains("-XX:TieredStopAtLevel=1"));
    }
}
