package dev.jdist.launch;

import dev.jdist.console.ConsoleLog;
import dev.jdist.flight.FlightAnalysis;
import dev.jdist.flight.FlightDump;
import dev.jdist.hosts.HostEntry;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A job's flight records (docs/launching.md, "When a job fails"): the directory {@code jdist launch} gives every rank
 * as {@code JDIST_DUMP_DIR}, the records of remote ranks read back over ssh when the job did not succeed, and the
 * analysis printed after the report lines ({@link FlightAnalysis}).
 */
public final class JobFlightRecords {

    /** The line that starts each record in what a remote host prints. */
    static final String MARK = "--- jdist flight record ";
    /** How long reading a remote host's records may take, connection included. */
    static final long FETCH_MILLIS = 20_000;
    private static final int MAX_FETCH_BYTES = 64 << 20;

    private final Path dir;

    private JobFlightRecords(Path dir) {
        this.dir = dir;
    }

    /**
     * A fresh directory name for a job, {@code BASE/jdist-job-YYYYMMDD-HHMMSS-XXXXXX}: BASE is the launcher's own
     * {@code JDIST_DUMP_DIR} when set, else the temporary directory. The same path is used on every host; nothing is
     * created until a rank writes a record.
     */
    public static JobFlightRecords forNewJob(Map<String, String> env) {
        String base = env.get("JDIST_DUMP_DIR");
        Path root = base != null && !base.isBlank() ? Path.of(base.strip()).toAbsolutePath() : Path.of(System.getProperty("java.io.tmpdir"));
        byte[] b = new byte[3];
        new SecureRandom().nextBytes(b);
        String stamp = DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss", Locale.ROOT).format(ZonedDateTime.now(ZoneOffset.UTC));
        return new JobFlightRecords(root.resolve("jdist-job-" + stamp + "-" + HexFormat.of().formatHex(b)));
    }

    /** For tests: records in {@code dir}. */
    static JobFlightRecords in(Path dir) {
        return new JobFlightRecords(dir);
    }

    public Path dir() {
        return dir;
    }

    /**
     * After the job: when it did not succeed, reads the records of ranks on {@code remoteHosts} back into the directory
     * and prints the analysis (nothing when no rank wrote a record: a job that is not jdist's, or ranks that ended
     * before their first operation). A directory left empty is removed.
     *
     * @param ranks the job's number of ranks
     * @param ends  how each rank's process ended
     */
    public void afterJob(boolean succeeded, List<HostEntry> remoteHosts, int ranks, Map<Integer, FlightAnalysis.RankEnd> ends,
                         String sshPath, ConsoleLog log) throws InterruptedException {
        if (!succeeded) {
            fetch(remoteHosts, sshPath);
            report(ranks, ends, log);
        }
        removeIfEmpty();
    }

    /** Prints the analysis of the records in the directory, if there are any. */
    void report(int ranks, Map<Integer, FlightAnalysis.RankEnd> ends, ConsoleLog log) {
        FlightDump.Loaded loaded;
        try {
            if (!Files.isDirectory(dir)) {
                return;
            }
            loaded = FlightDump.readDirectory(dir);
        } catch (IOException e) {
            log.warn("cannot read the job's flight records in " + dir + ": " + e.getMessage());
            return;
        }
        if (loaded.dumps().isEmpty() && loaded.problems().isEmpty()) {
            return;
        }
        log.warn("flight records of the job (" + loaded.dumps().size() + " in " + dir + "; again with: jdist doctor analyze " + dir + "):");
        StringBuilder text = new StringBuilder();
        for (String line : FlightAnalysis.analyze(loaded.dumps(), ranks, ends)) {
            text.append("  ").append(line).append('\n');
        }
        for (String problem : loaded.problems()) {
            text.append("  ").append(problem).append('\n');
        }
        log.raw(text.toString());
    }

    private void removeIfEmpty() {
        try {
            if (Files.isDirectory(dir)) {
                try (var s = Files.list(dir)) {
                    if (s.findAny().isPresent()) {
                        return;
                    }
                }
                Files.deleteIfExists(dir);
            }
        } catch (IOException ignored) {
            // best effort: an empty directory in the temporary directory
        }
    }

    /** Reads the records of every host in {@code hosts} into the directory, all hosts at once, bounded in time. */
    void fetch(List<HostEntry> hosts, String sshPath) throws InterruptedException {
        List<Thread> readers = new ArrayList<>();
        for (String host : hosts.stream().map(HostEntry::ssh).distinct().toList()) {
            Thread t = new Thread(() -> fetchFrom(host, sshPath, dir.toString()), "flight-records-" + host);
            t.setDaemon(true);
            t.start();
            readers.add(t);
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(FETCH_MILLIS + 2_000);
        for (Thread t : readers) {
            t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
        }
    }

    /** Copies the records in {@code remoteDir} on {@code host} (the job's directory there) into the directory. */
    void fetchFrom(String host, String sshPath, String remoteDir) {
        ProcessBuilder pb = new ProcessBuilder(sshPath, "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "LogLevel=QUIET",
                host, "sh -c " + ShellQuote.quote(fetchScript(remoteDir)));
        pb.redirectError(ProcessBuilder.Redirect.DISCARD).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            return;   // no ssh: the report covers the local ranks
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        Thread reader = new Thread(() -> {
            try (InputStream in = p.getInputStream()) {
                byte[] buf = new byte[65536];
                int n;
                while ((n = in.read(buf)) > 0) {
                    synchronized (bytes) {
                        if (bytes.size() + n > MAX_FETCH_BYTES) {
                            break;
                        }
                        bytes.write(buf, 0, n);
                    }
                }
            } catch (IOException ignored) {
                // the process was ended
            }
        }, "flight-records-read-" + host);
        reader.setDaemon(true);
        reader.start();
        try {
            if (!p.waitFor(FETCH_MILLIS, TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
            }
            reader.join(2_000);
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            return;
        }
        String out;
        synchronized (bytes) {
            out = bytes.toString(StandardCharsets.UTF_8);
        }
        for (var e : parseFetched(out).entrySet()) {
            try {
                Files.createDirectories(dir);
                // A host that shares this directory (a network file system, this machine under another name) has
                // written the file here already: keep it.
                Files.writeString(dir.resolve(e.getKey()), e.getValue(), StandardCharsets.UTF_8,
                        java.nio.file.StandardOpenOption.CREATE_NEW, java.nio.file.StandardOpenOption.WRITE);
            } catch (FileAlreadyExistsException ignored) {
                // the same record
            } catch (IOException ignored) {
                // this record is lost; the report covers the others
            }
        }
    }

    /** The POSIX-sh script that prints every record in {@code dir}, each after a {@link #MARK} line naming its file. */
    static String fetchScript(String dir) {
        return "for f in " + ShellQuote.quote(dir) + "/" + FlightDump.FILE_PREFIX + "*" + FlightDump.FILE_SUFFIX + "; do\n"
                + "  [ -f \"$f\" ] || continue\n"
                + "  printf '%s%s\\n' '" + MARK + "' \"${f##*/}\"\n"
                + "  cat \"$f\"\n"
                + "done\n";
    }

    /** The records in what {@link #fetchScript} printed: file name to content; names that are not a record's are dropped. */
    static Map<String, String> parseFetched(String output) {
        Map<String, String> files = new LinkedHashMap<>();
        String name = null;
        StringBuilder content = new StringBuilder();
        for (String line : output.split("\n", -1)) {
            if (line.startsWith(MARK)) {
                if (name != null) {
                    files.put(name, content.toString());
                }
                String n = line.substring(MARK.length()).strip();
                name = FlightDump.isDumpFileName(n) && !n.contains("/") && !n.startsWith(".") ? n : null;
                content.setLength(0);
            } else if (name != null) {
                content.append(line).append('\n');
            }
        }
        if (name != null) {
            files.put(name, content.toString());
        }
        return files;
    }
}
