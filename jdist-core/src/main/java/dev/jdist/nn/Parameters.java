package dev.jdist.nn;

import dev.jdist.Array;
import dev.jdist.Group;

import java.util.List;

/** What data-parallel training does with a model's parameters as a whole. */
public final class Parameters {
    private Parameters() {}

    /**
     * Overwrites every rank's parameters with rank {@code root}'s, in place ({@link Group#broadcastInto}), so that all
     * replicas start from the same weights whatever each rank's random initialisation gave. A collective: every rank
     * passes parameters of the same dtypes and shapes, in the same order.
     */
    public static void broadcast(List<Array> parameters, Group group, int root) {
        for (Array p : parameters) group.broadcastInto(p, root);
    }
}
