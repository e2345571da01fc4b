package dev.jdist.flight;

import dev.jdist.BuildInfo;
import dev.jdist.ConfigException;
import dev.jdist.DistributedException;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The flight recorder (docs/observability.md, "The flight recorder"): every group keeps its last
 * {@code JDIST_FLIGHT_RECORDER} operations (default {@value #DEFAULT_CAPACITY}; 0 turns it off) in a fixed ring
 * ({@link OperationRing}), and the process writes them all to one file, {@code DIR/jdist-flight-rank-R-PID.json}
 * ({@link FlightDump}), when
 * <ul>
 * <li>an operation first fails with a {@link DistributedException} (once per group),
 * <li>the process gets SIGUSR1 ({@code kill -USR1 PID}), or SIGTERM, SIGINT or SIGHUP (which then end it as
 *     before: the JVM's handlers run after the dump),
 * <li>code asks: {@link #dump(String)},
 * <li>the JVM exits after a failure or while an operation is running.
 * </ul>
 * DIR is {@code JDIST_DUMP_DIR} ({@code jdist launch} sets one per job), else {@code TMPDIR/jdist-flight-USER};
 * the file's path is printed on stderr the first time. SIGQUIT cannot be used: the JVM keeps it for its
 * thread dump.
 */
public final class FlightRecorder {

    /** Operations kept per group unless {@value #CAPACITY_VARIABLE} says otherwise. */
    public static final int DEFAULT_CAPACITY = 1024;
    public static final String CAPACITY_VARIABLE = "JDIST_FLIGHT_RECORDER";
    public static final String DIR_VARIABLE = "JDIST_DUMP_DIR";
    private static final int MAX_CAPACITY = 1 << 20;
    /** Groups whose records are kept; past this the oldest closed group (else the oldest) is dropped. */
    private static final int MAX_GROUPS = 64;

    /** What the environment asks for. */
    record Settings(int capacity, Path dir) {
        /** From {@code env}: a bad {@value #CAPACITY_VARIABLE} is a {@link ConfigException} naming it. */
        static Settings from(Map<String, String> env) {
            String n = env.get(CAPACITY_VARIABLE);
            int capacity = DEFAULT_CAPACITY;
            if (n != null && !n.isBlank()) {
                try {
                    capacity = Integer.parseInt(n.strip());
                } catch (NumberFormatException e) {
                    capacity = -1;
                }
                if (capacity < 0 || capacity > MAX_CAPACITY) {
                    throw new ConfigException(CAPACITY_VARIABLE + "=\"" + n + "\" is not a number of operations: use 0 (off) to "
                            + MAX_CAPACITY + ", or unset it for the default of " + DEFAULT_CAPACITY);
                }
            }
            String d = env.get(DIR_VARIABLE);
            Path dir = d != null && !d.isBlank() ? Path.of(d.strip())
                    : Path.of(System.getProperty("java.io.tmpdir"), "jdist-flight-" + System.getProperty("user.name", "user"));
            return new Settings(capacity, dir);
        }
    }

    private static volatile Settings settings;
    private static final List<OperationRing> RINGS = new ArrayList<>();   // guarded by FlightRecorder.class
    private static FlightDump.Failure firstFailure;                         // guarded by FlightRecorder.class
    private static boolean announced;                                       // guarded by FlightRecorder.class
    private static boolean hooksInstalled;                                  // guarded by FlightRecorder.class
    private static volatile boolean signalled;

    private FlightRecorder() {}

    private static Settings settings() {
        Settings s = settings;
        if (s == null) {
            synchronized (FlightRecorder.class) {
                if (settings == null) settings = Settings.from(System.getenv());
                s = settings;
            }
        }
        return s;
    }

    /** Operations kept per group in this process (0: off). */
    public static int capacity() { return settings().capacity(); }

    /** Where this process writes its flight record. */
    public static Path directory() { return settings().dir(); }

    /** Tests and benchmarks: forget every group and failure, and use this capacity and directory from now on. */
    public static synchronized void resetForTesting(int capacity, Path dir) {
        resetForTesting();
        settings = new Settings(capacity, dir);
    }

    /** Tests: forget every group and failure, and read the settings from the environment again. */
    static synchronized void resetForTesting() {
        settings = null;
        RINGS.clear();
        firstFailure = null;
        announced = false;
    }

    /** A new group's ring, registered for dumps; null when the recorder is off. */
    static OperationRing register(String group, String backend, int rank, int size) {
        int capacity = capacity();
        if (capacity == 0) return null;
        OperationRing ring = new OperationRing(group, backend, rank, size, capacity);
        synchronized (FlightRecorder.class) {
            if (RINGS.size() >= MAX_GROUPS) {
                int victim = 0;
                for (int i = 0; i < RINGS.size(); i++) {
                    if (RINGS.get(i).closed()) {
                        victim = i;
                        break;
                    }
                }
                RINGS.remove(victim);
            }
            RINGS.add(ring);
            if (!hooksInstalled) {
                hooksInstalled = true;
                installHooks();
            }
        }
        return ring;
    }

    /** Operation {@code seq} of {@code ring} failed with {@code failure}: the first failure of a group is written out. */
    static void failed(OperationRing ring, long seq, Throwable failure) {
        if (!(failure instanceof DistributedException)) return;   // a bad argument, not a failed job
        boolean first;
        synchronized (FlightRecorder.class) {
            first = ring.markFailed();
            if (first && firstFailure == null) {
                FlightDump.Operation op = ring.snapshotOf(seq, OperationRing.WallClock.now());
                firstFailure = new FlightDump.Failure(ring.group(), ring.rank(), seq, op == null ? null : op.describe(),
                        describe(failure), Instant.now().toString());
            }
        }
        if (first) write("failure");
    }

    /**
     * Writes this process's flight record now and returns the file, or empty when the recorder is off
     * ({@code JDIST_FLIGHT_RECORDER=0}) or the file cannot be written (the reason is printed on stderr).
     * Each call rewrites the process's one file.
     *
     * @param reason recorded in the file ({@code "reason"}), e.g. {@code "request"} or what the program was doing
     */
    public static Optional<Path> dump(String reason) {
        if (capacity() == 0) return Optional.empty();
        return write(reason == null || reason.isBlank() ? "request" : reason);
    }

    /** {@code ExceptionType: message}, the message cut at 2000 characters. */
    static String describe(Throwable t) {
        String m = t.getMessage();
        if (m != null && m.length() > 2000) m = m.substring(0, 2000) + "...";
        return t.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }

    /** What would be written now. */
    static synchronized FlightDump snapshot(String reason) {
        OperationRing.WallClock clock = OperationRing.WallClock.now();
        List<FlightDump.GroupRecord> groups = new ArrayList<>();
        for (OperationRing r : RINGS) {
            FlightDump.GroupRecord g = r.snapshot(clock);
            if (g.operations() > 0) groups.add(g);
        }
        return new FlightDump(FlightDump.FORMAT, FlightDump.VERSION, reason, clock.anchor().toString(), hostName(),
                ProcessHandle.current().pid(), BuildInfo.version(), capacity(), firstFailure, groups);
    }

    /** The file this process writes: {@code jdist-flight-rank-R-PID.json}, R its rank in its first world group. */
    static synchronized String fileName() {
        String rank = "x";
        for (OperationRing r : RINGS) {
            if (r.group().equals(OperationTrace.WORLD)) {
                rank = Integer.toString(r.rank());
                break;
            }
        }
        return FlightDump.FILE_PREFIX + "rank-" + rank + "-" + ProcessHandle.current().pid() + FlightDump.FILE_SUFFIX;
    }

    private static synchronized Optional<Path> write(String reason) {
        Path dir = directory();
        Path file = dir.resolve(fileName());
        try {
            Files.createDirectories(dir);
            Path tmp = dir.resolve("." + file.getFileName() + ".tmp");
            Files.writeString(tmp, snapshot(reason).toJson(), StandardCharsets.UTF_8);
            try {
                Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
            }
            if (!announced) {
                announced = true;
                stderr().println("jdist: flight record (" + reason + ") written to " + file
                        + "; analyse a job's records with: jdist doctor analyze " + dir);
            }
            return Optional.of(file);
        } catch (IOException | RuntimeException e) {
            stderr().println("jdist: cannot write the flight record to " + file + ": " + e
                    + "; set " + DIR_VARIABLE + " to a writable directory");
            return Optional.empty();
        }
    }

    private static PrintStream stderr() { return System.err; }

    private static String hostName() {
        try {
            return Files.readString(Path.of("/proc/sys/kernel/hostname")).strip();
        } catch (IOException | RuntimeException e) {
            try {
                return java.net.InetAddress.getLocalHost().getHostName();
            } catch (IOException | RuntimeException e2) {
                return "unknown";
            }
        }
    }

    private static synchronized boolean anyInFlight() {
        for (OperationRing r : RINGS) if (r.inFlight()) return true;
        return false;
    }

    private static synchronized boolean anyFailure() { return firstFailure != null; }

    /**
     * SIGUSR1 writes a record; SIGTERM, SIGINT and SIGHUP write one and then do what they did before (the JVM's
     * shutdown); the shutdown hook writes one when the process ends after a failure or inside an operation. A signal
     * the JVM or the program keeps for itself is left alone.
     */
    @SuppressWarnings("restriction")
    private static void installHooks() {
        try {
            sun.misc.SignalHandler old = sun.misc.Signal.handle(new sun.misc.Signal("USR1"), sig -> write("signal SIGUSR1"));
            if (old != sun.misc.SignalHandler.SIG_DFL && old != sun.misc.SignalHandler.SIG_IGN) {
                sun.misc.Signal.handle(new sun.misc.Signal("USR1"), old);   // the program's own: leave it
            }
        } catch (IllegalArgumentException | UnsupportedOperationException | LinkageError e) {
            // not available here (another OS, -Xrs): dumps on failure and on request still work
        }
        for (String name : List.of("TERM", "INT", "HUP")) {
            try {
                sun.misc.Signal signal = new sun.misc.Signal(name);
                sun.misc.SignalHandler[] previous = new sun.misc.SignalHandler[1];
                previous[0] = sun.misc.Signal.handle(signal, sig -> {
                    signalled = true;
                    write("signal SIG" + name);
                    previous[0].handle(sig);
                });
                if (previous[0] == sun.misc.SignalHandler.SIG_DFL || previous[0] == sun.misc.SignalHandler.SIG_IGN) {
                    sun.misc.Signal.handle(signal, previous[0]);   // nothing of Java's to hand on to: leave it
                }
            } catch (IllegalArgumentException | UnsupportedOperationException | LinkageError e) {
                // the same
            }
        }
        try {
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                if (signalled) return;   // written by the signal's handler
                if (anyFailure()) write("exit after failure");
                else if (anyInFlight()) write("exit during an operation");
            }, "jdist-flight-recorder"));
        } catch (IllegalStateException e) {
            // already shutting down
        }
    }
}
