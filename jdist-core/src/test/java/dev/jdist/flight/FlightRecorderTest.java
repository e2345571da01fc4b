package dev.jdist.flight;

import dev.jdist.Array;
import dev.jdist.ConfigException;
import dev.jdist.DType;
import dev.jdist.DeadlineExceededException;
import dev.jdist.Group;
import dev.jdist.PeerLostException;
import dev.jdist.ReduceOp;
import dev.jdist.TestGroups;
import dev.jdist.spi.GroupImpl;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The flight recorder: what a group's ring keeps (the last N operations, their fields and states, a slot
 * reused), the settings from the environment, and the file a process writes on a failure and on request,
 * read back through {@link FlightDump}.
 */
@Timeout(60)
class FlightRecorderTest {

    @TempDir
    Path dir;

    @AfterEach
    void restoreSettings() {
        FlightRecorder.resetForTesting();   // later tests write to JDIST_DUMP_DIR again, not to this test's directory
    }

    /** A 2-rank group whose backend moves nothing, or throws {@code failure} from every collective. */
    private static final class FakeImpl implements GroupImpl {
        private final RuntimeException failure;
        private final CountDownLatch entered = new CountDownLatch(1);
        private final CountDownLatch release;

        FakeImpl(RuntimeException failure, CountDownLatch release) {
            this.failure = failure;
            this.release = release;
        }

        @Override public int rank() { return 1; }
        @Override public int size() { return 4; }
        @Override public String backendName() { return "fake"; }
        @Override public GroupImpl split(int color, int key) { return this; }

        @Override
        public void allReduce(Array in, Array out, ReduceOp op) {
            entered.countDown();
            if (release != null) {
                try {
                    release.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            if (failure != null) throw failure;
        }

        @Override public void allGather(Array in, Array out) { if (failure != null) throw failure; }
        @Override public void sumScatter(Array in, Array out) { if (failure != null) throw failure; }
        @Override public void send(Array x, int dst) {}
        @Override public void recv(Array out, int src) {}
        @Override public void close() {}
    }

    private static FlightDump.GroupRecord only(FlightDump dump) {
        assertThat(dump.groups()).hasSize(1);
        return dump.groups().get(0);
    }

    @Test
    void aGroupKeepsItsLastOperationsWithTheirFields() {
        FlightRecorder.resetForTesting(4, dir);
        Group g = TestGroups.wrap(new FakeImpl(null, null));
        g.allSum(Array.ones(DType.FLOAT32, 1024));
        g.allGather(Array.ones(DType.INT32, 3, 4));
        g.send(Array.ones(DType.UINT8, 5), 2);
        g.recv(new int[] {2, 3}, DType.BFLOAT16, 0);
        g.allMaxAsync(Array.ones(DType.FLOAT64, 1, 2, 3, 4, 5, 6, 7, 8, 9)).join();
        g.sumScatter(Array.ones(DType.FLOAT16, 8));

        FlightDump.GroupRecord rec = only(FlightRecorder.snapshot("request"));
        assertThat(rec.group()).isEqualTo("world");
        assertThat(rec.backend()).isEqualTo("fake");
        assertThat(rec.rank()).isEqualTo(1);
        assertThat(rec.size()).isEqualTo(4);
        assertThat(rec.operations()).isEqualTo(6);
        // four kept: #2..#5, oldest first
        assertThat(rec.recent()).extracting(FlightDump.Operation::sequence).containsExactly(2L, 3L, 4L, 5L);
        assertThat(rec.recent()).extracting(FlightDump.Operation::describe).containsExactly(
                "send uint8[5] to 2", "recv bfloat16[2, 3] from 0",
                "all_max float64[1, 2, 3, 4, 5, 6, 7, 8, ... (9 dimensions)]", "sum_scatter float16[8]");
        FlightDump.Operation send = rec.recent().get(0);
        assertThat(send.bytes()).isEqualTo(5);
        assertThat(send.peer()).isEqualTo(2);
        assertThat(send.async()).isFalse();
        assertThat(send.state()).isEqualTo(FlightDump.COMPLETED);
        assertThat(send.start()).isNotNull();
        assertThat(send.end()).isNotNull();
        assertThat(send.micros()).isNotNull().isNotNegative();
        assertThat(rec.recent().get(2).async()).isTrue();
        assertThat(rec.recent().get(2).peer()).isEqualTo(-1);
    }

    @Test
    void aRunningOperationIsStartedWithNoEndAndTheRecordIsOnDisk() throws Exception {
        FlightRecorder.resetForTesting(8, dir);
        CountDownLatch release = new CountDownLatch(1);
        FakeImpl impl = new FakeImpl(null, release);
        Group g = TestGroups.wrap(impl);
        var running = g.allSumAsync(Array.ones(DType.FLOAT32, 16));
        assertThat(impl.entered.await(30, TimeUnit.SECONDS)).isTrue();
        try {
            Path file = FlightRecorder.dump("checking").orElseThrow();
            assertThat(file.getParent()).isEqualTo(dir);
            assertThat(file.getFileName().toString()).isEqualTo("jdist-flight-rank-1-" + ProcessHandle.current().pid() + ".json");
            FlightDump dump = FlightDump.read(file);
            assertThat(dump.format()).isEqualTo(FlightDump.FORMAT);
            assertThat(dump.version()).isEqualTo(1);
            assertThat(dump.reason()).isEqualTo("checking");
            assertThat(dump.pid()).isEqualTo(ProcessHandle.current().pid());
            assertThat(dump.capacity()).isEqualTo(8);
            assertThat(dump.failure()).isNull();
            FlightDump.Operation op = only(dump).recent().get(0);
            assertThat(op.describe()).isEqualTo("all_sum float32[16]");
            assertThat(op.state()).isEqualTo(FlightDump.STARTED);
            assertThat(op.end()).isNull();
            assertThat(op.micros()).isNull();
            assertThat(Files.readString(file)).contains("\"state\" : \"started\"").doesNotContain("\"end\"");
        } finally {
            release.countDown();
        }
        running.get(30, TimeUnit.SECONDS);
        assertThat(only(FlightRecorder.snapshot("after")).recent().get(0).state()).isEqualTo(FlightDump.COMPLETED);
    }

    @Test
    void theFirstFailureOfAGroupWritesTheRecordOnce() throws Exception {
        FlightRecorder.resetForTesting(16, dir);
        Group g = TestGroups.wrap(new FakeImpl(new DeadlineExceededException("made no progress for 5 s"), null));
        assertThatThrownBy(() -> g.allSum(Array.ones(DType.FLOAT32, 1024))).isInstanceOf(DeadlineExceededException.class);
        List<Path> files = FlightDump.files(dir);
        assertThat(files).hasSize(1);
        FlightDump dump = FlightDump.read(files.get(0));
        assertThat(dump.reason()).isEqualTo("failure");
        assertThat(dump.failure()).isNotNull();
        assertThat(dump.failure().group()).isEqualTo("world");
        assertThat(dump.failure().rank()).isEqualTo(1);
        assertThat(dump.failure().sequence()).isZero();
        assertThat(dump.failure().operation()).isEqualTo("all_sum float32[1024]");
        assertThat(dump.failure().error()).isEqualTo("DeadlineExceededException: made no progress for 5 s");
        FlightDump.Operation op = only(dump).recent().get(0);
        assertThat(op.state()).isEqualTo(FlightDump.FAILED);
        assertThat(op.error()).isEqualTo("DeadlineExceededException: made no progress for 5 s");

        // later failures of the broken group do not write again
        Files.delete(files.get(0));
        assertThatThrownBy(() -> g.allGather(Array.ones(DType.INT32, 2))).isInstanceOf(DeadlineExceededException.class);
        assertThat(FlightDump.files(dir)).isEmpty();
    }

    @Test
    void aBadArgumentIsNotAFailureOfTheJob() throws Exception {
        FlightRecorder.resetForTesting(16, dir);
        Group g = TestGroups.wrap(new FakeImpl(new IllegalStateException("a bug in a backend"), null));
        assertThatThrownBy(() -> g.allSum(Array.ones(DType.FLOAT32, 4))).isInstanceOf(IllegalStateException.class);
        assertThat(FlightDump.files(dir)).isEmpty();
        assertThat(only(FlightRecorder.snapshot("x")).recent().get(0).error()).isEqualTo("IllegalStateException: a bug in a backend");
    }

    @Test
    void offKeepsNothingAndWritesNothing() throws Exception {
        FlightRecorder.resetForTesting(0, dir);
        Group g = TestGroups.wrap(new FakeImpl(new PeerLostException("gone"), null));
        assertThatThrownBy(() -> g.allSum(Array.ones(DType.FLOAT32, 4))).isInstanceOf(PeerLostException.class);
        assertThat(FlightRecorder.dump("request")).isEmpty();
        assertThat(FlightDump.files(dir)).isEmpty();
        assertThat(FlightRecorder.snapshot("x").groups()).isEmpty();
    }

    @Test
    void aSplitGroupHasItsOwnRecordUnderItsLabel() {
        FlightRecorder.resetForTesting(16, dir);
        Group g = TestGroups.wrap(new FakeImpl(null, null));
        g.allSum(Array.ones(DType.FLOAT32, 2));
        Group child = g.split(3);
        child.allSum(Array.ones(DType.INT8, 7));
        FlightDump dump = FlightRecorder.snapshot("x");
        assertThat(dump.groups()).extracting(FlightDump.GroupRecord::group)
                .containsExactly("world", "world/split@1(color=3)");
        assertThat(dump.groups().get(0).recent()).extracting(FlightDump.Operation::describe)
                .containsExactly("all_sum float32[2]", "split");
        assertThat(dump.groups().get(1).recent()).extracting(FlightDump.Operation::describe).containsExactly("all_sum int8[7]");
    }

    @Test
    void aRecordTakenWhileOperationsRunIsConsistent() throws Exception {
        FlightRecorder.resetForTesting(64, dir);
        Group g = TestGroups.wrap(new FakeImpl(null, null));
        Array[] inputs = new Array[7];
        for (int k = 0; k < 7; k++) inputs[k] = Array.ones(DType.FLOAT32, k + 1);
        Thread writer = Thread.ofPlatform().start(() -> {
            for (int i = 0; i < 200_000; i++) g.allReduceInto(inputs[i % 7], inputs[i % 7], ReduceOp.SUM);
        });
        int snapshots = 0;
        while (writer.isAlive() && snapshots < 2_000) {
            FlightDump dump = FlightRecorder.snapshot("x");
            if (dump.groups().isEmpty()) continue;   // no operation yet
            FlightDump.GroupRecord rec = only(dump);
            long previous = -1;
            for (FlightDump.Operation op : rec.recent()) {
                assertThat(op.sequence()).isGreaterThan(previous);
                previous = op.sequence();
                int elements = (int) (op.sequence() % 7) + 1;   // each slot read whole: its fields belong to one operation
                assertThat(op.shape()).containsExactly(elements);
                assertThat(op.bytes()).isEqualTo(4L * elements);
                assertThat(op.state()).isIn(FlightDump.STARTED, FlightDump.COMPLETED);
            }
            assertThat(rec.recent().size()).isLessThanOrEqualTo(64);
            snapshots++;
        }
        writer.join(TimeUnit.SECONDS.toMillis(50));
        assertThat(writer.isAlive()).isFalse();
        FlightDump.GroupRecord last = only(FlightRecorder.snapshot("x"));
        assertThat(last.operations()).isEqualTo(200_000);
        assertThat(last.recent()).hasSize(64);
        assertThat(last.recent().get(63).sequence()).isEqualTo(199_999);
    }

    @Test
    void settingsComeFromTheEnvironment() {
        assertThat(FlightRecorder.Settings.from(Map.of()).capacity()).isEqualTo(FlightRecorder.DEFAULT_CAPACITY);
        assertThat(FlightRecorder.Settings.from(Map.of()).dir().getFileName().toString()).startsWith("jdist-flight-");
        assertThat(FlightRecorder.Settings.from(Map.of("JDIST_FLIGHT_RECORDER", " 0 ")).capacity()).isZero();
        assertThat(FlightRecorder.Settings.from(Map.of("JDIST_FLIGHT_RECORDER", "64", "JDIST_DUMP_DIR", "/x/y")))
                .isEqualTo(new FlightRecorder.Settings(64, Path.of("/x/y")));
        for (String bad : List.of("-1", "many", "1e3", "99999999")) {
            assertThatThrownBy(() -> FlightRecorder.Settings.from(Map.of("JDIST_FLIGHT_RECORDER", bad)))
                    .isInstanceOf(ConfigException.class)
                    .hasMessageContaining("JDIST_FLIGHT_RECORDER=\"" + bad + "\"")
                    .hasMessageContaining("0 (off)");
        }
    }

    @Test
    void aDumpRoundTripsAndOtherFormatsAreRefusedByName() {
        FlightRecorder.resetForTesting(4, dir);
        Group g = TestGroups.wrap(new FakeImpl(null, null));
        g.allSum(Array.ones(DType.FLOAT32, 3));
        FlightDump dump = FlightRecorder.snapshot("request");
        assertThat(FlightDump.parse(dump.toJson(), "x")).isEqualTo(dump);
        assertThat(FlightDump.parse(dump.toJson().replace("\"reason\"", "\"future\" : 1, \"reason\""), "x")).isEqualTo(dump);
        assertThatThrownBy(() -> FlightDump.parse("{\"format\": \"other\"}", "f.json"))
                .hasMessage("f.json is not a jdist flight record: it has no \"format\": \"jdist-flight-record\"");
        assertThatThrownBy(() -> FlightDump.parse("[", "f.json")).hasMessageStartingWith("f.json is not a jdist flight record: not JSON");
        assertThatThrownBy(() -> FlightDump.parse(dump.toJson().replace("\"version\" : 1", "\"version\" : 2"), "f.json"))
                .hasMessageContaining("f.json is a flight record of version 2; this jdist reads version 1");
    }
}
