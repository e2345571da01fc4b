package dev.jdist.checkpoint;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.CRC32C;

/**
 * Saves and loads {@link TrainingState}s in one directory, one file per saved step ({@code step-<20 digits>.ckpt}),
 * keeping the newest {@code keep}.
 *
 * <p>A save is atomic: the state goes to a temporary file in the same directory, which is flushed to the disk
 * ({@code fsync}) and then renamed over the final name, and the directory is flushed too; a process killed at any
 * moment leaves either the previous files or the new one, never a half-written file under a checkpoint's name. Every
 * file ends with its length and a CRC-32C of everything before it, so a file damaged some other way (a disk or copy
 * error, a file system without atomic rename) is refused with {@link CheckpointCorruptException}, and
 * {@link #latest()} goes back to the newest file that is whole.
 *
 * <p>Who writes: in a data-parallel job every rank holds the same state, and each rank keeps its own directory
 * ({@link #forRank}), so no shared file system is needed and no rank waits for another's disk;
 * {@link Checkpoints#resume} makes the ranks agree on the step they all hold. One directory has one writer.
 */
public final class Checkpointer {

    static final byte[] MAGIC = "JDCKPT01".getBytes(StandardCharsets.US_ASCII);
    static final byte[] END = "JDCKEND1".getBytes(StandardCharsets.US_ASCII);
    private static final int TRAILER = 8 + 4 + END.length;
    private static final Pattern NAME = Pattern.compile("step-(\\d{20})\\.ckpt");

    private final Path dir;
    private final int keep;
    private final Consumer<String> warnings;

    /**
     * @param dir  the directory (created on the first save)
     * @param keep how many of the newest files to keep, at least 2 for {@link Checkpoints#resume} (ranks may be one
     *             save apart when a job fails)
     */
    public Checkpointer(Path dir, int keep) {
        this(dir, keep, w -> System.err.println("[WARN] " + w));
    }

    /** As {@link #Checkpointer(Path, int)}, with the lines {@link #latest()} reports about refused files going to {@code warnings}. */
    public Checkpointer(Path dir, int keep, Consumer<String> warnings) {
        if (keep < 1) {
            throw new IllegalArgumentException("keep must be at least 1 (2 or more for a job that resumes on several ranks), got " + keep);
        }
        this.dir = dir;
        this.keep = keep;
        this.warnings = warnings;
    }

    /** Rank {@code rank}'s own directory under {@code root}: {@code root/rank-<rank>}. */
    public static Checkpointer forRank(Path root, int rank, int keep) {
        if (rank < 0) throw new IllegalArgumentException("rank must be 0 or more, got " + rank);
        return new Checkpointer(root.resolve("rank-" + rank), keep);
    }

    /** Whether a job that has done {@code stepsDone} steps saves now, saving every {@code every} steps. */
    public static boolean due(long stepsDone, int every) {
        if (every < 1) throw new IllegalArgumentException("save every N steps needs N >= 1, got " + every);
        return stepsDone > 0 && stepsDone % every == 0;
    }

    public Path directory() {
        return dir;
    }

    /** The file a state of {@code step} is saved in. */
    public Path file(long step) {
        return dir.resolve(String.format("step-%020d.ckpt", step));
    }

    /** Saves {@code state} atomically, then removes the files beyond the newest {@code keep}; returns the file. */
    public Path save(TrainingState state) {
        try {
            Files.createDirectories(dir);
            removeTemporaryFiles();
            ByteBuffer bytes = encode(state);
            Path target = file(state.step());
            Path tmp = Files.createTempFile(dir, ".step-" + state.step() + ".", ".tmp");
            try {
                try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                    while (bytes.hasRemaining()) ch.write(bytes);
                    ch.force(true);
                }
                try {
                    Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                } catch (AtomicMoveNotSupportedException e) {
                    throw new IOException("the file system of " + dir + " cannot rename atomically; put checkpoints on a local "
                            + "or POSIX file system", e);
                }
            } finally {
                Files.deleteIfExists(tmp);
            }
            syncDirectory();
            List<Long> steps = steps();
            for (int i = keep; i < steps.size(); i++) {
                Files.deleteIfExists(file(steps.get(i)));
            }
            return target;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot save the checkpoint of step " + state.step() + " in " + dir + ": " + e.getMessage(), e);
        }
    }

    /** The steps that have a file here, newest first (not yet checked). */
    public List<Long> steps() {
        List<Long> steps = new ArrayList<>();
        if (!Files.isDirectory(dir)) return steps;
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
            for (Path p : ds) {
                Matcher m = NAME.matcher(p.getFileName().toString());
                if (m.matches()) steps.add(Long.parseLong(m.group(1)));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list the checkpoints in " + dir + ": " + e.getMessage(), e);
        }
        steps.sort(Comparator.reverseOrder());
        return steps;
    }

    /**
     * The newest state whose file is whole; a refused file is reported (see the constructor) and the one before it
     * tried. Empty when there is none.
     */
    public Optional<TrainingState> latest() {
        for (long step : steps()) {
            try {
                return Optional.of(load(step));
            } catch (CheckpointCorruptException e) {
                warnings.accept(e.getMessage());
            } catch (UncheckedIOException e) {
                if (!(e.getCause() instanceof NoSuchFileException)) throw e;
            }
        }
        return Optional.empty();
    }

    /**
     * The state saved for {@code step}.
     *
     * @throws CheckpointCorruptException when the file is not whole
     * @throws UncheckedIOException       when it cannot be read (a missing file: {@link NoSuchFileException} as the cause)
     */
    public TrainingState load(long step) {
        Path f = file(step);
        byte[] all;
        try {
            all = Files.readAllBytes(f);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read checkpoint " + f + ": " + e, e);
        }
        TrainingState s = decode(f, all);
        if (s.step() != step) {
            throw new CheckpointCorruptException(f, "it holds step " + s.step() + ", its name says " + step);
        }
        return s;
    }

    static ByteBuffer encode(TrainingState s) {
        long size = MAGIC.length + 8L + 4 + 4 + 4 + TRAILER;
        for (var e : s.floats().entrySet()) size += nameSize(e.getKey()) + 4 + 4L * e.getValue().length;
        for (var e : s.doubles().entrySet()) size += nameSize(e.getKey()) + 4 + 8L * e.getValue().length;
        for (var e : s.metadata().entrySet()) size += nameSize(e.getKey()) + nameSize(e.getValue());
        if (size > Integer.MAX_VALUE - 64) {
            throw new IllegalArgumentException("a training state of " + size + " bytes is over the 2 GiB one file holds; "
                    + "save the parameters in parts (one Checkpointer per part)");
        }
        ByteBuffer b = ByteBuffer.allocate((int) size).order(ByteOrder.LITTLE_ENDIAN);
        b.put(MAGIC).putLong(s.step());
        b.putInt(s.floats().size());
        for (var e : s.floats().entrySet()) {
            putString(b, e.getKey());
            b.putInt(e.getValue().length);
            b.asFloatBuffer().put(e.getValue());
            b.position(b.position() + 4 * e.getValue().length);
        }
        b.putInt(s.doubles().size());
        for (var e : s.doubles().entrySet()) {
            putString(b, e.getKey());
            b.putInt(e.getValue().length);
            b.asDoubleBuffer().put(e.getValue());
            b.position(b.position() + 8 * e.getValue().length);
        }
        b.putInt(s.metadata().size());
        for (var e : s.metadata().entrySet()) {
            putString(b, e.getKey());
            putString(b, e.getValue());
        }
        int payload = b.position();
        CRC32C crc = new CRC32C();
        crc.update(b.array(), 0, payload);
        b.putLong(payload).putInt((int) crc.getValue()).put(END);
        b.flip();
        return b;
    }

    static TrainingState decode(Path f, byte[] all) {
        if (all.length < MAGIC.length + TRAILER) {
            throw new CheckpointCorruptException(f, "only " + all.length + " bytes, shorter than any checkpoint");
        }
        ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
        int payload = all.length - TRAILER;
        byte[] end = new byte[END.length];
        b.position(payload + 12);
        b.get(end);
        if (!java.util.Arrays.equals(end, END)) {
            throw new CheckpointCorruptException(f, "no end marker: the file was cut short or is not a jdist checkpoint");
        }
        long recorded = b.getLong(payload);
        if (recorded != payload) {
            throw new CheckpointCorruptException(f, "its trailer says " + recorded + " bytes of content, the file holds " + payload);
        }
        CRC32C crc = new CRC32C();
        crc.update(all, 0, payload);
        if ((int) crc.getValue() != b.getInt(payload + 8)) {
            throw new CheckpointCorruptException(f, "checksum mismatch: CRC-32C " + Integer.toHexString((int) crc.getValue())
                    + ", recorded " + Integer.toHexString(b.getInt(payload + 8)));
        }
        byte[] magic = new byte[MAGIC.length];
        b.position(0);
        b.get(magic);
        if (!java.util.Arrays.equals(magic, MAGIC)) {
            throw new CheckpointCorruptException(f, "not a jdist checkpoint of format 1 (it starts with "
                    + new String(magic, StandardCharsets.ISO_8859_1) + ")");
        }
        try {
            b.limit(payload);
            long step = b.getLong();
            Map<String, float[]> floats = new LinkedHashMap<>();
            int nf = count(b);
            for (int i = 0; i < nf; i++) {
                String name = getString(b);
                float[] v = new float[count(b)];
                b.asFloatBuffer().get(v);
                b.position(b.position() + 4 * v.length);
                floats.put(name, v);
            }
            Map<String, double[]> doubles = new LinkedHashMap<>();
            int nd = count(b);
            for (int i = 0; i < nd; i++) {
                String name = getString(b);
                double[] v = new double[count(b)];
                b.asDoubleBuffer().get(v);
                b.position(b.position() + 8 * v.length);
                doubles.put(name, v);
            }
            Map<String, String> meta = new LinkedHashMap<>();
            int nm = count(b);
            for (int i = 0; i < nm; i++) meta.put(getString(b), getString(b));
            if (b.hasRemaining()) {
                throw new CheckpointCorruptException(f, b.remaining() + " bytes after the last entry");
            }
            return new TrainingState(step, floats, doubles, meta);
        } catch (BufferUnderflowException | IllegalArgumentException e) {
            // the checksum matched, so this is a writer's bug or a forged file, not a torn write
            throw new CheckpointCorruptException(f, "its entries do not fit its length (" + e + ")");
        }
    }

    private static int count(ByteBuffer b) {
        int n = b.getInt();
        if (n < 0 || n > b.remaining()) throw new BufferUnderflowException();
        return n;
    }

    private static long nameSize(String s) {
        return 4 + (long) s.getBytes(StandardCharsets.UTF_8).length;
    }

    private static void putString(ByteBuffer b, String s) {
        byte[] u = s.getBytes(StandardCharsets.UTF_8);
        b.putInt(u.length).put(u);
    }

    private static String getString(ByteBuffer b) {
        byte[] u = new byte[count(b)];
        b.get(u);
        return new String(u, StandardCharsets.UTF_8);
    }

    /** Temporary files of a save a killed process did not finish (one writer per directory: none is in progress). */
    private void removeTemporaryFiles() throws IOException {
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, ".step-*.tmp")) {
            for (Path p : ds) Files.deleteIfExists(p);
        }
    }

    /** Makes the rename itself durable (Linux and macOS allow opening a directory to fsync it). */
    private void syncDirectory() {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        } catch (IOException | UnsupportedOperationException ignored) {
            // not supported here (Windows): the rename is still atomic, only its durability across a power cut is not assured
        }
    }
}
