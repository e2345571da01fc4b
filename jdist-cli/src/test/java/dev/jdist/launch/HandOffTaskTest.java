package dev.jdist.launch;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** The srun hand-off's own rules (its rendezvous and the child are exercised in SlurmIT). */
class HandOffTaskTest {

    @Test
    void foldersOfHandOffsThatNoLongerRunAreRemovedAndLiveOnesKept(@TempDir Path tmp) throws Exception {
        long dead = ProcessHandle.allProcesses().mapToLong(ProcessHandle::pid).max().orElse(1) + 100_000;
        Path stale = Files.createDirectory(tmp.resolve(HandOffTask.PREFIX + dead + "-123"));
        Files.writeString(stale.resolve("jdist-hostfile-rank0.json"), "[]");
        Path live = Files.createDirectory(tmp.resolve(HandOffTask.PREFIX + ProcessHandle.current().pid() + "-456"));
        Path other = Files.createDirectory(tmp.resolve("something-else-" + dead + "-1"));
        HandOffTask.removeStale(tmp);
        assertThat(stale).doesNotExist();
        assertThat(live).exists();
        assertThat(other).exists();
    }

    @Test
    void withoutACommandItSaysHowToUseIt() {
        assertThat(HandOffTask.run(List.of("--connections=1"), Map.of())).isEqualTo(2);
    }

    @Test
    void withoutAJobTheCommandNeverStarts(@TempDir Path tmp) {
        // no job variables: the hand-off names what is missing and exits 1
        assertThat(HandOffTask.run(List.of("--connections=1", "--", "touch", tmp.resolve("ran").toString()),
                Map.of("HOME", "/root"))).isEqualTo(1);
        assertThat(tmp.resolve("ran")).doesNotExist();
    }
}
