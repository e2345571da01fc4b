package dev.jdist.launch;

import dev.jdist.console.CliFailure;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@code jdist launch --launcher srun/ssh/local}: the choice (Placement) and the srun plan (SrunPlan), without Slurm. */
class SrunPlanTest {

    private static final List<String> JAVA_PROGRAM = List.of("/jdk/bin/java", "--enable-native-access=ALL-UNNAMED", "-cp",
            "/app/app.jar:/opt/jdist.jar", "app.Main");
    private static final List<String> HAND_OFF = List.of("/jdk/bin/java", "-cp", "/opt/jdist.jar", HandOffTask.class.getName());

    private static EnvironmentPlan.Inputs common(List<String> cliEnvs, boolean verbose, int connections, String token) {
        return new EnvironmentPlan.Inputs("ring", List.of(), List.of(), cliEnvs, 0, 0, verbose, 1, connections, 32323, 12345, token);
    }

    private static SrunPlan plan(String backend, List<String> nodes, Integer perNode, List<String> command, boolean java) {
        return SrunPlan.plan(new SrunPlan.Inputs("/usr/bin/srun", common(List.of("A=1"), false, 1, "t0k"), backend, nodes, perNode,
                4, null, null, command, java, HAND_OFF));
    }

    @Test
    void aJavaProgramRunsAsTheStepsTasksAndFindsItsJobInSlurmsVariables() {
        SrunPlan p = plan(null, List.of(), null, JAVA_PROGRAM, true);
        assertThat(p.argv()).containsExactly("/usr/bin/srun", "--kill-on-bad-exit=1", "--label", "--input=all", "--export=ALL",
                "--", "/jdk/bin/java", "--enable-native-access=ALL-UNNAMED", "-cp", "/app/app.jar:/opt/jdist.jar", "app.Main");
        assertThat(p.env()).containsExactly(new EnvEntry("A", "1"), new EnvEntry("JDIST_JOB_SOURCE", "slurm"),
                new EnvEntry("JDIST_JOB_TOKEN", "t0k"));
        assertThat(p.unset()).containsExactly("MLX_RANK", "MLX_HOSTFILE");
        assertThat(p.rankCount()).isEqualTo(4);
        assertThat(p.ranks()).startsWith("4: the allocation's task count");
    }

    @Test
    void dashNChoosesTheTaskCountAndHostsTheNodes() {
        SrunPlan n = plan("ring", List.of(), 6, JAVA_PROGRAM, true);
        assertThat(n.argv()).contains("--ntasks=6").doesNotContain("--nodes=2");
        assertThat(n.env()).contains(new EnvEntry("JDIST_BACKEND", "ring"));
        assertThat(n.rankCount()).isEqualTo(6);
        SrunPlan hosts = plan(null, List.of("node1", "node2", "node1"), 2, JAVA_PROGRAM, true);
        assertThat(hosts.argv()).contains("--nodelist=node1,node2", "--nodes=2", "--ntasks-per-node=2", "--ntasks=4");
        assertThat(hosts.rankCount()).isEqualTo(4);
    }

    @Test
    void cwdBindingVerboseAndConnectionsMapToSrunAndTheRanksVariables() {
        SrunPlan p = SrunPlan.plan(new SrunPlan.Inputs("srun", common(List.of(), true, 2, null), null, List.of(), null, null,
                "/work", "core", JAVA_PROGRAM, true, HAND_OFF));
        assertThat(p.argv()).contains("--chdir=/work", "--cpu-bind=cores");
        assertThat(p.env()).contains(new EnvEntry("MLX_RING_VERBOSE", "1"), new EnvEntry("NCCL_DEBUG", "INFO"),
                new EnvEntry("JDIST_RING_CONNECTIONS", "2")).noneMatch(e -> e.name().equals("JDIST_JOB_TOKEN"));
        assertThat(p.rankCount()).isNull();
        assertThat(p.ranks()).startsWith("the allocation's task count");
    }

    @Test
    void aCommandThatIsNotJavaGetsMlxsRingVariablesFromTheHandOff() {
        SrunPlan p = plan(null, List.of(), 3, List.of("python3", "train.py", "--lr", "0.1"), false);
        int dash = p.argv().indexOf("--");
        assertThat(p.argv().subList(dash + 1, p.argv().size())).containsExactly("/jdk/bin/java", "-cp", "/opt/jdist.jar",
                HandOffTask.class.getName(), "--connections=1", "--", "python3", "train.py", "--lr", "0.1");
        assertThatThrownBy(() -> plan("nccl", List.of(), 3, List.of("python3", "train.py"), false))
                .isInstanceOf(CliFailure.class).hasMessageContaining("--backend nccl needs a Java program");
    }

    @Test
    void backendsThatCannotJoinFromTheRendezvousAreUsageErrors() {
        assertThatThrownBy(() -> plan("jaccl-ring", List.of(), 2, JAVA_PROGRAM, true)).isInstanceOf(CliFailure.class)
                .hasMessageContaining("not --backend jaccl-ring (use jaccl)");
        assertThat(plan("nccl", List.of(), 2, JAVA_PROGRAM, true).env()).contains(new EnvEntry("JDIST_BACKEND", "nccl"));
    }

    // ------------------------------------------------------------------ Placement

    private static final Map<String, String> IN_ALLOCATION = Map.of("SLURM_JOB_ID", "17", "SLURM_NTASKS", "4");

    @Test
    void autoIsSrunInsideAnAllocationWithoutHostsAndTheHostListOtherwise() {
        Placement.Choice inside = Placement.choose(null, Set.of(), "ring", IN_ALLOCATION, true);
        assertThat(inside.placement()).isEqualTo(Placement.SRUN);
        assertThat(inside.why()).contains("inside Slurm job 17");
        assertThat(Placement.choose(null, Set.of("--repeat-hosts"), "ring", IN_ALLOCATION, true).placement()).isEqualTo(Placement.SRUN);
        assertThat(Placement.choose(null, Set.of("--hosts"), "ring", IN_ALLOCATION, true).placement()).isEqualTo(Placement.SSH);
        assertThat(Placement.choose(null, Set.of("--hostfile"), "ring", IN_ALLOCATION, true).placement()).isEqualTo(Placement.SSH);
        assertThat(Placement.choose(null, Set.of(), "mpi", IN_ALLOCATION, true).placement()).isEqualTo(Placement.SSH);
        assertThat(Placement.choose(null, Set.of(), "ring", Map.of(), true)).isEqualTo(new Placement.Choice(Placement.SSH, null));
        // a task of a step (srun ... jdist launch) is not where ranks are placed from
        assertThat(Placement.choose("auto", Set.of(), "ring", Map.of("SLURM_JOB_ID", "17", "SLURM_STEP_ID", "0"), true)
                .placement()).isEqualTo(Placement.SSH);
        Placement.Choice noSrun = Placement.choose(null, Set.of(), "ring", IN_ALLOCATION, false);
        assertThat(noSrun.placement()).isEqualTo(Placement.SSH);
        assertThat(noSrun.why()).contains("no srun on PATH");
    }

    @Test
    void explicitLaunchersAndTheirErrors() {
        assertThat(Placement.choose("ssh", Set.of(), "ring", IN_ALLOCATION, true).placement()).isEqualTo(Placement.SSH);
        assertThat(Placement.choose("local", Set.of("--hosts"), "ring", IN_ALLOCATION, true).placement()).isEqualTo(Placement.LOCAL);
        assertThat(Placement.choose("srun", Set.of("--hosts"), "nccl", Map.of(), true).placement()).isEqualTo(Placement.SRUN);
        assertThatThrownBy(() -> Placement.choose("srun", Set.of("--hostfile"), "ring", Map.of(), true))
                .isInstanceOf(CliFailure.class).hasMessageContaining("leave out --hostfile");
        assertThatThrownBy(() -> Placement.choose("srun", Set.of(), "mpi", Map.of(), true))
                .isInstanceOf(CliFailure.class).hasMessageContaining("mpirun starts the ranks itself");
        assertThatThrownBy(() -> Placement.choose("srun", Set.of(), "ring", Map.of("PATH", "/nowhere"), false))
                .isInstanceOf(CliFailure.class).hasMessageContaining("srun not found on PATH (/nowhere)");
        assertThatThrownBy(() -> Placement.choose("slurm", Set.of(), "ring", Map.of(), true))
                .isInstanceOf(CliFailure.class).hasMessageContaining("invalid choice: 'slurm' (choose from auto, ssh, srun, local)");
    }

    @Test
    void theParserRecordsWhichOptionsWereGiven() {
        assertThat(LaunchArguments.parse(List.of("--launcher", "srun", "-n", "2", "x")).given())
                .containsExactlyInAnyOrder("--launcher", "--repeat-hosts");
        assertThat(LaunchArguments.parse(List.of("--launch=local", "x")).options().launcher).isEqualTo("local");
        assertThat(LaunchArguments.parse(List.of("x")).given()).isEmpty();
    }
}
