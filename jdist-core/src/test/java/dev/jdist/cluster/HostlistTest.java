package dev.jdist.cluster;

import dev.jdist.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class HostlistTest {

    @Test
    void plainNamesAndCommas() {
        assertThat(Hostlist.expand("L", "node1")).containsExactly("node1");
        assertThat(Hostlist.expand("L", "a,b,c")).containsExactly("a", "b", "c");
        assertThat(Hostlist.expand("L", "login-1.cluster.local,10.0.0.7")).containsExactly("login-1.cluster.local", "10.0.0.7");
    }

    @Test
    void rangesKeepTheLowerBoundsPadding() {
        assertThat(Hostlist.expand("L", "node[001-004,010]"))
                .containsExactly("node001", "node002", "node003", "node004", "node010");
        assertThat(Hostlist.expand("L", "n[08-11]")).containsExactly("n08", "n09", "n10", "n11");
        assertThat(Hostlist.expand("L", "n[8-11]")).containsExactly("n8", "n9", "n10", "n11");
        assertThat(Hostlist.expand("L", "n[5]")).containsExactly("n5");
        assertThat(Hostlist.expand("L", "n[0]")).containsExactly("n0");
    }

    @Test
    void severalBracketGroupsInOneNameVaryTheLastFastest() {
        assertThat(Hostlist.expand("L", "a[1-2]-b[3-4]")).containsExactly("a1-b3", "a1-b4", "a2-b3", "a2-b4");
        assertThat(Hostlist.expand("L", "rack[1-2]-node[01-02].ib"))
                .containsExactly("rack1-node01.ib", "rack1-node02.ib", "rack2-node01.ib", "rack2-node02.ib");
    }

    @Test
    void commasOutsideBracketsSeparateItems() {
        assertThat(Hostlist.expand("L", "gpu[1-2],cpu[01,03],login"))
                .containsExactly("gpu1", "gpu2", "cpu01", "cpu03", "login");
        assertThat(Hostlist.expand("L", "10.0.0.[1-3]")).containsExactly("10.0.0.1", "10.0.0.2", "10.0.0.3");
    }

    @Test
    void firstIsTheFirstHostButTheWholeListIsChecked() {
        assertThat(Hostlist.first("SLURM_JOB_NODELIST", "node[003-004],node001")).isEqualTo("node003");
        assertThatThrownBy(() -> Hostlist.first("SLURM_JOB_NODELIST", "node1,node[2-"))
                .isInstanceOf(ConfigException.class).hasMessageContaining("SLURM_JOB_NODELIST");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "node[1-", "node]1", "node[[1]]", "node[]", "node[4-2]", "node[a-b]", "a,,b", ",a", "a,",
            "node[1-2", "no de", "node[1--2]", "node[-2]", "node[1-99999999999]", "nöde!", "node[1,]"})
    void malformedListsNameTheVariableAndTheFix(String bad) {
        assertThatThrownBy(() -> Hostlist.expand("SLURM_JOB_NODELIST", bad))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("SLURM_JOB_NODELIST=")
                .hasMessageContaining("JDIST_MASTER_ADDR");
    }

    @Test
    void aHugeExpansionIsAnErrorNotAnOutOfMemory() {
        assertThatThrownBy(() -> Hostlist.expand("L", "a[0-99999]b[0-99999]"))
                .isInstanceOf(ConfigException.class).hasMessageContaining("more than");
    }
}
