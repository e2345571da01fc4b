package dev.jdist.flight;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * One process's flight record as written to disk: format {@value #FORMAT}, version {@value #VERSION}, one JSON
 * document per file, described field by field in docs/observability.md ("Dump format"). The recorder writes it
 * ({@link FlightRecorder}); {@link FlightAnalysis}, {@code jdist launch} and {@code jdist doctor analyze}
 * read it. Readers ignore fields they do not know (a later version 1 may add some) and refuse another format or
 * version, naming the file.
 *
 * @param reason     why it was written: {@code failure}, {@code signal SIGTERM} (or another signal),
 *                   {@code request}, {@code exit after failure}, {@code exit during an operation}
 * @param time       when it was written (ISO-8601, UTC, the host's clock)
 * @param capacity   operations kept per group ({@code JDIST_FLIGHT_RECORDER})
 * @param failure    the first operation of the process that failed with a {@code DistributedException}, or null
 * @param groups     every group of the process that ran an operation, in the order they were created
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonPropertyOrder({"format", "version", "reason", "time", "host", "pid", "jdist", "capacity", "failure", "groups"})
public record FlightDump(String format, int version, String reason, String time, String host, long pid,
                         String jdist, int capacity, Failure failure, List<GroupRecord> groups) {

    public static final String FORMAT = "jdist-flight-record";
    public static final int VERSION = 1;
    /** The file names a dump has: {@code jdist-flight-rank-R-PID.json} (R is {@code x} when the rank is unknown). */
    public static final String FILE_PREFIX = "jdist-flight-";
    public static final String FILE_SUFFIX = ".json";

    /** Operation states. */
    public static final String STARTED = "started", COMPLETED = "completed", FAILED = "failed";

    /**
     * The process's first failed operation.
     *
     * @param operation e.g. {@code all_sum float32[1024]}
     * @param error     {@code ExceptionType: message}
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"group", "rank", "sequence", "operation", "error", "time"})
    public record Failure(String group, int rank, long sequence, String operation, String error, String time) {
    }

    /**
     * One group's recent operations.
     *
     * @param group      {@code world}, or a split's label {@code PARENT/split@SEQUENCE(color=C)}
     * @param rank       this process's rank in the group
     * @param operations how many operations the group has begun (the next sequence number); the ones kept are the
     *                   last {@code capacity} of them
     * @param recent     the operations kept, oldest first
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"group", "backend", "rank", "size", "operations", "recent"})
    public record GroupRecord(String group, String backend, int rank, int size, long operations, List<Operation> recent) {
        public GroupRecord {
            recent = recent == null ? List.of() : List.copyOf(recent);
        }
    }

    /**
     * One operation.
     *
     * @param op     {@code all_sum}, {@code all_max}, {@code all_min}, {@code all_gather}, {@code sum_scatter},
     *               {@code send}, {@code recv}, {@code split}
     * @param dtype  MLX's name; null for split
     * @param shape  this rank's input shape (recv: the output's); null for split. At most 8 dimensions are kept
     * @param ndim   the true number of dimensions when {@code shape} was cut at 8; otherwise null
     * @param bytes  this rank's input bytes (recv: the output's; all_gather: one rank's part)
     * @param peer   the other rank of a send or recv; -1 for collectives
     * @param state  {@link #STARTED}, {@link #COMPLETED} or {@link #FAILED}
     * @param error  for a failed one, {@code ExceptionType: message}
     * @param start  when its turn came (ISO-8601, UTC)
     * @param end    when it ended; null while started
     * @param micros how long it took; null while started
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"sequence", "op", "dtype", "shape", "ndim", "bytes", "peer", "async", "state", "error", "start", "end", "micros"})
    public record Operation(long sequence, String op, String dtype, List<Integer> shape, Integer ndim, long bytes, int peer,
                            boolean async, String state, String error, String start, String end, Long micros) {

        /** {@code all_sum float32[1024]}, {@code send int32[4, 4] to 3}, {@code recv float32[] from 0}, {@code split}. */
        public String describe() {
            StringBuilder s = new StringBuilder(op);
            if (dtype != null) {
                s.append(' ').append(dtype).append('[');
                if (shape != null) {
                    for (int i = 0; i < shape.size(); i++) s.append(i == 0 ? "" : ", ").append(shape.get(i));
                    if (ndim != null && ndim > shape.size()) s.append(", ... (").append(ndim).append(" dimensions)");
                }
                s.append(']');
            }
            if (op.equals("send")) s.append(" to ").append(peer);
            else if (op.equals("recv")) s.append(" from ").append(peer);
            return s.toString();
        }

        /** Whether only two ranks take part (send, recv): the others do not count it. */
        public boolean pointToPoint() {
            return op.equals("send") || op.equals("recv");
        }
    }

    public FlightDump {
        groups = groups == null ? List.of() : List.copyOf(groups);
    }

    private static final ObjectMapper JSON = new ObjectMapper()
            .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false)
            .enable(SerializationFeature.INDENT_OUTPUT);

    /** The document's text (indented JSON, a final newline). */
    public String toJson() {
        try {
            return JSON.writeValueAsString(this) + "\n";
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write a flight record: " + e.getMessage(), e);
        }
    }

    /** Parses one dump; {@code where} names its source in errors. */
    public static FlightDump parse(String json, String where) {
        JsonNode root;
        try {
            root = JSON.readTree(json);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException(where + " is not a jdist flight record: not JSON (" + e.getOriginalMessage() + ")");
        }
        if (root == null || !root.isObject() || !FORMAT.equals(root.path("format").asText(null))) {
            throw new IllegalArgumentException(where + " is not a jdist flight record: it has no \"format\": \"" + FORMAT + "\"");
        }
        int version = root.path("version").asInt(-1);
        if (version != VERSION) {
            throw new IllegalArgumentException(where + " is a flight record of version " + version + "; this jdist reads version "
                    + VERSION + ". Analyse it with the jdist that wrote it (\"jdist\": \"" + root.path("jdist").asText("?") + "\")");
        }
        try {
            return JSON.treeToValue(root, FlightDump.class);
        } catch (JsonProcessingException | IllegalArgumentException e) {
            String why = e instanceof JsonProcessingException j ? j.getOriginalMessage() : e.getMessage();
            throw new IllegalArgumentException(where + " is a damaged flight record: " + why);
        }
    }

    /** Reads one dump file. */
    public static FlightDump read(Path file) throws IOException {
        return parse(Files.readString(file), file.toString());
    }

    /** Whether {@code name} is a dump's file name. */
    public static boolean isDumpFileName(String name) {
        return name.startsWith(FILE_PREFIX) && name.endsWith(FILE_SUFFIX);
    }

    /** The dump files directly in {@code dir}, by name. */
    public static List<Path> files(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> isDumpFileName(p.getFileName().toString()) && Files.isRegularFile(p)).sorted().toList();
        }
    }

    /** What reading a directory gave: the dumps, and one line for each file that could not be read. */
    public record Loaded(List<FlightDump> dumps, List<String> problems) {
    }

    /** Reads every dump file in {@code dir}; a file that cannot be read is a problem line, not an exception. */
    public static Loaded readDirectory(Path dir) throws IOException {
        List<FlightDump> dumps = new ArrayList<>();
        List<String> problems = new ArrayList<>();
        for (Path f : files(dir)) {
            try {
                dumps.add(read(f));
            } catch (IllegalArgumentException | IOException e) {
                problems.add(e instanceof IOException ? f + ": cannot read it (" + e.getMessage() + ")" : e.getMessage());
            }
        }
        return new Loaded(dumps, problems);
    }
}
