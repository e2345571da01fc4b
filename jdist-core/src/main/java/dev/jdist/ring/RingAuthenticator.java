package dev.jdist.ring;

import dev.jdist.mesh.PeerMesh;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;

/**
 * The jdist ring connection handshake (docs/reference/collectives.md §9 "Authentication", opt-in with {@code JDIST_JOB_TOKEN};
 * never used otherwise, so the default wire stays MLX's). A mutual challenge-response over each new
 * connection j, before the first operation:
 *
 * <pre>
 *   connector → acceptor   "JDISTAU1" (8 bytes) ++ nonceC (32 bytes)
 *   acceptor  → connector  nonceA (32) ++ HMAC-SHA256(token, "jdist-ring acceptor" ++ j ++ nonceC ++ nonceA) (32)
 *   connector → acceptor   HMAC-SHA256(token, "jdist-ring connector" ++ j ++ nonceA ++ nonceC) (32)
 *   acceptor  → connector  0x01 (accepted)
 * </pre>
 *
 * j is the connection index as a 4-byte big-endian integer. Each side proves it knows the token
 * without revealing it, and fresh nonces prevent replay. A connector that fails it is dropped and
 * the acceptor keeps waiting for the genuine neighbour.
 *
 * <p>Public so that jdist's other connections (the rendezvous store, the peer mesh) prove the same token the same way;
 * they pass a channel number j outside the ring's connection indices, which keeps their proofs apart.
 */
public final class RingAuthenticator implements PeerMesh.Proofs {
    static final byte[] MAGIC = "JDISTAU1".getBytes(StandardCharsets.US_ASCII);
    public static final int NONCE = 32;
    public static final int MAC = 32;
    static final int HELLO = MAGIC.length + NONCE;
    static final int CHALLENGE_REPLY = NONCE + MAC;
    static final byte ACCEPTED = 1;

    private static final SecureRandom RANDOM = new SecureRandom();
    private final SecretKeySpec key;

    public RingAuthenticator(String token) {
        this.key = new SecretKeySpec(token.getBytes(StandardCharsets.UTF_8), "HmacSHA256");
    }

    public static byte[] nonce() {
        byte[] b = new byte[NONCE];
        RANDOM.nextBytes(b);
        return b;
    }

    @Override
    public byte[] acceptorMac(int j, byte[] nonceC, byte[] nonceA) { return mac("jdist-ring acceptor", j, nonceC, nonceA); }

    @Override
    public byte[] connectorMac(int j, byte[] nonceA, byte[] nonceC) { return mac("jdist-ring connector", j, nonceA, nonceC); }

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
