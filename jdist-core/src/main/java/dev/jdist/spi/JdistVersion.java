package dev.jdist.spi;

/**
 * What a jdist rank says about itself when it meets the others (the rendezvous record, the agreement check):
 * the release it was built from and the version of the protocols jdist ranks speak among themselves.
 */
public final class JdistVersion {

    /**
     * The version of everything jdist ranks exchange beyond MLX's bytes: the rendezvous store's wire, the
     * start-up record, the ring's jdist extensions (authentication, split, sum_scatter). Raised whenever one of
     * them changes incompatibly; ranks with different values refuse to form a group. 2: between jdist ranks on
     * several hosts the ring's large messages run in one direction (docs/reference/collectives.md §10.12), which
     * ranks of protocol 1 would run in two. 3: before the mesh is used, ranks on several hosts probe each other and
     * all-gather the outcomes over the ring (docs/reference/collectives.md §10.1), an exchange ranks of protocol 2 would
     * not join. 4: the one-direction ring cuts a message into its k parts from 16 KiB per rank per part, not MLX's
     * 256 KiB (§10.12), so ranks of protocol 3 would cut the same message differently. A change to jdist's default algorithm rules needs no raise: the mesh's
     * settings digest covers them, so ranks of builds whose defaults differ refuse each other there
     * ({@link dev.jdist.algo.AlgorithmPolicy#digest()}).
     */
    public static final int WIRE_PROTOCOL = 4;

    private JdistVersion() {}

    /** The jdist release ({@code 0.1.0-SNAPSHOT}): the one version string, from the build ({@link dev.jdist.BuildInfo}). */
    public static String release() { return dev.jdist.BuildInfo.version(); }
}
