package dev.jdist.launch;

import java.util.List;

/**
 * One rank's host: {@code ssh} (what ssh connects to; exactly {@code 127.0.0.1} means local), {@code ips}
 * (how other ranks reach it) and {@code rdma} (a jaccl matrix row: items are null, a String or a List of Strings).
 */
public record HostEntry(String ssh, List<String> ips, List<Object> rdma) {

    public static final String LOCAL = "127.0.0.1";

    public HostEntry {
        ips = List.copyOf(ips);
        rdma = java.util.Collections.unmodifiableList(new java.util.ArrayList<>(rdma)); // may hold nulls
    }

    /** A rank is local iff its ssh string is exactly 127.0.0.1. */
    public boolean isLocal() {
        return LOCAL.equals(ssh);
    }
}
