package dev.jdist.cluster;

import dev.jdist.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class JobDiscoveryTest {

    private static Map<String, String> env(String... kv) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return m;
    }

    private static ClusterJob job(String... kv) {
        JobDiscovery.Finding f = JobDiscovery.detect(env(kv));
        assertThat(f.job()).as("a job in %s", f).isPresent();
        return f.job().get();
    }

    private static void fails(String messagePart, String... kv) {
        assertThatThrownBy(() -> JobDiscovery.detect(env(kv)))
                .isInstanceOf(ConfigException.class).hasMessageContaining(messagePart);
    }

    @Test
    void nothingIsNone() {
        JobDiscovery.Finding f = JobDiscovery.detect(Map.of("PATH", "/bin", "RANK", "3"));   // a lone RANK is not a job
        assertThat(f.source()).isEqualTo(JobSource.NONE);
        assertThat(f.job()).isEmpty();
    }

    @Test
    void mlxVariablesComeFirstAndAreLeftToTheBackends() {
        JobDiscovery.Finding f = JobDiscovery.detect(env("MLX_RANK", "1", "MLX_HOSTFILE", "/h.json", "RANK", "0",
                "WORLD_SIZE", "2", "MASTER_ADDR", "x", "MASTER_PORT", "1", "SLURM_JOB_ID", "5", "SLURM_PROCID", "0",
                "SLURM_STEP_ID", "0", "SLURM_NTASKS", "2"));
        assertThat(f.source()).isEqualTo(JobSource.MLX);
        assertThat(f.job()).isEmpty();
        assertThat(JobDiscovery.detect(env("MLX_HOSTFILE", "/h.json")).source()).isEqualTo(JobSource.MLX);
        assertThat(JobDiscovery.detect(env("MLX_RANK", "0", "NCCL_HOST_IP", "10.0.0.1")).source()).isEqualTo(JobSource.MLX);
    }

    @Test
    void jdistVariables() {
        ClusterJob j = job("JDIST_RANK", "2", "JDIST_WORLD_SIZE", "4", "JDIST_MASTER_ADDR", "10.0.0.1");
        assertThat(j.source()).isEqualTo(JobSource.JDIST);
        assertThat(j.rank()).isEqualTo(2);
        assertThat(j.size()).isEqualTo(4);
        assertThat(j.masterHost()).isEqualTo("10.0.0.1");
        assertThat(j.masterPort()).isEqualTo(JobDiscovery.DEFAULT_PORT);
        assertThat(job("JDIST_RANK", "0", "JDIST_WORLD_SIZE", "1").masterHost()).isEqualTo("127.0.0.1");
        fails("JDIST_MASTER_ADDR", "JDIST_RANK", "0", "JDIST_WORLD_SIZE", "2");
        fails("JDIST_RANK", "JDIST_WORLD_SIZE", "4");
    }

    @Test
    void torchrun() {
        ClusterJob j = job("RANK", "3", "WORLD_SIZE", "8", "LOCAL_RANK", "1", "MASTER_ADDR", "node0", "MASTER_PORT", "29500");
        assertThat(j.source()).isEqualTo(JobSource.TORCHRUN);
        assertThat(j.rank()).isEqualTo(3);
        assertThat(j.size()).isEqualTo(8);
        assertThat(j.localRank()).isEqualTo(1);
        assertThat(j.masterHost()).isEqualTo("node0");
        assertThat(j.masterPort()).isEqualTo(29500);
        assertThat(j.rankVariable()).isEqualTo("RANK");
        assertThat(j.sizeVariable()).isEqualTo("WORLD_SIZE");
        // torchrun's agent serves torch's store on MASTER_PORT: the next port
        assertThat(job("RANK", "3", "WORLD_SIZE", "8", "MASTER_ADDR", "n", "MASTER_PORT", "29500",
                "TORCHELASTIC_USE_AGENT_STORE", "True").masterPort()).isEqualTo(29501);
        // the jdist overrides win
        ClusterJob o = job("RANK", "3", "WORLD_SIZE", "8", "MASTER_ADDR", "n", "MASTER_PORT", "29500",
                "JDIST_MASTER_ADDR", "10.1.1.1", "JDIST_MASTER_PORT", "4000");
        assertThat(o.masterHost()).isEqualTo("10.1.1.1");
        assertThat(o.masterPort()).isEqualTo(4000);
    }

    @Test
    void torchrunBadValues() {
        fails("RANK is not", "WORLD_SIZE", "4", "MASTER_ADDR", "n", "MASTER_PORT", "1");
        fails("WORLD_SIZE is not set", "RANK", "1", "MASTER_ADDR", "n", "MASTER_PORT", "1");
        fails("RANK=\"x\" is not", "RANK", "x", "WORLD_SIZE", "4", "MASTER_ADDR", "n", "MASTER_PORT", "1");
        fails("RANK=\"-1\" is not", "RANK", "-1", "WORLD_SIZE", "4", "MASTER_ADDR", "n", "MASTER_PORT", "1");
        fails("RANK=4 is not below WORLD_SIZE=4", "RANK", "4", "WORLD_SIZE", "4", "MASTER_ADDR", "n", "MASTER_PORT", "1");
        fails("WORLD_SIZE=0 is out of range", "RANK", "0", "WORLD_SIZE", "0", "MASTER_ADDR", "n", "MASTER_PORT", "1");
        fails("WORLD_SIZE=\"4 \" is not", "RANK", "0", "WORLD_SIZE", "4 ", "MASTER_ADDR", "n", "MASTER_PORT", "1");
        fails("WORLD_SIZE=99999999 is out of range", "RANK", "0", "WORLD_SIZE", "99999999", "MASTER_ADDR", "n", "MASTER_PORT", "1");
        fails("MASTER_ADDR is not set", "RANK", "0", "WORLD_SIZE", "2", "MASTER_PORT", "1");
        fails("MASTER_PORT is not set", "RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "n");
        fails("MASTER_PORT=70000 is not a TCP port", "RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "n", "MASTER_PORT", "70000");
        fails("MASTER_PORT=\"p\" is not", "RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "n", "MASTER_PORT", "p");
        fails("is not a host name", "RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "a b", "MASTER_PORT", "1");
        fails("IPv6", "RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "fe80::1", "MASTER_PORT", "1");
        fails("JDIST_MASTER_PORT=0 is not a TCP port", "RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "n", "MASTER_PORT", "1",
                "JDIST_MASTER_PORT", "0");
    }

    @Test
    void trainerV2() {
        ClusterJob j = job("PET_NNODES", "2", "PET_NPROC_PER_NODE", "2", "PET_NODE_RANK", "1", "LOCAL_RANK", "1",
                "PET_MASTER_ADDR", "trainjob-node-0-0.trainjob", "PET_MASTER_PORT", "29400");
        assertThat(j.source()).isEqualTo(JobSource.TRAINER_V2);
        assertThat(j.rank()).isEqualTo(3);
        assertThat(j.size()).isEqualTo(4);
        assertThat(j.localRank()).isEqualTo(1);
        assertThat(j.masterHost()).isEqualTo("trainjob-node-0-0.trainjob");
        assertThat(j.masterPort()).isEqualTo(29400);
        ClusterJob one = job("PET_NNODES", "3", "PET_NODE_RANK", "2", "PET_MASTER_ADDR", "m", "PET_MASTER_PORT", "1");
        assertThat(one.rank()).isEqualTo(2);
        assertThat(one.size()).isEqualTo(3);
        assertThat(job("PET_NNODES", "2", "PET_NPROC_PER_NODE", "4", "PET_NODE_RANK", "1", "JDIST_LOCAL_RANK", "2",
                "PET_MASTER_ADDR", "m", "PET_MASTER_PORT", "1").rank()).isEqualTo(6);
    }

    @Test
    void trainerV2BadValues() {
        fails("cannot tell which one", "PET_NNODES", "2", "PET_NPROC_PER_NODE", "2", "PET_NODE_RANK", "0",
                "PET_MASTER_ADDR", "m", "PET_MASTER_PORT", "1");
        fails("elastic range", "PET_NNODES", "1:4", "PET_NODE_RANK", "0", "PET_MASTER_ADDR", "m", "PET_MASTER_PORT", "1");
        fails("PET_NPROC_PER_NODE=auto", "PET_NNODES", "2", "PET_NPROC_PER_NODE", "auto", "PET_NODE_RANK", "0",
                "PET_MASTER_ADDR", "m", "PET_MASTER_PORT", "1");
        fails("PET_NODE_RANK=2 is not below PET_NNODES=2", "PET_NNODES", "2", "PET_NODE_RANK", "2", "PET_MASTER_ADDR", "m",
                "PET_MASTER_PORT", "1");
        fails("LOCAL_RANK=2 is not below PET_NPROC_PER_NODE=2", "PET_NNODES", "2", "PET_NPROC_PER_NODE", "2", "PET_NODE_RANK", "0",
                "LOCAL_RANK", "2", "PET_MASTER_ADDR", "m", "PET_MASTER_PORT", "1");
        fails("PET_MASTER_ADDR is not set", "PET_NNODES", "2", "PET_NODE_RANK", "0", "PET_MASTER_PORT", "1");
        fails("PET_MASTER_PORT is not set", "PET_NNODES", "2", "PET_NODE_RANK", "0", "PET_MASTER_ADDR", "m");
        fails("PET_NODE_RANK is not set", "PET_NNODES", "2", "PET_MASTER_ADDR", "m", "PET_MASTER_PORT", "1");
    }

    @Test
    void openMpiOnOneHostUsesLoopbackAndAPortFromTheJobId() {
        ClusterJob j = job("OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_RANK", "1",
                "OMPI_COMM_WORLD_LOCAL_SIZE", "4", "OMPI_MCA_ess_base_jobid", "980680705", "PMIX_RANK", "1");
        assertThat(j.source()).isEqualTo(JobSource.MPI);
        assertThat(j.rank()).isEqualTo(1);
        assertThat(j.size()).isEqualTo(4);
        assertThat(j.localRank()).isEqualTo(1);
        assertThat(j.masterHost()).isEqualTo("127.0.0.1");
        assertThat(j.masterPort()).isEqualTo(15000 + (int) (980680705L % 17000));
    }

    @Test
    void mpiAcrossHostsNeedsJdistMasterAddr() {
        fails("JDIST_MASTER_ADDR", "OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_SIZE", "2");
        fails("JDIST_MASTER_ADDR", "PMI_RANK", "1", "PMI_SIZE", "4");
        ClusterJob j = job("PMI_RANK", "1", "PMI_SIZE", "4", "JDIST_MASTER_ADDR", "host0", "MPI_LOCALRANKID", "1");
        assertThat(j.masterHost()).isEqualTo("host0");
        assertThat(j.masterPort()).isEqualTo(JobDiscovery.DEFAULT_PORT);
        assertThat(j.localRank()).isEqualTo(1);
        assertThat(job("PMI_RANK", "0", "PMI_SIZE", "2", "MPI_LOCALNRANKS", "2").masterHost()).isEqualTo("127.0.0.1");
    }

    @Test
    void mpiBadValues() {
        fails("OMPI_COMM_WORLD_RANK is not", "OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_SIZE", "4");
        fails("OMPI_COMM_WORLD_RANK=7 is not below OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_RANK", "7",
                "OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_SIZE", "4");
        fails("PMI_SIZE is not set", "PMI_RANK", "0");
        fails("JDIST_WORLD_SIZE", "PMIX_RANK", "0");
        ClusterJob pmix = job("PMIX_RANK", "1", "JDIST_WORLD_SIZE", "2", "JDIST_MASTER_ADDR", "h");
        assertThat(pmix.rankVariable()).isEqualTo("PMIX_RANK");
    }

    @Test
    void slurmTaskOfAStep() {
        ClusterJob j = job("SLURM_JOB_ID", "123", "SLURM_STEP_ID", "0", "SLURM_PROCID", "5", "SLURM_NTASKS", "8",
                "SLURM_LOCALID", "1", "SLURM_JOB_NODELIST", "node[001-004]", "SLURM_STEP_NODELIST", "node[002-004]");
        assertThat(j.source()).isEqualTo(JobSource.SLURM);
        assertThat(j.rank()).isEqualTo(5);
        assertThat(j.size()).isEqualTo(8);
        assertThat(j.localRank()).isEqualTo(1);
        assertThat(j.masterHost()).isEqualTo("node002");   // task 0 runs on the step's first node
        assertThat(j.masterPort()).isEqualTo(15000 + (16 * 123) % 17000);
        ClusterJob step3 = job("SLURM_JOB_ID", "123", "SLURM_STEP_ID", "3", "SLURM_PROCID", "0", "SLURM_NTASKS", "2",
                "SLURM_JOB_NODELIST", "n[1-2]");
        assertThat(step3.masterHost()).isEqualTo("n1");
        assertThat(step3.masterPort()).isEqualTo(15000 + 16 * 123 + 3);
        assertThat(job("SLURM_JOB_ID", "123", "SLURM_STEP_ID", "0", "SLURM_PROCID", "0", "SLURM_NTASKS", "2",
                "SLURM_JOB_NODELIST", "n[1-2]", "JDIST_MASTER_PORT", "7000").masterPort()).isEqualTo(7000);
        assertThat(job("SLURM_JOB_ID", "123", "SLURM_STEP_ID", "0", "SLURM_PROCID", "0", "SLURM_NTASKS", "4",
                "SLURM_STEP_NUM_TASKS", "2", "SLURM_JOB_NODELIST", "n[1-2]").size()).isEqualTo(2);
    }

    @Test
    void theBatchScriptOfAMultiTaskJobIsAnErrorAndOfAOneTaskJobNothing() {
        fails("not as a task of a job step", "SLURM_JOB_ID", "123", "SLURM_NTASKS", "4", "SLURM_PROCID", "0",
                "SLURM_JOB_NODELIST", "n[1-4]");
        fails("not as a task of a job step", "SLURM_JOB_ID", "123", "SLURM_NTASKS", "4", "SLURM_STEP_ID", "4294967294",
                "SLURM_PROCID", "0", "SLURM_JOB_NODELIST", "n[1-4]");
        assertThat(JobDiscovery.detect(env("SLURM_JOB_ID", "123", "SLURM_NTASKS", "1", "SLURM_PROCID", "0")).source())
                .isEqualTo(JobSource.NONE);
        assertThat(JobDiscovery.detect(env("SLURM_JOB_ID", "123", "SLURM_NTASKS", "4", "SLURM_PROCID", "0",
                "JDIST_JOB_SOURCE", "none")).source()).isEqualTo(JobSource.NONE);
    }

    @Test
    void slurmBadValues() {
        fails("SLURM_PROCID is not", "SLURM_JOB_ID", "1", "SLURM_STEP_ID", "0", "SLURM_NTASKS", "4", "SLURM_JOB_NODELIST", "n1");
        fails("SLURM_PROCID=4 is not below SLURM_NTASKS=4", "SLURM_JOB_ID", "1", "SLURM_STEP_ID", "0", "SLURM_NTASKS", "4",
                "SLURM_PROCID", "4", "SLURM_JOB_NODELIST", "n1");
        fails("SLURM_JOB_NODELIST=\"n[1-\" is not a Slurm host list", "SLURM_JOB_ID", "1", "SLURM_STEP_ID", "0",
                "SLURM_NTASKS", "4", "SLURM_PROCID", "0", "SLURM_JOB_NODELIST", "n[1-");
        fails("sets no node list", "SLURM_JOB_ID", "1", "SLURM_STEP_ID", "0", "SLURM_NTASKS", "4", "SLURM_PROCID", "0");
        fails("SLURM_JOB_ID=\"x\" is not", "SLURM_JOB_ID", "x", "SLURM_STEP_ID", "0", "SLURM_NTASKS", "2", "SLURM_PROCID", "0",
                "SLURM_JOB_NODELIST", "n1");
    }

    @Test
    void kubernetesIndexedJob() {
        ClusterJob j = job("JOB_COMPLETION_INDEX", "2", "JDIST_WORLD_SIZE", "4", "JDIST_MASTER_ADDR", "train-0.train");
        assertThat(j.source()).isEqualTo(JobSource.KUBERNETES);
        assertThat(j.rank()).isEqualTo(2);
        assertThat(j.size()).isEqualTo(4);
        assertThat(j.masterHost()).isEqualTo("train-0.train");
        fails("JDIST_WORLD_SIZE is not set", "JOB_COMPLETION_INDEX", "2");
        fails("headless Service", "JOB_COMPLETION_INDEX", "2", "JDIST_WORLD_SIZE", "4");
        fails("JOB_COMPLETION_INDEX=4 is not below JDIST_WORLD_SIZE=4", "JOB_COMPLETION_INDEX", "4", "JDIST_WORLD_SIZE", "4",
                "JDIST_MASTER_ADDR", "h");
    }

    @ParameterizedTest
    @CsvSource({
            "TORCHRUN, RANK=1;WORLD_SIZE=2;MASTER_ADDR=a;MASTER_PORT=1;PET_NNODES=2;PET_NODE_RANK=0;OMPI_COMM_WORLD_RANK=0",
            "TRAINER_V2, PET_NNODES=2;PET_NODE_RANK=1;PET_MASTER_ADDR=a;PET_MASTER_PORT=1;OMPI_COMM_WORLD_RANK=0;OMPI_COMM_WORLD_SIZE=2",
            "MPI, OMPI_COMM_WORLD_RANK=0;OMPI_COMM_WORLD_SIZE=2;OMPI_COMM_WORLD_LOCAL_SIZE=2;SLURM_JOB_ID=1;SLURM_STEP_ID=0;SLURM_PROCID=0;SLURM_NTASKS=2;SLURM_JOB_NODELIST=n1",
            "SLURM, PMIX_RANK=1;SLURM_JOB_ID=1;SLURM_STEP_ID=0;SLURM_PROCID=1;SLURM_NTASKS=2;SLURM_JOB_NODELIST=n1;JOB_COMPLETION_INDEX=1",
            "SLURM, PMI_RANK=1;PMI_SIZE=2;SLURM_JOB_ID=1;SLURM_STEP_ID=0;SLURM_PROCID=1;SLURM_NTASKS=2;SLURM_JOB_NODELIST=n1",
            "JDIST, JDIST_RANK=1;JDIST_WORLD_SIZE=2;JDIST_MASTER_ADDR=a;RANK=0;WORLD_SIZE=2;MASTER_ADDR=b;MASTER_PORT=1",
    })
    void theOrderDecidesBetweenSources(JobSource expected, String vars) {
        Map<String, String> e = new HashMap<>();
        for (String kv : vars.split(";")) e.put(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
        assertThat(JobDiscovery.detect(e).source()).isEqualTo(expected);
    }

    @Test
    void jdistJobSourceChoosesOne() {
        Map<String, String> both = env("RANK", "1", "WORLD_SIZE", "2", "MASTER_ADDR", "a", "MASTER_PORT", "1",
                "SLURM_JOB_ID", "9", "SLURM_STEP_ID", "0", "SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_JOB_NODELIST", "n1");
        assertThat(JobDiscovery.detect(both).source()).isEqualTo(JobSource.TORCHRUN);
        both.put("JDIST_JOB_SOURCE", "slurm");
        assertThat(JobDiscovery.detect(both).source()).isEqualTo(JobSource.SLURM);
        both.put("JDIST_JOB_SOURCE", "kubernetes");
        assertThatThrownBy(() -> JobDiscovery.detect(both)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("JDIST_JOB_SOURCE=kubernetes");
        both.put("JDIST_JOB_SOURCE", "lsf");
        assertThatThrownBy(() -> JobDiscovery.detect(both)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("trainer-v2");
    }

    @Test
    void explainListsWhatWasRead() {
        JobDiscovery.Finding f = JobDiscovery.detect(env("RANK", "1", "WORLD_SIZE", "2", "MASTER_ADDR", "a", "MASTER_PORT", "9"));
        assertThat(String.join("\n", f.explain())).contains("job source: torchrun").contains("RANK=1").contains("WORLD_SIZE=2")
                .contains("rendezvous at a:9");
    }
}
