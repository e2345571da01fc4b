package dev.jdist.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/** Ports on 127.0.0.1 that are free right now, for jobs started by tests (never a fixed port: tests run side by side). */
public final class FreePorts {
    private FreePorts() {}

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
