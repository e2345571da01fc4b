package dev.jdist.spark;

import dev.jdist.ConfigException;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The pure parts of forming a ring from a barrier stage: offers, their checks, the attempt's token, the settings. */
class SparkRingFormationTest {

    static final SparkRingFormation.Offer A = new SparkRingFormation.Offer(0, "10.0.0.1:40000", "aa");
    static final SparkRingFormation.Offer B = new SparkRingFormation.Offer(1, "10.0.0.2:40001", "bb");

    @Test
    void anOfferSurvivesItsTextForm() {
        assertThat(SparkRingFormation.Offer.decode(A.encode(), 0)).isEqualTo(A);
    }

    @Test
    void aForeignAllGatherMessageIsNamed() {
        assertThatThrownBy(() -> SparkRingFormation.Offer.decode("hello", 2)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("\"hello\" from task 2, not a jdist ring offer");
        assertThatThrownBy(() -> SparkRingFormation.Offer.decode("x 10.0.0.1:1 aa", 0)).isInstanceOf(ConfigException.class);
    }

    @Test
    void theAnswersMustBeOnePerTaskInRankOrderAndHoldOurOwnOffer() {
        assertThat(SparkRingFormation.check(new String[] {A.encode(), B.encode()}, 2, 1, B)).containsExactly(A, B);
        assertThatThrownBy(() -> SparkRingFormation.check(new String[] {A.encode()}, 2, 0, A))
                .hasMessageContaining("returned 1 offers for a 2-task stage");
        assertThatThrownBy(() -> SparkRingFormation.check(new String[] {B.encode(), A.encode()}, 2, 0, A))
                .hasMessageContaining("position 0 comes from rank 1");
        SparkRingFormation.Offer other = new SparkRingFormation.Offer(1, "10.0.0.2:40001", "cc");
        assertThatThrownBy(() -> SparkRingFormation.check(new String[] {A.encode(), B.encode()}, 2, 1, other))
                .hasMessageContaining("does not find its own offer");
    }

    @Test
    void theTokenDiffersForAnotherAttemptAnotherStageAndOtherNonces() {
        String t = SparkRingFormation.jobToken(3, 0, List.of(A, B));
        assertThat(t).hasSize(64).isEqualTo(SparkRingFormation.jobToken(3, 0, List.of(A, B)));
        assertThat(SparkRingFormation.jobToken(3, 1, List.of(A, B))).isNotEqualTo(t);
        assertThat(SparkRingFormation.jobToken(4, 0, List.of(A, B))).isNotEqualTo(t);
        SparkRingFormation.Offer b2 = new SparkRingFormation.Offer(1, "10.0.0.2:40001", "b2");
        assertThat(SparkRingFormation.jobToken(3, 0, List.of(A, b2))).isNotEqualTo(t);
    }

    @Test
    void theExecutorHostIsTheHostPartOfSparksAddress() {
        assertThat(SparkRingFormation.executorHost("10.1.2.3:41234")).isEqualTo("10.1.2.3");
        assertThat(SparkRingFormation.executorHost("worker-7")).isEqualTo("worker-7");
        assertThatThrownBy(() -> SparkRingFormation.executorHost(":41234")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("SPARK_LOCAL_IP");
    }

    @Test
    void settingsComeFromTheExecutorsJdistVariablesThenTheCallersAndNeverSetTheRingsOwn() {
        Map<String, String> env = JdistSpark.settings(
                Map.of("JDIST_TIMEOUT", "30", "JDIST_JOB_TOKEN", "old", "MLX_RANK", "5", "MLX_RING_VERBOSE", "1", "PATH", "/bin"),
                Map.of("JDIST_TIMEOUT", "10", "JDIST_RING_SPIN_US", "0"));
        assertThat(env).containsExactlyInAnyOrderEntriesOf(Map.of("JDIST_TIMEOUT", "10", "JDIST_RING_SPIN_US", "0",
                "MLX_RING_VERBOSE", "1"));
        assertThatThrownBy(() -> JdistSpark.settings(Map.of(), Map.of("JDIST_JOB_TOKEN", "x")))
                .hasMessageContaining("JDIST_JOB_TOKEN is chosen per stage attempt");
        assertThatThrownBy(() -> JdistSpark.settings(Map.of(), null)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void theGroupListensOnTheInterfaceThatHoldsSparksAddressForTheExecutor() throws Exception {
        assertThat(SparkRingFormation.interfaceOf(InetAddress.getByName("127.0.0.1"))).isEqualTo("lo");
        assertThatThrownBy(() -> SparkRingFormation.interfaceOf(InetAddress.getByName("192.0.2.77")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("192.0.2.77, is on no network interface of this host");
    }
}
