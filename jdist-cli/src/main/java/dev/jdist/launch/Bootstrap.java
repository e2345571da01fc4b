package dev.jdist.launch;

import java.util.List;

/**
 * The POSIX-sh scripts a rank's host runs (docs/reference/launcher.md §6.2, §8.3): the bootstrap that writes the pid file,
 * prints the handshake, changes directory, exports the environment, creates the temporary files and execs
 * the program; and the kill step. Both run unchanged under sh, dash, bash and zsh.
 */
public final class Bootstrap {

    /** The handshake line's prefix on a rank's stdout (never forwarded to the user). */
    public static final String HANDSHAKE = "JDIST_PIDFILE ";

    private Bootstrap() {
    }

    /**
     * @param cwd        the directory to run in ({@code --cwd}, else the launcher's working directory)
     * @param cwdGiven   whether {@code --cwd} was given (then a missing directory is reported)
     * @param remote     whether the script runs under ssh -tt (then terminal echo is turned off first)
     */
    public static String script(RankPlan plan, List<String> argv, String cwd, boolean cwdGiven, boolean remote) {
        return script(plan, argv, cwd, cwdGiven, remote, -1);
    }

    /**
     * @param cpuSlot with {@code --bind-to core}: the rank's index among its host's ranks (it runs on CPU
     *                {@code cpuSlot mod nproc} through {@code taskset}); -1 for no binding
     */
    public static String script(RankPlan plan, List<String> argv, String cwd, boolean cwdGiven, boolean remote, int cpuSlot) {
        StringBuilder s = new StringBuilder();
        if (remote) {
            s.append("stty -echo 2>/dev/null\n");
        }
        // The launcher's own tools come from the system's default PATH (command -p): the program gets the
        // caller's PATH unchanged, however reduced it is.
        s.append("_jdist_pidfile=$(command -p mktemp) && printf '%s\\n' \"$$\" > \"$_jdist_pidfile\"\n");
        s.append("printf '").append(HANDSHAKE).append("%s\\n' \"$_jdist_pidfile\"\n");
        if (cwd != null) {
            String q = ShellQuote.quote(cwd);
            if (cwdGiven) {
                s.append("if [ -d ").append(q).append(" ]; then cd ").append(q).append("; else printf '%s\\n' ")
                        .append(ShellQuote.quote("Failed to change directory to " + cwd)).append(" >&2; fi\n");
            } else {
                s.append("if [ -d ").append(q).append(" ]; then cd ").append(q).append(" 2>/dev/null; fi\n");
            }
        }
        if (plan.dropInheritedHostfile()) {
            s.append("unset MLX_HOSTFILE\n");
        }
        for (EnvEntry e : plan.env()) {
            if (e.isValid()) {
                s.append("export ").append(e.name()).append('=').append(singleQuote(e.value())).append('\n');
            }
        }
        for (RankPlan.FileVar f : plan.files()) {
            s.append("_jdist_f=$(command -p mktemp) && printf '%s\\n' ").append(singleQuote(f.content()))
                    .append(" > \"$_jdist_f\" && export ").append(f.name()).append("=\"$_jdist_f\"\n");
        }
        s.append("export MLX_RANK=").append(plan.rank()).append('\n');
        StringBuilder words = new StringBuilder();
        for (String a : argv) {
            words.append(' ').append(singleQuote(a));
        }
        if (cpuSlot >= 0) {
            // Two exec lines rather than a command in a variable: zsh does not split unquoted variables.
            s.append("if command -v taskset >/dev/null 2>&1 && command -v nproc >/dev/null 2>&1; then exec taskset -c \"$((")
                    .append(cpuSlot).append(" % $(nproc)))\"").append(words).append("; fi\n");
            s.append("printf '%s\\n' ").append(singleQuote("jdist launch: --bind-to core: taskset or nproc is missing on this host; rank "
                    + plan.rank() + " runs unbound")).append(" >&2\n");
        }
        s.append("exec").append(words).append('\n');
        return s.toString();
    }

    /**
     * The kill step for a rank whose pid file is {@code pidFile}: prints 1 if the process was alive (then it and
     * its process group get SIGTERM, and SIGKILL after {@code graceSeconds}), else 0; removes the pid file.
     */
    public static String killScript(String pidFile, int graceSeconds) {
        String f = singleQuote(pidFile);
        int rounds = Math.max(1, graceSeconds * 10);
        // Its tools from the system directories first: the caller's PATH may not hold them.
        return "PATH=/usr/bin:/bin${PATH:+:$PATH}; f=" + f + "; pid=''\n"
                + "if [ -f \"$f\" ]; then pid=$(cat \"$f\"); fi\n"
                + "if [ -n \"$pid\" ] && ps -p \"$pid\" >/dev/null 2>&1; then\n"
                + "  kill -TERM -\"$pid\" 2>/dev/null; kill -TERM \"$pid\" 2>/dev/null; echo 1\n"
                + "  i=0; while [ $i -lt " + rounds + " ] && ps -p \"$pid\" >/dev/null 2>&1; do sleep 0.1; i=$((i+1)); done\n"
                + "  if ps -p \"$pid\" >/dev/null 2>&1; then kill -KILL -\"$pid\" 2>/dev/null; kill -KILL \"$pid\" 2>/dev/null; fi\n"
                + "else echo 0; fi\n"
                + "rm -f \"$f\"\n";
    }

    /** Always single-quoted (values and argv words reach the program verbatim). */
    static String singleQuote(String s) {
        return "'" + s.replace("'", "'\\''") + "'";
    }
}
