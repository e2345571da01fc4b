package dev.jdist.cluster;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The example Kubernetes manifests (examples/kubernetes; no Kubernetes runs here): their structure where it matters to
 * jdist, and the environment each implies for every pod, run through {@link JobDiscovery} as the pods would.
 * {@code IndexedJobManifestIT} runs the Indexed Job's environment as 4 processes.
 */
class ExampleManifestsTest {

    private static final List<String> COMMAND = List.of("java", "--enable-native-access=ALL-UNNAMED", "-cp", "/app/jdist.jar",
            "/app/AllSum.java");

    private static List<String> strings(JsonNode array) {
        return java.util.stream.StreamSupport.stream(array.spliterator(), false).map(JsonNode::asText).toList();
    }

    @Test
    void indexedJobAndHeadlessServiceAgreeOnNamesSizesAndPort() {
        List<JsonNode> docs = ExampleManifests.read("indexed-job.yaml");
        assertThat(docs).hasSize(2);
        JsonNode service = ExampleManifests.kind(docs, "Service");
        JsonNode job = ExampleManifests.kind(docs, "Job");
        assertThat(service.path("apiVersion").asText()).isEqualTo("v1");
        assertThat(job.path("apiVersion").asText()).isEqualTo("batch/v1");

        String jobName = job.path("metadata").path("name").asText();
        String serviceName = service.path("metadata").path("name").asText();
        JsonNode spec = job.path("spec");
        JsonNode pod = spec.path("template");
        JsonNode container = pod.path("spec").path("containers").get(0);
        Map<String, String> env = ExampleManifests.env(container);

        assertThat(spec.path("completionMode").asText()).isEqualTo("Indexed");
        int size = Integer.parseInt(env.get("JDIST_WORLD_SIZE"));
        assertThat(spec.path("completions").asInt()).isEqualTo(size);
        assertThat(spec.path("parallelism").asInt()).as("every rank runs at once").isEqualTo(size);
        assertThat(spec.path("backoffLimit").asInt(-1)).isZero();
        assertThat(pod.path("spec").path("restartPolicy").asText()).isEqualTo("Never");

        // pod i is <job>-i.<subdomain>; the subdomain is the headless Service, which selects the pods
        assertThat(pod.path("spec").path("subdomain").asText()).isEqualTo(serviceName);
        assertThat(env.get("JDIST_MASTER_ADDR")).isEqualTo(jobName + "-0." + serviceName);
        assertThat(service.path("spec").path("clusterIP").asText()).isEqualTo("None");
        assertThat(service.path("spec").path("publishNotReadyAddresses").asBoolean()).isTrue();
        service.path("spec").path("selector").properties().forEach(sel ->
                assertThat(pod.path("metadata").path("labels").path(sel.getKey()).asText()).isEqualTo(sel.getValue().asText()));
        int port = Integer.parseInt(env.getOrDefault("JDIST_MASTER_PORT", Integer.toString(JobDiscovery.DEFAULT_PORT)));
        assertThat(service.path("spec").path("ports").get(0).path("port").asInt()).isEqualTo(port);
        assertThat(container.path("ports").get(0).path("containerPort").asInt()).isEqualTo(port);

        assertThat(strings(container.path("command"))).isEqualTo(COMMAND);
        assertThat(env).containsEntry("JDIST_BACKEND", "ring").containsKey("JDIST_JOB_TOKEN");
        assertThat(env.get("JDIST_JOB_TOKEN")).contains("secretKeyRef");

        // what every pod finds: rank = its index, the rendezvous at pod 0's name
        for (int i = 0; i < size; i++) {
            Map<String, String> podEnv = new HashMap<>(env);
            podEnv.put("JOB_COMPLETION_INDEX", Integer.toString(i));
            podEnv.put("JDIST_JOB_TOKEN", "from-the-secret");
            ClusterJob found = JobDiscovery.detect(podEnv).job().orElseThrow();
            assertThat(found.source()).isEqualTo(JobSource.KUBERNETES);
            assertThat(found.rank()).isEqualTo(i);
            assertThat(found.size()).isEqualTo(size);
            assertThat(found.masterHost()).isEqualTo(jobName + "-0." + serviceName);
            assertThat(found.masterPort()).isEqualTo(port);
        }
    }

    @Test
    void trainJobRunsTheJvmWithOneProcessPerNodeAndTheTrainersVariablesGiveEveryRank() {
        JsonNode tj = ExampleManifests.kind(ExampleManifests.read("trainjob.yaml"), "TrainJob");
        assertThat(tj.path("apiVersion").asText()).isEqualTo("trainer.kubeflow.org/v1alpha1");
        assertThat(tj.path("spec").path("runtimeRef").path("name").asText()).isEqualTo("torch-distributed");
        JsonNode trainer = tj.path("spec").path("trainer");
        int nodes = trainer.path("numNodes").asInt();
        assertThat(nodes).isEqualTo(4);
        assertThat(trainer.path("numProcPerNode").isInt()).as("a number, not auto").isTrue();
        assertThat(trainer.path("numProcPerNode").asInt()).isEqualTo(1);
        assertThat(strings(trainer.path("command"))).isEqualTo(COMMAND);
        Map<String, String> env = ExampleManifests.env(trainer);
        assertThat(env).containsEntry("JDIST_BACKEND", "ring").doesNotContainKeys("PET_NNODES", "PET_NODE_RANK", "MASTER_ADDR");

        // what the torch-distributed runtime adds to every pod (Trainer's torch plugin): PET_NODE_RANK is the pod's
        // completion index, the master is pod 0 of the node job through the JobSet's headless service, port 29400
        String name = tj.path("metadata").path("name").asText();
        for (int i = 0; i < nodes; i++) {
            Map<String, String> podEnv = new HashMap<>(env);
            podEnv.putAll(Map.of("PET_NNODES", "" + nodes, "PET_NPROC_PER_NODE", trainer.path("numProcPerNode").asText(),
                    "PET_NODE_RANK", "" + i, "JOB_COMPLETION_INDEX", "" + i, "PET_MASTER_ADDR", name + "-node-0-0." + name,
                    "PET_MASTER_PORT", "29400"));
            ClusterJob found = JobDiscovery.detect(podEnv).job().orElseThrow();
            assertThat(found.source()).isEqualTo(JobSource.TRAINER_V2);
            assertThat(found.rank()).isEqualTo(i);
            assertThat(found.size()).isEqualTo(nodes);
            assertThat(found.masterHost()).isEqualTo("jdist-allsum-node-0-0.jdist-allsum");
            assertThat(found.masterPort()).isEqualTo(29400);
        }
    }

    @Test
    void pyTorchJobHasOneMasterAndTheOperatorsVariablesGiveEveryRank() {
        JsonNode pj = ExampleManifests.kind(ExampleManifests.read("pytorchjob.yaml"), "PyTorchJob");
        assertThat(pj.path("apiVersion").asText()).isEqualTo("kubeflow.org/v1");
        JsonNode specs = pj.path("spec").path("pytorchReplicaSpecs");
        assertThat(specs.path("Master").path("replicas").asInt()).isEqualTo(1);
        int workers = specs.path("Worker").path("replicas").asInt();
        assertThat(workers).isEqualTo(3);
        int port = -1;
        for (String role : List.of("Master", "Worker")) {
            JsonNode c = specs.path(role).path("template").path("spec").path("containers").get(0);
            assertThat(c.path("name").asText()).as("the operator only configures the container named pytorch").isEqualTo("pytorch");
            assertThat(strings(c.path("command"))).isEqualTo(COMMAND);
            assertThat(ExampleManifests.env(c)).containsEntry("JDIST_BACKEND", "ring");
            assertThat(specs.path(role).path("restartPolicy").asText()).isEqualTo("Never");
            for (JsonNode p : c.path("ports")) if (p.path("name").asText().equals("pytorchjob-port")) port = p.path("containerPort").asInt();
        }
        assertThat(port).as("the master's pytorchjob-port is MASTER_PORT").isEqualTo(23456);

        // what the operator sets: MASTER_ADDR = <job>-master-0, MASTER_PORT, WORLD_SIZE = all replicas, RANK (workers from 1)
        String name = pj.path("metadata").path("name").asText();
        int size = 1 + workers;
        for (int rank = 0; rank < size; rank++) {
            Map<String, String> podEnv = Map.of("MASTER_ADDR", name + "-master-0", "MASTER_PORT", "" + port, "WORLD_SIZE", "" + size,
                    "RANK", "" + rank, "PYTHONUNBUFFERED", "0", "JDIST_BACKEND", "ring");
            ClusterJob found = JobDiscovery.detect(podEnv).job().orElseThrow();
            assertThat(found.source()).isEqualTo(JobSource.TORCHRUN);
            assertThat(found.rank()).isEqualTo(rank);
            assertThat(found.size()).isEqualTo(size);
            assertThat(found.masterHost()).isEqualTo("jdist-allsum-master-0");
            assertThat(found.masterPort()).isEqualTo(23456);
        }
    }

    @Test
    void theExampleSbatchScriptAsksForFourTasksAndRunsJdistLaunch() throws Exception {
        String script = java.nio.file.Files.readString(ExampleManifests.examples().resolve("slurm/allsum.sbatch"));
        assertThat(script).startsWith("#!/bin/bash\n").contains("\n#SBATCH --ntasks=4\n")
                .contains("\"$JDIST\" launch --tag-output examples/AllSum.java\n");
    }
}
