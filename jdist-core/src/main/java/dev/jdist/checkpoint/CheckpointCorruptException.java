package dev.jdist.checkpoint;

import java.nio.file.Path;

/** A checkpoint file that cannot be trusted: torn by a crash while it was written, truncated, or changed since. */
public final class CheckpointCorruptException extends RuntimeException {
    private final Path file;

    public CheckpointCorruptException(Path file, String why) {
        super("checkpoint " + file + " is corrupt (" + why + "); it is not used: resume from an earlier checkpoint "
                + "(Checkpointer.latest() skips it) or delete it");
        this.file = file;
    }

    /** The file that was refused. */
    public Path file() {
        return file;
    }
}
