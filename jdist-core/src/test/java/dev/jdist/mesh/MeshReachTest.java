package dev.jdist.mesh;

import dev.jdist.ring.RingAuthenticator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.NoRouteToHostException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.channels.ServerSocketChannel;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The reachability check before a mesh is used (docs/reference/collectives.md §10.1): what a probe finds, and the table
 * every member decides from. The whole path (a ring of point-to-point links, the group falling back to the ring) is
 * {@code RingOfCablesIT}'s, in network namespaces.
 */
@Timeout(60)
class MeshReachTest {

    private static final byte[] DIGEST = new byte[8];

    @Test
    void probesFindAListeningMemberAndARefusedOneAndSkipMembersOnTheSameHost() throws Exception {
        InetAddress lo = InetAddress.getLoopbackAddress();
        try (ServerSocketChannel mine = PeerMesh.listen(lo, "rank 0", 4);
             ServerSocketChannel live = PeerMesh.listen(lo, "rank 1", 4);
             ServerSocketChannel sameHost = PeerMesh.listen(lo, "rank 3", 4)) {
            ServerSocketChannel gone = PeerMesh.listen(lo, "rank 2", 4);
            byte[] goneRecord = PeerMesh.record(gone, 2, DIGEST);
            gone.close();   // nothing listens there any more: refused
            byte[] all = concat(PeerMesh.record(mine, 0, DIGEST), PeerMesh.record(live, 1, DIGEST), goneRecord,
                    PeerMesh.record(sameHost, 0, DIGEST));
            PeerMesh mesh = PeerMesh.form(new PeerMesh.Settings(0, Duration.ofSeconds(10), "t", 0, false, "rank 0",
                    RingAuthenticator::new, 0, false), mine, all, "settings");
            try {
                byte[] outcome = mesh.probe(Duration.ofSeconds(5));
                assertThat(outcome).containsExactly(0, MeshReach.Outcome.REACHED.ordinal(), MeshReach.Outcome.REFUSED.ordinal(),
                        MeshReach.Outcome.REACHED.ordinal());
                // the probe of rank 1 is one connection, made and closed at once; rank 3 (this host) was not probed
                assertThat(live.accept()).isNotNull();
                sameHost.configureBlocking(false);
                assertThat(sameHost.accept()).isNull();
            } finally {
                mesh.close();
            }
        }
    }

    @Test
    void theTableListsTheFailedPairsInRankOrder() {
        byte[] t = new byte[9];
        assertThat(new MeshReach(3, t).complete()).isTrue();
        assertThat(new MeshReach(3, t).gaps()).isEmpty();
        t[2] = (byte) MeshReach.Outcome.NO_ROUTE.ordinal();    // rank 0 -> rank 2
        t[5] = (byte) MeshReach.Outcome.TIMED_OUT.ordinal();   // rank 1 -> rank 2
        MeshReach r = new MeshReach(3, t);
        assertThat(r.complete()).isFalse();
        assertThat(r.gaps()).containsExactly(new int[] {0, 2}, new int[] {1, 2});
    }

    @Test
    void aBadTableIsRefused() {
        assertThatThrownBy(() -> new MeshReach(3, new byte[8])).hasMessageContaining("8 bytes for 3 members");
        assertThatThrownBy(() -> new MeshReach(2, new byte[] {0, 9, 0, 0})).hasMessageContaining("code 9");
    }

    @Test
    void failuresAreNamedByWhatTheyMeanForTheMesh() {
        assertThat(MeshReach.Outcome.of(new NoRouteToHostException("No route to host"))).isEqualTo(MeshReach.Outcome.NO_ROUTE);
        assertThat(MeshReach.Outcome.of(new SocketException("Network is unreachable"))).isEqualTo(MeshReach.Outcome.NO_ROUTE);
        assertThat(MeshReach.Outcome.of(new ConnectException("Connection refused"))).isEqualTo(MeshReach.Outcome.REFUSED);
        assertThat(MeshReach.Outcome.of(new SocketTimeoutException("Connect timed out"))).isEqualTo(MeshReach.Outcome.TIMED_OUT);
        assertThat(MeshReach.Outcome.of(new IOException("Broken pipe"))).isEqualTo(MeshReach.Outcome.FAILED);
    }

    @Test
    void theDescriptionNamesThePairsTheirAddressesAndWhy() throws Exception {
        InetAddress lo = InetAddress.getLoopbackAddress();
        ServerSocketChannel[] l = new ServerSocketChannel[5];
        byte[] all = new byte[0];
        for (int q = 0; q < 5; q++) {
            l[q] = PeerMesh.listen(lo, "rank " + q, 5);
            all = concat(all, PeerMesh.record(l[q], q, DIGEST));
        }
        for (int q = 1; q < 5; q++) l[q].close();
        PeerMesh mesh = PeerMesh.form(new PeerMesh.Settings(0, Duration.ofSeconds(10), "t", 0, false, "rank 0",
                RingAuthenticator::new, 0, false), l[0], all, "settings");
        try {
            byte[] t = new byte[25];
            for (int q = 1; q < 5; q++) t[q] = (byte) MeshReach.Outcome.NO_ROUTE.ordinal();   // rank 0 reaches nobody
            String port2 = Integer.toString(mesh.member(2).address().getPort());
            assertThat(new MeshReach(5, t).describe(mesh))
                    .startsWith("4 pairs of ranks cannot connect directly (rank 0 -> rank 1 at 127.0.0.1:")
                    .contains("; rank 0 -> rank 2 at 127.0.0.1:" + port2 + ": no route to its address; ")
                    .endsWith("; and 1 more)");
            byte[] one = new byte[25];
            one[3] = (byte) MeshReach.Outcome.REFUSED.ordinal();
            assertThat(new MeshReach(5, one).describe(mesh)).startsWith("1 pair of ranks cannot connect directly (rank 0 -> rank 3")
                    .endsWith(": connection refused)");
        } finally {
            mesh.close();
        }
    }

    private static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) n += p.length;
        byte[] out = new byte[n];
        int at = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }
}
