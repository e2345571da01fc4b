package dev.jdist.jaccl;

import dev.jdist.testing.FreePorts;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.DataInputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The side channel's bytes [wire] (docs/reference/collectives.md §4.2), checked against hand-written peers
 * that speak the protocol with raw sockets, as an MLX rank would.
 */
class SideChannelWireTest {

    static byte[] le(int... values) {
        ByteBuffer b = ByteBuffer.allocate(4 * values.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int v : values) b.putInt(v);
        return b.array();
    }

    @Test
    @Timeout(60)
    void rankZeroReadsRanksInOrderAndWritesTheConcatenationToEach() throws Exception {
        int port = FreePorts.one();
        CompletableFuture<int[]> zero = CompletableFuture.supplyAsync(() -> {
            try (TcpSideChannel ch = TcpSideChannel.connect(0, 3, "127.0.0.1", port, Duration.ofSeconds(20), s -> {})) {
                int[] ints = ch.allGatherInt(100);
                ch.barrier();
                return ints;
            }
        });
        Socket[] raw = new Socket[3];
        // connect in reverse rank order: rank 0 must order the connections by the rank they announce
        for (int q = 2; q >= 1; q--) {
            for (int attempt = 0; attempt < 100 && raw[q] == null; attempt++) {
                try {
                    raw[q] = new Socket(InetAddress.getLoopbackAddress(), port);
                } catch (java.net.ConnectException e) {
                    Thread.sleep(50);
                }
            }
            raw[q].setSoTimeout(20_000);
            raw[q].getOutputStream().write(le(q));
        }
        raw[2].getOutputStream().write(le(102));
        raw[1].getOutputStream().write(le(101));
        for (int q = 1; q <= 2; q++) {
            byte[] all = new DataInputStream(raw[q].getInputStream()).readNBytes(12);
            assertThat(all).as("rank %d receives n*b bytes, rank-ordered", q).isEqualTo(le(100, 101, 102));
        }
        for (int round = 0; round < 2; round++) { // barrier = two all-gathers of int32 0
            for (int q = 1; q <= 2; q++) raw[q].getOutputStream().write(le(0));
            for (int q = 1; q <= 2; q++) assertThat(new DataInputStream(raw[q].getInputStream()).readNBytes(12)).isEqualTo(le(0, 0, 0));
        }
        assertThat(zero.get(20, TimeUnit.SECONDS)).containsExactly(100, 101, 102);
        for (int q = 1; q <= 2; q++) raw[q].close();
    }

    @Test
    @Timeout(60)
    void aRankAnnouncesItselfThenWritesItsBytesThenReadsAll() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 4, InetAddress.getLoopbackAddress())) {
            int port = server.getLocalPort();
            CompletableFuture<java.util.List<java.util.List<byte[]>>> two = CompletableFuture.supplyAsync(() -> {
                try (TcpSideChannel ch = TcpSideChannel.connect(2, 3, "127.0.0.1", port, Duration.ofSeconds(20), s -> {})) {
                    byte[] rec = new byte[32];
                    rec[0] = 7;
                    rec[31] = 9;
                    return ch.allGatherRecords(java.util.List.of(rec), 32);
                }
            });
            server.setSoTimeout(20_000);
            try (Socket s = server.accept()) {
                s.setSoTimeout(20_000);
                DataInputStream in = new DataInputStream(s.getInputStream());
                OutputStream out = s.getOutputStream();
                assertThat(in.readNBytes(4)).as("the rank, 4 bytes little-endian").isEqualTo(le(2));
                // vector of records: lengths as int32 first
                assertThat(in.readNBytes(4)).isEqualTo(le(1));
                out.write(le(2, 0, 1)); // rank 0 has 2 records, rank 1 none, rank 2 one -> m = 2
                byte[] mine = in.readNBytes(64); // m*record_size, zero-padded
                assertThat(mine[0]).isEqualTo((byte) 7);
                assertThat(mine[31]).isEqualTo((byte) 9);
                assertThat(java.util.Arrays.copyOfRange(mine, 32, 64)).containsOnly((byte) 0);
                byte[] all = new byte[3 * 64];
                all[0] = 1;
                all[32] = 2;
                System.arraycopy(mine, 0, all, 128, 64);
                out.write(all);
                var got = two.get(20, TimeUnit.SECONDS);
                assertThat(got.get(0)).hasSize(2);
                assertThat(got.get(0).get(1)[0]).isEqualTo((byte) 2);
                assertThat(got.get(1)).isEmpty();
                assertThat(got.get(2).get(0)[31]).isEqualTo((byte) 9);
            }
        }
    }

    @Test
    void destinationRecordLayout() {
        byte[] gid = new byte[16];
        gid[10] = (byte) 0xFF;
        gid[11] = (byte) 0xFF;
        gid[12] = 10;
        gid[15] = 2;
        byte[] r = VerbsTransport.record(5, 0x1234, 7, gid);
        assertThat(r).hasSize(32);
        assertThat(java.util.Arrays.copyOfRange(r, 0, 16)).isEqualTo(le(5, 0x1234, 7, 0));
        assertThat(java.util.Arrays.copyOfRange(r, 16, 32)).isEqualTo(gid);
        assertThat(VerbsTransport.isIpv4Mapped(gid)).isTrue();
        gid[0] = (byte) 0xfe;
        assertThat(VerbsTransport.isIpv4Mapped(gid)).isFalse();
    }
}
