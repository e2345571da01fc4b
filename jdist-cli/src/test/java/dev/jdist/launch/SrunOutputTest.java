package dev.jdist.launch;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/** Reading srun's labelled output and its task reports (lines as Slurm 22.05 prints them). */
class SrunOutputTest {

    private static Optional<SrunOutput.Labelled> label(String line) {
        byte[] b = line.getBytes(StandardCharsets.UTF_8);
        return SrunOutput.label(b, b.length);
    }

    @Test
    void labels() {
        assertThat(label("0: hello\n")).contains(new SrunOutput.Labelled(0, 3));
        assertThat(label(" 12: x: y\n")).contains(new SrunOutput.Labelled(12, 5));
        assertThat(label("3:\n")).contains(new SrunOutput.Labelled(3, 2));
        assertThat(label("srun: error: x\n")).isEmpty();
        assertThat(label("\n")).isEmpty();
        assertThat(label("12 monkeys\n")).isEmpty();
    }

    @Test
    void taskReports() {
        assertThat(SrunOutput.report("srun: error: localhost: task 2: Exited with exit code 3"))
                .contains(new SrunOutput.TaskReport("localhost", List.of(2), false, 3, "Exited with exit code 3"));
        assertThat(SrunOutput.report("srun: error: node07: tasks 0-1,3: Terminated"))
                .contains(new SrunOutput.TaskReport("node07", List.of(0, 1, 3), true, 143, "Terminated"));
        assertThat(SrunOutput.report("srun: error: n1: task 5: Segmentation fault (core dumped)").orElseThrow().status())
                .isEqualTo(139);
        assertThat(SrunOutput.report("srun: error: n1: task 5: Killed").orElseThrow().status()).isEqualTo(137);
        assertThat(SrunOutput.report("srun: error: n1: task 5: Power failure").orElseThrow().status()).isEqualTo(-1);
        assertThat(SrunOutput.report("srun: error: Unable to allocate resources: Requested node configuration is not available"))
                .isEmpty();
        assertThat(SrunOutput.report("srun: launch/slurm: _step_signal: Terminating StepId=3.0")).isEmpty();
        assertThat(SrunOutput.taskList("3-1")).isEmpty();
    }
}
