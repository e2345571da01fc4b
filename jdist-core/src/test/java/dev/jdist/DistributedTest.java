package dev.jdist;

import dev.jdist.spi.Backend;
import dev.jdist.spi.GroupImpl;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** docs/reference/collectives.md §2.2 and §2.3, every listed consequence, with fake backends instead of the ServiceLoader. */
class DistributedTest {

    /** A fake backend: configured or not, optionally failing even though configured; records its init calls. */
    static final class FakeBackend implements Backend {
        final String name;
        boolean configured;
        boolean available = true;
        RuntimeException failure;                 // thrown by init when configured (bad hostfile etc.)
        boolean availabilityThrows;
        final List<Boolean> initCalls = new ArrayList<>();
        final List<RecordingGroupImpl> made = new ArrayList<>();

        FakeBackend(String name, boolean configured) {
            this.name = name;
            this.configured = configured;
        }

        @Override public String name() { return name; }

        @Override
        public boolean isAvailable() {
            if (availabilityThrows) throw new UnsatisfiedLinkError("lib" + name + " not found");
            return available;
        }

        @Override
        public Optional<GroupImpl> init(boolean strict, Map<String, String> env) {
            initCalls.add(strict);
            if (configured) {
                if (failure != null) throw failure;
                RecordingGroupImpl g = new RecordingGroupImpl(name, 0, 2);
                made.add(g);
                return Optional.of(g);
            }
            if (strict) throw new ConfigException(name + " is not configured");
            return Optional.empty();
        }
    }

    private final FakeBackend nccl = new FakeBackend("nccl", false);
    private final FakeBackend ring = new FakeBackend("ring", false);
    private final FakeBackend mpi = new FakeBackend("mpi", false);
    private final FakeBackend jaccl = new FakeBackend("jaccl", false);

    private void install(FakeBackend... backends) { Distributed.useBackendsForTesting(List.of(backends)); }

    @AfterEach
    void restore() { Distributed.useBackendsForTesting(null); }

    @Test
    void theStaticCollectivesRunOnTheDefaultGroup() {
        ring.configured = true;
        install(nccl, ring, mpi, jaccl);
        Array x = Array.ones(DType.FLOAT32, 4);
        assertThat(Distributed.allSum(x).toFloatArray()).containsExactly(1, 1, 1, 1);   // the fake copies its input
        Distributed.allMax(x);
        Distributed.allMin(x);
        assertThat(Distributed.allGather(x).shape()).containsExactly(8);
        assertThat(Distributed.sumScatter(Array.ones(DType.FLOAT32, 4, 2)).shape()).containsExactly(2, 2);
        Distributed.send(x, 1);
        assertThat(Distributed.recv(new int[] {3}, DType.INT32, 1).shape()).containsExactly(3);
        assertThat(Distributed.recvLike(x, 1).dtype()).isEqualTo(DType.FLOAT32);
        assertThat(ring.made).hasSize(1);
        assertThat(ring.made.get(0).calls).containsExactly("allReduce SUM", "allReduce MAX", "allReduce MIN", "allGather",
                "sumScatter", "send 1", "recv 1", "recv 1");
        assertThat(Distributed.init()).isSameAs(Distributed.init("ring"));
    }

    @Test
    void theStaticCollectivesOnTheSingletonReturnTheirInput() {
        install(nccl, ring, mpi, jaccl);
        Array x = Array.ones(DType.FLOAT32, 4);
        assertThat(Distributed.allSum(x)).isSameAs(x);
        assertThat(Distributed.allGather(x)).isSameAs(x);
    }

    @Test
    void initMpiThenInitGivesTheMpiGroup() {
        mpi.configured = true;
        install(nccl, ring, mpi, jaccl);
        Group m = Distributed.init(false, "mpi", Map.of());
        assertThat(m.backend()).isEqualTo("mpi");
        assertThat(Distributed.init(false, "any", Map.of())).isSameAs(m);
    }

    @Test
    void initAnyThenInitAnyGivesTheSameGroupWithoutTryingAgain() {
        ring.configured = true;
        install(nccl, ring, mpi, jaccl);
        Group first = Distributed.init(false, "any", Map.of());
        assertThat(first.backend()).isEqualTo("ring");
        assertThat(Distributed.init(true, "any", Map.of())).isSameAs(first);
        assertThat(Distributed.init(false, "ring", Map.of())).isSameAs(first);
        assertThat(ring.initCalls).hasSize(1);
    }

    @Test
    void theFirstSuccessfulBackendWinsAnyForever() {
        mpi.configured = true;
        ring.configured = true;
        install(nccl, ring, mpi, jaccl);
        Group m = Distributed.init(false, "mpi", Map.of());
        Group r = Distributed.init(false, "ring", Map.of());
        assertThat(r).isNotSameAs(m);
        assertThat(Distributed.init(false, "any", Map.of())).isSameAs(m);
        assertThat(Distributed.init(false, "ring", Map.of())).isSameAs(r);
    }

    @Test
    void anyTriesNcclRingMpiJacclInOrderEachNonStrictly() {
        jaccl.configured = true;
        install(jaccl, mpi, ring, nccl);    // registration order must not matter
        Group g = Distributed.init(true, "any", Map.of());
        assertThat(g.backend()).isEqualTo("jaccl");
        assertThat(nccl.initCalls).containsExactly(false);
        assertThat(ring.initCalls).containsExactly(false);
        assertThat(mpi.initCalls).containsExactly(false);
        assertThat(jaccl.initCalls).containsExactly(false);
    }

    @Test
    void anyStopsAtTheFirstBackendThatForms() {
        nccl.configured = true;
        ring.configured = true;
        install(nccl, ring, mpi, jaccl);
        assertThat(Distributed.init().backend()).isEqualTo("nccl");
        assertThat(ring.initCalls).isEmpty();
    }

    @Test
    void aNonStrictFailureCachesTheSingletonUnderThatNameSoAStrictRetryDoesNotRaise() {
        install(nccl, ring, mpi, jaccl);
        Group s = Distributed.init(false, "ring", Map.of());
        assertThat(s.size()).isEqualTo(1);
        assertThat(s.backend()).isEqualTo("singleton");
        ring.configured = true;   // even if it would work now: the cached singleton is returned
        assertThat(Distributed.init(true, "ring", Map.of())).isSameAs(s);
        assertThat(ring.initCalls).containsExactly(false);
    }

    @Test
    void aFailedAnyCachesTheSingletonUnderJacclOnlySoALaterInitTriesAgain() {
        install(nccl, ring, mpi, jaccl);
        Group s = Distributed.init();
        assertThat(s.size()).isEqualTo(1);
        assertThat(Distributed.init(true, "jaccl", Map.of())).isSameAs(s);   // cached under "jaccl"
        ring.configured = true;
        Group again = Distributed.init();                                      // not cached under "any"
        assertThat(again.backend()).isEqualTo("ring");
        assertThat(ring.initCalls).hasSize(2);
        assertThat(Distributed.init(false, "jaccl", Map.of())).isSameAs(s);
    }

    @Test
    void aStrictAnyFailureIsAConfigErrorAndCachesNothing() {
        install(nccl, ring, mpi, jaccl);
        assertThatThrownBy(() -> Distributed.init(true, "any", Map.of()))
                .isInstanceOf(ConfigException.class).hasMessageContaining("could not initialize any")
                .hasMessageContaining("MLX_RANK").hasMessageContaining("MLX_HOSTFILE");
        assertThat(jaccl.initCalls).containsExactly(false);
        ring.configured = true;
        assertThat(Distributed.init(true, "any", Map.of()).backend()).isEqualTo("ring");
        // the earlier failure cached nothing under "jaccl" either
        assertThatThrownBy(() -> Distributed.init(true, "jaccl", Map.of())).isInstanceOf(ConfigException.class);
    }

    @Test
    void aStrictNamedFailureComesFromTheBackendAndCachesNothing() {
        install(nccl, ring, mpi, jaccl);
        assertThatThrownBy(() -> Distributed.init(true, "mpi", Map.of())).isInstanceOf(ConfigException.class)
                .hasMessageContaining("mpi");
        assertThat(mpi.initCalls).containsExactly(true);
        mpi.configured = true;
        assertThat(Distributed.init(true, "mpi", Map.of()).backend()).isEqualTo("mpi");
    }

    @Test
    void aConfiguredBackendThatFailsRaisesEvenWhenNotStrict() {
        ring.configured = true;
        ring.failure = new ConnectFailedException("rank 1 could not reach rank 0 (127.0.0.1:1)");
        install(nccl, ring, mpi, jaccl);
        assertThatThrownBy(() -> Distributed.init(false, "ring", Map.of())).isInstanceOf(ConnectFailedException.class);
        assertThatThrownBy(() -> Distributed.init()).isInstanceOf(ConnectFailedException.class);
        ring.failure = null;
        assertThat(Distributed.init(false, "ring", Map.of()).backend()).isEqualTo("ring");
    }

    @Test
    void aBackendMissingFromTheBuild() {
        install(ring);
        assertThatThrownBy(() -> Distributed.init(true, "nccl", Map.of())).isInstanceOf(ConfigException.class)
                .hasMessageContaining("nccl").hasMessageContaining("not part of this jdist build");
        assertThat(Distributed.init(false, "nccl", Map.of()).size()).isEqualTo(1);
        Group s = Distributed.init(false, "any", Map.of());
        assertThat(s.size()).isEqualTo(1);
        assertThat(Distributed.init(true, "jaccl", Map.of())).isSameAs(s);
    }

    @Test
    void anUnknownNameIsAnArgumentErrorBeforeTheCacheIsConsultedAndCachesNothing() {
        ring.configured = true;
        install(nccl, ring, mpi, jaccl);
        Distributed.init();
        for (String bad : new String[] {"tcp", "Ring", "ANY", "", "jaccl-ring"}) {
            assertThatThrownBy(() -> Distributed.init(false, bad, Map.of())).as(bad)
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'" + bad + "'")
                    .hasMessageContaining("any").hasMessageContaining("ring").hasMessageContaining("jaccl")
                    .hasMessageContaining("mpi").hasMessageContaining("nccl");
        }
        assertThatThrownBy(() -> Distributed.init(false, null, Map.of())).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void resetClosesEachCachedGroupOnceAndEmptiesTheCache() {
        ring.configured = true;
        install(nccl, ring, mpi, jaccl);
        Group g = Distributed.init();
        Distributed.reset();
        assertThat(ring.made.getFirst().closed).isTrue();
        Group fresh = Distributed.init();
        assertThat(fresh).isNotSameAs(g);
        assertThat(ring.made).hasSize(2);
        assertThatThrownBy(() -> g.allSum(Array.ones(DType.FLOAT32, 1))).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void isAvailableAsksTheBackendAndNeverThrows() {
        mpi.available = false;
        jaccl.availabilityThrows = true;
        ring.available = true;
        install(nccl, ring, mpi, jaccl);
        assertThat(Distributed.isAvailable("ring")).isTrue();
        assertThat(Distributed.isAvailable("mpi")).isFalse();
        assertThat(Distributed.isAvailable("jaccl")).isFalse();
        assertThat(Distributed.isAvailable("any")).isTrue();
        assertThat(Distributed.isAvailable()).isTrue();
        assertThat(Distributed.isAvailable("tcp")).isFalse();
        assertThat(Distributed.isAvailable(null)).isFalse();
        ring.available = false;
        nccl.available = false;
        assertThat(Distributed.isAvailable("any")).isFalse();
        assertThat(ring.initCalls).isEmpty();   // availability never forms a group
    }

    @Test
    void unavailableReasonSaysWhyAndNeverThrows() {
        mpi.available = false;
        jaccl.availabilityThrows = true;
        install(nccl, ring, mpi, jaccl);
        assertThat(Distributed.unavailableReason("ring")).isEmpty();
        assertThat(Distributed.unavailableReason("mpi")).hasValueSatisfying(r -> assertThat(r).contains("mpi"));
        assertThat(Distributed.unavailableReason("jaccl")).hasValueSatisfying(r -> assertThat(r).contains("libjaccl not found"));
        assertThat(Distributed.unavailableReason("tcp")).hasValueSatisfying(r -> assertThat(r).contains("unknown backend 'tcp'")
                .contains("ring"));
        assertThat(Distributed.unavailableReason("any")).isEmpty();
        assertThat(Distributed.unavailableReason(null)).isPresent();
        assertThat(ring.initCalls).isEmpty();
    }

    @Test
    void twoInitsOfOneCachedEntryAreTheSameGroup() {
        mpi.configured = true;
        install(nccl, ring, mpi, jaccl);
        Group a = Distributed.init(false, "mpi", Map.of());
        Group b = Distributed.init(true, "mpi", Map.of());
        assertThat(a).isSameAs(b);
        assertThat(a.rank()).isEqualTo(b.rank());
    }

    @Test
    void newGroupFormsAFreshGroupEachCallAndLeavesTheCacheAlone() {
        ring.configured = true;
        install(nccl, ring, mpi, jaccl);
        Group a = Distributed.newGroup("ring", Map.of());
        Group b = Distributed.newGroup("ring", Map.of());
        assertThat(a).isNotSameAs(b);
        assertThat(ring.initCalls).containsExactly(true, true);     // always strict
        Group cached = Distributed.init(false, "ring", Map.of());
        assertThat(cached).isNotSameAs(a).isNotSameAs(b);
        a.close();
        assertThat(ring.made.get(0).closed).isTrue();
        assertThat(ring.made.get(1).closed).isFalse();
        b.close();
    }

    @Test
    void newGroupRejectsAnyUnknownAndUnconfiguredBackends() {
        install(nccl, ring, mpi, jaccl);
        assertThatThrownBy(() -> Distributed.newGroup("any", Map.of())).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("concrete backend");
        assertThatThrownBy(() -> Distributed.newGroup("tcp", Map.of())).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Distributed.newGroup("ring", null)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Distributed.newGroup("ring", Map.of())).isInstanceOf(ConfigException.class)
                .hasMessageContaining("ring is not configured");
        install(ring);
        assertThatThrownBy(() -> Distributed.newGroup("mpi", Map.of())).isInstanceOf(ConfigException.class)
                .hasMessageContaining("not part of this jdist build");
    }
}
