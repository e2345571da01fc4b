package dev.jdist.algo;

/**
 * The usual fold of a group whose size is not a power of two onto one that is (docs/reference/collectives.md §10.4): with
 * {@code m} the largest power of two not above {@code n} and {@code e = n - m}, the first {@code 2e} ranks pair up
 * ({@code 2i}, {@code 2i+1}); the even rank of each pair hands its data to the odd one before the power-of-two part and
 * gets the result back after it. The odd rank of pair i plays virtual rank {@code i}; rank {@code q >= 2e} plays
 * virtual rank {@code q - e}. Virtual rank v stands for the real ranks {@code [firstReal(v), firstReal(v+1))}, one or
 * two of them, in rank order, so folding keeps the ranks' order.
 */
record Fold(int n, int m, int extra, int log2m) {

    static Fold of(int n) {
        if (n < 2) throw new IllegalArgumentException("a group of " + n + " rank(s) needs no algorithm");
        int m = Integer.highestOneBit(n);
        return new Fold(n, m, n - m, Integer.numberOfTrailingZeros(m));
    }

    /** True for the even rank of a pair: it only hands its data over and gets the result back. */
    boolean foldedOut(int r) { return r < 2 * extra && r % 2 == 0; }

    /** True for the odd rank of a pair: it combines its partner's data first and sends the result back last. */
    boolean foldsIn(int r) { return r < 2 * extra && r % 2 == 1; }

    /** The virtual rank rank {@code r} plays (not for {@link #foldedOut} ranks). */
    int virtualOf(int r) {
        if (foldedOut(r)) throw new IllegalArgumentException("rank " + r + " is folded out");
        return r < 2 * extra ? r / 2 : r - extra;
    }

    /** The real rank that plays virtual rank {@code v}. */
    int realOf(int v) { return v < extra ? 2 * v + 1 : v + extra; }

    /** The first real rank virtual rank {@code v} stands for; {@code firstReal(m) = n}. */
    int firstReal(int v) { return v < extra ? 2 * v : v + extra; }
}
