package dev.jdist.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.SplittableRandom;

/**
 * Runs inside a namespace whose connections to ADDRESS:PORT and ADDRESS:PORT+1 go through the delaying relay: an echo
 * server on PORT, then, as its client, 20 round trips of 8 bytes (the least time is printed), BYTES of seeded random
 * bytes sent while the echo is read back and compared, the end of the stream passed both ways, and a connection to
 * PORT+1, where nothing listens. Prints one line of {@code key=value} for {@link DelayRelayIT} to check.
 */
public final class DelayRelayProbe {
    private static final int TIMEOUT_MILLIS = 30_000;

    public static void main(String[] args) throws Exception {
        String address = args[0];
        int port = Integer.parseInt(args[1]);
        long bytes = Long.parseLong(args[2]);
        try (ServerSocket server = new ServerSocket()) {
            server.bind(new InetSocketAddress(address, port));
            server.setSoTimeout(TIMEOUT_MILLIS);
            Thread echo = Thread.ofPlatform().daemon().start(() -> echo(server));
            StringBuilder out = new StringBuilder();
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(address, port), TIMEOUT_MILLIS);
                s.setTcpNoDelay(true);
                s.setSoTimeout(TIMEOUT_MILLIS);
                out.append("rtt_min_us=").append(leastRoundTripMicros(s, 20));
                out.append(' ').append(bulk(s, bytes));
            }
            echo.join(TIMEOUT_MILLIS);
            out.append(" refused=").append(refused(address, port + 1));
            System.out.println(out);
        }
    }

    private static void echo(ServerSocket server) {
        try (Socket c = server.accept()) {
            c.setTcpNoDelay(true);
            c.setSoTimeout(TIMEOUT_MILLIS);
            c.getInputStream().transferTo(c.getOutputStream());
            c.shutdownOutput();
        } catch (IOException e) {
            System.out.println("echo: " + e);
        }
    }

    private static long leastRoundTripMicros(Socket s, int rounds) throws IOException {
        OutputStream o = s.getOutputStream();
        InputStream in = s.getInputStream();
        byte[] msg = new byte[8];
        long least = Long.MAX_VALUE;
        for (int i = 0; i < rounds; i++) {
            long start = System.nanoTime();
            o.write(msg);
            o.flush();
            if (in.readNBytes(msg, 0, 8) != 8) throw new IOException("the echo ended early");
            least = Math.min(least, (System.nanoTime() - start) / 1000);
        }
        return least;
    }

    /** Sends {@code bytes} while another thread reads the echo; "echoed=N match=B eof=B". */
    private static String bulk(Socket s, long bytes) throws Exception {
        Thread writer = Thread.ofPlatform().daemon().start(() -> {
            try {
                OutputStream o = s.getOutputStream();
                SplittableRandom random = new SplittableRandom(17);
                byte[] chunk = new byte[1 << 16];
                for (long sent = 0; sent < bytes; sent += chunk.length) {
                    int n = (int) Math.min(chunk.length, bytes - sent);
                    for (int i = 0; i < n; i++) chunk[i] = (byte) random.nextInt();
                    o.write(chunk, 0, n);
                }
                s.shutdownOutput();
            } catch (IOException e) {
                System.out.println("writer: " + e);
            }
        });
        InputStream in = s.getInputStream();
        SplittableRandom expected = new SplittableRandom(17);
        byte[] buf = new byte[1 << 16];
        long echoed = 0;
        boolean match = true;
        int n;
        while ((n = in.read(buf)) > 0) {
            for (int i = 0; i < n; i++) match &= buf[i] == (byte) expected.nextInt();
            echoed += n;
        }
        writer.join(TIMEOUT_MILLIS);
        // the loop ends at the end of the stream (-1); a timeout would have thrown instead
        return "echoed=" + echoed + " match=" + match + " eof=" + (n == -1);
    }

    /** What a connection to a port where nothing listens gives through the relay: the exception's class, or what came. */
    private static String refused(String address, int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(address, port), TIMEOUT_MILLIS);
            s.setSoTimeout(TIMEOUT_MILLIS);
            int b = s.getInputStream().read();
            return b < 0 ? "end-of-stream" : "a-byte";
        } catch (IOException e) {
            return e.getClass().getSimpleName();
        }
    }
}
