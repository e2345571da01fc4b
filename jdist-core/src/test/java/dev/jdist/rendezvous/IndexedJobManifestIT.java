package dev.jdist.rendezvous;

import com.fasterxml.jackson.databind.JsonNode;
import dev.jdist.cluster.ExampleManifests;
import dev.jdist.cluster.LateDnsResolverProvider;
import dev.jdist.testing.ChildProcesses;
import dev.jdist.testing.FreePorts;
import dev.jdist.testing.JavaCommand;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The environment examples/kubernetes/indexed-job.yaml gives its pods, run as 4 processes of the unchanged check
 * program: the pod template's variables, {@code JOB_COMPLETION_INDEX} per pod, and the master's DNS name exactly as the
 * manifest writes it ({@code jdist-allsum-0.jdist-allsum}). A test name service ({@link LateDnsResolverProvider})
 * answers for that name only after "pod 0 runs" — a while after every rank started — so the ranks must retry DNS, as
 * on Kubernetes. The secret's token is a test value and the port a free one (several tests share this machine).
 */
class IndexedJobManifestIT {
    static final long LIMIT_SECONDS = 150;

    /** The manifest's pod environment: plain values, the token for the secret's, the port replaced. */
    private static Map<String, String> podEnvironment(int port) {
        List<JsonNode> docs = ExampleManifests.read("indexed-job.yaml");
        Map<String, String> env = new HashMap<>(ExampleManifests.env(
                ExampleManifests.kind(docs, "Job").path("spec").path("template").path("spec").path("containers").get(0)));
        env.put("JDIST_JOB_TOKEN", "token-from-the-secret");
        env.put("JDIST_MASTER_PORT", Integer.toString(port));
        env.put("JDIST_TIMEOUT", "60");
        return env;
    }

    /** java ... ClusterCheckProgram with the late name service on its class path. */
    private static List<String> command(Path dir, String name, Path podZeroRuns) throws Exception {
        Path services = dir.resolve("resolver");
        Files.createDirectories(services.resolve("META-INF/services"));
        Files.writeString(services.resolve("META-INF/services/java.net.spi.InetAddressResolverProvider"),
                LateDnsResolverProvider.class.getName() + "\n");
        List<String> cmd = new ArrayList<>(JavaCommand.of(ClusterCheckProgram.class));
        int cp = cmd.indexOf("-cp");
        cmd.set(cp + 1, services + ":" + cmd.get(cp + 1));
        cmd.add(cp, "-D" + LateDnsResolverProvider.PROPERTY + "=" + name + "=127.0.0.1@" + podZeroRuns);
        return cmd;
    }

    @Test
    @Timeout(LIMIT_SECONDS + 60)
    void theIndexedJobsEnvironmentFormsTheRingOnceTheMastersNameResolves(@TempDir Path dir) throws Exception {
        Map<String, String> env = podEnvironment(FreePorts.one());
        String master = env.get("JDIST_MASTER_ADDR");
        assertThat(master).isEqualTo("jdist-allsum-0.jdist-allsum");
        int size = Integer.parseInt(env.get("JDIST_WORLD_SIZE"));
        Path podZeroRuns = dir.resolve("pod-0-runs");
        List<String> cmd = command(dir, master, podZeroRuns);
        try (ChildProcesses job = new ChildProcesses()) {
            for (int i = 0; i < size; i++) {
                Map<String, String> pod = new HashMap<>(env);
                pod.put("JOB_COMPLETION_INDEX", Integer.toString(i));
                job.start(dir, "pod" + i, cmd, pod);
            }
            // every rank is up and asking DNS for a name that has no answer yet
            Thread.sleep(3_000);
            for (int i = 0; i < size; i++) {
                assertThat(job.process(i).isAlive()).as("pod %d ended before the name resolved:%n%s", i, job.allOutputs()).isTrue();
            }
            Files.writeString(podZeroRuns, "");
            for (int i = 0; i < size; i++) {
                assertThat(job.await(i, LIMIT_SECONDS)).as("exit code of pod %d; outputs:%n%s", i, job.allOutputs()).isZero();
            }
            String all = job.allOutputs();
            for (int i = 0; i < size; i++) {
                assertThat(all).contains("rank " + i + " of " + size + ": OK (backend ring, source kubernetes)");
            }
        }
    }

    @Test
    @Timeout(LIMIT_SECONDS + 60)
    void aMasterNameThatNeverResolvesIsNamedOnEveryRankAtTheDeadline(@TempDir Path dir) throws Exception {
        Map<String, String> env = podEnvironment(FreePorts.one());
        env.put("JDIST_RENDEZVOUS_TIMEOUT", "4s");
        List<String> cmd = command(dir, env.get("JDIST_MASTER_ADDR"), dir.resolve("never"));
        try (ChildProcesses job = new ChildProcesses()) {
            for (int i = 0; i < 2; i++) {
                Map<String, String> pod = new HashMap<>(env);
                pod.put("JOB_COMPLETION_INDEX", Integer.toString(i));
                job.start(dir, "pod" + i, cmd, pod);
            }
            for (int i = 0; i < 2; i++) {
                assertThat(job.await(i, 60)).as(job.allOutputs()).isEqualTo(3);
                assertThat(job.output(i)).contains("FAILED: ConfigException: rank " + i
                                + ": the rendezvous host jdist-allsum-0.jdist-allsum (JDIST_MASTER_ADDR; JDIST_MASTER_PORT) does not resolve")
                        .contains("for a Kubernetes Indexed Job it is the pod of index 0 through a headless Service");
            }
        }
    }
}
