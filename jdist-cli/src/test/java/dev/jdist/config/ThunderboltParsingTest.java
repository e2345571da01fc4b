package dev.jdist.config;

import dev.jdist.console.CliFailure;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ThunderboltParsingTest {

    @Test
    void hardwarePortsOfTheSpecExample() {
        Map<String, String> ports = HardwarePorts.parse(MacFixtures.read("two", "mac-a", "networksetup.txt"));
        assertThat(ports).containsExactly(
                Map.entry("Ethernet", "en0"), Map.entry("Thunderbolt Bridge", "bridge0"),
                Map.entry("Thunderbolt 1", "en2"), Map.entry("Thunderbolt 2", "en3"), Map.entry("Thunderbolt 3", "en4"));
    }

    @Test
    void hardwarePortLinesAreTrimmedFirst() {
        assertThat(HardwarePorts.parse("  Hardware Port: Thunderbolt 1  \r\n\tDevice: en2 \r\n"))
                .containsExactly(Map.entry("Thunderbolt 1", "en2"));
    }

    @Test
    void portsOfTheSpecExampleSortedByInterface() {
        HostWiring a = MacFixtures.wiring("two", "mac-a");
        assertThat(a.ports()).extracting(ThunderboltPort::iface).containsExactly("en2", "en3", "en4");
        assertThat(a.ports()).extracting(ThunderboltPort::peerUuid)
                .containsExactly("B2B2B2B2-0000-0000-0000-000000000002", null, null); // dock has no domain UUID
        assertThat(a.ports()).extracting(ThunderboltPort::attached).containsExactly(null, "TS4", null);
        ThunderboltTopology t = MacFixtures.topology("two", "mac-a", "mac-b");
        assertThat(t.unconnectedPorts(0)).extracting(ThunderboltPort::iface).containsExactly("en4"); // en3 has the dock
        HostWiring b = MacFixtures.wiring("two", "mac-b");
        assertThat(b.ports()).extracting(ThunderboltPort::uuid)
                .containsExactly("B2B2B2B2-0000-0000-0000-000000000001", "B2B2B2B2-0000-0000-0000-000000000002");
    }

    @Test
    void interfacesSortAsStrings() {
        String json = """
                {"SPThunderboltDataType": [
                  {"device_name_key": "M", "domain_uuid_key": "U2", "receptacle_1_tag": {"receptacle_id_key": "2"}},
                  {"device_name_key": "M", "domain_uuid_key": "U1", "receptacle_1_tag": {"receptacle_id_key": "1"}},
                  {"_name": "no uuid: skipped entirely"}
                ]}""";
        HostWiring w = SystemProfilerThunderbolt.parse("x", json, Map.of("Thunderbolt 1", "en2", "Thunderbolt 2", "en10"));
        assertThat(w.ports()).extracting(ThunderboltPort::iface).containsExactly("en10", "en2");
    }

    @Test
    void generationFromTheReportedSpeed() {
        assertThat(MacFixtures.wiring("tb4", "t0").ports().getFirst().generation()).isEqualTo(4);
        assertThat(MacFixtures.wiring("tb5", "t0").ports().getFirst().generation()).isEqualTo(5);
        assertThat(MacFixtures.wiring("two", "mac-a").ports().getFirst().generation()).isZero();
    }

    @Test
    void errorsNameTheHostAndTheProblem() {
        assertThatThrownBy(() -> SystemProfilerThunderbolt.parse("mac-z", "command not found", Map.of()))
                .isInstanceOf(CliFailure.class).hasMessageContaining("mac-z").hasMessageContaining("did not print JSON");
        assertThatThrownBy(() -> SystemProfilerThunderbolt.parse("mac-z", "{}", Map.of()))
                .hasMessageContaining("mac-z").hasMessageContaining("SPThunderboltDataType");
        assertThatThrownBy(() -> SystemProfilerThunderbolt.parse("mac-z",
                "{\"SPThunderboltDataType\": [{\"domain_uuid_key\": \"U\", \"receptacle_1_tag\": {\"receptacle_id_key\": \"1\"}}]}",
                Map.of())).hasMessageContaining("mac-z").hasMessageContaining("device_name_key");
        assertThatThrownBy(() -> SystemProfilerThunderbolt.parse("mac-z",
                "{\"SPThunderboltDataType\": [{\"domain_uuid_key\": \"U\", \"device_name_key\": \"M\"}]}",
                Map.of())).hasMessageContaining("receptacle_id_key");
        assertThatThrownBy(() -> SystemProfilerThunderbolt.parse("mac-z",
                "{\"SPThunderboltDataType\": [{\"domain_uuid_key\": \"U\", \"device_name_key\": \"M\","
                        + " \"receptacle_1_tag\": {\"receptacle_id_key\": \"7\"}}]}",
                Map.of("Ethernet", "en0"))).hasMessageContaining("mac-z").hasMessageContaining("\"Thunderbolt 7\"");
    }
}
