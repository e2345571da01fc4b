package dev.jdist.rendezvous;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** What a rank says about the process and host it runs on, read once. */
final class LocalFacts {
    static final String HOSTNAME = readHostname();
    static final String BOOT_ID = readBootId();
    static final long PID = ProcessHandle.current().pid();

    private LocalFacts() {}

    /**
     * A digest of the job token for the agreement check: the first 8 bytes of SHA-256 over a fixed label and the
     * token, in hex. It tells tokens apart without revealing them (empty without a token).
     */
    static String tokenDigest(String token) {
        if (token == null || token.isEmpty()) return "";
        return sha256Hex(("jdist job token digest\0" + token).getBytes(StandardCharsets.UTF_8)).substring(0, 16);
    }

    static String sha256Hex(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is not available in this JVM", e);
        }
    }

    private static String readHostname() {
        try {
            String h = Files.readString(Path.of("/proc/sys/kernel/hostname")).strip();
            if (!h.isEmpty()) return h;
        } catch (IOException | RuntimeException ignored) {
            // not Linux: ask Java (may consult the resolver)
        }
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "unknown-host";
        }
    }

    private static String readBootId() {
        try {
            String id = Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).strip();
            if (!id.isEmpty()) return id;
        } catch (IOException | RuntimeException ignored) {
            // not Linux: the host name stands in
        }
        return "host:" + HOSTNAME;
    }
}
