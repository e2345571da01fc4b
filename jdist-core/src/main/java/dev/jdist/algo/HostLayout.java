package dev.jdist.algo;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Which members of a group share a host, as the hierarchical algorithms see it (docs/reference/collectives.md §10.11): hosts are
 * numbered in the order of their lowest rank, and a member's local index is its place among its host's members in rank
 * order. Pure data, the same on every member (it is computed from the host ids every member published).
 */
public final class HostLayout {
    private final int[] hostOf;
    private final int[] localOf;
    private final int[][] members;
    private final int minPerHost;

    private HostLayout(int[] hostOf) {
        int n = hostOf.length;
        int hosts = Arrays.stream(hostOf).max().orElse(-1) + 1;
        List<List<Integer>> per = new ArrayList<>();
        for (int g = 0; g < hosts; g++) per.add(new ArrayList<>());
        this.hostOf = hostOf.clone();
        this.localOf = new int[n];
        for (int q = 0; q < n; q++) {
            localOf[q] = per.get(hostOf[q]).size();
            per.get(hostOf[q]).add(q);
        }
        this.members = new int[hosts][];
        int min = Integer.MAX_VALUE;
        for (int g = 0; g < hosts; g++) {
            members[g] = per.get(g).stream().mapToInt(Integer::intValue).toArray();
            min = Math.min(min, members[g].length);
        }
        this.minPerHost = min;
    }

    /** The layout of members whose host ids are {@code hostIds} (in rank order): equal ids, one host. */
    public static HostLayout of(long[] hostIds) {
        if (hostIds.length == 0) throw new IllegalArgumentException("a layout of no members");
        Map<Long, Integer> index = new LinkedHashMap<>();
        int[] hostOf = new int[hostIds.length];
        for (int q = 0; q < hostIds.length; q++) hostOf[q] = index.computeIfAbsent(hostIds[q], id -> index.size());
        return new HostLayout(hostOf);
    }

    /** The layout where member q runs on host {@code hostOf[q]} (host numbers must appear in order: 0, then 0 or 1, ...). */
    public static HostLayout ofHosts(int... hostOf) {
        long[] ids = new long[hostOf.length];
        for (int q = 0; q < hostOf.length; q++) ids[q] = hostOf[q];
        return of(ids);
    }

    /** Every member on its own host. */
    public static HostLayout separate(int n) {
        int[] h = new int[n];
        for (int q = 0; q < n; q++) h[q] = q;
        return new HostLayout(h);
    }

    public int size() { return hostOf.length; }

    public int hosts() { return members.length; }

    /** The host index of member {@code q} (hosts numbered by their lowest rank). */
    public int hostOf(int q) { return hostOf[q]; }

    /** Member {@code q}'s place among its host's members, in rank order. */
    public int localOf(int q) { return localOf[q]; }

    /** The members on host {@code g}, ascending. */
    public int[] members(int g) { return members[g].clone(); }

    /** How many members host {@code g} has. */
    public int count(int g) { return members[g].length; }

    /** The member with local index {@code l} on host {@code g}. */
    public int member(int g, int l) { return members[g][l]; }

    /** The fewest members any host has: how many stripes every host can run. */
    public int minPerHost() { return minPerHost; }

    /** Whether members {@code a} and {@code b} share a host. */
    public boolean sameHost(int a, int b) { return hostOf[a] == hostOf[b]; }

    /** Some host runs more than one member. */
    public boolean sharesHosts() { return hosts() < size(); }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder();
        for (int g = 0; g < members.length; g++) sb.append(g == 0 ? "" : " | ").append(Arrays.toString(members[g]));
        return sb.toString();
    }
}
