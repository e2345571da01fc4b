package dev.jdist.spi;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.MissingNode;
import dev.jdist.ConfigException;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The one JSON reader for configuration files (ring hostfiles, JACCL device files, the launcher's
 * hostfiles): strict RFC 8259 JSON in UTF-8, one top-level value, bounded in size and depth. Every
 * problem is a {@link ConfigException} naming the source and, where there is one, the line and column;
 * no input makes it throw anything else or run unbounded.
 *
 * <ul>
 *   <li>Text: UTF-8 only. A UTF-8 byte-order mark is skipped (as MLX's C++ JSON reader does); UTF-16/32
 *       text and invalid UTF-8 are rejected with the byte offset.</li>
 *   <li>Syntax: Jackson's strict defaults (no comments, single quotes, NaN, trailing commas, control
 *       characters in strings) plus: nothing but whitespace after the top-level value, no duplicate
 *       object keys.</li>
 *   <li>Bounds: {@value #MAX_BYTES} bytes per file (so {@code /dev/zero} is an error, not a hang),
 *       nesting depth {@value #MAX_DEPTH}, numbers of at most {@value #MAX_NUMBER_CHARS} characters,
 *       strings of at most {@value #MAX_STRING_CHARS} characters.</li>
 * </ul>
 */
public final class StrictJson {

    /** Largest configuration file read (a hostfile of thousands of ranks is well under 1 MiB). */
    public static final int MAX_BYTES = 16 << 20;
    /** Deepest nesting accepted (configuration files nest 2–4 levels). */
    public static final int MAX_DEPTH = 64;
    /** Longest number literal accepted. */
    public static final int MAX_NUMBER_CHARS = 64;
    /** Longest string accepted (environment values in a launcher hostfile can be long; 1 Mi characters). */
    public static final int MAX_STRING_CHARS = 1 << 20;

    private static final ObjectMapper MAPPER = JsonMapper.builder(JsonFactory.builder()
                    .streamReadConstraints(StreamReadConstraints.builder()
                            .maxNestingDepth(MAX_DEPTH)
                            .maxNumberLength(MAX_NUMBER_CHARS)
                            .maxStringLength(MAX_STRING_CHARS)
                            .maxDocumentLength(MAX_BYTES)
                            .build())
                    .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                    .enable(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION)
                    .build())
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    private StrictJson() {}

    /**
     * The configured mapper, for callers that bind JSON to their own types (its {@code readTree} and
     * {@code readValue} reject trailing data too). Prefer {@link #parse}: it adds the positions.
     */
    public static ObjectMapper mapper() { return MAPPER; }

    /**
     * Parses one JSON document.
     *
     * @param text     the document (a leading U+FEFF is skipped)
     * @param source   names the document in messages, e.g. {@code "ring hostfile /etc/jdist/hosts.json"}
     * @param expected what a valid document looks like, appended to syntax errors (may be empty)
     * @return the top-level value, or a {@link MissingNode} when the text holds only whitespace
     * @throws ConfigException naming {@code source}, the line and column, and the problem
     */
    public static JsonNode parse(String text, String source, String expected) {
        String body = !text.isEmpty() && text.charAt(0) == '\uFEFF' ? text.substring(1) : text;
        if (body.length() > MAX_BYTES) throw tooLarge(source, body.length() + " characters");
        JsonParser parser = null;
        try {
            parser = MAPPER.createParser(body);
            JsonToken first = parser.nextToken();
            if (first == null) return MissingNode.getInstance();
            // trailing data is checked below, with a message that says what to do
            JsonNode root = MAPPER.reader().without(DeserializationFeature.FAIL_ON_TRAILING_TOKENS).readTree(parser);
            JsonToken trailing = parser.nextToken();
            if (trailing != null) {
                JsonLocation at = parser.currentTokenLocation();
                throw new ConfigException(source + " is not valid JSON at " + position(at) + ": unexpected "
                        + describe(trailing, parser) + " after the end of the top-level value (a document holds exactly one "
                        + "value; remove what follows it)" + hint(expected));
            }
            return root;
        } catch (JsonProcessingException e) {
            JsonLocation at = e.getLocation() != null ? e.getLocation() : parser != null ? parser.currentLocation() : null;
            throw new ConfigException(source + " is not valid JSON" + (at == null ? "" : " at " + position(at)) + ": "
                    + reason(e) + hint(expected), e);
        } catch (IOException e) {
            throw new ConfigException(source + " could not be parsed: " + e.getMessage() + hint(expected), e);
        } finally {
            if (parser != null) {
                try {
                    parser.close();
                } catch (IOException ignored) {
                    // a String source has nothing to release
                }
            }
        }
    }

    /**
     * Reads a configuration file as strict UTF-8 text (at most {@link #MAX_BYTES} bytes; a UTF-8 BOM stays as
     * a leading U+FEFF, which {@link #parse} skips). I/O errors, a missing file included, are left to the
     * caller, which knows what to advise.
     *
     * @throws ConfigException when the file is a directory, too large, UTF-16/32, or not valid UTF-8
     */
    public static String readText(Path file, String source) throws IOException {
        if (Files.isDirectory(file)) {
            throw new ConfigException(source + " is a directory, not a file; point it at the JSON file itself");
        }
        byte[] bytes;
        try (InputStream in = Files.newInputStream(file)) {
            bytes = in.readNBytes(MAX_BYTES + 1);     // bounded: a device such as /dev/zero never ends
        }
        if (bytes.length > MAX_BYTES) throw tooLarge(source, "more than " + MAX_BYTES + " bytes");
        return decode(bytes, source);
    }

    /** {@link #readText} then {@link #parse}. */
    public static JsonNode readFile(Path file, String source, String expected) throws IOException {
        return parse(readText(file, source), source, expected);
    }

    /** Strict UTF-8: the text, or a ConfigException naming the first bad byte and its line. */
    static String decode(byte[] bytes, String source) {
        String utf16 = utf16or32(bytes);
        if (utf16 != null) {
            throw new ConfigException(source + " is " + utf16 + " text; configuration files must be UTF-8 (re-save it as "
                    + "UTF-8, e.g. iconv -f " + utf16.replace(" ", "") + " -t UTF-8)");
        }
        CharsetDecoder dec = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer in = ByteBuffer.wrap(bytes);
        CharBuffer out = CharBuffer.allocate(bytes.length);
        CoderResult r = dec.decode(in, out, true);
        if (!r.isError()) r = dec.flush(out);
        if (r.isError()) {
            int at = in.position();
            int line = 1;
            for (int i = 0; i < at; i++) if (bytes[i] == '\n') line++;
            throw new ConfigException(source + " is not valid UTF-8 text: byte 0x"
                    + String.format("%02X", bytes[at] & 0xFF) + " at byte offset " + at + " (line " + line
                    + ") does not start or continue a UTF-8 character; configuration files must be UTF-8");
        }
        return out.flip().toString();
    }

    /** "UTF-16 LE" and the like when the bytes carry a UTF-16/32 BOM or the NUL pattern of one; else null. */
    private static String utf16or32(byte[] b) {
        if (b.length >= 4 && b[0] == 0 && b[1] == 0 && (b[2] & 0xFF) == 0xFE && (b[3] & 0xFF) == 0xFF) return "UTF-32 BE";
        if (b.length >= 4 && (b[0] & 0xFF) == 0xFF && (b[1] & 0xFF) == 0xFE && b[2] == 0 && b[3] == 0) return "UTF-32 LE";
        if (b.length >= 2 && (b[0] & 0xFF) == 0xFE && (b[1] & 0xFF) == 0xFF) return "UTF-16 BE";
        if (b.length >= 2 && (b[0] & 0xFF) == 0xFF && (b[1] & 0xFF) == 0xFE) return "UTF-16 LE";
        // Without a BOM: JSON text starts with ASCII characters, so NULs between them give the encoding away.
        if (b.length < 4) return null;
        if (b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] != 0) return "UTF-32 BE";
        if (b[0] != 0 && b[1] == 0 && b[2] == 0 && b[3] == 0) return "UTF-32 LE";
        if (b[0] == 0 && b[1] != 0 && b[2] == 0 && b[3] != 0) return "UTF-16 BE";
        if (b[0] != 0 && b[1] == 0 && b[2] != 0 && b[3] == 0) return "UTF-16 LE";
        return null;
    }

    private static ConfigException tooLarge(String source, String size) {
        return new ConfigException(source + " is too large (" + size + "; the limit is " + MAX_BYTES + " bytes): it is not "
                + "a configuration file, or it names a device or pipe that does not end");
    }

    private static String position(JsonLocation at) {
        return "line " + at.getLineNr() + ", column " + at.getColumnNr();
    }

    private static String hint(String expected) {
        return expected == null || expected.isEmpty() ? "" : "; " + expected;
    }

    /** Jackson's own text without its location suffix (the position is reported separately). */
    private static String reason(JsonProcessingException e) {
        String m = e.getOriginalMessage();
        if (m == null) m = e.getClass().getSimpleName();
        int nl = m.indexOf('\n');
        if (nl >= 0) m = m.substring(0, nl);
        return m.length() > 300 ? m.substring(0, 297) + "..." : m;
    }

    private static String describe(JsonToken t, JsonParser p) throws IOException {
        String text = switch (t) {
            case START_ARRAY -> "'['";
            case END_ARRAY -> "']'";
            case START_OBJECT -> "'{'";
            case END_OBJECT -> "'}'";
            case VALUE_STRING -> "string";
            case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> "number";
            case VALUE_TRUE, VALUE_FALSE -> "boolean";
            case VALUE_NULL -> "null";
            default -> "'" + p.getText() + "'";
        };
        return text;
    }
}
