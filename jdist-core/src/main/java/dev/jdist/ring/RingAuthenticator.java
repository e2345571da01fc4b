package dev.jdist.ring;

import dev.jdist.mesh.PeerMesh;
import dev.jdist.spi.JobToken;

import java.nio.charset.StandardCharsets;

/**
 * The jdist ring connection handshake (docs/reference/collectives.md §9 "Authentication", opt-in with {@code JDIST_JOB_TOKEN};
 * never used otherwise, so the default wire stays MLX's). A mutual challenge-response over each new
 * connection j, before the first operation, with the job token's proofs ({@link JobToken}):
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
 * the acceptor keeps waiting for the genuine neighbour. The peer mesh proves the same token the same way
 * ({@link PeerMesh.Proofs}), on channels outside the ring's connection indices.
 */
public final class RingAuthenticator extends JobToken implements PeerMesh.Proofs {
    static final byte[] MAGIC = "JDISTAU1".getBytes(StandardCharsets.US_ASCII);
    static final int HELLO = MAGIC.length + NONCE;
    static final int CHALLENGE_REPLY = NONCE + MAC;
    static final byte ACCEPTED = 1;

    public RingAuthenticator(String token) {
        super(token);
    }
}
