package dev.jdist.hosts;

import dev.jdist.console.CliFailure;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** docs/reference/launcher.md §2.4: both hostfile forms, every parse error, and the object form written back. */
class HostfileTest {

    @Test
    void formA() {
        Hostfile hf = Hostfile.parse("h.json", """
                [{"ssh": "node-a", "ips": ["10.0.0.1", "10.0.1.1"]}, {"ssh": "node-b", "ips": ["10.0.0.2"], "extra": 1}]""");
        assertThat(hf.hosts()).hasSize(2);
        assertThat(hf.hosts().get(0).ssh()).isEqualTo("node-a");
        assertThat(hf.hosts().get(0).ips()).containsExactly("10.0.0.1", "10.0.1.1");
        assertThat(hf.hosts().get(1).rdma()).isEmpty();
        assertThat(hf.backend()).isEmpty();
        assertThat(hf.envs()).isEmpty();
    }

    @Test
    void formB() {
        Hostfile hf = Hostfile.parse("h.json", """
                {"backend": "jaccl", "envs": ["MLX_METAL_FAST_SYNCH=1"], "jdist_x": true,
                 "hosts": [
                  {"ssh": "m1", "ips": ["192.168.1.10"], "rdma": [null, "rdma_en5", ["rdma_en4", "rdma_en6"]]},
                  {"ssh": "m2", "ips": [], "rdma": ["rdma_en5", null, "rdma_en3"]},
                  {"ssh": "m3", "rdma": ["rdma_en4", "rdma_en3", null]}]}""");
        assertThat(hf.backend()).isEqualTo("jaccl");
        assertThat(hf.envs()).containsExactly("MLX_METAL_FAST_SYNCH=1");
        assertThat(hf.hosts().get(0).rdma()).containsExactly(null, "rdma_en5", List.of("rdma_en4", "rdma_en6"));
        assertThat(hf.hosts().get(2).ips()).isEmpty();
    }

    @Test
    void theWrittenObjectFormReadsBackAsTheSameHostfile() {
        Hostfile hf = new Hostfile("jaccl", List.of("A=1"), List.of(
                new HostEntry("m1", List.of("10.0.0.1"), Arrays.asList(null, "rdma_en5")),
                new HostEntry("m\u00e9", List.of(), Arrays.asList(List.of("rdma_en4", "rdma_en6"), null))));
        assertThat(hf.toJson()).isEqualTo("""
                {
                    "backend": "jaccl",
                    "envs": [
                        "A=1"
                    ],
                    "hosts": [
                        {
                            "ssh": "m1",
                            "ips": [
                                "10.0.0.1"
                            ],
                            "rdma": [
                                null,
                                "rdma_en5"
                            ]
                        },
                        {
                            "ssh": "m\\u00e9",
                            "ips": [],
                            "rdma": [
                                [
                                    "rdma_en4",
                                    "rdma_en6"
                                ],
                                null
                            ]
                        }
                    ]
                }""");
        assertThat(Hostfile.parse("h.json", hf.toJson())).isEqualTo(hf);
    }

    @Test
    void missingFile(@TempDir Path dir) {
        String p = dir.resolve("nope.json").toString();
        assertThatThrownBy(() -> Hostfile.read(p)).isInstanceOf(CliFailure.class)
                .hasMessageContaining("Hostfile " + p + " doesn't exist");
    }

    @Test
    void deepNestingIsAParseErrorWithAPosition() {
        String deep = "[".repeat(5000) + "]".repeat(5000);
        assertThatThrownBy(() -> Hostfile.parse("h.json", deep)).isInstanceOf(CliFailure.class)
                .hasMessageStartingWith("Failed to parse hostfile h.json (the file is not valid JSON at line 1");
    }

    @Test
    void aDeviceThatNeverEndsIsAnErrorNotAHang() {
        assertThatThrownBy(() -> Hostfile.read("/dev/zero")).isInstanceOf(CliFailure.class)
                .hasMessageStartingWith("Failed to parse hostfile /dev/zero (");
    }

    @Test
    void readsAFile(@TempDir Path dir) throws Exception {
        Path f = Files.writeString(dir.resolve("h.json"), "[{\"ssh\": \"127.0.0.1\"}]");
        assertThat(Hostfile.read(f.toString()).hosts().get(0).isLocal()).isTrue();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "not json | [{\"ssh\": | not valid JSON",
            "empty | '' | empty",
            "form B without hosts | {\"backend\": \"ring\"} | \"hosts\"",
            "hosts not array | {\"hosts\": 3} | \"hosts\" must be an array",
            "host without ssh | [{\"ips\": []}] | host 0 has no \"ssh\"",
            "host not object | [\"node\"] | host 0 must be an object",
            "ssh empty | [{\"ssh\": \"\"}] | \"ssh\" must be a non-empty string",
            "ssh number | [{\"ssh\": 5}] | \"ssh\" must be a non-empty string",
            "ips string | [{\"ssh\": \"a\"}, {\"ssh\": \"b\", \"ips\": \"10.0.0.1\"}] | host 1 (b): \"ips\" must be an array",
            "ips item number | [{\"ssh\": \"a\", \"ips\": [1]}] | ips[0] must be a string",
            "ips null | [{\"ssh\": \"a\", \"ips\": null}] | \"ips\" must be an array",
            "rdma string | [{\"ssh\": \"a\", \"rdma\": \"x\"}] | \"rdma\" must be an array",
            "rdma item number | [{\"ssh\": \"a\", \"rdma\": [1]}] | rdma[0] must be null",
            "rdma inner number | [{\"ssh\": \"a\", \"rdma\": [[\"x\", 2]]}] | rdma[0][1]",
            "envs not array | {\"envs\": \"A=1\", \"hosts\": [{\"ssh\": \"a\"}]} | \"envs\" must be an array",
            "envs item number | {\"envs\": [1], \"hosts\": [{\"ssh\": \"a\"}]} | envs[0]",
            "backend number | {\"backend\": 1, \"hosts\": [{\"ssh\": \"a\"}]} | \"backend\" must be a string",
            "top level string | \"x\" | the top level must be",
            "top level number | 3 | the top level must be",
            "top level null | null | the top level must be",
            "zero hosts array | [] | no hosts",
            "zero hosts object | {\"hosts\": []} | no hosts",
            "stray bracket | [{\"ssh\": \"a\"}]] | not valid JSON at line 1, column 15",
            "trailing value | [{\"ssh\": \"a\"}] [] | after the end of the top-level value",
            "duplicate key | [{\"ssh\": \"a\", \"ssh\": \"b\"}] | Duplicate field"})
    void errors(String name, String text, String detail) {
        assertThatThrownBy(() -> Hostfile.parse("h.json", text))
                .isInstanceOf(CliFailure.class)
                .hasMessageStartingWith("Failed to parse hostfile h.json (")
                .hasMessageContaining(detail);
    }

    @Test
    void hostsOption() {
        assertThat(HostList.parse("a,10.0.0.1", 2)).extracting(HostEntry::ssh).containsExactly("a", "a", "10.0.0.1", "10.0.0.1");
        assertThat(HostList.parse("a,10.0.0.1", 1)).extracting(HostEntry::ips).containsExactly(List.of(), List.of("10.0.0.1"));
        assertThat(HostList.parse("a, b", 1)).extracting(HostEntry::ssh).containsExactly("a", " b");
        for (String bad : Arrays.asList("a,,b", "a,", ",a", "")) {
            assertThatThrownBy(() -> HostList.parse(bad, 1)).hasMessageContaining("Hostname cannot be empty");
        }
        assertThat(HostList.parse("127.0.0.1", 1).get(0).isLocal()).isTrue();
        assertThat(HostList.parse("localhost", 1).get(0).isLocal()).isFalse();
        assertThat(HostList.parse("::1", 1).get(0).isLocal()).isFalse();
    }

    @ParameterizedTest
    @CsvSource({"10.0.0.1,true", "0.0.0.0,true", "255.255.255.255,true", "01.2.3.4,false", "1.2.3,false", "256.1.1.1,false",
            "0x7f.0.0.1,false", "1.2.3.4/32,false", "' 1.2.3.4',false", "::1,true", "fe80::1%en0,true", "::ffff:1.2.3.4,true",
            "[::1],false", "node1,false", "localhost,false", "1:2:3,false", "::ffff:01.2.3.4,false", "abcd,false"})
    void ipLiterals(String s, boolean ip) {
        assertThat(IpLiteral.isIp(s)).as(s).isEqualTo(ip);
    }
}
