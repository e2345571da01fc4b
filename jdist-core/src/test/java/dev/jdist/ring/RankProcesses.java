package dev.jdist.ring;

import dev.jdist.testing.ChildProcesses;
import dev.jdist.testing.JavaCommand;

import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * Ring ranks as separate JVMs, as a scheduler starts them: {@code MLX_RANK} and {@code MLX_HOSTFILE} in the
 * environment, the program with jdist's JVM flags ({@link JavaCommand}); process i is rank i when started in order.
 */
final class RankProcesses extends ChildProcesses {

    /** Starts rank {@code rank} running {@code mainClass}; {@code extraEnv} may override the rank's variables. */
    Process start(Path dir, int rank, Path hostfile, Class<?> mainClass, Map<String, String> extraEnv, String... args)
            throws IOException {
        Map<String, String> env = new HashMap<>(Map.of("MLX_RANK", Integer.toString(rank), "MLX_HOSTFILE", hostfile.toString()));
        env.putAll(extraEnv);
        return start(dir, "rank" + rank, JavaCommand.of(mainClass, args), env);
    }

    /** Waits (at most 180 s each) until ranks 0..n-1 have printed "looping"; fails if one exits before. */
    void awaitLooping(int n) throws InterruptedException {
        for (int r = 0; r < n; r++) awaitOutput(r, "looping", 180);
    }
}
