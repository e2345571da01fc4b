package dev.jdist.jaccl;

import dev.jdist.testing.CommandResult;
import dev.jdist.testing.Requirements;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Compiles a C program against the installed rdma-core headers that prints sizeof/offsetof of every
 * struct member the binding names, and the constants, and compares with {@link VerbsLayouts} and
 * {@link Verbs}. Needs gcc and libibverbs-dev (bin/test installs both).
 */
class VerbsLayoutsTest {

    /** name → value expected by Java, keyed by the C expression printed. */
    static Map<String, Long> javaFacts() {
        Map<String, Long> facts = new LinkedHashMap<>();
        VerbsLayouts.ALL.forEach((cType, layout) -> {
            facts.put("sizeof(" + cType + ")", layout.byteSize());
            collect(cType, layout, layout, "", facts);
        });
        facts.put("sizeof(union ibv_gid)", VerbsLayouts.IBV_GID.byteSize());
        Verbs.CONSTANTS.forEach((name, value) -> facts.put(name, (long) value));
        return facts;
    }

    private static void collect(String cType, StructLayout root, GroupLayout group, String prefix, Map<String, Long> facts) {
        for (MemoryLayout member : group.memberLayouts()) {
            if (member.name().isEmpty()) continue; // padding: members the binding never touches
            String path = prefix + member.name().get();
            facts.put("offsetof(" + cType + ", " + path + ")", VerbsLayouts.offset(root, path));
            facts.put("sizeof(((" + cType + " *)0)->" + path + ")", member.byteSize());
            if (member instanceof GroupLayout nested) collect(cType, root, nested, path + ".", facts);
        }
    }

    @Test
    @Timeout(120)
    void layoutsAndConstantsMatchTheInstalledHeaders(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Requirements.require(Files.exists(Path.of("/usr/include/infiniband/verbs.h")),
                "the rdma-core headers (/usr/include/infiniband/verbs.h) are missing; install libibverbs-dev");
        Requirements.require(Requirements.command("gcc", "gcc"));

        Map<String, Long> expected = javaFacts();
        StringBuilder c = new StringBuilder("""
                #include <stdio.h>
                #include <stddef.h>
                #include <infiniband/verbs.h>
                int main(void) {
                """);
        List<String> keys = new ArrayList<>(expected.keySet());
        for (String k : keys) {
            c.append("  printf(\"%s=%lld\\n\", \"").append(k.replace("\"", "\\\"")).append("\", (long long)(")
                    .append(k).append("));\n");
        }
        c.append("  return 0;\n}\n");
        Path src = dir.resolve("verbs_layouts.c");
        Path exe = dir.resolve("verbs_layouts");
        Files.writeString(src, c);
        String compile = run(List.of("gcc", "-o", exe.toString(), src.toString()), dir);
        String out = run(List.of(exe.toString()), dir);

        Map<String, Long> actual = new LinkedHashMap<>();
        for (String line : out.split("\n")) {
            int eq = line.lastIndexOf('=');
            if (eq > 0) actual.put(line.substring(0, eq), Long.parseLong(line.substring(eq + 1).trim()));
        }
        assertThat(actual).as("C facts (compiler said: %s)", compile).isEqualTo(expected);
        assertThat(expected).hasSizeGreaterThan(100);
    }

    /** Runs {@code cmd} in {@code dir} (at most 60 s); its stdout and stderr, after checking it exited 0. */
    private static String run(List<String> cmd, Path dir) {
        CommandResult r = CommandResult.run(Duration.ofSeconds(60), dir, Map.of(), null, cmd);
        assertThat(r.exitCode()).as("%s", r).isZero();
        return r.stdout() + r.stderr();
    }
}
