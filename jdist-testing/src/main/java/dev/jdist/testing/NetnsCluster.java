package dev.jdist.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A small cluster of "hosts" for integration tests: N Linux network namespaces, each with one veth
 * attached to a private bridge in the root namespace and a real OpenSSH {@code sshd} listening on port 22
 * of its own address. Needs root (see {@link Requirements#netnsCluster()}).
 *
 * <p>Addresses: a free {@code 10.222.S.0/24} subnet chosen per cluster; the bridge (the launcher's side)
 * is {@code 10.222.S.1}, host i is {@code 10.222.S.(10+i)}, and {@code 10.222.S.250} is held by nobody
 * ({@link #unusedAddress()}, for "unreachable host" tests). {@link #addNetwork()} and {@link #addRingOfCables()} add
 * addresses of their own. Traffic goes only to these addresses.
 *
 * <p>ssh: a generated client key logs in as root; {@link #sshConfig()} is an {@code ssh -F} file that
 * defines the aliases {@link #hostName(int)} (and applies to the raw addresses too) with BatchMode,
 * a known_hosts file holding the generated host keys, and a short connect timeout.
 * {@link #sshBinDir()} holds an {@code ssh} wrapper that adds {@code -F sshConfig}: put it first on a
 * launcher's PATH and every {@code ssh HOST} it runs reaches the namespaces without touching
 * the user's ssh configuration.
 *
 * <p>Names: inside the namespaces every alias resolves to its host's address ({@code /etc/netns/<ns>/hosts}, which
 * {@code ip netns exec} binds over {@code /etc/hosts}; removed by close). {@link #addNetwork()} gives every host one
 * more interface on a separate bridge, for tests of hosts with two networks.
 *
 * <p>Sessions started by each sshd get {@code PATH=<stubDir(i)>:...}, {@code JDIST_TEST_HOST=<alias>},
 * {@code JDIST_HOST_ID=<alias>} (the namespaces share one kernel, so its boot id would make them one host to jdist),
 * {@code HOME=<homeDir(i)>} (so the machine's own dotfiles do not run) and {@code TMPDIR=<homeDir(i)>/tmp} (a
 * temporary directory per host, as separate machines have: tools that key their files by host name, such as Open
 * MPI's daemons, would otherwise share and race on one directory), so
 * {@link #putStub} can shadow system commands (system_profiler, ifconfig, ...) per host. The filesystem is
 * shared with the test (same java, same jars; {@code /tmp} itself too, for programs that do not read TMPDIR).
 *
 * <p>{@link #close()} kills every process in the namespaces (by pid), deletes the namespaces, the bridge
 * and the temp directory; it also runs from a shutdown hook, and a new cluster first removes leftovers of
 * test JVMs that died (names carry the creating pid). Names are unique per JVM and cluster.
 */
public final class NetnsCluster implements AutoCloseable {

    private static final AtomicInteger COUNTER = new AtomicInteger();
    private static final Pattern STALE_NETNS = Pattern.compile("^(jdist-(\\d+)x[0-9a-z]+-h\\d+)");
    private static final Pattern STALE_BRIDGE = Pattern.compile("^\\d+: (j[bc](\\d+)x[0-9a-z]+)[:@]");
    /** Where {@code ip netns exec NAME} finds files it binds over {@code /etc} (here: a hosts file naming the hosts). */
    private static final Path NETNS_ETC = Path.of("/etc/netns");
    private static final Duration CMD_TIMEOUT = Duration.ofSeconds(20);

    private final String tag;
    private final Path dir;
    private final String bridge;
    private final int subnet;
    private final List<String> namespaces = new ArrayList<>();
    private final List<String> aliases = new ArrayList<>();
    private final List<Process> sshds = new ArrayList<>();
    /** Subnets of the networks: [0] the one every cluster has (eth0), then those {@link #addNetwork()} added. */
    private final List<Integer> subnets = new ArrayList<>();
    private final List<String> extraBridges = new ArrayList<>();
    private final Path sshConfig;
    private final Path sshBin;
    private final Path identity;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Thread hook;

    /** Starts a cluster of {@code hosts} namespaces with aliases {@code node0, node1, ...}. */
    public static NetnsCluster start(int hosts) {
        return start(hosts, "node");
    }

    /** Starts a cluster of {@code hosts} namespaces with aliases {@code <aliasPrefix>0, <aliasPrefix>1, ...}. */
    public static NetnsCluster start(int hosts, String aliasPrefix) {
        Requirements.netnsCluster();
        if (hosts < 1 || hosts > 200) {
            throw new IllegalArgumentException("hosts must be 1..200, got " + hosts);
        }
        NetnsCluster cluster = new NetnsCluster(hosts, aliasPrefix);
        try {
            cluster.setUp(hosts);
            return cluster;
        } catch (RuntimeException | Error e) {
            cluster.close();
            throw e;
        }
    }

    private NetnsCluster(int hosts, String aliasPrefix) {
        long pid = ProcessHandle.current().pid();
        this.tag = pid + "x" + Integer.toString(COUNTER.incrementAndGet(), 36);
        this.bridge = "jb" + tag;
        if (bridge.length() > 15 || bridgePort(hosts - 1).length() > 15) {
            throw new IllegalStateException("interface names too long for tag " + tag);
        }
        try {
            this.dir = Files.createTempDirectory("jdist-netns-" + tag + "-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        for (int i = 0; i < hosts; i++) {
            aliases.add(aliasPrefix + i);
            namespaces.add("jdist-" + tag + "-h" + i);
        }
        this.sshConfig = dir.resolve("ssh_config");
        this.sshBin = dir.resolve("sshbin");
        this.identity = dir.resolve("id_ed25519");
        removeStaleLeftovers();
        this.subnet = allocateSubnetAndBridge(bridge);
        subnets.add(subnet);
        this.hook = new Thread(this::close, "netns-cluster-cleanup-" + tag);
        Runtime.getRuntime().addShutdownHook(hook);
    }

    // ------------------------------------------------------------------ accessors

    public int size() {
        return namespaces.size();
    }

    /** The ssh alias of host i (defined in {@link #sshConfig()}). */
    public String hostName(int i) {
        return aliases.get(i);
    }

    public List<String> hostNames() {
        return List.copyOf(aliases);
    }

    /** The IPv4 address of host i (inside its namespace). */
    public String address(int i) {
        return "10.222." + subnet + "." + (10 + i);
    }

    public List<String> addresses() {
        List<String> a = new ArrayList<>();
        for (int i = 0; i < size(); i++) {
            a.add(address(i));
        }
        return a;
    }

    /**
     * The IPv4 address of host i on network {@code net}: 0 is {@link #address(int)} ({@code eth0}), 1 the first
     * {@link #addNetwork()} added ({@code eth1}), and so on.
     */
    public String address(int net, int i) {
        return "10.222." + subnets.get(net) + "." + (10 + i);
    }

    /** Network {@code net}'s subnet, {@code 10.222.S.0/24} (0: the cluster's own, {@code eth0}). */
    public String subnet(int net) {
        return "10.222." + subnets.get(net) + ".0/24";
    }

    /**
     * Gives every host a second (third, ...) interface, {@code eth<net>}, on a bridge of its own with a free
     * {@code 10.222.T.0/24}: host i is {@code 10.222.T.(10+i)}. Returns the network's number for {@link #address(int, int)}.
     * The networks are separate: traffic to one host's {@code eth1} address goes over the {@code eth1} bridge.
     */
    public synchronized int addNetwork() {
        int net = subnets.size();
        String br = "jc" + tag + (net == 1 ? "" : Integer.toString(net));
        if (br.length() > 15 || ("jw" + tag + "n" + net + "h" + (size() - 1)).length() > 15) {
            throw new IllegalStateException("interface names too long for tag " + tag);
        }
        int s = allocateSubnetAndBridge(br);
        subnets.add(s);
        extraBridges.add(br);
        for (int i = 0; i < size(); i++) {
            String ns = namespace(i);
            String veth = bridgePort(net, i);
            String peer = "jq" + tag + "n" + net + "h" + i;
            run("ip", "link", "add", veth, "type", "veth", "peer", "name", peer);
            run("ip", "link", "set", peer, "netns", ns);
            run("ip", "link", "set", veth, "master", br, "up");
            run("ip", "netns", "exec", ns, "ip", "link", "set", peer, "name", "eth" + net);
            run("ip", "netns", "exec", ns, "ip", "addr", "add", address(net, i) + "/24", "dev", "eth" + net);
            run("ip", "netns", "exec", ns, "ip", "link", "set", "eth" + net, "up");
        }
        return net;
    }

    /**
     * Joins the hosts in a ring of point-to-point links, as a ring of Thunderbolt cables joins Macs: cable k runs from
     * host k's interface {@code right} ({@code 10.223.0.(4k+1)/30}) to host k+1's {@code left} ({@code 10.223.0.(4k+2)/30}),
     * the last back to host 0. Nothing routes between cables, so over them a host reaches only its two neighbours
     * (ssh keeps to {@code eth0}). The addresses exist only inside the namespaces, which own both ends of every cable,
     * so clusters do not collide; the cables go with the namespaces. Needs at least 3 hosts; at most 63.
     */
    public synchronized void addRingOfCables() {
        int n = size();
        if (n < 3 || n > 63) throw new IllegalArgumentException("a ring of cables needs 3 to 63 hosts, not " + n);
        for (int k = 0; k < n; k++) {
            String a = namespace(k), b = namespace((k + 1) % n);
            run("ip", "link", "add", "name", "right", "netns", a, "type", "veth", "peer", "name", "left", "netns", b);
            run("ip", "netns", "exec", a, "ip", "addr", "add", cableAddress(k, true) + "/30", "dev", "right");
            run("ip", "netns", "exec", b, "ip", "addr", "add", cableAddress(k, false) + "/30", "dev", "left");
            run("ip", "netns", "exec", a, "ip", "link", "set", "right", "up");
            run("ip", "netns", "exec", b, "ip", "link", "set", "left", "up");
        }
    }

    /** Host i's end of the cable to its left neighbour ({@link #addRingOfCables()}): its ring address, as jdist config writes it. */
    public String cableAddressFacingLeft(int i) {
        return cableAddress(Math.floorMod(i - 1, size()), false);
    }

    private static String cableAddress(int cable, boolean rightEnd) {
        return "10.223.0." + (4 * cable + (rightEnd ? 1 : 2));
    }

    /** The root namespace's address on the bridge (where ssh connections come from). */
    public String bridgeAddress() {
        return "10.222." + subnet + ".1";
    }

    /** An address in the cluster's subnet that no host holds: connections to it time out. */
    public String unusedAddress() {
        return "10.222." + subnet + ".250";
    }

    /** The network namespace name of host i (for {@code ip netns exec}). */
    public String namespace(int i) {
        return namespaces.get(i);
    }

    /** The bridge in the root namespace that joins the hosts. */
    public String bridgeName() {
        return bridge;
    }

    /** The root-namespace end of host i's veth pair (attached to the bridge; traffic towards host i leaves through it). */
    public String bridgePort(int i) {
        return "jv" + tag + "h" + i;
    }

    /** The same for network {@code net} ({@link #addNetwork()}): the root-namespace end of host i's {@code eth<net>}. */
    public String bridgePort(int net, int i) {
        return net == 0 ? bridgePort(i) : "jw" + tag + "n" + net + "h" + i;
    }

    /** How many networks every host is on: 1, plus one for each {@link #addNetwork()}. */
    public synchronized int networks() {
        return subnets.size();
    }

    /** The {@code ssh -F} configuration file. */
    public Path sshConfig() {
        return sshConfig;
    }

    /** A directory holding an {@code ssh} wrapper that adds {@code -F sshConfig()}; prepend it to PATH. */
    public Path sshBinDir() {
        return sshBin;
    }

    /** The generated private key that logs in as root on every host. */
    public Path identityFile() {
        return identity;
    }

    /** The per-host directory that is first on PATH in every ssh session of host i. */
    public Path stubDir(int i) {
        return dir.resolve("host" + i).resolve("bin");
    }

    /** HOME of ssh sessions on host i (the host's own folder: the machine user's dotfiles do not run). */
    public Path homeDir(int i) {
        return dir.resolve("host" + i);
    }

    /** The cluster's private temp directory (deleted by close). */
    public Path directory() {
        return dir;
    }

    /** PATH for a launcher process: the ssh wrapper first, then the test's own PATH. */
    public String launcherPath() {
        return sshBin + ":" + System.getenv().getOrDefault("PATH", "/usr/bin:/bin");
    }

    /** Writes an executable {@code name} with {@code script} (include a #! line) into host i's stub dir. */
    public Path putStub(int host, String name, String script) {
        Path p = stubDir(host).resolve(name);
        try {
            Files.writeString(p, script, StandardCharsets.UTF_8);
            Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return p;
    }

    /** {@link #putStub} on every host. */
    public void putStubAll(String name, String script) {
        for (int i = 0; i < size(); i++) {
            putStub(i, name, script);
        }
    }

    /** Runs {@code command} inside host i's namespace directly (no ssh), as root. */
    public CommandResult exec(int host, Duration timeout, String... command) {
        List<String> argv = new ArrayList<>(List.of("ip", "netns", "exec", namespace(host)));
        argv.addAll(List.of(command));
        return CommandResult.run(timeout, null, Map.of(), null, argv);
    }

    /** Runs a shell command line on host i through ssh (BatchMode, the cluster's key). */
    public CommandResult ssh(int host, Duration timeout, String remoteCommand) {
        return CommandResult.run(timeout, null, Map.of(), null,
                List.of("ssh", "-F", sshConfig.toString(), hostName(host), remoteCommand));
    }

    /** Pids of every process in host i's namespace except its sshd listener. */
    public List<Long> processesIn(int host) {
        long listener = sshds.size() > host ? sshds.get(host).pid() : -1;
        return namespacePids(namespace(host)).stream().filter(p -> p != listener).toList();
    }

    /** Pids of every process in any host's namespace except the sshd listeners. */
    public Map<String, List<Long>> processesInAll() {
        Map<String, List<Long>> m = new LinkedHashMap<>();
        for (int i = 0; i < size(); i++) {
            m.put(hostName(i), processesIn(i));
        }
        return m;
    }

    /** Command lines of the non-listener processes on host i (for assertion messages). */
    public List<String> describeProcessesIn(int host) {
        List<String> out = new ArrayList<>();
        for (long pid : processesIn(host)) {
            ProcessHandle.of(pid).ifPresent(h -> out.add(pid + " " + h.info().commandLine().orElse("?")));
        }
        return out;
    }

    // ------------------------------------------------------------------ set up

    private void setUp(int hosts) {
        try {
            Files.createDirectories(sshBin);
            Files.createDirectories(Path.of("/run/sshd"));
            run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "jdist-test-" + tag, "-f", identity.toString());
            Files.copy(dir.resolve("id_ed25519.pub"), dir.resolve("authorized_keys"));
            StringBuilder knownHosts = new StringBuilder();
            StringBuilder cfg = new StringBuilder("# generated by NetnsCluster " + tag + "\n");
            for (int i = 0; i < hosts; i++) {
                Path hostDir = dir.resolve("host" + i);
                Files.createDirectories(hostDir.resolve("bin"));
                Files.createDirectories(hostDir.resolve("tmp"));
                Path hostKey = hostDir.resolve("ssh_host_ed25519_key");
                run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", hostName(i), "-f", hostKey.toString());
                String pub = Files.readString(hostDir.resolve("ssh_host_ed25519_key.pub")).trim();
                knownHosts.append(hostName(i)).append(',').append(address(i)).append(' ').append(pub).append('\n');
                cfg.append("Host ").append(hostName(i)).append('\n')
                        .append("  HostName ").append(address(i)).append('\n');
                writeSshdConfig(i, hostDir, hostKey);
            }
            Files.writeString(dir.resolve("known_hosts"), knownHosts);
            cfg.append("Host *\n")
                    .append("  User root\n")
                    .append("  IdentityFile ").append(identity).append('\n')
                    .append("  IdentitiesOnly yes\n")
                    .append("  UserKnownHostsFile ").append(dir.resolve("known_hosts")).append('\n')
                    .append("  GlobalKnownHostsFile /dev/null\n")
                    .append("  StrictHostKeyChecking yes\n")
                    .append("  BatchMode yes\n")
                    .append("  ConnectTimeout 5\n")
                    .append("  ControlMaster no\n")
                    .append("  ControlPath none\n")
                    .append("  LogLevel ERROR\n");
            Files.writeString(sshConfig, cfg);
            String realSsh = Requirements.findOnPath("ssh").orElseThrow().toString();
            Path wrapper = sshBin.resolve("ssh");
            Files.writeString(wrapper, "#!/bin/sh\nexec " + realSsh + " -F '" + sshConfig + "' \"$@\"\n");
            Files.setPosixFilePermissions(wrapper, PosixFilePermissions.fromString("rwxr-xr-x"));

            for (int i = 0; i < hosts; i++) {
                String ns = namespace(i);
                String veth = bridgePort(i);
                String peer = "jp" + tag + "h" + i;
                run("ip", "netns", "add", ns);
                run("ip", "link", "add", veth, "type", "veth", "peer", "name", peer);
                run("ip", "link", "set", peer, "netns", ns);
                run("ip", "link", "set", veth, "master", bridge, "up");
                run("ip", "netns", "exec", ns, "ip", "link", "set", peer, "name", "eth0");
                run("ip", "netns", "exec", ns, "ip", "addr", "add", address(i) + "/24", "dev", "eth0");
                run("ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up");
                run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up");
            }
            writeHostsFiles();
            String sshd = Requirements.sshdPath().orElseThrow().toString();
            for (int i = 0; i < hosts; i++) {
                Path log = dir.resolve("host" + i).resolve("sshd.log");
                ProcessBuilder pb = new ProcessBuilder("ip", "netns", "exec", namespace(i), sshd, "-D", "-e",
                        "-f", dir.resolve("host" + i).resolve("sshd_config").toString());
                pb.redirectErrorStream(true).redirectOutput(log.toFile())
                        .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
                sshds.add(pb.start()); // ip netns exec execs sshd: this pid is sshd's
            }
            for (int i = 0; i < hosts; i++) {
                awaitListening(i);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Inside the namespaces the hosts' names resolve as on a cluster: {@code /etc/netns/<ns>/hosts} (which
     * {@code ip netns exec} binds over {@code /etc/hosts} for sshd and everything started in the namespace) is this
     * machine's {@code /etc/hosts} plus every alias with its address.
     */
    private void writeHostsFiles() throws IOException {
        String base = Files.exists(Path.of("/etc/hosts")) ? Files.readString(Path.of("/etc/hosts")) : "127.0.0.1 localhost\n";
        StringBuilder sb = new StringBuilder(base.endsWith("\n") ? base : base + "\n");
        sb.append("# NetnsCluster ").append(tag).append('\n');
        for (int i = 0; i < size(); i++) sb.append(address(i)).append(' ').append(hostName(i)).append('\n');
        for (String ns : namespaces) {
            Path d = NETNS_ETC.resolve(ns);
            Files.createDirectories(d);
            Files.writeString(d.resolve("hosts"), sb);
        }
    }

    private void writeSshdConfig(int i, Path hostDir, Path hostKey) throws IOException {
        String path = stubDir(i) + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
        String cfg = String.join("\n",
                "# generated by NetnsCluster " + tag,
                "Port 22",
                "ListenAddress " + address(i),
                "HostKey " + hostKey,
                "PidFile " + hostDir.resolve("sshd.pid"),
                "AuthorizedKeysFile " + dir.resolve("authorized_keys"),
                "PermitRootLogin prohibit-password",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "StrictModes no",
                "UseDNS no",
                "PrintMotd no",
                "PrintLastLog no",
                "MaxStartups 200",
                "MaxSessions 200",
                "LogLevel INFO",
                // HOME points at the host's own folder so sessions do not run the machine user's shell start-up
                // files (a ~/.bashrc that, say, waits on a pyenv lock would stall every ssh call of every test).
                // TMPDIR gives each host a temporary directory of its own, as separate machines have: the hosts share
                // this machine's /tmp and host name, so Open MPI's daemons of consecutive jobs would otherwise share
                // one session directory (/tmp/ompi.HOST.UID) and race on creating and removing it
                "SetEnv PATH=" + path + " JDIST_TEST_HOST=" + hostName(i) + " JDIST_HOST_ID=" + hostName(i) + " HOME=" + hostDir
                        + " TMPDIR=" + hostDir.resolve("tmp"),
                "");
        Files.writeString(hostDir.resolve("sshd_config"), cfg);
    }

    private void awaitListening(int i) {
        long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        for (int attempt = 0; attempt < 300; attempt++) {
            if (!sshds.get(i).isAlive()) {
                throw new IllegalStateException("sshd for " + hostName(i) + " exited " + sshds.get(i).exitValue()
                        + ": " + readQuietly(dir.resolve("host" + i).resolve("sshd.log")));
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(address(i), 22), 500);
                return;
            } catch (IOException e) {
                if (System.nanoTime() > deadline) {
                    break;
                }
                sleep(50);
            }
        }
        throw new IllegalStateException("sshd for " + hostName(i) + " (" + address(i) + ":22) did not start listening: "
                + readQuietly(dir.resolve("host" + i).resolve("sshd.log")));
    }

    /** Chooses a 10.222.S.0/24 that no interface uses and creates the bridge with 10.222.S.1, under a host-wide lock. */
    private static int allocateSubnetAndBridge(String bridge) {
        Path lockFile = Path.of(System.getProperty("java.io.tmpdir"), "jdist-netns-cluster.lock");
        try (FileChannel ch = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
             FileLock ignored = ch.lock()) {
            String addrs = run("ip", "-4", "-o", "addr", "show").stdout();
            Set<Integer> used = new HashSet<>();
            Matcher m = Pattern.compile("inet 10\\.222\\.(\\d+)\\.").matcher(addrs);
            while (m.find()) {
                used.add(Integer.parseInt(m.group(1)));
            }
            int start = ThreadLocalRandom.current().nextInt(256);
            for (int k = 0; k < 256; k++) {
                int s = (start + k) % 256;
                if (!used.contains(s)) {
                    run("ip", "link", "add", "name", bridge, "type", "bridge");
                    run("ip", "addr", "add", "10.222." + s + ".1/24", "dev", bridge);
                    run("ip", "link", "set", bridge, "up");
                    return s;
                }
            }
            throw new IllegalStateException("no free 10.222.S.0/24 subnet for a test cluster (all 256 in use?)");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Removes namespaces and bridges left by test JVMs that no longer run. */
    private static void removeStaleLeftovers() {
        CommandResult ns = CommandResult.run(CMD_TIMEOUT, "ip", "netns", "list");
        for (String line : ns.stdout().split("\n")) {
            Matcher m = STALE_NETNS.matcher(line.trim());
            if (m.find() && !pidAlive(Long.parseLong(m.group(2)))) {
                killAllIn(m.group(1));
                CommandResult.run(CMD_TIMEOUT, "ip", "netns", "del", m.group(1));
                TestFiles.deleteRecursively(NETNS_ETC.resolve(m.group(1)));
            }
        }
        CommandResult links = CommandResult.run(CMD_TIMEOUT, "ip", "-o", "link", "show", "type", "bridge");
        for (String line : links.stdout().split("\n")) {
            Matcher m = STALE_BRIDGE.matcher(line.trim());
            if (m.find() && !pidAlive(Long.parseLong(m.group(2)))) {
                CommandResult.run(CMD_TIMEOUT, "ip", "link", "del", m.group(1));
            }
        }
    }

    private static boolean pidAlive(long pid) {
        return Files.exists(Path.of("/proc/" + pid));
    }

    // ------------------------------------------------------------------ tear down

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        for (String ns : namespaces) {
            killAllIn(ns);
        }
        for (Process p : sshds) {
            try {
                p.waitFor(2, java.util.concurrent.TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        for (String ns : namespaces) {
            CommandResult.run(CMD_TIMEOUT, "ip", "netns", "del", ns);
            TestFiles.deleteRecursively(NETNS_ETC.resolve(ns));
        }
        try {
            Files.deleteIfExists(NETNS_ETC);   // only when no other cluster's hosts file is left in it
        } catch (IOException stillUsed) {
            // another cluster's namespaces: theirs to remove
        }
        CommandResult.run(CMD_TIMEOUT, "ip", "link", "del", bridge);
        for (String br : extraBridges) {
            CommandResult.run(CMD_TIMEOUT, "ip", "link", "del", br);
        }
        TestFiles.deleteRecursively(dir);
        if (hook != null && Thread.currentThread() != hook) {
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException ignored) {
                // JVM shutting down
            }
        }
    }

    /** SIGTERM to every process in the namespace, then SIGKILL after up to 2 s (bounded). */
    private static void killAllIn(String ns) {
        List<Long> pids = namespacePids(ns);
        pids.forEach(p -> ProcessHandle.of(p).ifPresent(ProcessHandle::destroy));
        long deadline = System.nanoTime() + Duration.ofSeconds(2).toNanos();
        for (int i = 0; i < 40 && System.nanoTime() < deadline; i++) {
            if (namespacePids(ns).isEmpty()) {
                return;
            }
            sleep(50);
        }
        for (int round = 0; round < 5; round++) {
            List<Long> left = namespacePids(ns);
            if (left.isEmpty()) {
                return;
            }
            left.forEach(p -> ProcessHandle.of(p).ifPresent(ProcessHandle::destroyForcibly));
            sleep(100);
        }
    }

    private static List<Long> namespacePids(String ns) {
        CommandResult r = CommandResult.run(CMD_TIMEOUT, "ip", "netns", "pids", ns);
        if (!r.ok()) {
            return List.of();
        }
        return Stream.of(r.stdout().split("\\s+")).filter(s -> !s.isBlank()).map(Long::parseLong).toList();
    }

    private static CommandResult run(String... cmd) {
        CommandResult r = CommandResult.run(CMD_TIMEOUT, cmd);
        if (!r.ok()) {
            throw new IllegalStateException("NetnsCluster: " + r);
        }
        return r;
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    private static String readQuietly(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }


    @Override
    public String toString() {
        return "NetnsCluster" + hostNames() + " " + addresses() + " ssh -F " + sshConfig;
    }

}
