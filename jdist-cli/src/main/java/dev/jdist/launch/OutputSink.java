package dev.jdist.launch;

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
 * Where rank output goes: the launcher's stdout/stderr, as raw chunks (MLX behaviour: no prefix, no line
 * buffering), or line by line with a {@code [R]} and/or time prefix; optionally also per-rank files.
 */
public final class OutputSink {
    /** One lock for everything written to the launcher's stdout and stderr, so chunks and report lines never interleave. */
    public static final Object LOCK = new Object();
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss.SSS");

    private final OutputStream out;
    private final OutputStream err;
    private final boolean tag;
    private final boolean timestamp;
    private final Path outputDir;
    private final Map<String, ByteArrayOutputStream> partial = new HashMap<>();
    private final Map<String, OutputStream> files = new HashMap<>();

    public OutputSink(OutputStream out, OutputStream err, boolean tag, boolean timestamp, Path outputDir) throws IOException {
        this.out = out;
        this.err = err;
        this.tag = tag;
        this.timestamp = timestamp;
        this.outputDir = outputDir;
        if (outputDir != null) {
            Files.createDirectories(outputDir);
        }
    }

    /** Forwards {@code n} bytes of rank {@code rank}'s stream ({@code stderr} or stdout). */
    public void write(int rank, boolean stderr, byte[] buf, int off, int n) {
        String key = rank + (stderr ? "e" : "o");
        synchronized (LOCK) {
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
                    target.write(buf, off, n);
                    target.flush();
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
        synchronized (LOCK) {
            try {
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
        synchronized (LOCK) {
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
