package dev.jdist;

import dev.jdist.spi.GroupImpl;

/** Test access: wraps a backend's GroupImpl in a {@link Group}, as {@link Distributed} does, without the process-wide cache. */
public final class NcclTestGroups {

    private NcclTestGroups() {}

    public static Group wrap(GroupImpl impl) {
        return new Group(impl, OperationTrace.WORLD);
    }
}
