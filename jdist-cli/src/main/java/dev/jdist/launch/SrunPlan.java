package dev.jdist.launch;

import dev.jdist.console.CliFailure;
import dev.jdist.spi.JobToken;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;

/**
 * {@code jdist launch --launcher srun} as a plan (docs/clusters.md): the one {@code srun} command that starts every rank
 * as a task of one Slurm job step, the environment {@code srun} is given (it passes its whole environment to every
 * task), and the variables taken out of it. Pure: nothing starts, nothing is written.
 *
 * <p>srun starts every task itself, so nothing can differ per rank in what the launcher passes: every task finds its
 * rank, the job's size and rank 0's node in Slurm's own variables ({@code SLURM_PROCID}, {@code SLURM_STEP_NUM_TASKS},
 * {@code SLURM_STEP_NODELIST}; {@code JDIST_JOB_SOURCE=slurm} makes that the only source it looks at) and the ranks meet
 * through the rendezvous. A command that is not a Java program (an MLX program, a script) runs under
 * {@link HandOffTask}, which meets the others the same way and then gives the command MLX's ring variables
 * ({@code MLX_RANK}, {@code MLX_HOSTFILE}).
 *
 * @param argv   the srun command line
 * @param env    what is added to srun's environment (and so to every task's)
 * @param unset  what is removed from it (a job inherited from the launcher's own environment)
 * @param ranks  how many ranks there are, in words (Slurm may decide)
 * @param rankCount how many ranks there will be, when known (-n, --hosts, or the allocation's task count), else null
 * @param warnings lines to print once (invalid {@code --env} entries)
 */
public record SrunPlan(List<String> argv, List<EnvEntry> env, List<String> unset, String ranks, Integer rankCount,
                       List<String> warnings) {

    /** What every task is told to look at to find its job. */
    public static final EnvEntry JOB_SOURCE = new EnvEntry("JDIST_JOB_SOURCE", "slurm");
    /** What a task must not inherit from the launcher: it would be taken for this job. */
    public static final List<String> UNSET = List.of("MLX_RANK", "MLX_HOSTFILE");
    /** The backends a task can form from the rendezvous. */
    static final List<String> BACKENDS = List.of("ring", "nccl", "jaccl");

    public SrunPlan {
        argv = List.copyOf(argv);
        env = List.copyOf(env);
        unset = List.copyOf(unset);
        warnings = List.copyOf(warnings);
    }

    /**
     * The inputs.
     *
     * @param srun         the srun executable
     * @param common       the environment inputs shared with the other launchers (--env, terminal size, verbose, token,
     *                     connections per IP)
     * @param backend      the backend the user chose (--backend, $JDIST_LAUNCH_BACKEND), null to let every rank choose
     *                     ("any": nccl where usable, else ring)
     * @param nodes        Slurm node names from --hosts (distinct, in order), empty: Slurm chooses
     * @param ranksPerNode -n when --hosts is given; the total rank count when it is not; null when neither was given
     *                     (the allocation's task count)
     * @param allocationTasks the allocation's task count ({@code SLURM_NTASKS} where the launcher runs), or null
     * @param cwd          --cwd, or null (srun's default: the launcher's directory)
     * @param bindTo       --bind-to (null, none or core)
     * @param command      the resolved argv (docs/reference/launcher.md §1.4)
     * @param javaTarget   whether the command is a Java program (it finds the job itself)
     * @param handOff      how a task starts {@link HandOffTask}: java, its flags and class path (used when not a Java target)
     */
    public record Inputs(String srun, EnvironmentPlan.Inputs common, String backend, List<String> nodes, Integer ranksPerNode,
                         Integer allocationTasks, String cwd, String bindTo, List<String> command, boolean javaTarget, List<String> handOff) {
    }

    public static SrunPlan plan(Inputs in) {
        if (in.backend() != null && !BACKENDS.contains(in.backend())) {
            throw CliFailure.usage("--launcher srun starts ring, nccl or jaccl jobs (each rank joins through the rendezvous), "
                    + "not --backend " + in.backend() + (in.backend().equals("jaccl-ring") ? " (use jaccl)" : ""));
        }
        if (!in.javaTarget() && in.backend() != null && !in.backend().equals("ring")) {
            throw CliFailure.usage("--launcher srun gives a command that is not a Java program MLX's ring variables (MLX_RANK, "
                    + "MLX_HOSTFILE); --backend " + in.backend() + " needs a Java program (.java, .jar or --class-path), which "
                    + "forms it from the rendezvous itself, or --launcher ssh with a hostfile");
        }
        if (in.common().connectionsPerIp() < 1) {
            throw CliFailure.usage("--connections-per-ip must be at least 1, got " + in.common().connectionsPerIp());
        }
        List<String> warnings = new ArrayList<>();
        List<EnvEntry> env = new ArrayList<>(EnvironmentPlan.commonEntries(in.common(), true, warnings));
        env.add(JOB_SOURCE);
        if (in.backend() != null) env.add(new EnvEntry("JDIST_BACKEND", in.backend()));
        if (in.common().verbose()) {
            if (in.backend() == null || in.backend().equals("ring")) env.add(new EnvEntry("MLX_RING_VERBOSE", "1"));
            if (in.backend() == null || in.backend().equals("nccl")) env.add(new EnvEntry("NCCL_DEBUG", "INFO"));
        }
        if (in.javaTarget() && in.common().connectionsPerIp() > 1) {
            env.add(new EnvEntry("JDIST_RING_CONNECTIONS", Integer.toString(in.common().connectionsPerIp())));
        }
        if (in.common().jobToken() != null) env.add(new EnvEntry(JobToken.VARIABLE, in.common().jobToken()));

        List<String> a = new ArrayList<>();
        a.add(in.srun());
        // the failure rule (docs/reference/launcher.md §8.2): the first task that fails ends the step
        a.add("--kill-on-bad-exit=1");
        // "R: " before every line, which the launcher turns into its own per-rank output (§7.1)
        a.add("--label");
        // stdin to every task (§7.2)
        a.add("--input=all");
        a.add("--export=ALL");
        String ranks;
        Integer count;
        List<String> nodes = List.copyOf(new LinkedHashSet<>(in.nodes()));
        if (!nodes.isEmpty()) {
            int perNode = in.ranksPerNode() == null ? 1 : in.ranksPerNode();
            a.add("--nodelist=" + String.join(",", nodes));
            a.add("--nodes=" + nodes.size());
            a.add("--ntasks-per-node=" + perNode);
            a.add("--ntasks=" + nodes.size() * perNode);
            count = nodes.size() * perNode;
            ranks = count + " (" + perNode + " on each of " + String.join(", ", nodes) + ")";
        } else if (in.ranksPerNode() != null) {
            a.add("--ntasks=" + in.ranksPerNode());
            count = in.ranksPerNode();
            ranks = count + " (-n), on the nodes Slurm chooses";
        } else {
            count = in.allocationTasks();
            ranks = (count == null ? "" : count + ": ") + "the allocation's task count (SLURM_NTASKS; -n chooses another)";
        }
        if (in.cwd() != null) a.add("--chdir=" + in.cwd());
        if ("core".equals(in.bindTo())) a.add("--cpu-bind=cores");
        if ("none".equals(in.bindTo())) a.add("--cpu-bind=none");
        a.add("--");
        if (in.javaTarget()) {
            a.addAll(in.command());
        } else {
            a.addAll(in.handOff());
            a.add(HandOffTask.CONNECTIONS + "=" + in.common().connectionsPerIp());
            a.add("--");
            a.addAll(in.command());
        }
        return new SrunPlan(a, env, UNSET, ranks, count, warnings);
    }
}
