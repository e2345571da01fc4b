package dev.jdist.launch;

import dev.jdist.console.CliFailure;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** launcher.md §1.4. */
class CommandResolverTest {
    private static final List<String> CORE = List.of("/opt/jdist/jdist.jar");

    @Test
    void javaSourceFile() {
        assertThat(CommandResolver.resolve(List.of("Train.java", "--epochs", "3"), null, "/j/bin/java", null, List.of("-Xmx1g"), CORE))
                .containsExactly("/j/bin/java", "--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                        "-Xmx1g", "-cp", "/opt/jdist/jdist.jar", "Train.java", "--epochs", "3");
        assertThat(CommandResolver.resolve(List.of("Train.java"), null, "/j", "lib/a.jar", List.of(), CORE))
                .containsSubsequence("-cp", "lib/a.jar:/opt/jdist/jdist.jar", "Train.java");
    }

    @Test
    void jar() {
        assertThat(CommandResolver.resolve(List.of("app.jar", "x"), null, "/j", null, List.of(), CORE))
                .containsExactly("/j", "--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-jar", "app.jar", "x");
        assertThatThrownBy(() -> CommandResolver.resolve(List.of("app.jar"), null, "/j", "cp", List.of(), CORE))
                .isInstanceOf(CliFailure.class).hasMessageContaining("--class-path").hasMessageContaining(".jar");
    }

    @Test
    void mainClass() {
        assertThat(CommandResolver.resolve(List.of("com.x.Main", "a"), null, "/j", "build/classes", List.of(), CORE))
                .containsExactly("/j", "--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-cp",
                        "build/classes:/opt/jdist/jdist.jar", "com.x.Main", "a");
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
