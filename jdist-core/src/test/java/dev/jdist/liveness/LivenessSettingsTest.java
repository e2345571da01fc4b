package dev.jdist.liveness;

import dev.jdist.ConfigException;
import dev.jdist.PeerUnresponsiveException;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LivenessSettingsTest {

    @Test
    void defaultsAreATenSecondBoundAndAThirtyMinuteProgressDeadline() {
        LivenessSettings s = LivenessSettings.fromEnvironment(Map.of());
        assertThat(s.heartbeat()).isEqualTo(Duration.ofSeconds(10));
        assertThat(s.interval()).isEqualTo(Duration.ofSeconds(1));
        assertThat(s.silenceLimit()).isEqualTo(Duration.ofSeconds(8));
        assertThat(s.grace()).isEqualTo(Duration.ofSeconds(2));
        assertThat(s.progressDeadline()).isEqualTo(Duration.ofMinutes(30));
        assertThat(s.detail()).isFalse();
    }

    @Test
    void readsTheVariablesInJdistTimeoutsSyntax() {
        LivenessSettings s = LivenessSettings.fromEnvironment(Map.of("JDIST_HEARTBEAT", "3s", "JDIST_TIMEOUT", "2m", "JDIST_DEBUG", "DETAIL"));
        assertThat(s.heartbeat()).isEqualTo(Duration.ofSeconds(3));
        assertThat(s.progressDeadline()).isEqualTo(Duration.ofMinutes(2));
        assertThat(s.detail()).isTrue();
        assertThat(LivenessSettings.fromEnvironment(Map.of("JDIST_HEARTBEAT", "off")).watching()).isFalse();
        assertThat(LivenessSettings.fromEnvironment(Map.of("JDIST_HEARTBEAT", "1.5")).heartbeat()).isEqualTo(Duration.ofMillis(1500));
    }

    @Test
    void badValuesNameTheVariable() {
        assertThatThrownBy(() -> LivenessSettings.fromEnvironment(Map.of("JDIST_HEARTBEAT", "soon"))).isInstanceOf(ConfigException.class)
                .hasMessageContaining("JDIST_HEARTBEAT=\"soon\"");
        assertThatThrownBy(() -> LivenessSettings.fromEnvironment(Map.of("JDIST_HEARTBEAT", "50ms"))).isInstanceOf(ConfigException.class)
                .hasMessageContaining("200ms..1h");
        assertThatThrownBy(() -> LivenessSettings.fromEnvironment(Map.of("JDIST_DEBUG", "verbose"))).isInstanceOf(ConfigException.class)
                .hasMessageContaining("JDIST_DEBUG=\"verbose\"").hasMessageContaining("detail");
    }

    @Test
    void procStatSaysStoppedExitedOrRunning() {
        assertThat(ProcessProbe.parse("4711 (java) T 1 2 3")).isEqualTo(PeerUnresponsiveException.State.STOPPED);
        assertThat(ProcessProbe.parse("4711 (a) b) Z 1 2")).isEqualTo(PeerUnresponsiveException.State.EXITED);
        assertThat(ProcessProbe.parse("4711 (java) S 1")).isEqualTo(PeerUnresponsiveException.State.RUNNING);
        assertThat(ProcessProbe.state(ProcessHandle.current().pid())).isEqualTo(PeerUnresponsiveException.State.RUNNING);
    }
}
