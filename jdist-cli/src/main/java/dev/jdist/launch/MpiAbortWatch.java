package dev.jdist.launch;

import dev.jdist.mpi.MpiBackend;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * Passes {@code mpirun}'s stderr through unchanged and notes when a rank announced {@code MPI_Abort}
 * ({@link MpiBackend#ABORT_NOTICE}). {@code mpirun} waits for every host's daemon before it ends, so a host cut off by
 * the network keeps an aborted job's {@code mpirun} running for as long as the cut lasts; the launcher uses the time
 * of the notice to bound that wait (docs/reliability.md, "A host cut off from an MPI job").
 */
final class MpiAbortWatch implements Runnable {
    /** How long {@code mpirun} may take to end after a rank's abort notice: the ranks' own bound and a margin. */
    static final long MPIRUN_AFTER_ABORT_MILLIS = MpiBackend.ABORT_BOUND_MILLIS + 20_000;
    /** A line longer than this is passed on but not searched past its start. */
    private static final int LINE_LIMIT = 4096;

    private final InputStream from;
    private final OutputStream to;
    private volatile long noticedAtNanos;
    private volatile boolean noticed;

    MpiAbortWatch(InputStream from, OutputStream to) {
        this.from = from;
        this.to = to;
    }

    @Override
    public void run() {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        byte[] buf = new byte[8192];
        try {
            int n;
            while ((n = from.read(buf)) > 0) {
                to.write(buf, 0, n);
                to.flush();
                for (int i = 0; i < n; i++) {
                    if (buf[i] == '\n') {
                        inspect(line.toByteArray());
                        line.reset();
                    } else if (line.size() < LINE_LIMIT) {
                        line.write(buf[i]);
                    }
                }
            }
            inspect(line.toByteArray());
        } catch (IOException e) {
            // mpirun's end closes the pipe: nothing more to pass on
        }
    }

    /** Whether a rank announced {@code MPI_Abort}. */
    boolean noticed() { return noticed; }

    /** Whether {@code mpirun} has had {@link #MPIRUN_AFTER_ABORT_MILLIS} since the first notice. */
    boolean overdue(long nowNanos) {
        return noticed && nowNanos - noticedAtNanos > MPIRUN_AFTER_ABORT_MILLIS * 1_000_000;
    }

    private void inspect(byte[] l) {
        // mpirun may prefix a rank's lines (--tag-output, --timestamp-output): the notice can start anywhere
        if (noticed || !new String(l, StandardCharsets.ISO_8859_1).contains(MpiBackend.ABORT_NOTICE)) return;
        noticedAtNanos = System.nanoTime();
        noticed = true;
    }
}
