package dev.jdist.launch;

import dev.jdist.console.ConsoleLog;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.HashMap;
import java.util.Map;

/**
 * Where rank output goes: the launcher's stdout/stderr, as raw bytes in arrival order (MLX behaviour: no prefix,
 * bytes unchanged), or line by line with a {@code [R]} and/or time prefix; optionally also per-rank files.
 *
 * <p>Line integrity [jdist]: in raw mode a chunk's complete lines are written at once, and a trailing partial line
 * is held back until the rest of that line arrives, for at most {@link #PARTIAL_LINE_MILLIS} ms (so a prompt
 * without newline still shows up promptly). Without this, a program that writes one line in several pieces
 * (Java's {@code printf} does) gets its lines torn apart by other ranks' output. The bytes and their order
 * within a rank are unchanged.
 */
public final class OutputSink {
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss.SSS");

    private final OutputStream out;
    private final OutputStream err;
    private final boolean tag;
    private final boolean timestamp;
    private final Path outputDir;
    private final Map<String, ByteArrayOutputStream> partial = new HashMap<>();
    private final Map<String, OutputStream> files = new HashMap<>();
    private final Map<String, Long> partialSince = new HashMap<>();

    /** How long a partial line (no newline yet) is held back in raw mode. */
    public static final long PARTIAL_LINE_MILLIS = 200;

    public OutputSink(OutputStream out, OutputStream err, boolean tag, boolean timestamp, Path outputDir) throws IOException {
        this.out = out;
        this.err = err;
        this.tag = tag;
        this.timestamp = timestamp;
        this.outputDir = outputDir;
        if (outputDir != null) {
            Files.createDirectories(outputDir);
        }
        if (!tag && !timestamp) {
            Thread flusher = new Thread(this::flushStalePartials, "output-partial-lines");
            flusher.setDaemon(true);
            flusher.start();
        }
    }

    private void flushStalePartials() {
        while (true) {
            try {
                Thread.sleep(PARTIAL_LINE_MILLIS / 4);
            } catch (InterruptedException e) {
                return;
            }
            long now = System.nanoTime();
            synchronized (ConsoleLog.LOCK) {
                for (var it = partialSince.entrySet().iterator(); it.hasNext(); ) {
                    var e = it.next();
                    if (now - e.getValue() >= PARTIAL_LINE_MILLIS * 1_000_000L) {
                        String key = e.getKey();
                        it.remove();
                        writePartial(key);
                    }
                }
            }
        }
    }

    /** Writes and clears the held partial line of {@code key} (caller holds ConsoleLog.LOCK). */
    private void writePartial(String key) {
        ByteArrayOutputStream held = partial.get(key);
        if (held == null || held.size() == 0) {
            return;
        }
        OutputStream target = key.endsWith("e") ? err : out;
        try {
            held.writeTo(target);
            target.flush();
        } catch (IOException ignored) {
            // see write
        }
        held.reset();
    }

    /** Forwards {@code n} bytes of rank {@code rank}'s stream ({@code stderr} or stdout). */
    public void write(int rank, boolean stderr, byte[] buf, int off, int n) {
        String key = rank + (stderr ? "e" : "o");
        synchronized (ConsoleLog.LOCK) {
            try {
                if (outputDir != null) {
                    OutputStream f = files.get(key);
                    if (f == null) {
                        f = Files.newOutputStream(outputDir.resolve("rank-" + rank + (stderr ? ".err" : ".out")));
                        files.put(key, f);
                    }
                    f.write(buf, off, n);
                    f.flush();
                }
                OutputStream target = stderr ? err : out;
                if (!tag && !timestamp) {
                    int lastNewline = -1;
                    for (int i = off + n - 1; i >= off; i--) {
                        if (buf[i] == '\n') {
                            lastNewline = i;
                            break;
                        }
                    }
                    ByteArrayOutputStream held = partial.computeIfAbsent(key, k -> new ByteArrayOutputStream());
                    if (lastNewline >= 0) {
                        held.writeTo(target);
                        held.reset();
                        target.write(buf, off, lastNewline + 1 - off);
                        held.write(buf, lastNewline + 1, off + n - lastNewline - 1);
                    } else {
                        held.write(buf, off, n);
                    }
                    target.flush();
                    if (held.size() == 0) {
                        partialSince.remove(key);
                    } else if (held.size() >= 8192) {
                        partialSince.remove(key);
                        writePartial(key);
                    } else {
                        partialSince.putIfAbsent(key, System.nanoTime());
                    }
                    return;
                }
                ByteArrayOutputStream line = partial.computeIfAbsent(key, k -> new ByteArrayOutputStream());
                for (int i = off; i < off + n; i++) {
                    line.write(buf[i]);
                    if (buf[i] == '\n') {
                        emitLine(rank, target, line);
                    }
                }
                target.flush();
            } catch (IOException ignored) {
                // the launcher's own output is gone (e.g. a closed pipe): keep supervising
            }
        }
    }

    /** Ends rank {@code rank}'s stream: a last line without newline is emitted with one. */
    public void close(int rank, boolean stderr) {
        String key = rank + (stderr ? "e" : "o");
        synchronized (ConsoleLog.LOCK) {
            try {
                if (!tag && !timestamp) {
                    partialSince.remove(key);
                    writePartial(key);
                    partial.remove(key);
                    OutputStream f = files.remove(key);
                    if (f != null) {
                        f.close();
                    }
                    return;
                }
                ByteArrayOutputStream line = partial.remove(key);
                if (line != null && line.size() > 0) {
                    line.write('\n');
                    OutputStream target = stderr ? err : out;
                    emitLine(rank, target, line);
                    target.flush();
                }
                OutputStream f = files.remove(key);
                if (f != null) {
                    f.close();
                }
            } catch (IOException ignored) {
                // see write
            }
        }
    }

    /** Creates the per-rank files even for ranks that print nothing on a stream. */
    public void open(int rank) {
        if (outputDir == null) {
            return;
        }
        synchronized (ConsoleLog.LOCK) {
            for (boolean stderr : new boolean[]{false, true}) {
                String key = rank + (stderr ? "e" : "o");
                if (!files.containsKey(key)) {
                    try {
                        files.put(key, Files.newOutputStream(outputDir.resolve("rank-" + rank + (stderr ? ".err" : ".out"))));
                    } catch (IOException ignored) {
                        // reported when writing
                    }
                }
            }
        }
    }

    private void emitLine(int rank, OutputStream target, ByteArrayOutputStream line) throws IOException {
        StringBuilder prefix = new StringBuilder();
        if (timestamp) {
            prefix.append(LocalTime.now().format(TIME)).append(' ');
        }
        if (tag) {
            prefix.append('[').append(rank).append("] ");
        }
        target.write(prefix.toString().getBytes(StandardCharsets.UTF_8));
        line.writeTo(target);
        line.reset();
    }
}
