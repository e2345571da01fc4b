package dev.jdist.spi;

import java.util.List;
import java.util.Map;

/**
 * What one jdist rank publishes when the job starts (through the rendezvous store, an embedder's all-gather, or
 * an all-gather over a group formed from a hostfile with a job token) and what the agreement check compares.
 *
 * @param rank          the rank this process claims
 * @param rankSource    where the rank came from, for messages ({@code RANK}, {@code SLURM_PROCID}, {@code MLX_RANK})
 * @param size          the world size it was started with
 * @param sizeSource    where the size came from, for messages ({@code WORLD_SIZE}, {@code SLURM_NTASKS}, {@code the
 *                      hostfile's entries})
 * @param source        how the job was found ({@code torchrun}, {@code slurm}, {@code hostfile}, {@code exchange}, ...)
 * @param backend       the backend this rank is forming ({@code ring}, {@code nccl}, ...)
 * @param jdistVersion  {@link JdistVersion#release()}
 * @param wireProtocol  {@link JdistVersion#WIRE_PROTOCOL}
 * @param tokenDigest   a digest of {@code JDIST_JOB_TOKEN} (never the token), empty without one
 * @param jobDigest     a digest of the job's description files (the canonical hostfile), empty when there are none
 * @param jobDescription what {@code jobDigest} covers, for messages ({@code hostfile /tmp/h.json})
 * @param settings      backend settings every rank must share ({@code transport=tcp}, {@code connections=1})
 * @param host          the IPv4 address other ranks reach this rank at
 * @param hostname      this host's name, for messages
 * @param pid           this process's id, for messages
 * @param bootId        an identity of this host's running kernel (Linux boot id, else the host name): equal boot ids
 *                      mean the same host
 * @param ports         the ports this rank listens on for the backend (the ring's listeners), in order
 * @param capabilities  what this rank can do beyond MLX (for later choices between jdist ranks)
 */
public record RankRecord(int rank, String rankSource, int size, String sizeSource, String source, String backend, String jdistVersion,
                         int wireProtocol, String tokenDigest, String jobDigest, String jobDescription,
                         Map<String, String> settings, String host, String hostname, long pid, String bootId,
                         List<Integer> ports, List<String> capabilities) {

    public RankRecord {
        settings = settings == null ? Map.of() : Map.copyOf(settings);
        ports = ports == null ? List.of() : List.copyOf(ports);
        capabilities = capabilities == null ? List.of() : List.copyOf(capabilities);
        rankSource = rankSource == null ? "" : rankSource;
        sizeSource = sizeSource == null ? "" : sizeSource;
        source = source == null ? "" : source;
        backend = backend == null ? "" : backend;
        jdistVersion = jdistVersion == null ? "" : jdistVersion;
        tokenDigest = tokenDigest == null ? "" : tokenDigest;
        jobDigest = jobDigest == null ? "" : jobDigest;
        jobDescription = jobDescription == null ? "" : jobDescription;
        host = host == null ? "" : host;
        hostname = hostname == null ? "" : hostname;
        bootId = bootId == null ? "" : bootId;
    }

    /** This record with another published address (the rendezvous replaces a loopback address once it knows better). */
    public RankRecord withHost(String newHost) {
        return new RankRecord(rank, rankSource, size, sizeSource, source, backend, jdistVersion, wireProtocol, tokenDigest, jobDigest,
                jobDescription, settings, newHost, hostname, pid, bootId, ports, capabilities);
    }

    /** {@code host} name, pid and address, for messages: {@code node3 (pid 4711, 10.0.0.3)}. */
    public String where() {
        return hostname + " (pid " + pid + ", " + host + ")";
    }
}
