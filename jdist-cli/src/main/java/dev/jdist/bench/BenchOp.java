package dev.jdist.bench;

import java.util.Locale;

/** The operations {@code jdist bench} measures, with nccl-tests' names and bus-bandwidth factors. */
public enum BenchOp {
    ALL_SUM("all_sum", "sum"),
    ALL_MAX("all_max", "max"),
    ALL_MIN("all_min", "min"),
    ALL_GATHER("all_gather", "none"),
    SUM_SCATTER("sum_scatter", "sum"),
    SEND_RECV("send_recv", "none"),
    /** From rank 0; jdist members only on the ring (docs/reference/collectives.md §13). */
    BROADCAST("broadcast", "none"),
    /** Equal blocks; the size is each rank's whole input (nccl-tests' convention). */
    ALL_TO_ALL("all_to_all", "none");

    private final String cliName;
    private final String redop;

    BenchOp(String cliName, String redop) {
        this.cliName = cliName;
        this.redop = redop;
    }

    public String cliName() { return cliName; }

    /** The reduction shown in the table's redop column ({@code none} for data movement). */
    public String redop() { return redop; }

    /**
     * nccl-tests' bus-bandwidth factor: what turns algorithm bandwidth (size / time) into the
     * per-link traffic a ring puts on the wire, so that numbers are comparable across rank counts.
     */
    public double busFactor(int ranks) {
        if (ranks <= 1) return this == SEND_RECV || this == BROADCAST ? 1 : 0;
        return switch (this) {
            case ALL_SUM, ALL_MAX, ALL_MIN -> 2.0 * (ranks - 1) / ranks;
            case ALL_GATHER, SUM_SCATTER, ALL_TO_ALL -> (double) (ranks - 1) / ranks;
            case SEND_RECV, BROADCAST -> 1;
        };
    }

    public static BenchOp parse(String name) {
        String n = name.trim().toLowerCase(Locale.ROOT).replace('-', '_');
        for (BenchOp op : values()) {
            if (op.cliName.equals(n)) return op;
        }
        if (n.equals("sendrecv") || n.equals("ping_pong") || n.equals("send") || n.equals("recv")) return SEND_RECV;
        if (n.equals("alltoall") || n.equals("bcast")) return n.equals("bcast") ? BROADCAST : ALL_TO_ALL;
        StringBuilder valid = new StringBuilder();
        for (BenchOp op : values()) valid.append(valid.isEmpty() ? "" : ", ").append(op.cliName);
        throw new IllegalArgumentException("unknown benchmark op '" + name + "'; valid ops: " + valid);
    }
}
