package dev.jdist.spi;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Map;

/**
 * The job token, {@code JDIST_JOB_TOKEN} (docs/reference/collectives.md §9 "Authentication"): a secret every rank of a job
 * shares, and the proofs with which two jdist processes show each other that they know it without revealing it. Fresh
 * nonces from both sides prevent replay; a channel number j, bound into every proof, keeps the proofs of different
 * connections apart (the ring's connection indices; the rendezvous store and the peer mesh use channels outside them):
 *
 * <pre>
 *   acceptor's proof   HMAC-SHA256(token, "jdist-ring acceptor" ++ j ++ nonceC ++ nonceA)
 *   connector's proof  HMAC-SHA256(token, "jdist-ring connector" ++ j ++ nonceA ++ nonceC)
 * </pre>
 *
 * j is a 4-byte big-endian integer. How the nonces and proofs travel is each connection's own (the ring's handshake is
 * {@code dev.jdist.ring.RingAuthenticator}; the store's, {@code dev.jdist.rendezvous.StoreWire}).
 */
public class JobToken {
    /** The variable that holds the token; unset, the job has none and the wire stays MLX's. */
    public static final String VARIABLE = "JDIST_JOB_TOKEN";
    public static final int NONCE = 32;
    public static final int MAC = 32;

    private static final SecureRandom RANDOM = new SecureRandom();
    private final SecretKeySpec key;

    public JobToken(String token) {
        this.key = new SecretKeySpec(token.getBytes(StandardCharsets.UTF_8), "HmacSHA256");
    }

    /** The job's token in {@code env}; null when there is none (unset or empty). */
    public static String in(Map<String, String> env) {
        String t = env.get(VARIABLE);
        return t == null || t.isEmpty() ? null : t;
    }

    public static byte[] nonce() {
        byte[] b = new byte[NONCE];
        RANDOM.nextBytes(b);
        return b;
    }

    public byte[] acceptorMac(int j, byte[] nonceC, byte[] nonceA) { return mac("jdist-ring acceptor", j, nonceC, nonceA); }

    public byte[] connectorMac(int j, byte[] nonceA, byte[] nonceC) { return mac("jdist-ring connector", j, nonceA, nonceC); }

    /** Compares two proofs in time independent of where they differ. */
    public static boolean same(byte[] a, byte[] b) { return MessageDigest.isEqual(a, b); }

    private byte[] mac(String label, int j, byte[] first, byte[] second) {
        try {
            Mac m = Mac.getInstance("HmacSHA256");
            m.init(key);
            m.update(label.getBytes(StandardCharsets.US_ASCII));
            m.update(ByteBuffer.allocate(4).putInt(j).array());
            m.update(first);
            m.update(second);
            return m.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available in this JVM", e);
        }
    }
}
