package dev.jdist;

import dev.jdist.spi.Backend;
import dev.jdist.spi.GroupImpl;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;

/**
 * Entry point: forms this process's group with one of the backends (spec collectives.md §2),
 * caching one group per backend name exactly as MLX does.
 */
public final class Distributed {

    /** The order {@code "any"} tries backends in (MLX's order). */
    static final List<String> ANY_ORDER = List.of("nccl", "ring", "mpi", "jaccl");
    static final List<String> VALID_NAMES = List.of("any", "ring", "jaccl", "mpi", "nccl");

    private static final Map<String, Group> CACHE = new HashMap<>();
    private static Map<String, Backend> backends;

    private Distributed() {}

    /** {@code init(false, "any")}: a real group if any backend is configured, otherwise the 1-rank group. */
    public static Group init() { return init(false, "any"); }

    /** {@code init(false, backend)}. */
    public static Group init(String backend) { return init(false, backend); }

    public static Group init(boolean strict, String backend) {
        return init(strict, backend, System.getenv());
    }

    /** As {@link #init(boolean, String)}, reading {@code env} instead of the process environment (for tests and embedding). */
    public static synchronized Group init(boolean strict, String backend, Map<String, String> env) {
        if (!VALID_NAMES.contains(backend)) {
            throw new IllegalArgumentException("unknown distributed backend '" + backend + "'; valid backends: "
                    + String.join(", ", VALID_NAMES));
        }
        Group cached = CACHE.get(backend);
        if (cached != null) return cached;

        List<String> candidates = backend.equals("any") ? ANY_ORDER : List.of(backend);
        String lastTried = backend;
        for (String name : candidates) {
            lastTried = name;
            Backend b = backends().get(name);
            Optional<GroupImpl> impl;
            if (b == null) {
                if (strict && !backend.equals("any")) {
                    throw new ConfigException("the '" + name + "' backend is not part of this jdist build");
                }
                continue;
            }
            impl = b.init(backend.equals("any") ? false : strict, env);
            if (impl.isPresent()) {
                GroupImpl g = impl.get();
                Group group = new Group(g, new OperationQueue(name + " rank " + g.rank()));
                CACHE.put(name, group);
                CACHE.putIfAbsent("any", group);
                return group;
            }
        }
        if (strict) {
            throw new ConfigException(backend.equals("any")
                    ? "could not initialize any distributed backend (tried " + String.join(", ", ANY_ORDER)
                      + "); launch with `jdist launch` or set MLX_RANK and MLX_HOSTFILE"
                    : "the '" + backend + "' backend is not configured");
        }
        Group singleton = Group.singleton();
        CACHE.put(lastTried, singleton);
        return singleton;
    }

    /**
     * MLX's {@code init(strict, "jaccl", factory)}: JACCL with a custom side channel instead of the TCP
     * coordinator. Only valid with backend {@code "jaccl"} (IllegalArgumentException otherwise, before any
     * cache lookup); when {@code "jaccl"} is already cached the factory is ignored.
     */
    public static Group init(boolean strict, String backend, AllGatherFactory sideChannel) {
        return init(strict, backend, sideChannel, System.getenv());
    }

    /** As {@link #init(boolean, String, AllGatherFactory)}, reading {@code env}. */
    public static synchronized Group init(boolean strict, String backend, AllGatherFactory sideChannel, Map<String, String> env) {
        if (!"jaccl".equals(backend)) {
            throw new IllegalArgumentException("a custom side channel (all-gather factory) is only valid with the 'jaccl' backend, not '"
                    + backend + "'");
        }
        if (sideChannel == null) throw new IllegalArgumentException("the JACCL side-channel factory must not be null");
        Group cached = CACHE.get(backend);
        if (cached != null) return cached;
        Backend b = backends().get(backend);
        if (b == null) {
            if (strict) throw new ConfigException("the 'jaccl' backend is not part of this jdist build");
        } else {
            Optional<GroupImpl> impl = b.init(strict, env, sideChannel);
            if (impl.isPresent()) {
                GroupImpl g = impl.get();
                Group group = new Group(g, new OperationQueue(backend + " rank " + g.rank()));
                CACHE.put(backend, group);
                CACHE.putIfAbsent("any", group);
                return group;
            }
        }
        Group singleton = Group.singleton();
        CACHE.put(backend, singleton);
        return singleton;
    }

    /** {@code isAvailable("any")}. */
    public static boolean isAvailable() { return isAvailable("any"); }

    /** Whether this process could instantiate {@code backend}; never throws, never touches the network. */
    public static boolean isAvailable(String backend) {
        try {
            if (backend.equals("any")) {
                return backends().values().stream().anyMatch(Distributed::available);
            }
            Backend b = backends().get(backend);
            return b != null && available(b);
        } catch (RuntimeException | LinkageError e) {
            return false;
        }
    }

    private static boolean available(Backend b) {
        try {
            return b.isAvailable();
        } catch (RuntimeException | LinkageError e) {
            return false;
        }
    }

    /** Closes every cached group and empties the cache (MLX: {@code clear_backends()}). */
    public static synchronized void reset() {
        for (Group g : new java.util.HashSet<>(CACHE.values())) {
            try {
                g.close();
            } catch (RuntimeException ignored) {
                // closing is best effort; the cache is emptied regardless
            }
        }
        CACHE.clear();
    }

    private static synchronized Map<String, Backend> backends() {
        if (backends == null) {
            Map<String, Backend> found = new LinkedHashMap<>();
            for (Backend b : ServiceLoader.load(Backend.class, Distributed.class.getClassLoader())) {
                found.putIfAbsent(b.name(), b);
            }
            backends = found;
        }
        return backends;
    }
}
