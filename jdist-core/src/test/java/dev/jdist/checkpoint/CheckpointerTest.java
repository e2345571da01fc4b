package dev.jdist.checkpoint;

import dev.jdist.ThreadGroups;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class CheckpointerTest {

    @TempDir
    Path dir;

    private static TrainingState state(long step) {
        return TrainingState.at(step)
                .put("w", new float[]{1.5f, -0f, Float.NaN, step})
                .put("momentum", new double[]{Math.PI, -step})
                .meta("seed", 42)
                .meta("note", "héllo")
                .build();
    }

    @Test
    void aSavedStateLoadsBackBitForBit() {
        Checkpointer c = new Checkpointer(dir, 2);
        c.save(state(7));
        TrainingState back = c.load(7);
        assertThat(back).isEqualTo(state(7));
        assertThat(Float.floatToRawIntBits(back.floatArray("w")[1])).isEqualTo(Float.floatToRawIntBits(-0f));
        assertThat(back.meta("seed")).isEqualTo("42");
        assertThat(back.meta("note")).isEqualTo("héllo");
        assertThat(c.latest()).contains(state(7));
    }

    @Test
    void keepsTheNewestFilesAndLeavesNoTemporaryFile() throws IOException {
        Checkpointer c = new Checkpointer(dir, 2);
        for (long s = 10; s <= 40; s += 10) c.save(state(s));
        assertThat(c.steps()).containsExactly(40L, 30L);
        try (var files = Files.list(dir)) {
            assertThat(files.map(p -> p.getFileName().toString()))
                    .containsExactlyInAnyOrder("step-00000000000000000040.ckpt", "step-00000000000000000030.ckpt");
        }
    }

    @Test
    void aTornFileIsRefusedByNameAndLatestFallsBackToThePreviousOne() throws IOException {
        List<String> warnings = new ArrayList<>();
        Checkpointer c = new Checkpointer(dir, 3, warnings::add);
        c.save(state(10));
        Path newest = c.save(state(20));
        byte[] whole = Files.readAllBytes(newest);
        // a write cut short (what a crash without the rename would leave), then a flipped bit
        Files.write(newest, java.util.Arrays.copyOf(whole, whole.length / 2));
        assertThatThrownBy(() -> c.load(20)).isInstanceOf(CheckpointCorruptException.class)
                .hasMessageContaining(newest.toString()).hasMessageContaining("cut short");
        assertThat(c.latest()).contains(state(10));
        assertThat(warnings).singleElement().asString().contains(newest.toString()).contains("corrupt");

        byte[] flipped = whole.clone();
        flipped[20] ^= 1;
        Files.write(newest, flipped);
        assertThatThrownBy(() -> c.load(20)).isInstanceOf(CheckpointCorruptException.class).hasMessageContaining("checksum mismatch");
        assertThat(c.latest()).contains(state(10));
    }

    @Test
    void aTemporaryFileOfAKilledSaveIsNeverTakenForACheckpointAndIsRemovedByTheNextSave() throws IOException {
        Checkpointer c = new Checkpointer(dir, 2);
        c.save(state(10));
        Path tmp = dir.resolve(".step-20.123.tmp");
        byte[] whole = Checkpointer.encode(state(20)).array();
        Files.write(tmp, java.util.Arrays.copyOf(whole, 9)); // the save of step 20 killed mid-write
        assertThat(c.steps()).containsExactly(10L);
        assertThat(c.latest()).contains(state(10));
        c.save(state(30));
        assertThat(tmp).doesNotExist();
        assertThat(c.steps()).containsExactly(30L, 10L);
    }

    @Test
    void anEmptyOrMissingDirectoryHasNoLatestState() {
        assertThat(new Checkpointer(dir.resolve("none"), 2).latest()).isEmpty();
        assertThat(new Checkpointer(dir, 2).latest()).isEmpty();
    }

    @Test
    void badArgumentsSayWhatIsWrong() {
        assertThatThrownBy(() -> new Checkpointer(dir, 0)).hasMessageContaining("keep must be at least 1");
        assertThatThrownBy(() -> Checkpointer.due(5, 0)).hasMessageContaining("N >= 1");
        assertThatThrownBy(() -> TrainingState.at(-1)).hasMessageContaining("step must be 0 or more");
        assertThatThrownBy(() -> state(1).floatArray("nope")).hasMessageContaining("no float array 'nope'").hasMessageContaining("[w]");
        assertThat(Checkpointer.due(0, 5)).isFalse();
        assertThat(Checkpointer.due(10, 5)).isTrue();
        assertThat(Checkpointer.due(11, 5)).isFalse();
    }

    @Test
    void ranksOneSaveApartResumeFromTheStepTheyAllHold() {
        ThreadGroups world = ThreadGroups.of(3);
        List<Checkpointer> per = new ArrayList<>();
        for (int r = 0; r < 3; r++) per.add(Checkpointer.forRank(dir, r, 2));
        for (int r = 0; r < 3; r++) per.get(r).save(state(10));
        per.get(0).save(state(20)); // rank 0 saved step 20, the others died before they did
        per.get(2).save(state(20));
        List<Optional<TrainingState>> resumed = world.onEveryRank(g -> Checkpoints.resume(g, per.get(g.rank())));
        assertThat(resumed).allSatisfy(s -> assertThat(s).contains(state(10)));
    }

    @Test
    void aRankWithoutCheckpointsMakesEveryRankStartAfresh() {
        ThreadGroups world = ThreadGroups.of(2);
        Checkpointer.forRank(dir, 0, 2).save(state(10));
        List<Optional<TrainingState>> resumed = world.onEveryRank(g -> Checkpoints.resume(g, Checkpointer.forRank(dir, g.rank(), 2)));
        assertThat(resumed).allSatisfy(s -> assertThat(s).isEmpty());
    }
}
