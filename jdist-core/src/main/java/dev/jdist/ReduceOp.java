package dev.jdist;

/** The element-wise reductions of all_sum, all_max and all_min. */
public enum ReduceOp {
    SUM, MAX, MIN
}
