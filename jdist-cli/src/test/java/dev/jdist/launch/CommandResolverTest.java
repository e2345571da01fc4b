package dev.jdist.launch;

import dev.jdist.console.CliFailure;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** docs/reference/launcher.md §1.4. Java ranks get jdist's JVM flags (BuildInfo: the root pom's jdist.jvm.flags), not the Vector API module. */
class CommandResolverTest {
    private static final List<String> CORE = List.of("/opt/jdist/jdist.jar");

    /** {@code java}, jdist's JVM flags, then {@code rest}. */
    private static List<String> java(String java, String... rest) {
        List<String> argv = new java.util.ArrayList<>(List.of(java));
        argv.addAll(CommandResolver.JDIST_JVM_FLAGS);
        argv.addAll(List.of(rest));
        return argv;
    }

    @Test
    void javaRanksGetTheBuildsJvmFlags() {
        assertThat(CommandResolver.JDIST_JVM_FLAGS).isEqualTo(dev.jdist.BuildInfo.jvmFlags())
                .containsExactly("--enable-native-access=ALL-UNNAMED");
    }

    @Test
    void jdistJavaOptionsAreSplitAtWhitespace() {
        assertThat(CommandResolver.environmentJavaOptions(java.util.Map.of("JDIST_JAVA_OPTIONS", "  -Xmx1g\t-XX:+UseSerialGC \n")))
                .containsExactly("-Xmx1g", "-XX:+UseSerialGC");
        assertThat(CommandResolver.environmentJavaOptions(java.util.Map.of("JDIST_JAVA_OPTIONS", " "))).isEmpty();
        assertThat(CommandResolver.environmentJavaOptions(java.util.Map.of())).isEmpty();
    }

    @Test
    void javaSourceFile() {
        assertThat(CommandResolver.resolve(List.of("Train.java", "--epochs", "3"), null, "/j/bin/java", null, List.of("-Xmx1g"), CORE))
                .containsExactlyElementsOf(java("/j/bin/java", "-Xmx1g", "-cp", "/opt/jdist/jdist.jar", "Train.java", "--epochs", "3"));
        assertThat(CommandResolver.resolve(List.of("Train.java"), null, "/j", "lib/a.jar", List.of(), CORE))
                .containsSubsequence("-cp", "lib/a.jar:/opt/jdist/jdist.jar", "Train.java");
    }

    @Test
    void jar() {
        assertThat(CommandResolver.resolve(List.of("app.jar", "x"), null, "/j", null, List.of(), CORE))
                .containsExactlyElementsOf(java("/j", "-jar", "app.jar", "x"));
        assertThatThrownBy(() -> CommandResolver.resolve(List.of("app.jar"), null, "/j", "cp", List.of(), CORE))
                .isInstanceOf(CliFailure.class).hasMessageContaining("--class-path").hasMessageContaining(".jar");
    }

    @Test
    void mainClass() {
        assertThat(CommandResolver.resolve(List.of("com.x.Main", "a"), null, "/j", "build/classes", List.of(), CORE))
                .containsExactlyElementsOf(java("/j", "-cp", "build/classes:/opt/jdist/jdist.jar", "com.x.Main", "a"));
    }

    @Test
    void anyOtherCommandRunsAsIs() {
        assertThat(CommandResolver.resolve(List.of("python3", "train.py"), null, null, null, List.of(), CORE))
                .containsExactly("python3", "train.py");
        assertThat(CommandResolver.resolve(List.of("my_script.py"), null, null, null, List.of(), CORE)).containsExactly("my_script.py");
    }

    @Test
    void python() {
        assertThat(CommandResolver.resolve(List.of("x.py", "-v"), "/usr/bin/python3", null, null, List.of(), CORE))
                .containsExactly("/usr/bin/python3", "x.py", "-v");
        assertThat(CommandResolver.resolve(List.of("X.java"), "py", null, null, List.of(), CORE)).containsExactly("py", "X.java");
        assertThatThrownBy(() -> CommandResolver.resolve(List.of("x.py"), "py", null, "cp", List.of(), CORE))
                .hasMessageContaining("--python cannot be combined");
        assertThatThrownBy(() -> CommandResolver.resolve(List.of("x.py"), "py", null, null, List.of("-Xmx1g"), CORE))
                .hasMessageContaining("--python cannot be combined");
    }

    @Test
    void noCommand() {
        assertThatThrownBy(() -> CommandResolver.resolve(List.of(), null, null, null, List.of(), CORE))
                .hasMessageContaining("No script is provided");
    }

    @Test
    void defaultJavaIsThisJvms() {
        assertThat(CommandResolver.javaPath(null)).isEqualTo(System.getProperty("java.home") + "/bin/java");
        assertThat(CommandResolver.jdistClassPath()).isNotEmpty();
    }
}
