package dev.jdist.launch;

import dev.jdist.console.CliFailure;
import dev.jdist.hosts.HostEntry;
import dev.jdist.hosts.Hostfile;

import java.util.List;
import java.util.Map;

/**
 * What {@code jdist launch} will need from the hosts of a job, computed as the launcher computes it but starting
 * nothing: the seam {@code jdist doctor} checks against. Every remote host must accept ssh key login; every host must
 * have {@code java} and each {@code jdistClassPath} entry at the same path, and the ring's addresses free.
 *
 * @param hosts          the job's hosts in rank order (a host appears once per rank)
 * @param ringAddresses  per rank, the {@code ip:port} addresses its ring listens on (empty unless the backend is ring)
 * @param ssh            the ssh the launcher runs
 */
public record JobRequirements(List<HostEntry> hosts, String backend, String java, List<String> jdistClassPath,
                              List<List<String>> ringAddresses, String ssh) {

    public JobRequirements {
        hosts = List.copyOf(hosts);
        jdistClassPath = List.copyOf(jdistClassPath);
        ringAddresses = List.copyOf(ringAddresses);
    }

    /**
     * The requirements of a job with these options.
     *
     * @param javaOption {@code --java}, or null for the launcher's own java
     * @param env        the launcher's environment ({@code JDIST_LAUNCH_BACKEND})
     * @throws CliFailure for a bad option value or hostfile, with launch's message
     */
    public static JobRequirements of(JobTargetOptions target, String javaOption, Map<String, String> env) {
        int connectionsPerIp = target.connectionsPerIp();
        int startingPort = target.startingPort();
        Hostfile hosts = target.resolveHosts();
        String backend = target.chooseBackend(hosts, env);
        if (connectionsPerIp < 1) {
            throw CliFailure.usage("--connections-per-ip must be at least 1");
        }
        List<List<String>> ring = backend.equals("ring")
                ? EnvironmentPlan.ringAddresses(hosts.hosts(), startingPort, connectionsPerIp) : List.of();
        return new JobRequirements(hosts.hosts(), backend, CommandResolver.javaPath(javaOption), CommandResolver.jdistClassPath(),
                ring, Executables.ssh());
    }
}
