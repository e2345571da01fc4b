package dev.jdist.checkpoint;

import dev.jdist.Array;
import dev.jdist.Group;

import java.io.UncheckedIOException;
import java.util.Optional;

/** Resuming a data-parallel job from its ranks' checkpoints (docs/training.md, "Surviving a lost rank"). */
public final class Checkpoints {

    private Checkpoints() {
    }

    /**
     * The state every rank of {@code group} resumes from, the same on every rank: the ranks agree (all_min) on the
     * newest step all of them hold whole, and each loads that step from its own {@code checkpointer}. Empty on every
     * rank when some rank has none (the job starts from the beginning). A collective: every rank calls it, at the same
     * point.
     *
     * @throws IllegalStateException on every rank when some rank cannot read the agreed step (keep at least 2 files)
     */
    public static Optional<TrainingState> resume(Group group, Checkpointer checkpointer) {
        Optional<TrainingState> mine = checkpointer.latest();
        long agreed = group.allMin(Array.of(mine.map(TrainingState::step).orElse(-1L))).toLongArray()[0];
        if (agreed < 0) {
            return Optional.empty();
        }
        TrainingState state = null;
        String why = null;
        if (mine.get().step() == agreed) {
            state = mine.get();
        } else {
            try {
                state = checkpointer.load(agreed);
            } catch (CheckpointCorruptException | UncheckedIOException e) {
                why = e.getMessage();
            }
        }
        long allHaveIt = group.allMin(Array.of(state == null ? 0L : 1L)).toLongArray()[0];
        if (allHaveIt == 0) {
            throw new IllegalStateException("the ranks agreed to resume from step " + agreed + " but "
                    + (state == null ? "this rank (" + group.rank() + ") cannot read it: " + why : "another rank cannot read it")
                    + "; keep at least 2 checkpoints per rank (new Checkpointer(dir, 2)) or start afresh");
        }
        return Optional.of(state);
    }
}
