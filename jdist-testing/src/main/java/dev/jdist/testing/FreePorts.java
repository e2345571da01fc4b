package dev.jdist.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Ports that are free right now, for jobs and servers started by tests (never a fixed port: tests run side by side).
 * A port is only known free at the moment of the check; the test binds it a moment later.
 */
public final class FreePorts {
    private FreePorts() {}

    /** One port free on every address of this host (so on 127.0.0.1 too): the kernel's pick for port 0. */
    public static int one() {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(InetAddress.getByAddress(new byte[4]), 0));
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("no free port: " + e.getMessage(), e);
        }
    }

    /** {@code n} different ports free on 127.0.0.1 (all held open at once while they are picked, so no two are equal). */
    public static int[] distinct(int n) {
        int[] ports = new int[n];
        List<ServerSocket> held = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                ServerSocket s = new ServerSocket();
                held.add(s);
                s.setReuseAddress(true);
                s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
                ports[i] = s.getLocalPort();
            }
            return ports;
        } catch (IOException e) {
            throw new UncheckedIOException("no " + n + " free ports on 127.0.0.1: " + e.getMessage(), e);
        } finally {
            for (ServerSocket s : held) {
                try {
                    s.close();
                } catch (IOException ignored) {
                    // closing a listening socket that never accepted
                }
            }
        }
    }

    /** The first of {@code n} consecutive ports on 127.0.0.1 that are free right now (bounded search). */
    public static int block(int n) throws IOException {
        Random rng = new Random();
        for (int attempt = 0; attempt < 200; attempt++) {
            int first = 20000 + rng.nextInt(30000);
            List<ServerSocket> held = new ArrayList<>();
            try {
                for (int i = 0; i < n; i++) held.add(new ServerSocket(first + i, 1, InetAddress.getLoopbackAddress()));
                return first;
            } catch (IOException taken) {
                // try another block
            } finally {
                for (ServerSocket s : held) s.close();
            }
        }
        throw new IOException("no block of " + n + " consecutive free ports on 127.0.0.1 found in 200 attempts");
    }
}
