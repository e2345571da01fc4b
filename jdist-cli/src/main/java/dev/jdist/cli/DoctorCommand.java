package dev.jdist.cli;

import dev.jdist.Distributed;
import dev.jdist.doctor.EnvironmentReport;
import dev.jdist.doctor.JobPreflight;
import dev.jdist.launch.JobRequirements;
import dev.jdist.launch.JobTargetOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;

/** {@code jdist doctor}: checks, before a job starts, what {@code jdist launch} assumes about every host. */
@Command(name = "doctor", mixinStandardHelpOptions = true, subcommands = DoctorAnalyzeCommand.class,
        description = {"Check the hosts of a job before launching it: ssh key login, the same JDK and jdist paths,",
                "the program's path, free ring ports; and which backends this machine can use.",
                "With --env: which job Distributed.init() would find in this environment (Slurm, torchrun, ...).",
                "Example: jdist doctor --hostfile ring-4.json examples/AllSum.java",
                "         srun -n 4 jdist doctor --env",
                "After a failed job: jdist doctor analyze DIR (the job's flight records)."},
        footer = {"Exit status: 0 when every check passes, 1 when one fails, 2 for usage errors."})
public final class DoctorCommand implements Callable<Integer> {

    /** Where the job's ranks will run: the same options as for launch. */
    @Mixin
    JobTargetOptions target = new JobTargetOptions();

    @Option(names = "--java", paramLabel = "PATH", description = "the java the ranks will run (default: this one)")
    String java;

    @Option(names = "--cwd", paramLabel = "DIR", description = "the ranks' working directory (default: this one)")
    String cwd;

    @Option(names = "--connect-timeout", paramLabel = "SECONDS", description = "ssh connect timeout (default: 5)")
    int timeoutSeconds = 5;

    @Option(names = "--env", description = {"Only say which job Distributed.init() would find in this process's environment",
            "(MLX, jdist, torchrun, Trainer v2, MPI, Slurm or Kubernetes variables) and what it concluded:",
            "rank, size, rendezvous address, backend; errors included. Connects nowhere; host options are ignored."})
    boolean env;

    @Parameters(arity = "0..1", paramLabel = "PROGRAM", description = "the program the job runs (its path is checked)")
    String program;

    @Override
    public Integer call() throws InterruptedException {
        if (env) {
            EnvironmentReport report = EnvironmentReport.of(System.getenv(), Distributed::unavailableReason);
            report.lines().forEach(System.out::println);
            System.out.flush();
            return report.ok() ? 0 : 1;
        }
        JobRequirements job = JobRequirements.of(target, java, System.getenv());
        var in = new JobPreflight.Inputs(job, Optional.ofNullable(program),
                cwd != null ? cwd : Path.of("").toAbsolutePath().toString(), timeoutSeconds);

        List<JobPreflight.Check> checks = JobPreflight.run(in);
        int failed = 0;
        for (JobPreflight.Check c : checks) {
            System.out.printf("%-5s %-16s %-8s %s%n", c.ok() ? "ok" : "FAIL", c.host(), c.what(), c.detail());
            if (!c.ok()) {
                failed++;
                System.out.printf("%-5s %-16s %-8s fix: %s%n", "", "", "", c.fix());
            }
        }
        System.out.println();
        System.out.println("backends this machine can load (Distributed.isAvailable):");
        for (String b : List.of("ring", "mpi", "nccl", "jaccl")) {
            Optional<String> why = Distributed.unavailableReason(b);
            System.out.printf("  %-6s %s%n", b, why.map(w -> "not available: " + w).orElse("available"));
        }
        System.out.println();
        System.out.println(failed == 0 ? "all " + checks.size() + " checks passed"
                : failed + " of " + checks.size() + " checks failed");
        return failed == 0 ? 0 : 1;
    }
}
