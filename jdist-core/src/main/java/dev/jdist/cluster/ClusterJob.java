package dev.jdist.cluster;

import java.util.List;
import java.util.OptionalInt;

/**
 * A job found in the environment (the plan; nothing is connected yet): this process's rank, the job's size and
 * where rank 0 serves the rendezvous store.
 *
 * @param source       where it was found
 * @param rank         this process's global rank, {@code 0 <= rank < size}
 * @param size         the number of processes in the job
 * @param rankVariable the variable(s) the rank came from ({@code SLURM_PROCID}; {@code PET_NODE_RANK, LOCAL_RANK})
 * @param sizeVariable the variable(s) the size came from ({@code WORLD_SIZE})
 * @param localRank    this process's rank on its host, -1 when the launcher does not say
 * @param masterHost   rank 0's host as given (a name or an IPv4 address; resolved, with retries, when connecting)
 * @param masterPort   the store's TCP port
 * @param masterFrom   where host and port came from, for messages
 * @param evidence     what was read, one line each, for {@code jdist doctor --env} and messages
 * @param problem      null, or why this process cannot be a member as started: its rank is not below its size (it still
 *                     meets the others, so that every rank learns "rank 5 was started with WORLD_SIZE=4, the others
 *                     with 8" instead of waiting for it)
 */
public record ClusterJob(JobSource source, int rank, int size, String rankVariable, String sizeVariable, int localRank,
                         String masterHost, int masterPort, String masterFrom, List<String> evidence, String problem) {

    public ClusterJob {
        evidence = List.copyOf(evidence);
    }

    public OptionalInt localRankIfKnown() { return localRank < 0 ? OptionalInt.empty() : OptionalInt.of(localRank); }

    /** {@code torchrun variables (RANK=3, WORLD_SIZE=8; rendezvous at node0:29500)}. */
    public String describe() {
        return source.id() + " job, rank " + rank + " of " + size + " (" + rankVariable + ", " + sizeVariable + "); rendezvous at "
                + masterHost + ":" + masterPort + " (" + masterFrom + ")";
    }
}
