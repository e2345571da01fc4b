package dev.jdist.doctor;

import dev.jdist.hosts.HostEntry;
import dev.jdist.launch.Executables;
import dev.jdist.launch.JobRequirements;
import dev.jdist.launch.ShellQuote;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What {@code jdist launch} silently assumes about every host, checked up front ({@code jdist doctor}):
 * ssh key login works, the JDK and jdist's jar exist at the launcher's paths, the program exists,
 * and the ring's ports are free. Hosts are checked concurrently; every remote command is bounded.
 */
public final class JobPreflight {
    private static final Pattern JAVA_VERSION = Pattern.compile("version \"(\\d+)");

    /** One finding: {@code ok} false means the job would fail; {@code fix} says what to do. */
    public record Check(String host, String what, boolean ok, String detail, String fix) {
    }

    /**
     * What to check: what the launcher will need from the hosts, the program the job runs (relative to {@code cwd}),
     * and the ssh connect timeout.
     */
    public record Inputs(JobRequirements job, Optional<String> program, String cwd, int timeoutSeconds) {
    }

    private JobPreflight() {}

    public static List<Check> run(Inputs in) throws InterruptedException {
        // One entry per distinct host (in rank order), with the ring addresses of all its ranks.
        Map<String, List<String>> portsByHost = new LinkedHashMap<>();
        Map<String, HostEntry> hostByName = new LinkedHashMap<>();
        for (int r = 0; r < in.job().hosts().size(); r++) {
            HostEntry h = in.job().hosts().get(r);
            hostByName.putIfAbsent(h.ssh(), h);
            List<String> addrs = portsByHost.computeIfAbsent(h.ssh(), k -> new ArrayList<>());
            if (r < in.job().ringAddresses().size()) addrs.addAll(in.job().ringAddresses().get(r));
        }
        ExecutorService pool = Executors.newFixedThreadPool(Math.min(8, Math.max(1, hostByName.size())), r -> {
            Thread t = new Thread(r, "jdist-doctor");
            t.setDaemon(true);
            return t;
        });
        try {
            List<Future<List<Check>>> futures = new ArrayList<>();
            for (HostEntry h : hostByName.values()) {
                futures.add(pool.submit(() -> checkHost(in, h, portsByHost.get(h.ssh()))));
            }
            List<Check> out = new ArrayList<>();
            for (int i = 0; i < futures.size(); i++) {
                String host = new ArrayList<>(hostByName.keySet()).get(i);
                try {
                    out.addAll(futures.get(i).get(in.timeoutSeconds() * 6L + 10, TimeUnit.SECONDS));
                } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                    out.add(new Check(host, "checks", false, "did not finish: " + e, "check the host by hand"));
                }
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }

    private static List<Check> checkHost(Inputs in, HostEntry h, List<String> ringAddresses) {
        List<Check> out = new ArrayList<>();
        String host = h.ssh();
        if (!h.isLocal()) {
            Executables.Run r = remote(in, h, "true");
            if (r.status() != 0) {
                out.add(new Check(host, "ssh", false, r.output().isBlank() ? "ssh exited " + r.status() : r.output().strip(),
                        "set up key login without a password (ssh-copy-id " + host + ") and check ~/.ssh/config; "
                                + "jdist runs ssh with BatchMode=yes"));
                return out; // nothing else can be checked on that host
            }
            out.add(new Check(host, "ssh", true, "key login works", ""));
        }
        // The JDK at the launcher's path.
        Executables.Run v = h.isLocal() ? Executables.run(List.of(in.job().java(), "-version"), in.timeoutSeconds())
                : remote(in, h, ShellQuote.quote(in.job().java()) + " -version");
        Matcher m = JAVA_VERSION.matcher(v.output());
        if (v.status() != 0 || !m.find()) {
            out.add(new Check(host, "java", false, "no working java at " + in.job().java(),
                    "install a JDK >= 25 at the same path on every host, or pass --java PATH"));
        } else if (Integer.parseInt(m.group(1)) < 25) {
            out.add(new Check(host, "java", false, in.job().java() + " is Java " + m.group(1),
                    "jdist needs Java >= 25 on every host; install it at " + in.job().java() + " or pass --java PATH"));
        } else {
            out.add(new Check(host, "java", true, in.job().java() + " is Java " + m.group(1), ""));
        }
        // jdist's own jar (or classes) at the launcher's paths.
        for (String entry : in.job().jdistClassPath()) {
            out.add(pathCheck(in, h, "jdist", entry, "copy jdist to the same path on " + host + " (the launcher passes its own class path)"));
        }
        in.program().ifPresent(p -> out.add(pathCheck(in, h, "program", p,
                "put the program at the same path on " + host + " (relative paths resolve in " + in.cwd() + ")")));
        // The ring's ports: a listener already there means another job (or a stale rank) holds it.
        for (String address : ringAddresses) {
            int colon = address.lastIndexOf(':');
            String ip = address.substring(0, colon);
            int port = Integer.parseInt(address.substring(colon + 1));
            boolean free;
            String detail;
            if (h.isLocal()) {
                try (ServerSocket s = new ServerSocket()) {
                    s.setReuseAddress(true);
                    s.bind(new InetSocketAddress(ip, port));
                    free = true;
                    detail = address + " is free";
                } catch (IOException e) {
                    free = false;
                    detail = address + ": " + e.getMessage();
                }
            } else {
                Executables.Run r = remote(in, h, "bash -c " + ShellQuote.quote("exec 3<>/dev/tcp/" + ip + "/" + port) + " 2>/dev/null");
                free = r.status() != 0;
                detail = address + (free ? " is free" : " already has a listener");
            }
            out.add(new Check(host, "port", free, detail,
                    free ? "" : "stop what listens there (a previous job?) or choose other ports with --starting-port"));
        }
        return out;
    }

    private static Check pathCheck(Inputs in, HostEntry h, String what, String path, String fix) {
        Path p = Path.of(path);
        boolean ok;
        if (h.isLocal()) {
            ok = Files.exists(p.isAbsolute() ? p : Path.of(in.cwd()).resolve(p));
        } else {
            String cmd = (p.isAbsolute() ? "" : "cd " + ShellQuote.quote(in.cwd()) + " && ") + "test -e " + ShellQuote.quote(path);
            ok = remote(in, h, cmd).status() == 0;
        }
        return new Check(h.ssh(), what, ok, path + (ok ? " exists" : " is missing"), ok ? "" : fix);
    }

    private static Executables.Run remote(Inputs in, HostEntry h, String command) {
        return Executables.run(List.of(in.job().ssh(), "-o", "BatchMode=yes", "-o", "ConnectTimeout=" + in.timeoutSeconds(),
                "-o", "LogLevel=ERROR", h.ssh(), command), in.timeoutSeconds() * 2 + 5);
    }
}
