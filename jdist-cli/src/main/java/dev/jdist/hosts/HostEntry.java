package dev.jdist.hosts;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * One host of a job or a cluster (docs/reference/launcher.md §2): {@code ssh} (what ssh connects to; exactly {@code 127.0.0.1}
 * means local), {@code ips} (how other ranks reach it) and {@code rdma} (a jaccl matrix row: items are null, a String
 * or a List of Strings). One entry per rank in a job; one per machine in {@code jdist config}.
 */
public record HostEntry(String ssh, List<String> ips, List<Object> rdma) {

    public static final String LOCAL = "127.0.0.1";

    public HostEntry {
        Objects.requireNonNull(ssh, "ssh");
        ips = List.copyOf(ips);
        rdma = Collections.unmodifiableList(new ArrayList<>(rdma)); // may hold nulls
    }

    /** A host without RDMA devices. */
    public HostEntry(String ssh, List<String> ips) {
        this(ssh, ips, List.of());
    }

    /** A rank is local iff its ssh string is exactly 127.0.0.1. */
    public boolean isLocal() {
        return LOCAL.equals(ssh);
    }

    /** This host with one more address (one {@code jdist config} discovered). */
    public HostEntry withIp(String ip) {
        List<String> more = new ArrayList<>(ips);
        more.add(ip);
        return new HostEntry(ssh, more, rdma);
    }
}
