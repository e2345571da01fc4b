package dev.jdist.config;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The rings (cycles) of a connectivity matrix, found by the deterministic depth-first search of
 * {@code docs/reference/distributed-config.md} §6.3: start at each host in order, visit neighbours in ascending order,
 * keep the first cycle found for each set of hosts, then stable-sort longest first. {@code rings.get(0)}
 * is the ring used for configuration; its order is the rank order of the ring hostfile.
 */
public final class RingSearch {

    /** A cycle of host indices and the number of parallel cables usable on every hop. */
    public record Ring(List<Integer> cycle, int count) {
        public Ring {
            cycle = List.copyOf(cycle);
        }
    }

    private final int[][] c;
    private final int n;
    private final List<Ring> rings = new ArrayList<>();
    private final Set<Set<Integer>> seen = new HashSet<>();

    private RingSearch(int[][] connectivity) {
        this.c = connectivity;
        this.n = connectivity.length;
    }

    public static List<Ring> rings(int[][] connectivity) {
        RingSearch search = new RingSearch(connectivity);
        for (int start = 0; start < search.n; start++) {
            search.visit(start, start, new ArrayList<>(), new boolean[search.n]);
        }
        List<Ring> sorted = new ArrayList<>(search.rings);
        sorted.sort(Comparator.comparingInt((Ring r) -> r.cycle().size()).reversed()); // stable
        return List.copyOf(sorted);
    }

    /** True iff the first (longest) ring visits all {@code n} hosts. */
    public static boolean isFullRing(List<Ring> rings, int n) {
        return !rings.isEmpty() && rings.getFirst().cycle().size() == n;
    }

    private void visit(int start, int node, List<Integer> path, boolean[] onPath) {
        path.add(node);
        onPath[node] = true;
        for (int j = 0; j < n; j++) {
            if (c[node][j] <= 0) {
                continue;
            }
            if (j == start) {
                record(path);
            }
            if (!onPath[j]) {
                visit(start, j, path, onPath);
            }
        }
        path.removeLast();
        onPath[node] = false;
    }

    private void record(List<Integer> cycle) {
        int count = Integer.MAX_VALUE;
        for (int k = 0; k < cycle.size(); k++) {
            count = Math.min(count, c[cycle.get(k)][cycle.get((k + 1) % cycle.size())]);
        }
        Set<Integer> key = Set.copyOf(cycle);
        if (seen.add(key)) {
            rings.add(new Ring(cycle, count));
        }
    }
}
