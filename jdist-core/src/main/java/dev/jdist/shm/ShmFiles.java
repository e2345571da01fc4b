package dev.jdist.shm;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Optional;

/**
 * The life of a file that processes on one host share through mappings ({@link ShmLink}s live in them), with the rules
 * every user of shared memory in jdist keeps (docs/backends.md, "Shared-memory transport"):
 * <ul>
 *   <li>one file per creator, under {@code /dev/shm} (else {@code java.io.tmpdir}), mode 0600, named
 *       {@code <prefix><pid>-<random>} so that a name is never reused and says which process made it;</li>
 *   <li>every page written at creation ({@link #create}), so a full {@code /dev/shm} fails then with an
 *       {@link IOException}, not later with a SIGBUS;</li>
 *   <li>a name received from another process is checked before it is opened ({@link #checkName}): absolute, normal, in
 *       the directory, with the expected prefix;</li>
 *   <li>the creator deletes its file as soon as every process that needs it has mapped it (or given up), so nothing is
 *       left in {@code /dev/shm} once set-up is over, even if a process is killed later: the memory lives only in the
 *       mappings.</li>
 * </ul>
 */
public final class ShmFiles {
    private ShmFiles() {}

    private static final SecureRandom RANDOM = new SecureRandom();

    /** /dev/shm when it is a writable directory, else java.io.tmpdir. */
    public static Path directory() {
        Path shm = Path.of("/dev/shm");
        if (Files.isDirectory(shm) && Files.isWritable(shm)) return shm;
        return Path.of(System.getProperty("java.io.tmpdir"));
    }

    /** Creates {@code <prefix><pid>-<random>} of {@code size} bytes in {@link #directory()}, mode 0600, every page written. */
    public static Path create(String prefix, long size) throws IOException {
        Path dir = directory();
        Path p = null;
        for (int attempt = 0; p == null; attempt++) {
            Path candidate = dir.resolve(prefix + ProcessHandle.current().pid() + "-" + HexFormat.of().toHexDigits(RANDOM.nextLong()));
            try {
                try {
                    p = Files.createFile(candidate, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
                } catch (UnsupportedOperationException e) {
                    p = Files.createFile(candidate);
                }
            } catch (FileAlreadyExistsException e) {
                if (attempt > 5) throw e;
            }
        }
        boolean filled = false;
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.WRITE)) {
            // write every page now: a full tmpfs fails here with an IOException, not later with SIGBUS
            ByteBuffer zeros = ByteBuffer.allocateDirect((int) Math.min(size, 1 << 20));
            long pos = 0;
            while (pos < size) {
                zeros.clear().limit((int) Math.min(zeros.capacity(), size - pos));
                pos += ch.write(zeros, pos);
            }
            filled = true;
        } finally {
            if (!filled) deleteQuietly(p);
        }
        return p;
    }

    /** Maps {@code [offset, offset+size)} of {@code p} read-write into {@code arena} (offset a multiple of the page size). */
    public static MemorySegment map(Path p, long offset, long size, Arena arena) throws IOException {
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            return ch.map(FileChannel.MapMode.READ_WRITE, offset, size, arena);
        }
    }

    /**
     * A file name another process sent, checked before it is opened: an absolute, normal path whose name starts with {@code prefix}, of exactly {@code size} bytes. The {@link IOException} says what is wrong.
     */
    public static Path checkName(String text, String prefix, long size) throws IOException {
        Path p = Path.of(text);
        if (!p.isAbsolute() || p.getFileName() == null || !p.getFileName().toString().startsWith(prefix)
                || !p.normalize().equals(p)) {
            throw new IOException("not a jdist shared-memory file name");
        }
        if (!Files.exists(p)) {
            throw new IOException("no such file here: the rank that created it is on another host or in another container, "
                    + "or does not share this /dev/shm");
        }
        long actual = Files.size(p);
        if (actual != size) throw new IOException("it has " + actual + " bytes, expected " + size);
        return p;
    }

    public static void deleteQuietly(Path p) {
        if (p == null) return;
        try {
            Files.deleteIfExists(p);
        } catch (IOException ignored) {
            // nothing more to do; the name is unique
        }
    }

    /** Linux's boot id ({@code /proc/sys/kernel/random/boot_id}): the same for every process of one running kernel. */
    public static Optional<String> bootId() {
        try {
            String id = Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).strip();
            if (!id.isEmpty()) return Optional.of(id);
        } catch (IOException | RuntimeException ignored) {
            // not Linux, or /proc is not mounted
        }
        return Optional.empty();
    }

    /** This host's name, for messages. */
    public static String hostName() {
        try {
            String h = Files.readString(Path.of("/proc/sys/kernel/hostname")).strip();
            if (!h.isEmpty()) return h;
        } catch (IOException | RuntimeException ignored) {
            // fall through
        }
        String env = System.getenv("HOSTNAME");
        return env != null && !env.isBlank() ? env : "?";
    }
}
