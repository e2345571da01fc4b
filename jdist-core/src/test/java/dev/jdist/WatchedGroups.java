package dev.jdist;

import dev.jdist.flight.OperationTrace;
import dev.jdist.spi.GroupImpl;
import dev.jdist.spi.JdistVersion;
import dev.jdist.spi.JobTable;
import dev.jdist.spi.RankRecord;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * Test helper: the {@link Group}s of one job whose ranks are threads of this JVM (each with its own backend group, e.g.
 * JACCL over the in-memory fabric), formed as {@link Distributed} forms a group of jdist ranks — with a job table (every
 * rank on 127.0.0.1, this process's pid) and the liveness watch started from {@code env} on every rank at once.
 */
public final class WatchedGroups {
    private WatchedGroups() {}

    /** A job table of {@code n} ranks on loopback, all in this process. */
    public static JobTable loopbackTable(int n) {
        List<RankRecord> ranks = new ArrayList<>();
        long pid = ProcessHandle.current().pid();
        for (int q = 0; q < n; q++) {
            ranks.add(new RankRecord(q, "test", n, "test", "test", "test", JdistVersion.release(), JdistVersion.WIRE_PROTOCOL, "", "",
                    "", Map.of(), "127.0.0.1", "testhost", pid, "test-boot-id", List.of(), List.of()));
        }
        return new JobTable("test", ranks, null);
    }

    /** The groups over {@code impls.apply(q)}, watched with {@code env}; every rank's start-up runs on its own thread. */
    public static List<Group> form(int n, IntFunction<GroupImpl> impls, Map<String, String> env) throws Exception {
        JobTable table = loopbackTable(n);
        List<CompletableFuture<Group>> futures = new ArrayList<>();
        for (int q = 0; q < n; q++) {
            int rank = q;
            futures.add(CompletableFuture.supplyAsync(() -> {
                Group g = new Group(impls.apply(rank), OperationTrace.WORLD, table, null);
                g.watchMembers(env);
                return g;
            }, r -> Thread.ofPlatform().daemon().name("form-rank-" + rank).start(r)));
        }
        List<Group> out = new ArrayList<>();
        for (var f : futures) out.add(f.get(60, TimeUnit.SECONDS));
        return out;
    }

    /** The liveness watch of {@code g} stops without a goodbye: to the others, as if the process had been killed. */
    public static void killWatch(Group g) {
        g.monitorForTesting().stopWithoutGoodbye();
    }
}
