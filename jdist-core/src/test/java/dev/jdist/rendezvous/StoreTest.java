package dev.jdist.rendezvous;

import dev.jdist.ConfigException;
import dev.jdist.ConnectFailedException;
import dev.jdist.DistributedException;
import dev.jdist.testing.FreePorts;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.DataOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The rendezvous store on loopback: its operations, and strangers, garbage and wrong tokens refused without harm. */
class StoreTest {
    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : open) c.close();
    }

    private StoreServer server(String token) {
        StoreServer s = StoreServer.open(0, token, "test");
        open.add(s);
        return s;
    }

    private StoreClient client(StoreServer s, String token, int rank) {
        StoreClient c = StoreClient.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), s.port()), "test store", token,
                rank, System.nanoTime() + Duration.ofSeconds(20).toNanos(), Duration.ofSeconds(20));
        open.add(c);
        return c;
    }

    @Test
    @Timeout(60)
    void setGetWaitAddCompareAndSet() throws Exception {
        StoreServer s = server("tok");
        StoreClient a = client(s, "tok", 0);
        StoreClient b = client(s, "tok", 1);
        assertThat(a.get("k")).isEmpty();
        a.set("k", "v".getBytes(StandardCharsets.UTF_8));
        assertThat(b.get("k")).hasValueSatisfying(v -> assertThat(new String(v, StandardCharsets.UTF_8)).isEqualTo("v"));
        assertThat(b.await(List.of("k", "later"), Duration.ofMillis(200))).containsExactly("later");
        Thread t = Thread.ofPlatform().start(() -> {
            try {
                Thread.sleep(200);
            } catch (InterruptedException ignored) {
                // the test fails below
            }
            a.set("later", new byte[0]);
        });
        assertThat(b.await(List.of("k", "later"), Duration.ofSeconds(10))).isEmpty();
        t.join(10_000);
        assertThat(a.add("n", 2)).isEqualTo(2);
        assertThat(b.add("n", 3)).isEqualTo(5);
        byte[] x = "x".getBytes(StandardCharsets.UTF_8);
        byte[] y = "y".getBytes(StandardCharsets.UTF_8);
        assertThat(a.compareAndSet("c", null, x)).isEqualTo(x);
        assertThat(b.compareAndSet("c", null, y)).isEqualTo(x);    // taken: the value it holds
        assertThat(b.compareAndSet("c", x, y)).isEqualTo(y);
        assertThatThrownBy(() -> a.add("k", 1)).isInstanceOf(DistributedException.class);   // not a counter: that connection ends
        b.ping();
    }

    @Test
    @Timeout(60)
    void strangersAndGarbageAreRefusedAndTheStoreKeepsServing() throws Exception {
        StoreServer s = server("tok");
        StoreClient good = client(s, "tok", 0);
        // a stranger that connects and leaves
        new Socket(InetAddress.getLoopbackAddress(), s.port()).close();
        // garbage instead of a handshake
        try (Socket g = new Socket(InetAddress.getLoopbackAddress(), s.port())) {
            g.getOutputStream().write("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            g.getOutputStream().write(new byte[64]);
            g.setSoTimeout(10_000);
            assertThat(g.getInputStream().read()).isEqualTo(-1);   // closed by the store
        }
        // a silent one stays open in its handshake while others are served
        Socket silent = new Socket(InetAddress.getLoopbackAddress(), s.port());
        open.add(silent);
        StoreClient other = client(s, "tok", 1);
        other.set("a", new byte[] {1});
        assertThat(good.get("a")).isPresent();
        assertThat(String.join("\n", s.refusals())).contains("did not start with the jdist rendezvous handshake")
                .contains("\"GET / HT");
    }

    @Test
    @Timeout(60)
    void aMalformedFrameEndsOnlyThatConnection() throws Exception {
        StoreServer s = server(null);
        StoreClient good = client(s, null, 0);
        try (Socket raw = new Socket(InetAddress.getLoopbackAddress(), s.port())) {
            raw.setSoTimeout(10_000);
            OutputStream o = raw.getOutputStream();
            InputStream i = raw.getInputStream();
            DataOutputStream d = new DataOutputStream(o);
            d.write(StoreWire.MAGIC);
            d.writeByte(0);
            d.writeInt(7);
            d.write(new byte[StoreWire.NONCE]);
            d.flush();
            assertThat(i.readNBytes(StoreWire.WELCOME_BYTES)).hasSize(StoreWire.WELCOME_BYTES);
            d.write(new byte[StoreWire.MAC]);
            d.flush();
            assertThat(i.read()).isEqualTo(StoreWire.ACCEPTED);
            d.writeInt(Integer.MAX_VALUE);   // a frame far too large
            d.flush();
            assertThat(i.read()).isEqualTo(-1);
        }
        good.set("still", new byte[] {1});
        assertThat(good.get("still")).isPresent();
        assertThat(String.join("\n", s.refusals())).contains("malformed request");
        assertThat(s.notesFor(7)).contains("malformed request");
    }

    @Test
    @Timeout(60)
    void tokensMustMatch() {
        StoreServer s = server("right");
        assertThatThrownBy(() -> client(s, "wrong", 3)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("proved a different job token");
        assertThatThrownBy(() -> client(s, null, 4)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("requires the job token");
        StoreServer open = server(null);
        assertThatThrownBy(() -> client(open, "mine", 5)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("was started without one");
        assertThat(s.notesFor(4)).contains("has no JDIST_JOB_TOKEN");
    }

    @Test
    @Timeout(60)
    void aTakenPortIsNamedWithTheFix() throws Exception {
        try (ServerSocket taken = new ServerSocket()) {
            taken.bind(new InetSocketAddress(InetAddress.getByAddress(new byte[4]), 0));
            assertThatThrownBy(() -> StoreServer.open(taken.getLocalPort(), null, "MASTER_PORT"))
                    .isInstanceOf(ConfigException.class)
                    .hasMessageContaining("port " + taken.getLocalPort() + " (MASTER_PORT)")
                    .hasMessageContaining("JDIST_MASTER_PORT");
        }
    }

    @Test
    @Timeout(60)
    void somethingElseOnThePortIsNamed() throws Exception {
        try (ServerSocket other = new ServerSocket(0, 5, InetAddress.getLoopbackAddress())) {
            Thread t = Thread.ofPlatform().daemon().start(() -> {
                try (Socket c = other.accept()) {
                    c.getOutputStream().write(("SSH-2.0-OpenSSH_9.2p1 Debian\r\n" + "x".repeat(80)).getBytes(StandardCharsets.US_ASCII));
                    c.getInputStream().read();
                } catch (Exception ignored) {
                    // the client gave up
                }
            });
            assertThatThrownBy(() -> StoreClient.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), other.getLocalPort()),
                    "x:1 (MASTER_ADDR, MASTER_PORT)", null, 2, System.nanoTime() + 10_000_000_000L, Duration.ofSeconds(10)))
                    .isInstanceOf(ConnectFailedException.class)
                    .hasMessageContaining("something other than a jdist rendezvous store answers at x:1");
            t.join(10_000);
        }
    }

    @Test
    @Timeout(60)
    void noStoreIsNamedAfterTheDeadline() throws Exception {
        int port = FreePorts.one();
        assertThatThrownBy(() -> StoreClient.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port),
                "127.0.0.1:" + port + " (MASTER_ADDR, MASTER_PORT)", null, 3, System.nanoTime() + 1_500_000_000L, Duration.ofMillis(1500)))
                .isInstanceOf(ConnectFailedException.class)
                .hasMessageContaining("rank 3 found no rendezvous store at 127.0.0.1:" + port)
                .hasMessageContaining("is rank 0 running");
    }

    @Test
    @Timeout(60)
    void aLostStoreIsNamed() {
        StoreServer s = server(null);
        StoreClient c = client(s, null, 1);
        s.close();
        assertThatThrownBy(() -> c.await(List.of("never"), Duration.ofSeconds(5))).isInstanceOf(DistributedException.class)
                .hasMessageContaining("lost its connection to the rendezvous store");
    }
}
