package dev.jdist.spi;

import com.fasterxml.jackson.databind.JsonNode;
import dev.jdist.ConfigException;
import dev.jdist.cluster.RingHostfile;
import dev.jdist.jaccl.DeviceMatrix;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The shared configuration JSON reader: what it accepts, and that every bad input is a positioned ConfigException. */
@Timeout(60)
class StrictJsonTest {

    static final String TWO = "[[\"127.0.0.1:32323\"], [\"127.0.0.1:32324\"]]";

    @Test
    void aValidDocumentParsesAndWhitespaceAroundItIsFine() {
        JsonNode n = StrictJson.parse("\n  " + TWO + " \n\t", "test doc", "");
        assertThat(n.size()).isEqualTo(2);
        assertThat(StrictJson.parse("  \n ", "test doc", "").isMissingNode()).isTrue();
    }

    @ParameterizedTest
    @ValueSource(strings = {TWO + "]", TWO + " []", TWO + " x", TWO + "\"", TWO + " 1", "1 2", "{} {}", "null null"})
    void anythingAfterTheTopLevelValueIsRejectedWithItsPosition(String text) {
        assertThatThrownBy(() -> StrictJson.parse(text, "ring hostfile /h.json", "expected an array"))
                .isExactlyInstanceOf(ConfigException.class)
                .hasMessageStartingWith("ring hostfile /h.json is not valid JSON at line 1, column ")
                .hasMessageEndingWith("; expected an array");
    }

    @Test
    void theTrailingBracketOfTheIssueIsRejectedByTheRingAndJacclReaders() {
        assertThatThrownBy(() -> RingHostfile.parse(Path.of("/h.json"), TWO + "]"))
                .isExactlyInstanceOf(ConfigException.class).hasMessageContaining("line 1, column 43");
        assertThatThrownBy(() -> DeviceMatrix.parse("[[null,\"a\"],[\"a\",null]] ]", "d.json"))
                .isExactlyInstanceOf(ConfigException.class).hasMessageContaining("d.json is not valid JSON at line 1, column 25");
    }

    @ParameterizedTest
    @ValueSource(ints = {StrictJson.MAX_DEPTH + 1, 1000, 1001, 100_000})
    void deepNestingIsAConfigErrorWithAPositionNeverANullPointerOrStackOverflow(int depth) {
        String text = "[".repeat(depth) + "]".repeat(depth);
        assertThatThrownBy(() -> StrictJson.parse(text, "f.json", ""))
                .isExactlyInstanceOf(ConfigException.class)
                .hasMessageContaining("f.json is not valid JSON at line 1, column " + (StrictJson.MAX_DEPTH + 2))
                .hasMessageContaining("nesting depth");
        assertThatThrownBy(() -> RingHostfile.parse(Path.of("f.json"), text)).isExactlyInstanceOf(ConfigException.class);
        assertThatThrownBy(() -> DeviceMatrix.parse(text, "f.json")).isExactlyInstanceOf(ConfigException.class);
        assertThat(StrictJson.parse("[".repeat(StrictJson.MAX_DEPTH) + "]".repeat(StrictJson.MAX_DEPTH), "f", "").isArray()).isTrue();
    }

    @ParameterizedTest
    @ValueSource(strings = {"[123456789012345678901234567890123456789012345678901234567890123456789]",
        "[-0.00000000000000000000000000000000000000000000000000000000000000000000001]"})
    void overlongNumbersAreRejectedWithoutWork(String text) {
        assertThatThrownBy(() -> StrictJson.parse(text, "f.json", ""))
                .isExactlyInstanceOf(ConfigException.class).hasMessageContaining("f.json is not valid JSON at line 1");
    }

    @Test
    void hugeButShortNumbersAreJustTheWrongTypeForTheReaders() {
        assertThatThrownBy(() -> RingHostfile.parse(Path.of("f.json"), "[[1e99999999999999999999999]]"))
                .isExactlyInstanceOf(ConfigException.class).hasMessageContaining("must be a \"host:port\" string, got number");
        assertThatThrownBy(() -> DeviceMatrix.parse("[[null,1e999999],[null,null]]", "d.json"))
                .isExactlyInstanceOf(ConfigException.class).hasMessageContaining("item [0][1]");
    }

    @ParameterizedTest
    @ValueSource(strings = {"[1,]", "[01]", "['a']", "[NaN]", "// c\n[]", "[\"a\u0000\"]", "[\u0000]", "{\"a\":1,\"a\":2}", "[\"\\x\"]", "[tru]"})
    void nonStandardJsonIsRejected(String text) {
        assertThatThrownBy(() -> StrictJson.parse(text, "f.json", ""))
                .isExactlyInstanceOf(ConfigException.class).hasMessageContaining("f.json is not valid JSON at line ");
    }

    @Test
    void aUtf8ByteOrderMarkIsSkippedInFilesAndStrings(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("bom.json");
        byte[] body = TWO.getBytes(StandardCharsets.UTF_8);
        byte[] withBom = new byte[body.length + 3];
        withBom[0] = (byte) 0xEF;
        withBom[1] = (byte) 0xBB;
        withBom[2] = (byte) 0xBF;
        System.arraycopy(body, 0, withBom, 3, body.length);
        Files.write(f, withBom);
        assertThat(RingHostfile.read(f).size()).isEqualTo(2);
        assertThat(StrictJson.parse("\uFEFF" + TWO, "s", "").size()).isEqualTo(2);
    }

    @Test
    void utf16AndInvalidUtf8FilesAreNamedAsSuch(@TempDir Path dir) throws Exception {
        Path le = dir.resolve("le.json");
        Files.write(le, ("\uFEFF" + TWO).getBytes(StandardCharsets.UTF_16LE));
        assertThatThrownBy(() -> RingHostfile.read(le)).isExactlyInstanceOf(ConfigException.class)
                .hasMessageContaining("is UTF-16 LE text").hasMessageContaining("UTF-8");
        Path be = dir.resolve("be.json");
        Files.write(be, TWO.getBytes(StandardCharsets.UTF_16BE));             // no BOM
        assertThatThrownBy(() -> RingHostfile.read(be)).isExactlyInstanceOf(ConfigException.class)
                .hasMessageContaining("is UTF-16 BE text");
        Path bad = dir.resolve("bad.json");
        Files.write(bad, new byte[] {'[', '\n', '"', 'a', (byte) 0xC3, '"', ']'});
        assertThatThrownBy(() -> RingHostfile.read(bad)).isExactlyInstanceOf(ConfigException.class)
                .hasMessageContaining("not valid UTF-8").hasMessageContaining("0xC3 at byte offset 4 (line 2)");
        Path nul = dir.resolve("nul.json");
        Files.write(nul, new byte[] {'[', '[', '"', 'a', ':', '1', '"', ']', 0, ']'});
        assertThatThrownBy(() -> RingHostfile.read(nul)).isExactlyInstanceOf(ConfigException.class)
                .hasMessageContaining("not valid JSON at line 1, column 10");
    }

    @Test
    void directoriesAndEndlessDevicesAreConfigErrorsNotHangs(@TempDir Path dir) {
        assertThatThrownBy(() -> RingHostfile.read(dir)).isExactlyInstanceOf(ConfigException.class)
                .hasMessageContaining("is a directory");
        Path zero = Path.of("/dev/zero");
        if (Files.isReadable(zero)) {
            assertThatThrownBy(() -> RingHostfile.read(zero)).isExactlyInstanceOf(ConfigException.class)
                    .hasMessageContaining("too large");
            assertThatThrownBy(() -> DeviceMatrix.read(zero, "MLX_IBV_DEVICES")).isExactlyInstanceOf(ConfigException.class)
                    .hasMessageContaining("too large");
        }
    }

    @Test
    void theSharedMapperRejectsTrailingTokensForCallersThatBindThemselves() {
        assertThatThrownBy(() -> StrictJson.mapper().readTree("[] ]"))
                .isInstanceOf(com.fasterxml.jackson.core.JsonProcessingException.class);
    }
}
