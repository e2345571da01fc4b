package dev.jdist.spi;

import dev.jdist.Group;

import java.util.Objects;
import java.util.function.Function;

/**
 * jdist-internal: the backend behind a {@link Group}. {@code Group} keeps it to itself (a program calls the group, which
 * validates and orders every operation); a backend's own entry points ({@code NcclGroup.of}) and jdist's own tools
 * ({@code jdist bench}'s worker, which asks {@link GroupImpl#algorithmChoice()} and {@link GroupImpl#jdistReachLimited()})
 * reach it here. {@code Group} hands its accessor over once, when the class is initialised.
 */
public final class GroupAccess {
    private static volatile Function<Group, GroupImpl> access;

    private GroupAccess() {}

    /** The backend of {@code group}; null for the 1-rank group that no backend formed. */
    public static GroupImpl impl(Group group) {
        Objects.requireNonNull(group, "group");
        return access.apply(group);
    }

    /** Called once, by {@code Group}'s static initialiser; refused from anywhere else. */
    public static synchronized void register(Function<Group, GroupImpl> accessor) {
        Class<?> caller = StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE).getCallerClass();
        if (caller != Group.class || access != null) {
            throw new IllegalStateException("the group accessor is set once, by dev.jdist.Group");
        }
        access = accessor;
    }
}
