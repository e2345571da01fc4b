package dev.jdist;

import dev.jdist.flight.OperationTrace;
import dev.jdist.spi.GroupImpl;

/**
 * Test access to what {@link Group} keeps to its package: a group over a backend's {@link GroupImpl}, as
 * {@link Distributed} forms one (without the process-wide cache), and the backend behind a group, for backends' own tests.
 */
public final class TestGroups {

    private TestGroups() {}

    public static Group wrap(GroupImpl impl) {
        return new Group(impl, OperationTrace.WORLD);
    }

    public static GroupImpl impl(Group group) {
        return group.impl();
    }
}
