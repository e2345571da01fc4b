package dev.jdist.rendezvous;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The rendezvous store's wire (docs/clusters.md, "The rendezvous store"), all integers big-endian.
 *
 * <pre>
 * handshake, fixed sizes, before anything else:
 *   client → store  HELLO    "JDISTKV1" (8) | flags u8 (bit 0: has a job token) | claimed rank i32 | nonceC (32)   45 bytes
 *   store → client  WELCOME  "JDISTKV1" (8) | flags u8 (bit 0: requires the job token) | nonceA (32) | proof (32)      73 bytes
 *                            proof = HMAC-SHA256(token, "jdist-ring acceptor" ‖ j ‖ nonceC ‖ nonceA), j = 0x4A4B5653
 *                            ({@link dev.jdist.spi.JobToken}, channel "JKVS"); zeros without a token
 *   when the flags differ:   store → client VERDICT (one byte, 2 or 4) and the store closes; otherwise
 *   client → store  PROOF    HMAC-SHA256(token, "jdist-ring connector" ‖ j ‖ nonceA ‖ nonceC) (32); zeros without a token
 *   store → client  VERDICT  u8: 1 accepted, 2 the store requires the job token, 3 wrong token, 4 the store has none
 *
 * then requests and responses, one at a time per connection:
 *   request   length u32 (of what follows) | op u8 | body
 *   response  length u32 | status u8 | body
 *   str = u16 length + UTF-8 (at most 1024 bytes); bytes = u32 length + raw; frames at most 16 MiB
 *   SET  1  str key, bytes value                          → OK
 *   GET  2  str key                                       → VALUE bytes | MISSING
 *   WAIT 3  u32 n, n × str key, u64 timeout ms            → OK | TIMEOUT u32 m, m × str key (those still missing)
 *   ADD  4  str key, i64 delta                            → NUMBER i64 (the counter is 8 bytes big-endian)
 *   CAS  5  str key, u8 has-expected, [bytes expected], bytes desired → VALUE bytes (what the key holds now)
 *   PING 6                                                → OK
 *   statuses: OK 0, VALUE 1, MISSING 2, TIMEOUT 3, NUMBER 4, ERROR 5 (str message)
 * </pre>
 */
final class StoreWire {
    static final byte[] MAGIC = "JDISTKV1".getBytes(StandardCharsets.US_ASCII);
    /** The channel number the store's proofs use: outside the ring's connection indices, so the proofs differ. */
    static final int AUTH_CHANNEL = 0x4A4B5653;
    static final int NONCE = 32;
    static final int MAC = 32;
    static final int HELLO_BYTES = 8 + 1 + 4 + NONCE;
    static final int WELCOME_BYTES = 8 + 1 + NONCE + MAC;
    static final int FLAG_TOKEN = 1;

    static final byte ACCEPTED = 1;
    static final byte REFUSED_TOKEN_REQUIRED = 2;
    static final byte REFUSED_WRONG_TOKEN = 3;
    static final byte REFUSED_UNEXPECTED_TOKEN = 4;

    static final byte SET = 1;
    static final byte GET = 2;
    static final byte WAIT = 3;
    static final byte ADD = 4;
    static final byte CAS = 5;
    static final byte PING = 6;

    static final byte OK = 0;
    static final byte VALUE = 1;
    static final byte MISSING = 2;
    static final byte TIMEOUT = 3;
    static final byte NUMBER = 4;
    static final byte ERROR = 5;

    static final int MAX_FRAME = 16 << 20;
    static final int MAX_KEY = 1024;

    private StoreWire() {}

    /** A malformed frame: the connection that sent it is closed. */
    static final class ProtocolException extends IOException {
        ProtocolException(String message) { super(message); }
    }

    static void writeString(DataOutputStream out, String s) throws IOException {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        if (b.length > MAX_KEY) throw new IllegalArgumentException("store key of " + b.length + " bytes (at most " + MAX_KEY + ")");
        out.writeShort(b.length);
        out.write(b);
    }

    static String readString(DataInputStream in) throws IOException {
        int n = in.readUnsignedShort();
        if (n > MAX_KEY) throw new ProtocolException("a key of " + n + " bytes (at most " + MAX_KEY + ")");
        return new String(readFully(in, n), StandardCharsets.UTF_8);
    }

    static void writeBytes(DataOutputStream out, byte[] b) throws IOException {
        out.writeInt(b.length);
        out.write(b);
    }

    static byte[] readBytes(DataInputStream in, int limit) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > limit) throw new ProtocolException("a value of " + Integer.toUnsignedString(n) + " bytes (at most " + limit + ")");
        return readFully(in, n);
    }

    static List<String> readStrings(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > 1 << 16) throw new ProtocolException("a list of " + Integer.toUnsignedString(n) + " keys");
        List<String> keys = new ArrayList<>(n);
        for (int i = 0; i < n; i++) keys.add(readString(in));
        return keys;
    }

    static void writeStrings(DataOutputStream out, List<String> keys) throws IOException {
        out.writeInt(keys.size());
        for (String k : keys) writeString(out, k);
    }

    /** Reads a frame's length; a length outside 1..MAX_FRAME is a protocol error. */
    static int readFrameLength(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 1 || n > MAX_FRAME) throw new ProtocolException("a frame of " + Integer.toUnsignedString(n) + " bytes (1.." + MAX_FRAME + ")");
        return n;
    }

    static byte[] readFully(DataInputStream in, int n) throws IOException {
        byte[] b = new byte[n];
        in.readFully(b);
        return b;
    }
}
